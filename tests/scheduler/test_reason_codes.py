"""The submit loop stores each pending reason's code and parameters beside its text (issue 37)."""

from __future__ import annotations

from sqlalchemy import update

from argus.core.messages import render
from argus.db.models import TaskModel
from argus.scheduler.submit import SubmitQueuedTasks
from tests.scheduler.fakes import add_task, add_user, task


def test_the_loop_stores_the_reasons_code_and_params_and_rewrites_them_when_the_reason_changes(ctx, ray):
    uid = add_user(ctx, "alice")
    t1 = add_task(ctx, uid, gpus=4)
    t2 = add_task(ctx, uid, gpus=4, created_offset_s=1)
    loop = SubmitQueuedTasks(ctx)
    assert loop.run_once() == 1
    loop.run_once()
    t = task(ctx, t2)
    assert (t.pending_reason, t.pending_reason_code) == ("needs 1 node × 4 GPUs; free: none", "queue.gpus_busy")
    assert t.pending_reason_params == {"nnodes": 1, "need": [{"code": "part.gpus", "n": 4}], "free": []}
    assert render(t.pending_reason_code, t.pending_reason_params) == t.pending_reason
    assert task(ctx, t1).pending_reason_code == "queue.submitting"  # what it said while it was handed to Ray

    ray.down = True
    loop.run_once()
    t = task(ctx, t2)
    assert (t.pending_reason_code, t.pending_reason_params) == ("queue.ray_unreachable", {"error": "connection refused"})
    assert t.pending_reason == "Ray cluster unreachable: connection refused"


def test_a_reason_stored_before_codes_gets_its_code_on_the_next_pass(ctx, ray):
    uid = add_user(ctx, "alice")
    add_task(ctx, uid, gpus=4)
    t2 = add_task(ctx, uid, gpus=4, created_offset_s=1)
    loop = SubmitQueuedTasks(ctx)
    loop.run_once()
    loop.run_once()
    with ctx.db.session() as s:  # as a database upgraded from 0008 holds it: the text, no code
        s.execute(update(TaskModel).where(TaskModel.id == t2).values(pending_reason_code=None,
                                                                      pending_reason_params=None))
    loop._unchanged = None  # the next pass plans again (inputs unchanged otherwise)
    loop.run_once()
    assert task(ctx, t2).pending_reason_code == "queue.gpus_busy"
