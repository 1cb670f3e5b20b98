"""Stall forensics on the node (launcher/stacks.py, launcher/attempt_record): the server's request for every
process's stack, the launcher's answer, and the capture itself. Real processes, real py-spy (ptrace: root here),
real files; a bubblewrap sandbox where bwrap is installed."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psutil
import pytest

from argus.launcher import attempt_record, stacks
from tests.launcher.test_driver import start
from tests.waiting import slack, wait_until

# a Python process that sleeps in a function with a name nobody else has: its stack must name it
SLEEPER = textwrap.dedent("""
    import sys, time
    def argus_stall_probe_sleeps():
        print("ready", flush=True)
        time.sleep(600)
    argus_stall_probe_sleeps()
""")


@pytest.fixture
def sleeper():
    procs: list[subprocess.Popen[str]] = []

    def make(*prefix: str) -> subprocess.Popen[str]:
        p = subprocess.Popen([*prefix, sys.executable, "-c", SLEEPER], stdout=subprocess.PIPE, text=True)
        procs.append(p)
        assert p.stdout is not None and p.stdout.readline() == "ready\n"
        # "ready" is printed just before the sleep: a loaded machine may not have run the sleep yet (CI saw
        # wchan "0", no "waiting in"); the tests are about a process that waits, so wait for it to
        wait_until(lambda: _sleeping_in_the_kernel(p.pid), timeout=slack(30))
        return p

    yield make
    for p in procs:
        p.kill()
        p.wait()


def _sleeping_in_the_kernel(pid: int) -> bool:
    wchan = Path(f"/proc/{pid}/wchan").read_text().strip()
    return bool(wchan) and wchan != "0" and psutil.Process(pid).status() == psutil.STATUS_SLEEPING


def _live_record(root: Path, task: str, now: datetime) -> None:
    data = {"attempt": 1, "hostname": "elsewhere", "driver_pid": 1, "alive_at": now.isoformat(), "heartbeat_s": 15.0}
    assert attempt_record.write(attempt_record.record_path(root, task, 1), data) is None


def test_a_request_is_asked_only_of_a_running_driver_taken_once_and_answered_under_its_token(tmp_path: Path) -> None:
    now = datetime.now(UTC)
    assert attempt_record.ask_for_stacks(tmp_path, "t", 1, now) is None  # no driver: nothing would answer
    assert not attempt_record.stacks_path(tmp_path, "t", 1).exists()
    _live_record(tmp_path, "t", now)
    token = attempt_record.ask_for_stacks(tmp_path, "t", 1, now)
    assert token == now.isoformat()
    assert oct(attempt_record.stacks_path(tmp_path, "t", 1).stat().st_mode & 0o777) == "0o600"
    assert attempt_record.stacks_answer(tmp_path, "t", 1, token) is None  # not answered yet
    assert attempt_record.take_stacks_request(tmp_path, "t", 1) == token
    assert attempt_record.take_stacks_request(tmp_path, "t", 1) is None  # once
    assert attempt_record.answer_stacks(tmp_path, "t", 1, token, file="jobs/t/stacks/a.txt", processes=3,
                                        python=2, dumped=2) is None
    answer = attempt_record.stacks_answer(tmp_path, "t", 1, token)
    assert answer is not None and answer["file"] == "jobs/t/stacks/a.txt" and answer["dumped"] == 2
    assert attempt_record.stacks_answer(tmp_path, "t", 1, "an older request") is None
    later = now + timedelta(seconds=1)
    assert attempt_record.ask_for_stacks(tmp_path, "t", 1, later) == later.isoformat()
    attempt_record.forget(tmp_path, "t", 1)  # the attempt ended: no driver will take it
    assert not attempt_record.stacks_path(tmp_path, "t", 1).exists()
    assert attempt_record.stacks_answer(tmp_path, "t", 1, token) is not None  # the answer stays, like the record


def test_a_python_process_is_dumped_by_py_spy_and_named_by_its_function(sleeper) -> None:
    p = sleeper()
    cap = stacks.capture(p.pid, stacks.find_py_spy())
    assert (cap.processes, cap.python, cap.dumped) == (1, 1, 1), cap.text
    assert "argus_stall_probe_sleeps" in cap.text, cap.text
    assert f"=== pid {p.pid}: parent {os.getpid()}" in cap.text and "sleeping" in cap.text


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_a_process_in_a_pid_namespace_is_dumped_by_its_host_pid(sleeper) -> None:
    """What a task's sandbox is: its own PID (and user) namespace; the launcher outside sees host pids."""
    outer = sleeper("bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid",
                    "--unshare-user", "--die-with-parent")
    cap = stacks.capture(outer.pid, stacks.find_py_spy())
    assert (cap.processes, cap.python, cap.dumped) == (3, 1, 1), cap.text  # bwrap, its init, python
    assert "argus_stall_probe_sleeps" in cap.text, cap.text
    assert "(2 in its sandbox)" in cap.text  # the pid the task's own messages use
    assert cap.text.count(": the task's sandbox (bubblewrap)") == 2 and "--unshare-pid" not in cap.text


def test_without_py_spy_or_when_refused_each_process_is_still_named_with_its_state(sleeper, tmp_path: Path,
                                                                                    monkeypatch) -> None:
    p = sleeper()
    cap = stacks.capture(p.pid, None)
    assert cap.dumped == 0 and "(no Python stack: py-spy is not installed for the launcher)" in cap.text
    assert f"pid {p.pid}: parent" in cap.text and "waiting in" in cap.text and "-c" in cap.text
    refusing = tmp_path / "py-spy"
    refusing.write_text("#!/bin/sh\necho 'Error: Permission denied (os error 1)' >&2\nexit 1\n")
    refusing.chmod(0o755)
    cap = stacks.capture(p.pid, str(refusing))
    assert "py-spy refused (exit 1): Error: Permission denied (os error 1)" in cap.text, cap.text
    slow = tmp_path / "slow-spy"
    slow.write_text("#!/bin/sh\nexec sleep 30\n")
    slow.chmod(0o755)
    monkeypatch.setattr(stacks, "PER_PROCESS_S", 0.5)
    cap = stacks.capture(p.pid, str(slow))
    assert "py-spy gave no stack within 0 s" in cap.text or "py-spy gave no stack within 1 s" in cap.text, cap.text
    assert stacks.capture(p.pid * 1000 + 7, None).processes == 0  # gone: said, not raised


def test_the_file_is_made_in_the_task_folder_and_never_through_a_planted_link(tmp_path: Path) -> None:
    home = tmp_path / "users" / "alice"
    job = home / "jobs" / "job-1"
    job.mkdir(parents=True)
    at = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    rel = stacks.write_file(home, job, 2, "text\n", at)
    assert rel == "jobs/job-1/stacks/attempt-2-20260102T030405Z.txt"
    assert (home / rel).read_text() == "text\n" and oct((home / rel).stat().st_mode & 0o777) == "0o644"
    assert stacks.write_file(home, job, 2, "again\n", at).endswith("attempt-2-20260102T030405Z-1.txt")
    # the task replaced its stacks folder by a link to somewhere it must not write
    target = tmp_path / "elsewhere"
    target.mkdir()
    shutil.rmtree(job / "stacks")
    (job / "stacks").symlink_to(target)
    with pytest.raises(OSError):
        stacks.write_file(home, job, 2, "text\n", at)
    assert list(target.iterdir()) == []


def test_the_driver_answers_a_request_with_its_tasks_stacks_and_leaves_the_log_alone(tmp_path: Path) -> None:
    root = tmp_path / "root"
    job = root / "users" / "alice" / "jobs" / "job-1"
    p = start(job, sys.executable, "-c", SLEEPER)
    wait_until(lambda: attempt_record.read(root, "job-1", 1).get("driver_pid") == p.pid, 20, every=0.05,
               what="the attempt's record")
    log = job / "logs" / "attempt-1.log"
    wait_until(lambda: "ready" in log.read_text(), 20, every=0.05, what="the task's start")
    before = log.read_text()
    token = attempt_record.ask_for_stacks(root, "job-1", 1, datetime.now(UTC))
    assert token
    answer = wait_until(lambda: attempt_record.stacks_answer(root, "job-1", 1, token), 60, every=0.1,
                        what="the driver's answer")
    assert answer["error"] is None and answer["dumped"] >= 1, answer
    assert answer["file"].startswith("jobs/job-1/stacks/attempt-1-") and answer["file"].endswith(".txt")
    text = (root / "users" / "alice" / answer["file"]).read_text()
    assert "Stacks of task job-1, attempt 1" in text and "argus_stall_probe_sleeps" in text, text
    assert not attempt_record.stacks_path(root, "job-1", 1).exists()  # taken
    assert log.read_text() == before  # output there would count as progress and clear the stall
    attempt_record.request_stop(root, "job-1", 1)
    p.communicate(timeout=slack(30))
    assert p.returncode == 128 + signal.SIGTERM
