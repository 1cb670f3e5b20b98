"""issue 36: a GPU its node's agent reported still busy after its task ended is held back by the submit loop (one
GPU fewer free on that node) until the agent removes its file, and the task that left it gets one event."""

from __future__ import annotations

from sqlalchemy import select, update

from argus.core.gpu_free import HeldGpu
from argus.db.models import TaskEventModel, TaskModel
from argus.launcher import attempt_record
from argus.scheduler.submit import SubmitQueuedTasks
from tests.scheduler.fakes import add_task, add_user, task

U1 = "GPU-9a8b7c6d-aaaa-bbbb-cccc-ddddeeeeffff"


def events(ctx, tid):
    with ctx.db.session() as s:
        return [e.message for e in s.scalars(select(TaskEventModel).where(TaskEventModel.task_id == tid)
                                             .order_by(TaskEventModel.id))]


def test_a_held_back_gpu_takes_no_task_and_is_named_on_the_task_that_left_it(ctx, ray):
    uid = add_user(ctx, "alice")
    ended = add_task(ctx, uid, gpus=1)
    with ctx.db.session() as s:
        s.execute(update(TaskModel).where(TaskModel.id == ended).values(status="SUCCEEDED"))
    root = ctx.settings.root
    held = HeldGpu("w1", U1, 1, "host-w1", ended, 1, (4242,), 2048, "2026-01-01T00:00:00+00:00")
    path = attempt_record.held_path(root, "w1", U1)
    assert attempt_record.write_json(path, held.as_dict()) is None
    big = add_task(ctx, uid, gpus=4)
    loop = SubmitQueuedTasks(ctx)
    assert loop.run_once() == 0
    assert task(ctx, big).pending_reason == "needs 1 node × 4 GPUs; free: 1 node × 3 GPUs"
    said = [m for m in events(ctx, ended) if m and "held back" in m]
    assert said == [f"GPU 1 ({U1}) on host-w1 still has pid 4242 using 2 GiB after the task ended; held back (no new "
                    "task is placed on it until the node agent finds it free)"]
    with ctx.db.session() as s:  # coded (issue 37): the page says it in the reader's language
        coded = s.scalars(select(TaskEventModel.message_code).where(TaskEventModel.task_id == ended,
                                                                    TaskEventModel.message == said[0])).all()
    assert coded == ["status.gpu_held_on"]
    assert SubmitQueuedTasks(ctx).run_once() == 0  # a new scheduler (a restarted server) does not say it again
    assert [m for m in events(ctx, ended) if m and "held back" in m] == said
    path.unlink()  # the agent found it free
    assert loop.run_once() == 1 and task(ctx, big).status == "SUBMITTED"
