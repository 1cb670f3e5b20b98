"""The driver's log copier on a disk that refuses writes: real file descriptors, no mocks.

A full tmpfs mounted on the job's ``logs/`` (tests/tinyfs.py; root) gives the error a full jobs folder gives,
ENOSPC on every write; a file under a path whose parent is a regular file fails to open like a broken
folder does. (``/dev/full`` behind a symlink used to stand in for the full disk: the launcher now refuses to
write through any link in a job folder, the hostile tests below.) The copier must record the error once, keep taking (and counting) output, call
its stop hook once, and never raise.
"""

from __future__ import annotations

import errno
import io
import json
import os
import threading
from pathlib import Path

import pytest

from argus.core import log_write
from argus.core.launch import AttemptStatus
from argus.launcher.driver import pump_output
from argus.launcher.tasklog import StatusFile, TaskLog


@pytest.fixture
def full_log(tmp_path: Path):
    """A TaskLog whose ``logs/`` folder is a full filesystem: opening works, every write fails with ENOSPC."""
    from tests.tinyfs import tmpfs

    job = tmp_path / "users" / "alice" / "jobs" / "t-1"
    with tmpfs(job / "logs", "size=64k") as logs:
        try:
            with open(logs / "filler", "wb") as f:
                while True:
                    f.write(b"x" * 4096)
                    f.flush()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
        echo = io.BytesIO()
        yield TaskLog(job / "logs" / "attempt-1.log", job, echo), echo, job


def test_a_full_disk_is_recorded_once_and_every_later_byte_is_counted_not_raised(full_log) -> None:
    log, echo, _ = full_log
    calls: list[str] = []
    log.on_error = calls.append
    assert log.open()  # a new file opens fine: the failure comes with the first write, as on a full disk
    log.write(b"line 1\nline 2\n")
    log.write(b"line 3\n")
    log.write(b"no newline")
    assert log.error == "no space left on $HOME/jobs/t-1/logs"
    assert calls == [log.error], "the stop hook runs once, on the first failure"
    assert (log.dropped_bytes, log.dropped_lines) == (31, 3)
    assert echo.getvalue() == b"line 1\nline 2\nline 3\nno newline", "Ray's log still gets everything"
    assert log.summary() == "no space left on $HOME/jobs/t-1/logs; 31 bytes (3 lines) of output not written"
    log.close()


def test_a_pipe_is_drained_to_its_end_while_the_log_fails(full_log) -> None:
    """The bug of issue 11: the copier died, nobody read the pipe, the writer blocked forever."""
    log, echo, _ = full_log
    assert log.open()
    r, w = os.pipe()
    total = 4 * 1024 * 1024  # far more than a pipe buffer (64 KiB): a writer blocks unless someone reads
    line = b"x" * 1023 + b"\n"

    def writer() -> None:
        with os.fdopen(w, "wb") as f:
            for _ in range(total // len(line)):
                f.write(line)

    t = threading.Thread(target=writer)
    t.start()
    with os.fdopen(r, "rb", buffering=0) as src:
        pump_output(src, log)  # the driver's copier, to the end of the pipe
    t.join(timeout=30)
    assert not t.is_alive()
    assert (log.dropped_bytes, log.dropped_lines) == (total, total // len(line))
    assert len(echo.getvalue()) == total, "Ray's log got it all"


def test_a_folder_that_cannot_be_made_names_the_folder(tmp_path: Path) -> None:
    job = tmp_path / "users" / "alice" / "jobs" / "t-2"
    job.mkdir(parents=True)
    (job / "logs").write_text("a file where the folder goes\n")
    log = TaskLog(job / "logs" / "attempt-1.log", job, io.BytesIO())
    assert not log.open()
    assert log.error is not None and log.error.startswith("cannot write to $HOME/jobs/t-2/logs")
    log.write(b"dropped\n")  # never raises, even with no file at all
    assert (log.dropped_bytes, log.dropped_lines) == (8, 1)
    log.close()


def test_the_echo_may_fail_too(full_log) -> None:
    log, _, _ = full_log
    with open("/dev/full", "wb", buffering=0) as ray_log:  # Ray's own log on a full local disk
        log = TaskLog(log.path, log.job_dir, ray_log)
        assert log.open()
        log.write(b"a\n")
        log.echo(b"b\n")
    assert log.error is not None and log.dropped_bytes == 2


@pytest.mark.hostile
@pytest.mark.parametrize("planted", ["logs/attempt-1.log", "logs", "logs/attempt-1.clock", "status.json",
                                     ".status.json.{pid}.tmp", "telemetry", "telemetry/attempt-1.jsonl"])
def test_a_link_planted_in_the_job_folder_is_never_written_through(tmp_path: Path, planted: str) -> None:
    """The launcher is root outside the sandbox; the task (or its owner over SFTP) can put a link where the
    launcher will write: the victim file stays as it was, whatever the link's place."""
    from argus.launcher.telemetry import Sampler

    job = tmp_path / "users" / "alice" / "jobs" / "t-1"
    job.mkdir(parents=True)
    victim_dir = tmp_path / "root-only"
    victim_dir.mkdir()
    victim = victim_dir / "authorized_keys"
    victim.write_text("root's\n")
    link = job / planted.format(pid=os.getpid())
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(victim_dir if planted in ("logs", "telemetry") else victim)
    log = TaskLog(job / "logs" / "attempt-1.log", job, io.BytesIO())
    if log.open():
        log.write(b"ssh-ed25519 AAAA attacker\n")
        log.close()
    StatusFile(job / "status.json", AttemptStatus(1)).save(exit_code=0)
    Sampler(os.getpid(), job / "telemetry" / "attempt-1.jsonl", visible="", nvml=None).record()
    assert victim.read_text() == "root's\n" and sorted(p.name for p in victim_dir.iterdir()) == ["authorized_keys"]
    if planted == "status.json":  # replaced by the launcher's own file, the link gone
        assert not (job / "status.json").is_symlink() and json.loads((job / "status.json").read_text())["exit_code"] == 0


def test_status_file_returns_the_error_instead_of_raising(tmp_path: Path) -> None:
    (tmp_path / "job").write_text("not a folder")
    status = StatusFile(tmp_path / "job" / "status.json", AttemptStatus(1))
    err = status.save(exit_code=3)
    assert isinstance(err, OSError) and err.errno == errno.ENOTDIR
    assert status.status == AttemptStatus(1, exit_code=3)
    ok = StatusFile(tmp_path / "status.json", AttemptStatus(1))
    assert ok.save(alive_at="now") is None
    assert AttemptStatus.parse(json.loads((tmp_path / "status.json").read_text()), 1) == AttemptStatus(1, alive_at="now")
    with pytest.raises(AttributeError):  # a field the type does not have is a launcher bug, caught here
        ok.save(exitcode=0)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


# ---------------------------------------------------------------- the words (core/log_write.py)


@pytest.mark.parametrize(("err", "words"), [
    (errno.ENOSPC, "no space left on $HOME/jobs/t/logs"),
    (errno.EROFS, "read-only file system at $HOME/jobs/t/logs"),
    (errno.EDQUOT, "disk quota exceeded on $HOME/jobs/t/logs"),
    (errno.EIO, "I/O error writing to $HOME/jobs/t/logs"),
    (errno.EACCES, "permission denied writing to $HOME/jobs/t/logs"),
    (errno.ENOTDIR, "cannot write to $HOME/jobs/t/logs: Not a directory"),
])
def test_describe(err: int, words: str) -> None:
    job = Path("/private/users/alice/jobs/t")
    shown = log_write.shown_path(job / "logs", job)
    assert log_write.describe(OSError(err, os.strerror(err)), shown) == words


def test_shown_path_outside_a_jobs_folder_is_the_real_path() -> None:
    assert log_write.shown_path(Path("/x/y/logs"), Path("/x/y")) == "/x/y/logs"


def test_the_marker_is_believed_only_with_the_drivers_exit_code() -> None:
    ray = ("Job entrypoint command failed with exit code 74, last available logs (truncated to 20,000 chars):\n"
           "x\n[argus] LOG_WRITE_FAILED: no space left on $HOME/jobs/t/logs; stopping the task\n"
           "\x1b[33m[argus] LOG_WRITE_FAILED: no space left on $HOME/jobs/t/logs; 2.0 MiB (9 lines) of output"
           " not written; the task was stopped (exit code 143)\x1b[0m\n")
    assert log_write.failure_reason(74, None, ray) == (
        "no space left on $HOME/jobs/t/logs; 2.0 MiB (9 lines) of output not written; the task was stopped "
        "(exit code 143)")
    assert log_write.failure_reason(1, None, ray) is None, "a task printing the line and exiting 1 is EXIT_NONZERO"
    assert log_write.failure_reason(74, "read-only file system at $HOME/jobs/t\n", ray) == (
        "read-only file system at $HOME/jobs/t"), "status.json first"
    assert log_write.failure_reason(74, None, "Job entrypoint command failed with exit code 74") is None
    assert log_write.failure_reason(74, 7, None) is None
    assert len(log_write.failure_reason(74, "y" * 5000, None) or "") == log_write.MAX_CHARS


def test_sizes() -> None:
    assert log_write.dropped_shown(0, 0) == ""
    assert log_write.dropped_shown(1, 1) == "1 bytes (1 line) of output not written"
    assert log_write.size_shown(3 * 1024 * 1024 + 1) == "3.0 MiB"
    assert log_write.size_shown(5 << 40) == "5120.0 GiB"
