"""Ray job retention (scheduler/janitor.py) at the fake-Ray boundary; tests/e2e/test_retention_ray.py runs it
against a real Ray."""

from __future__ import annotations

from argus.cluster.types import JobInfo, RayJobStatus
from argus.scheduler.monitor import MonitorActiveTasks
from argus.scheduler.submit import SubmitQueuedTasks
from argus.services import telemetry
from tests.scheduler.fakes import add_task, add_user, task

DAY = 86400.0


def _ended(ctx, ray, uid, clock):
    tid = add_task(ctx, uid)
    SubmitQueuedTasks(ctx).run_once()
    sid = task(ctx, tid).submission_id
    ray.set(sid, RayJobStatus.SUCCEEDED, driver_exit_code=0)
    MonitorActiveTasks(ctx).run_once()
    assert task(ctx, tid).status == "SUCCEEDED"
    return sid


def test_only_argus_jobs_that_ended_before_the_retention_are_deleted(ctx, ray, clock):
    ctx.settings.ray_job_retention_days = 7
    uid = add_user(ctx, "alice")
    old = _ended(ctx, ray, uid, clock)
    clock.advance(5 * DAY)
    recent = _ended(ctx, ray, uid, clock)
    live_tid = add_task(ctx, uid)
    SubmitQueuedTasks(ctx).run_once()
    live = task(ctx, live_tid).submission_id
    ray.set(live, RayJobStatus.RUNNING)
    ray.jobs["someone-else"] = JobInfo("someone-else", RayJobStatus.SUCCEEDED, metadata={"argus_task_id": "x"},
                                       end_time_ms=1000)
    ray.jobs["plain"] = JobInfo("plain", RayJobStatus.SUCCEEDED, end_time_ms=1000)
    # a foreign job that borrowed an Argus submission id after Ray forgot it: its metadata names another task
    ray.jobs[recent] = JobInfo(recent, RayJobStatus.SUCCEEDED, metadata={"argus_task_id": live_tid})
    clock.advance(2.5 * DAY)  # old ended 7.5 days ago, recent 2.5 days ago
    before = telemetry.RAY_JOBS_DELETED._value.get()
    janitor = MonitorActiveTasks(ctx).janitor
    assert janitor.run_once(force=True) == 1
    assert ray.deleted == [old]
    assert set(ray.jobs) == {recent, live, "someone-else", "plain"}
    assert telemetry.RAY_JOBS_DELETED._value.get() == before + 1


def test_zero_keeps_every_record(ctx, ray, clock):
    ctx.settings.ray_job_retention_days = 0
    sid = _ended(ctx, ray, add_user(ctx, "alice"), clock)
    clock.advance(1000 * DAY)
    assert MonitorActiveTasks(ctx).janitor.run_once(force=True) == 0
    assert sid in ray.jobs and ray.deleted == []


def test_a_job_ray_will_not_delete_yet_is_retried_later(ctx, ray, clock):
    ctx.settings.ray_job_retention_days = 1
    sid = _ended(ctx, ray, add_user(ctx, "alice"), clock)
    clock.advance(2 * DAY)
    ray.down = True
    assert MonitorActiveTasks(ctx).janitor.due([ray.jobs[sid]], clock() ) == [sid]
    ray.down = False
    assert MonitorActiveTasks(ctx).janitor.run_once(force=True) == 1


def test_attempt_records_older_than_a_month_are_pruned_and_a_live_one_is_kept(tmp_path) -> None:
    import os
    import time

    from argus.launcher import attempt_record

    folder = attempt_record.folder(tmp_path)
    folder.mkdir(parents=True)
    old, live = folder / "t-1.1.json", folder / "t-2.1.json"
    old.write_text("{}")
    live.write_text("{}")
    month_ago = time.time() - attempt_record.RECORD_KEEP_S - 60
    os.utime(old, (month_ago, month_ago))
    assert attempt_record.prune(tmp_path) == 1
    assert not old.exists() and live.exists()
