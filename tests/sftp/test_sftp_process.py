"""The SFTP server's own process: serves with the API's users, restarts after a crash, never outlives its parent."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import psutil

from tests.sftp_process import SftpServerProcess, sftp_server_process


def sftp_child(server: SftpServerProcess) -> psutil.Process:
    return psutil.Process(server.sftp_pid())


def ls(server: SftpServerProcess, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(server.sftp_cmd(), input="ls /\n", text=True, capture_output=True, cwd=cwd, timeout=60)


def gone(proc: psutil.Process, timeout: float = 10) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if proc.status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.1)
    return False


def test_crashed_sftp_process_is_restarted_and_dies_with_a_killed_parent(tmp_path: Path) -> None:
    with sftp_server_process(tmp_path, "dora", quiet=True) as server:
        child = sftp_child(server)
        assert child.nice() > psutil.Process().nice()  # bulk transfers yield the CPU to the API
        assert ls(server, tmp_path).returncode == 0
        child.kill()  # a crash
        assert gone(child)
        deadline = time.monotonic() + 30
        while True:  # restarted after a 1 s back-off, with the same host key and users
            new = sftp_child(server)
            if new.pid != child.pid and ls(server, tmp_path).returncode == 0:
                break
            assert time.monotonic() < deadline, "the SFTP process was not restarted"
            time.sleep(0.2)
        os.kill(server.proc.pid, signal.SIGKILL)  # the parent dies without stopping it
        server.proc.wait(10)
        assert gone(new), "the SFTP process outlived its parent"
        assert ls(server, tmp_path).returncode != 0


def test_clean_stop_ends_the_sftp_process(tmp_path: Path) -> None:
    with sftp_server_process(tmp_path, "erin", quiet=True) as server:
        child = sftp_child(server)
        server.proc.send_signal(signal.SIGTERM)
        assert server.proc.wait(30) == 0
        assert gone(child, 1)
