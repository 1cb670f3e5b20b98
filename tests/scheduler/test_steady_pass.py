"""A steady submit pass (nothing changed) plans nothing and writes nothing; any change is still seen."""

from __future__ import annotations

from sqlalchemy import event

from argus.cluster.types import RayJobStatus
from argus.db.models import UserModel
from argus.scheduler.monitor import MonitorActiveTasks
from argus.scheduler.submit import SubmitQueuedTasks
from argus.services.principal import Principal
from argus.services.tasks import cancel_task
from tests.scheduler.fakes import add_task, add_user, task


def writes(ctx):
    """Count UPDATE/INSERT/DELETE statements sent to the database."""
    seen: list[str] = []

    def on_exec(conn, cursor, statement, *a):
        if statement.lstrip().split()[0].upper() in ("UPDATE", "INSERT", "DELETE"):
            seen.append(statement)

    event.listen(ctx.db.engine, "before_cursor_execute", on_exec)
    return seen


def test_steady_pass_skips_planning_and_writes_nothing_but_sees_every_change(ctx, ray, clock):
    alice, bob = add_user(ctx, "alice"), add_user(ctx, "bob")
    running = add_task(ctx, alice, gpus=4)
    big = add_task(ctx, bob, gpus=4, created_offset_s=1)
    loop = SubmitQueuedTasks(ctx)
    loop.run_once()  # starts `running` (the 4-GPU node is then full)
    loop.run_once()  # plans again (the held set changed): `big` waits
    assert task(ctx, big).pending_reason.startswith("needs 1 node × 4 GPUs")
    plans, seen = loop.plans, writes(ctx)
    for _ in range(3):
        assert loop.run_once() == 0
    assert loop.plans == plans and seen == []  # nothing changed: no plan, no write

    # a new queued task is noticed
    small = add_task(ctx, alice, gpus=0, created_offset_s=2)
    assert loop.run_once() == 1 and task(ctx, small).status == "SUBMITTED"
    loop.run_once()
    plans = loop.plans
    loop.run_once()
    assert loop.plans == plans

    # a queued task canceled is noticed (the queue's count drops)
    late = add_task(ctx, bob, gpus=4, created_offset_s=3)
    loop.run_once()
    plans = loop.plans
    with ctx.db.session() as s:
        owner = Principal(id=s.query(UserModel.id).filter_by(name="bob").scalar(), name="bob", is_admin=False)
        cancel_task(s, owner, big)
    loop.run_once()
    assert loop.plans == plans + 1

    # a node joining, and an end that frees GPUs, are noticed
    assert task(ctx, late).status == "QUEUED"
    ray.add_node("w2", 4)
    loop.run_once()
    assert task(ctx, late).status == "SUBMITTED"
    again = add_task(ctx, bob, gpus=4, created_offset_s=4)
    loop.run_once()
    loop.run_once()
    assert task(ctx, again).status == "QUEUED"
    ray.set(f"{running}-a1", RayJobStatus.SUCCEEDED, driver_exit_code=0)
    MonitorActiveTasks(ctx).run_once()
    loop.run_once()
    assert task(ctx, again).status == "SUBMITTED"


def test_a_limit_change_is_noticed_by_a_steady_loop(ctx, ray):
    alice = add_user(ctx, "alice")
    with ctx.db.session() as s:
        s.query(UserModel).filter_by(name="alice").one().max_running_tasks = 1
    t1, t2 = add_task(ctx, alice), add_task(ctx, alice, created_offset_s=1)
    loop = SubmitQueuedTasks(ctx)
    loop.run_once()
    loop.run_once()
    assert task(ctx, t2).pending_reason == "user limit: 1 running task"
    loop.run_once()
    with ctx.db.session() as s:
        s.query(UserModel).filter_by(name="alice").one().max_running_tasks = None
    loop.run_once()
    assert task(ctx, t2).status == "SUBMITTED" and task(ctx, t1).status == "SUBMITTED"
