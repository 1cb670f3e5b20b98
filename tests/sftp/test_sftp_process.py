"""The SFTP server's own process: serves with the API's users, restarts after a crash, never outlives its parent."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import psutil

from tests.sftp_process import SftpServerProcess, sftp_server_process
from tests.waiting import slack, wait_until


def sftp_child(server: SftpServerProcess) -> psutil.Process:
    return psutil.Process(server.sftp_pid())


def ls(server: SftpServerProcess, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(server.sftp_cmd(), input="ls /\n", text=True, capture_output=True, cwd=cwd, timeout=60)


def wait_gone(proc: psutil.Process, what: str, timeout: float = 10) -> None:
    def ended() -> bool:
        try:
            return proc.status() == psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return True

    wait_until(ended, timeout, what=what)


def test_crashed_sftp_process_is_restarted_and_dies_with_a_killed_parent(tmp_path: Path) -> None:
    with sftp_server_process(tmp_path, "dora", quiet=True) as server:
        child = sftp_child(server)
        assert child.nice() > psutil.Process().nice()  # bulk transfers yield the CPU to the API
        assert ls(server, tmp_path).returncode == 0
        child.kill()  # a crash
        wait_gone(child, "the killed SFTP process to end")

        def restarted() -> psutil.Process | None:  # after a 1 s back-off, with the same host key and users
            new = sftp_child(server)
            return new if new.pid != child.pid and ls(server, tmp_path).returncode == 0 else None

        new = wait_until(restarted, 30, every=0.2, what="the SFTP process was not restarted")
        os.kill(server.proc.pid, signal.SIGKILL)  # the parent dies without stopping it
        server.proc.wait(slack(10))
        wait_gone(new, "the SFTP process outlived its parent")
        assert ls(server, tmp_path).returncode != 0


def test_clean_stop_ends_the_sftp_process(tmp_path: Path) -> None:
    with sftp_server_process(tmp_path, "erin", quiet=True) as server:
        child = sftp_child(server)
        server.proc.send_signal(signal.SIGTERM)
        assert server.proc.wait(slack(30)) == 0
        wait_gone(child, "the SFTP process to end with the server", 1)
