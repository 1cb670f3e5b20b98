"""A NODE_LOST or RAY_JOB_LOST retry resumes from the latest complete checkpoint (scheduler/autoresume.py), fake Ray, real SQLite."""

from __future__ import annotations

import shlex

from sqlalchemy import select

from argus.cluster.types import RayJobStatus
from argus.core.messages import render
from argus.db.models import TaskEventModel
from argus.scheduler.monitor import MonitorActiveTasks
from argus.scheduler.submit import SubmitQueuedTasks
from tests.scheduler.fakes import add_task, add_user, task
from tests.services.test_checkpoints import write_step


def running(ctx, ray, argv: list[str]) -> tuple[str, SubmitQueuedTasks, MonitorActiveTasks]:
    """A task of alice's RUNNING on node w1."""
    tid = add_task(ctx, add_user(ctx, "alice"), argv=argv)
    sub, mon = SubmitQueuedTasks(ctx), MonitorActiveTasks(ctx)
    sub.run_once()
    ray.set(f"{tid}-a1", RayJobStatus.RUNNING, driver_node_id="w1")
    mon.run_once()
    return tid, sub, mon


def notes(ctx, tid: str) -> list[str]:
    with ctx.db.session() as s:
        rows = s.scalars(select(TaskEventModel).where(
            TaskEventModel.task_id == tid, TaskEventModel.from_status == "QUEUED", TaskEventModel.to_status == "QUEUED"))
        out = []
        for e in rows:  # each coded (issue 37), its code rendering to the text
            assert e.message_code and render(e.message_code, e.message_params) == e.message, e.message
            out.append(e.message)
        return out


def test_retry_after_node_loss_resumes_from_latest_complete_step(ctx, ray) -> None:
    cmd = "python3 -m argus.jobs.steps trainer.default_local_dir=ck"
    tid, sub, mon = running(ctx, ray, ["bash", "-lc", cmd])
    folder = ctx.settings.root / "users" / "alice" / "jobs" / tid / "ck"
    write_step(folder, 2)
    write_step(folder, 4)
    write_step(folder, 6, tracker=False)  # being written when the node died: never resumed from
    ray.kill_node("w1")
    mon.run_once()
    assert task(ctx, tid).status == "QUEUED"
    ray.add_node("w2", 4)
    sub.run_once()
    t = task(ctx, tid)
    assert t.submission_id == f"{tid}-a2"
    want = f"{cmd} trainer.resume_mode=resume_path trainer.resume_from_path={folder}/global_step_4"
    assert t.argv == ["bash", "-lc", want]
    assert shlex.split(ray.submissions[-1].entrypoint)[-1] == want  # what Ray runs for attempt 2
    assert notes(ctx, tid) == [f"attempt 2 resumes from checkpoint global_step_4 ($HOME/jobs/{tid}/ck/global_step_4) "
                               "after the lost node: trainer.resume_mode=resume_path "
                               "trainer.resume_from_path=…/global_step_4"]
    # Ray lost the SUBMITTED id: the resubmission runs the very same command
    ray.jobs.pop(f"{tid}-a2")
    mon.run_once()
    assert shlex.split(ray.submissions[-1].entrypoint)[-1] == want


def test_resume_disabled_by_the_user_starts_over(ctx, ray) -> None:
    cmd = "python3 -m argus.jobs.steps trainer.resume_mode=disable"
    tid, sub, mon = running(ctx, ray, ["bash", "-lc", cmd])
    write_step(ctx.settings.root / "users" / "alice" / "jobs" / tid / "checkpoints", 2)
    ray.kill_node("w1")
    mon.run_once()
    ray.add_node("w2", 4)
    sub.run_once()
    assert task(ctx, tid).argv == ["bash", "-lc", cmd]
    assert notes(ctx, tid) == ["attempt 2 starts over: the command sets trainer.resume_mode=disable"]


def test_a_job_ray_lost_resumes_from_its_checkpoint_too(ctx, ray) -> None:
    """A platform Ray head restart under a running task: RAY_JOB_LOST, and the retry continues from the latest
    complete checkpoint (it used to start over at step 1; issue 36), saying so in the timeline."""
    cmd = "python3 -m argus.jobs.steps trainer.default_local_dir=ck"
    tid, sub, mon = running(ctx, ray, ["bash", "-lc", cmd])
    folder = ctx.settings.root / "users" / "alice" / "jobs" / tid / "ck"
    write_step(folder, 70)
    ray.jobs.pop(f"{tid}-a1")  # the head restarted: Ray knows nothing of the RUNNING attempt
    mon.run_once()
    assert task(ctx, tid).status == "QUEUED" and task(ctx, tid).termination_reason == "RAY_JOB_LOST"
    sub.run_once()
    want = f"{cmd} trainer.resume_mode=resume_path trainer.resume_from_path={folder}/global_step_70"
    assert task(ctx, tid).argv == ["bash", "-lc", want]
    assert notes(ctx, tid) == [f"attempt 2 resumes from checkpoint global_step_70 ($HOME/jobs/{tid}/ck/global_step_70) "
                               "after Ray lost the job: trainer.resume_mode=resume_path "
                               "trainer.resume_from_path=…/global_step_70"]
