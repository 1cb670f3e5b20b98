"""An attempt whose job Ray lost while its driver runs on (issue 36): followed through the attempt's record out
of its owner's reach (launcher/attempt_record), never run twice. Fake Ray, real SQLite, real record files."""

from __future__ import annotations

from datetime import timedelta

from argus.cluster.types import JobInfo, RayJobStatus
from argus.core.states import TaskStatus, TerminationReason
from argus.launcher import attempt_record
from argus.scheduler.cancel import CancelTasks
from argus.scheduler.monitor import classify
from argus.services.principal import Principal
from argus.services.tasks import cancel_task
from tests.scheduler.fakes import InlineExecutor, task
from tests.scheduler.test_autoresume import running


def _record(ctx, tid: str, *, alive_s_ago: float = 1.0, finished: int | None = None) -> dict:
    at = (ctx.now() - timedelta(seconds=alive_s_ago)).isoformat()
    data = {"attempt": 1, "hostname": "w1-host", "driver_pid": 4242, "alive_at": at, "heartbeat_s": 15.0,
            "finished_at": at if finished is not None else None, "exit_code": finished}
    assert attempt_record.write(attempt_record.record_path(ctx.settings.root, tid, 1), data) is None
    return data


def test_classify_follows_a_live_record_ends_by_a_finished_one_and_loses_only_a_silent_one(ctx) -> None:
    now = ctx.now()
    beat = {"attempt": 1, "heartbeat_s": 15.0, "alive_at": (now - timedelta(seconds=20)).isoformat()}
    kw = {"submitted_at": now, "now": now, "start_timeout_s": 60.0}
    assert classify(TaskStatus.RUNNING, None, record=beat, **kw).status is None
    assert classify(TaskStatus.SUBMITTED, None, record=beat, **kw).status == TaskStatus.RUNNING  # never resubmitted
    done = {**beat, "finished_at": now.isoformat(), "exit_code": 0}
    assert classify(TaskStatus.RUNNING, None, record=done, **kw).reason == TerminationReason.SUCCEEDED
    failed = classify(TaskStatus.RUNNING, None, record={**done, "exit_code": 3}, **kw)  # maybe Ray's doing: retried
    assert (failed.reason, failed.exit_code) == (TerminationReason.RAY_JOB_LOST, 3) and "exit code 3" in failed.message
    silent = {**beat, "alive_at": (now - timedelta(seconds=46)).isoformat()}  # 3 heartbeats missed
    assert classify(TaskStatus.RUNNING, None, record=silent, **kw).reason == TerminationReason.RAY_JOB_LOST
    assert classify(TaskStatus.RUNNING, None, record={}, **kw).reason == TerminationReason.RAY_JOB_LOST


def test_a_driver_that_outlives_its_ray_job_is_followed_to_its_end_in_attempt_1(ctx, ray) -> None:
    tid, sub, mon = running(ctx, ray, ["bash", "-lc", "python3 -m argus.jobs.steps"])
    _record(ctx, tid)
    ray.jobs.pop(f"{tid}-a1")  # the platform's Ray head restarted under it
    mon.run_once()
    t = task(ctx, tid)
    assert t.status == "RUNNING" and t.attempts == 1 and t.status_message.startswith("Ray lost this job; its driver"), t.status_message
    assert "w1-host (pid 4242)" in t.status_message
    assert (t.status_message_code, t.status_message_params) == ("status.followed", {"where": "w1-host (pid 4242)"})
    sub.run_once()
    assert len(ray.submissions) == 1  # no second copy of the attempt
    _record(ctx, tid, finished=0)
    mon.run_once()
    t = task(ctx, tid)
    assert (t.status, t.termination_reason, t.attempts) == ("SUCCEEDED", "SUCCEEDED", 1)


def test_a_silent_driver_is_lost_and_its_retry_starts(ctx, ray) -> None:
    tid, sub, mon = running(ctx, ray, ["bash", "-lc", "python3 -m argus.jobs.steps"])
    _record(ctx, tid, alive_s_ago=60)
    ray.jobs.pop(f"{tid}-a1")
    mon.run_once()
    assert (task(ctx, tid).status, task(ctx, tid).termination_reason) == ("QUEUED", "RAY_JOB_LOST")


def test_cancel_of_a_followed_attempt_asks_its_driver_through_the_record(ctx, ray) -> None:
    tid, sub, mon = running(ctx, ray, ["bash", "-lc", "python3 -m argus.jobs.steps"])
    _record(ctx, tid)
    ray.jobs.pop(f"{tid}-a1")
    mon.run_once()
    with ctx.db.session() as s:
        cancel_task(s, Principal(1, "alice"), tid)
    loop = CancelTasks(ctx, pool=InlineExecutor())
    assert loop.run_once() == 0 and task(ctx, tid).status == "CANCELING"
    assert attempt_record.stop_requested(ctx.settings.root, tid, 1)  # what the driver looks for every second
    assert loop.run_once() == 0  # it still runs: asked once, waited for
    _record(ctx, tid, finished=143)
    assert loop.run_once() == 1
    t = task(ctx, tid)
    assert t.status == "CANCELED" and t.status_message == "canceled; its driver stopped it (Ray had lost the job)"
    assert not attempt_record.stop_requested(ctx.settings.root, tid, 1)


def test_a_retry_waits_until_the_previous_attempt_stopped(ctx, ray) -> None:
    """Ray calls the node lost, but its driver still reports through the record (a network partition): the retry
    asks it to stop there and waits; once the record says it ended, attempt 2 starts. Never two live attempts."""
    tid, sub, mon = running(ctx, ray, ["bash", "-lc", "python3 -m argus.jobs.steps"])
    _record(ctx, tid)
    ray.kill_node("w1")
    mon.run_once()
    assert (task(ctx, tid).status, task(ctx, tid).termination_reason) == ("QUEUED", "NODE_LOST")
    ray.add_node("w2", 4)
    sub.run_once()
    t = task(ctx, tid)
    assert t.attempts == 1 and len(ray.submissions) == 1, t.pending_reason
    assert t.pending_reason.startswith("waiting for attempt 1 to stop: its driver on w1-host still reports")
    assert attempt_record.stop_requested(ctx.settings.root, tid, 1)
    _record(ctx, tid, finished=143)
    sub.run_once()
    assert task(ctx, tid).submission_id == f"{tid}-a2" and len(ray.submissions) == 2


def test_a_dead_driver_of_this_machine_is_gone_at_once(ctx, tmp_path) -> None:
    """No waiting out the heartbeats for a driver beside the server whose process ended (or is a zombie)."""
    import socket
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = int(done.stdout)
    base = {"attempt": 1, "hostname": socket.gethostname(), "heartbeat_s": 15.0, "alive_at": ctx.now().isoformat(),
            "finished_at": None, "exit_code": None}
    for pid, alive in ((dead, False), (__import__("os").getpid(), True)):
        attempt_record.write(attempt_record.record_path(tmp_path, "t", 1), {**base, "driver_pid": pid})
        assert attempt_record.alive(attempt_record.read(tmp_path, "t", 1), ctx.now()) is alive, pid


def _ray_ended(status: RayJobStatus, exit_code: int | None = None) -> JobInfo:
    """Ray's job over while the launcher may live on: its JobSupervisor killed by Ray's memory monitor."""
    return JobInfo("t-a1", status, message="Job supervisor actor died", error_type="JOB_SUPERVISOR_ACTOR_DIED",
                   driver_exit_code=exit_code)


def test_classify_believes_the_record_over_a_job_ray_ended_without_its_driver(ctx) -> None:
    """Issue 36: Ray's end of a job (its supervisor killed, a ``ray job stop`` from outside) is not the
    training's while the launcher — the node agent's, not Ray's — still beats or ended by itself."""
    now = ctx.now()
    beat = {"attempt": 1, "heartbeat_s": 15.0, "alive_at": (now - timedelta(seconds=20)).isoformat()}
    kw = {"submitted_at": now, "now": now, "start_timeout_s": 60.0}
    for status in (RayJobStatus.FAILED, RayJobStatus.STOPPED):
        assert classify(TaskStatus.RUNNING, _ray_ended(status), record=beat, **kw).status is None  # followed
    done = {**beat, "finished_at": now.isoformat(), "exit_code": 0}
    ok = classify(TaskStatus.RUNNING, _ray_ended(RayJobStatus.FAILED), record=done, **kw)
    assert (ok.status, ok.reason, ok.from_record) == (TaskStatus.SUCCEEDED, TerminationReason.SUCCEEDED, True)
    failed = classify(TaskStatus.RUNNING, _ray_ended(RayJobStatus.FAILED), record={**done, "exit_code": 3}, **kw)
    assert (failed.reason, failed.exit_code) == (TerminationReason.EXIT_NONZERO, 3)  # the log says why (monitor)
    # Ray's word stands: a record gone silent, or a driver whose exit Ray saw itself
    silent = {**beat, "alive_at": (now - timedelta(seconds=46)).isoformat()}
    assert classify(TaskStatus.RUNNING, _ray_ended(RayJobStatus.FAILED), record=silent, **kw).reason \
        == TerminationReason.NODE_LOST
    exited = classify(TaskStatus.RUNNING, _ray_ended(RayJobStatus.FAILED, 1), record={**done, "exit_code": 1}, **kw)
    assert (exited.reason, exited.from_record) == (TerminationReason.NODE_LOST, False)
    assert classify(TaskStatus.RUNNING, _ray_ended(RayJobStatus.FAILED), record=beat, dead_nodes=frozenset({"n1"}),
                    **kw).status is None  # no driver node named: nothing says it died
    on_dead = JobInfo("t-a1", RayJobStatus.FAILED, driver_node_id="n1", driver_exit_code=None)
    assert classify(TaskStatus.RUNNING, on_dead, record=beat, dead_nodes=frozenset({"n1"}), **kw).reason \
        == TerminationReason.NODE_LOST


def test_a_launcher_whose_ray_job_failed_under_it_is_followed_to_success_in_attempt_1(ctx, ray) -> None:
    tid, sub, mon = running(ctx, ray, ["bash", "-lc", "python3 -m argus.jobs.steps"])
    _record(ctx, tid)
    ray.set(f"{tid}-a1", RayJobStatus.FAILED, message="Job supervisor actor died",
            error_type="JOB_SUPERVISOR_ACTOR_DIED", end_time_ms=1)
    mon.run_once()
    t = task(ctx, tid)
    assert (t.status, t.attempts, t.status_message_code) == ("RUNNING", 1, "status.followed_ray_ended"), t.status_message
    assert t.status_message == ("Ray ended this job (FAILED: JOB_SUPERVISOR_ACTOR_DIED) but its driver on w1-host "
                                "(pid 4242) still runs it: followed through its attempt record, not restarted")
    sub.run_once()
    assert len(ray.submissions) == 1  # no second attempt beside the live one
    _record(ctx, tid, finished=0)
    mon.run_once()
    t = task(ctx, tid)
    assert (t.status, t.termination_reason, t.attempts) == ("SUCCEEDED", "SUCCEEDED", 1)
