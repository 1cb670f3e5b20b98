"""A driver that died before writing its log: the monitor copies Ray's driver log into the attempt's log.

Unit tests of the monitor against the fake Ray (tests/scheduler/fakes.py), plus the Jobs client's
``driver_log_tail`` against a stubbed dashboard transport. The real thing is tests/e2e/test_driver_log.py.
"""

from __future__ import annotations

import json
import os

import httpx
import pytest

from argus.cluster.dashboard import Dashboard
from argus.cluster.jobs import RayJobsClient
from argus.cluster.types import ClusterUnavailable, RayJobStatus
from argus.core.failures import TAIL_BYTES
from argus.scheduler.monitor import MonitorActiveTasks
from argus.scheduler.submit import SubmitQueuedTasks
from tests.scheduler.fakes import add_task, add_user, task

RAY_LOG = (
    "Traceback (most recent call last):\n"
    '  File "<frozen runpy>", line 198, in _run_module_as_main\n'
    '  File "/opt/argus/launcher/driver.py", line 212, in run\n'
    "    bin_dir = python_bin_dir(job_dir, ns.python)\n"
    "FileExistsError: [Errno 17] File exists: '/private/users/alice/jobs/t/.argus-bin'\n"
)
CAUSE = "exit code 1: FileExistsError: [Errno 17] File exists: '/private/users/alice/jobs/t/.argus-bin'"


def failed_before_logging(ctx, ray, ray_log: str | None = RAY_LOG, exit_code: int = 1):
    uid = add_user(ctx, "alice")
    (ctx.settings.root / "users" / "alice").mkdir(parents=True)  # the platform makes homes with users
    tid = add_task(ctx, uid)
    SubmitQueuedTasks(ctx).run_once()
    sid = f"{tid}-a1"
    if ray_log is not None:
        ray.driver_logs[sid] = ray_log
    ray.set(sid, RayJobStatus.FAILED, driver_exit_code=exit_code, error_type="JOB_ENTRYPOINT_COMMAND_ERROR",
            message=f"Job entrypoint command failed with exit code {exit_code}")
    return tid, sid


def attempt_log(ctx, tid):
    return ctx.settings.root / "users" / "alice" / "jobs" / tid / "logs" / "attempt-1.log"


def test_missing_log_gets_rays_driver_log_and_the_message_names_the_exception(ctx, ray):
    tid, sid = failed_before_logging(ctx, ray)
    MonitorActiveTasks(ctx).run_once()
    t = task(ctx, tid)
    assert (t.status, t.termination_reason, t.status_message) == ("FAILED", "EXIT_NONZERO", CAUSE)
    assert ray.log_requests == [sid]
    text = attempt_log(ctx, tid).read_text()
    assert text.startswith("[argus] the driver wrote nothing to this log; below, copied from Ray")
    assert sid in text.splitlines()[0] and RAY_LOG in text
    assert text.endswith("[argus] end of the copy of Ray's driver log\n")
    assert sid in ray.jobs, "Ray's record is kept until ray_job_retention_days (scheduler/janitor.py)"


def test_an_empty_log_is_filled_too(ctx, ray):
    tid, sid = failed_before_logging(ctx, ray)
    attempt_log(ctx, tid).parent.mkdir(parents=True)
    attempt_log(ctx, tid).write_bytes(b"")
    MonitorActiveTasks(ctx).run_once()
    assert task(ctx, tid).status_message == CAUSE
    assert RAY_LOG in attempt_log(ctx, tid).read_text()


def test_a_log_the_driver_wrote_is_left_alone_and_ray_is_not_asked(ctx, ray):
    tid, sid = failed_before_logging(ctx, ray)
    attempt_log(ctx, tid).parent.mkdir(parents=True)
    attempt_log(ctx, tid).write_text("[argus] attempt 1\nKeyError: 'x'\n[argus] exit code 1 after 0.1 s\n")
    MonitorActiveTasks(ctx).run_once()
    assert task(ctx, tid).status_message == "exit code 1: KeyError: 'x'"
    assert ray.log_requests == []
    assert "copied from Ray" not in attempt_log(ctx, tid).read_text()


def test_a_driver_refusal_in_status_json_is_not_overwritten(ctx, ray):
    tid, sid = failed_before_logging(ctx, ray, exit_code=126)
    jd = attempt_log(ctx, tid).parent.parent
    jd.mkdir(parents=True)
    (jd / "status.json").write_text(json.dumps({"attempt": 1, "error": "no jail here: refusing to run"}))
    MonitorActiveTasks(ctx).run_once()
    assert task(ctx, tid).status_message == "exit code 126: no jail here: refusing to run"
    assert ray.log_requests == []


def test_success_and_running_never_ask_ray_for_logs(ctx, ray):
    uid = add_user(ctx, "alice")
    tid = add_task(ctx, uid)
    SubmitQueuedTasks(ctx).run_once()
    mon = MonitorActiveTasks(ctx)
    ray.set(f"{tid}-a1", RayJobStatus.RUNNING, driver_node_id="w1")
    mon.run_once()
    ray.set(f"{tid}-a1", RayJobStatus.SUCCEEDED, driver_exit_code=0)
    mon.run_once()
    assert task(ctx, tid).status == "SUCCEEDED" and ray.log_requests == []


def test_ray_without_a_log_or_unreachable_for_it_keeps_the_plain_message(ctx, ray):
    tid, sid = failed_before_logging(ctx, ray, ray_log=None)
    MonitorActiveTasks(ctx).run_once()
    assert task(ctx, tid).status_message == "exit code 1"
    assert not attempt_log(ctx, tid).exists()

    ray.log_error = ClusterUnavailable("read timed out")
    uid2 = add_user(ctx, "bob")
    tid2 = add_task(ctx, uid2)
    SubmitQueuedTasks(ctx).run_once()
    ray.set(f"{tid2}-a1", RayJobStatus.FAILED, driver_exit_code=2)
    assert MonitorActiveTasks(ctx).run_once() == 1, "a failing log fetch must not stall the pass"
    assert task(ctx, tid2).status_message == "exit code 2"


def test_a_link_in_the_home_does_not_redirect_the_servers_write(ctx, ray):
    """The user's tasks can plant ``jobs/<task>/logs`` → another home; the copy must not follow it."""
    tid, sid = failed_before_logging(ctx, ray)
    victim = ctx.settings.root / "users" / "bob" / "code"
    victim.mkdir(parents=True)
    jd = attempt_log(ctx, tid).parent.parent
    jd.mkdir(parents=True)
    os.symlink(victim, jd / "logs")
    MonitorActiveTasks(ctx).run_once()
    assert list(victim.iterdir()) == []
    assert task(ctx, tid).status_message == CAUSE, "the cause still comes from the text Ray gave"


@pytest.mark.parametrize("plant", ["hardlink", "fifo"])
def test_a_fifo_or_hard_link_as_the_log_is_neither_written_nor_blocks(ctx, ray, plant):
    tid, sid = failed_before_logging(ctx, ray)
    logs = attempt_log(ctx, tid).parent
    logs.mkdir(parents=True)
    other = ctx.settings.root / "users" / "alice" / "other.txt"
    other.write_text("")
    if plant == "fifo":
        os.mkfifo(attempt_log(ctx, tid))
    else:
        os.link(other, attempt_log(ctx, tid))
    MonitorActiveTasks(ctx).run_once()  # a FIFO opened for reading without O_NONBLOCK would hang here
    assert other.read_text() == "" and task(ctx, tid).status_message == CAUSE


def test_the_cause_is_never_read_through_a_link_to_another_home(ctx, ray):
    uid = add_user(ctx, "alice")
    (ctx.settings.root / "users" / "alice").mkdir(parents=True)
    tid = add_task(ctx, uid)
    SubmitQueuedTasks(ctx).run_once()
    secret = ctx.settings.root / "users" / "bob" / "jobs" / "x" / "logs"
    secret.mkdir(parents=True)
    (secret / "attempt-1.log").write_text("ValueError: bob's secret\n")
    jd = attempt_log(ctx, tid).parent.parent
    jd.mkdir(parents=True)
    os.symlink(secret, jd / "logs")
    ray.set(f"{tid}-a1", RayJobStatus.FAILED, driver_exit_code=1)
    MonitorActiveTasks(ctx).run_once()
    assert task(ctx, tid).status_message == "exit code 1"


def test_rays_log_is_cut_to_its_tail(ctx, ray):
    big = "x" * 100 + "\n"
    tid, sid = failed_before_logging(ctx, ray, ray_log=big * 2000 + RAY_LOG)
    MonitorActiveTasks(ctx).run_once()
    data = attempt_log(ctx, tid).read_bytes()
    assert TAIL_BYTES < len(data) < TAIL_BYTES + 1024 and data.endswith(b"end of the copy of Ray's driver log\n")
    assert task(ctx, tid).status_message == CAUSE


# ---------------------------------------------------------------- the Jobs client


def client(handler) -> RayJobsClient:
    dash = Dashboard("http://ray.test:8265")
    dash._http = httpx.Client(base_url=dash.url, transport=httpx.MockTransport(handler))
    return RayJobsClient(dash)


def test_jobs_client_reads_the_logs_endpoint_and_keeps_the_tail():
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"logs": "é" * 10 + "tail\n"})

    assert client(handler).driver_log_tail("job/a1", 6) == "tail\n"  # half an "é" is dropped
    assert client(handler).driver_log_tail("job/a1", 7) == "étail\n"
    assert seen[0].url.raw_path == b"/api/jobs/job%2Fa1/logs"
    assert seen[0].extensions["timeout"]["read"] == 5.0
    assert client(handler).driver_log_tail("job-a1", 1000) == "é" * 10 + "tail\n"


@pytest.mark.parametrize("resp", [
    httpx.Response(404, text="Job job-a1 does not exist"),
    httpx.Response(500, text="Traceback ...\nRuntimeError: Failed to get agent for node"),
    httpx.Response(200, text="not json"),
    httpx.Response(200, json={"other": 1}),
])
def test_jobs_client_returns_none_when_ray_has_no_log(resp):
    assert client(lambda _r: resp).driver_log_tail("job-a1", 100) is None


def test_jobs_client_timeout_is_cluster_unavailable():
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    with pytest.raises(ClusterUnavailable):
        client(handler).driver_log_tail("job-a1", 100)
