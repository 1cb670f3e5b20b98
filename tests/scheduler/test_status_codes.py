"""The monitor's status messages as codes (issue 37, item 7): each ending classify() gives has a status.* code and
params that render to exactly the English it always wrote; Ray's own text is a parameter, as written."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from argus.cluster.types import JobInfo, RayJobStatus
from argus.core.messages import from_stored
from argus.core.states import TaskStatus
from argus.scheduler.monitor import SETUP_ERRORS, classify

NOW = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)
LONG_AGO = NOW - timedelta(hours=1)


def said(status: TaskStatus, info: JobInfo | None, **kw):  # noqa: ANN003, ANN201
    out = classify(status, info, submitted_at=kw.pop("submitted_at", NOW), now=NOW, start_timeout_s=600, **kw)
    coded = out.said()
    assert coded is not None and not isinstance(coded, str), out
    assert from_stored(coded.code, coded.params, out.message) == coded  # renders to the stored English
    return out.message, coded.code, coded.params


@pytest.mark.parametrize(("status", "info", "kw", "want"), [
    (TaskStatus.RUNNING, JobInfo("s", RayJobStatus.SUCCEEDED, driver_exit_code=0), {},
     ("exit code 0", "status.exit_code", {"exit_code": 0})),
    (TaskStatus.RUNNING, JobInfo("s", RayJobStatus.FAILED, driver_exit_code=3), {},
     ("exit code 3", "status.exit_code", {"exit_code": 3})),
    (TaskStatus.RUNNING, None, {}, ("Ray no longer knows this job", "status.ray_lost", {})),
    (TaskStatus.SUBMITTED, None, {"submitted_at": LONG_AGO},
     ("did not start within 600 s (Ray does not know the job)", "status.start_timeout_unknown", {"seconds": "600"})),
    (TaskStatus.SUBMITTED, JobInfo("s", RayJobStatus.PENDING), {"submitted_at": LONG_AGO},
     ("did not start within 600 s (Ray kept it PENDING)", "status.start_timeout_pending", {"seconds": "600"})),
    (TaskStatus.RUNNING, JobInfo("s", RayJobStatus.STOPPED), {},
     ("the Ray job was stopped outside Argus", "status.stopped_outside", {})),
    (TaskStatus.RUNNING, JobInfo("s", RayJobStatus.FAILED, message=" runtime env failed \n",
                                 error_type=next(iter(SETUP_ERRORS))), {},
     ("Ray could not start the job: runtime env failed", "status.ray_could_not_start_why",
      {"detail": "runtime env failed"})),
    (TaskStatus.RUNNING, JobInfo("s", RayJobStatus.FAILED), {},
     ("the Ray job failed", "status.ray_job_failed", {})),
    (TaskStatus.RUNNING, JobInfo("s", RayJobStatus.FAILED, message="supervisor died"), {},
     ("the Ray job failed: supervisor died", "status.ray_job_failed_why", {"detail": "supervisor died"})),
])
def test_each_ending_is_coded_with_its_english_unchanged(status, info, kw, want) -> None:  # noqa: ANN001
    assert said(status, info, **kw) == want
