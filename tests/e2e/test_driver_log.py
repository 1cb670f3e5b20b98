"""A driver that dies before it writes the attempt's log, on a real Ray cluster: the user still sees why.

Its traceback is only in Ray's job-driver log on the node. The monitor copies that log into the
attempt's log (``argus logs`` shows it) and names the exception in the task's message.
"""

from __future__ import annotations

import pytest

from tests.e2e.stack import Stack, spec, submit, wait_status

pytestmark = pytest.mark.e2e


def test_a_driver_that_cannot_start_shows_rays_driver_log_and_the_exception(stack: Stack) -> None:
    c = stack.user("carol")
    with stack.manual():  # no scheduler pass until the trap is set
        tid = submit(c, spec("python3 -m argus.jobs.sleep 0 --lines 1"))
        job_dir = stack.settings.root / "users" / "carol" / "jobs" / tid
        job_dir.mkdir(parents=True)
        # a FILE where the driver makes its python bin folder: it dies after opening the attempt's log,
        # before writing to it, with a traceback that only Ray's driver log gets
        (job_dir / ".argus-bin").write_text("not a folder\n")
    t = wait_status(c, tid, "FAILED", timeout=120)
    assert t["termination_reason"] == "EXIT_NONZERO", t
    assert t["status_message"].startswith("exit code 1: NotADirectoryError:"), t
    assert ".argus-bin" in t["status_message"]
    log = c.get(f"/api/v2/tasks/{tid}/logs")
    assert log.status_code == 200, log.text
    text = log.text
    assert text.startswith("[argus] the driver wrote nothing to this log; below, copied from Ray"), text
    assert "Traceback (most recent call last):" in text and "NotADirectoryError" in text, text
    assert "python_bin_dir" in text  # the driver's own frames: this is Ray's driver output, not a summary
