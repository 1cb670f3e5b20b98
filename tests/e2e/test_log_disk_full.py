"""A jobs folder that refuses writes, on a real Ray cluster (issue 11, item 1).

Before: the driver's log copier died on ENOSPC, nothing drained the task's pipe, the task
blocked on its next print and stayed RUNNING, holding its slot, for as long as anyone watched;
a read-only jobs folder gave "exit code 1" with no log at all. Now the task ends FAILED with
``LOG_WRITE_FAILED`` naming the folder, within seconds, and its Ray job is over.

The folder is a real tmpfs mounted over the task's job folder (skipped where the test cannot
mount); the task's jail binds the home recursively, so the task sees the mount as it is.
"""

from __future__ import annotations

import time

import pytest

from tests.e2e.stack import Stack, spec, submit, wait_status
from tests.tinyfs import tmpfs

pytestmark = pytest.mark.e2e


def ray_job_over(stack: Stack, sid: str) -> bool:
    """Ray holds nothing for it: the job ended (or the janitor already dropped Ray's record of it)."""
    return all(str(j.status) in ("FAILED", "STOPPED", "SUCCEEDED") for j in stack.ray_jobs() if j.submission_id == sid)


def test_a_tiny_jobs_filesystem_filling_mid_run_fails_the_task_with_the_reason(stack: Stack) -> None:
    c = stack.user("dora")
    with stack.manual():  # no scheduler pass until the tiny filesystem is in place
        # ~16 KiB/s of output for 300 s: a 32 KiB filesystem fills within seconds, mid-run
        tid = submit(c, spec("python3 -m argus.jobs.sleep 300 --lines 300000"))
        job_dir = stack.settings.root / "users" / "dora" / "jobs" / tid
    with tmpfs(job_dir, "size=32k"):
        seen: list[str] = []
        wait_status(c, tid, "RUNNING", timeout=120, seen=seen)
        started = time.monotonic()
        t = wait_status(c, tid, "FAILED", timeout=120, seen=seen)
        took = time.monotonic() - started
        assert t["termination_reason"] == "LOG_WRITE_FAILED", t
        assert t["status_message"].startswith(f"LOG_WRITE_FAILED: no space left on $HOME/jobs/{tid}"), t
        assert "of output not written; the task was stopped" in t["status_message"], t
        assert ray_job_over(stack, f"{tid}-a1"), "the slot is free: Ray's job ended"
        assert t["attempts"][0]["exit_code"] == 74, t  # the driver's code for a log it could not write
        log = c.get(f"/api/v2/tasks/{tid}/logs")
        assert log.status_code == 200 and "sleep: 1/300000" in log.text, log.text[:300]  # what fitted was kept
    print(f"RUNNING -> FAILED(LOG_WRITE_FAILED) in {took:.1f} s")


def test_a_read_only_jobs_folder_fails_at_once_naming_it(stack: Stack) -> None:
    c = stack.user("dora")
    with stack.manual():
        tid = submit(c, spec("python3 -m argus.jobs.sleep 300 --lines 3"))
        jobs = stack.settings.root / "users" / "dora" / "jobs" / tid
    with tmpfs(jobs, "ro", "size=32k"):
        t = wait_status(c, tid, "FAILED", timeout=120)
    assert t["termination_reason"] == "LOG_WRITE_FAILED", t
    assert t["status_message"] == (f"LOG_WRITE_FAILED: read-only file system at $HOME/jobs/{tid}/logs; "
                                   "the task was not started"), t
