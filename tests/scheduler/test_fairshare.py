"""Fair share that remembers (issue 11): the decay math, the DB ledger, and start order with many users."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import update

from argus.cluster.types import RayJobStatus
from argus.db.models import TaskAttemptModel, TaskModel
from argus.scheduler.fairshare import Usage, decayed, factor
from argus.scheduler.monitor import MonitorActiveTasks
from argus.scheduler.policy import HeldTask, Limits, NodeState, QueuedTask, plan
from argus.scheduler.submit import SubmitQueuedTasks
from argus.scheduler.usage import UsageLedger
from tests.scheduler.fakes import add_task, add_user

H = 3600.0


def test_decay_halves_per_half_life_and_counts_gpus():
    ran = decayed(4.0, 0.0, 10.0, 10.0, H)  # 4 GPUs for 10 s, seen at once
    assert ran == pytest.approx(40.0, rel=1e-3)
    assert decayed(4.0, 0.0, 10.0, 10.0 + H, H) == pytest.approx(ran / 2)
    assert decayed(4.0, 0.0, 10.0, 10.0 + 3 * H, H) == pytest.approx(ran / 8)
    assert decayed(4.0, 5.0, 5.0, 10.0, H) == 0.0


def test_slurm_factor():
    assert factor(0.0, {}) == 1.0
    assert factor(0.0, {"a": 0.0, "b": 0.0}) == 1.0
    assert factor(50.0, {"a": 50.0, "b": 50.0}) == pytest.approx(0.5)  # exactly at one's share
    assert factor(100.0, {"a": 100.0, "b": 0.0}) == pytest.approx(0.25)
    assert factor(0.0, {"a": 100.0, "b": 0.0}) == 1.0


def simulate(users: int, per_user: int, slots: int, *, use_usage: bool = True) -> list[str]:
    """1-second GPU tasks through the real policy on a fake clock; returns the owners in start order."""
    queued = [QueuedTask(f"u{u:02d}-{i}", f"u{u:02d}", 0, u * 100 + i, 1, 1)
              for u in range(users) for i in range(per_user)]  # u00 posted all of its tasks first
    history: list[tuple[str, float]] = []  # (user, start) of every started task
    running: list[tuple[QueuedTask, float]] = []
    order: list[str] = []
    now = 0.0
    while queued:
        running = [(t, s) for t, s in running if s + 1.0 > now]
        usage: dict[str, Usage] = {}
        if use_usage:
            for user, start in history:
                got = decayed(1.0, start, min(start + 1.0, now), now, 86400.0)
                usage[user] = usage.get(user, Usage()).plus(1, got)
        held = [HeldTask(t.task_id, t.user, 1, 1, ("w",)) for t, _ in running]
        p = plan(queued, held, [NodeState("w", True, slots, slots - len(held))],
                 Limits(max_running=100, max_running_per_user=100), usage=usage)
        ids = {pl.task_id for pl in p.placements}
        for t in [t for t in queued if t.task_id in ids]:
            running.append((t, now))
            history.append((t.user, now))
        order += [t.user for t in sorted((t for t in queued if t.task_id in ids), key=lambda t: t.task_id)]
        queued = [t for t in queued if t.task_id not in ids]
        now += 1.0
    return order


def nth_start_index(order: list[str], n: int) -> dict[str, int]:
    seen: dict[str, int] = {}
    out: dict[str, int] = {}
    for i, user in enumerate(order):
        seen[user] = seen.get(user, 0) + 1
        if seen[user] == n:
            out[user] = i
    return out


def test_every_users_first_start_comes_before_any_users_third():
    order = simulate(users=20, per_user=10, slots=4)
    first, third = nth_start_index(order, 1), nth_start_index(order, 3)
    assert len(first) == 20
    assert max(first.values()) < min(third.values())


def test_without_memory_the_first_users_take_every_slot():
    """The old failure (held GPUs only, ties to the oldest task) — shows the test above can fail."""
    order = simulate(users=20, per_user=10, slots=4, use_usage=False)
    first, third = nth_start_index(order, 1), nth_start_index(order, 3)
    assert max(first.values()) > min(third.values())


# ---------------------------------------------------------------- the real loops and the DB ledger


def run_to_completion(ctx, ray, clock, *, loop: SubmitQueuedTasks, seconds: float = 1.0) -> list[str]:
    """One tick: submit what fits, run it for ``seconds``, finish it; returns the started task ids."""
    mon = MonitorActiveTasks(ctx)
    before = {s.submission_id for s in ray.submissions}
    loop.run_once()
    new = [s.submission_id for s in ray.submissions if s.submission_id not in before]
    for sid in new:
        ray.set(sid, RayJobStatus.RUNNING, driver_node_id="w1")
    mon.run_once()
    clock.advance(seconds)
    for sid in new:
        ray.set(sid, RayJobStatus.SUCCEEDED, driver_exit_code=0)
    mon.run_once()
    return [s.metadata["argus_task_id"] for s in ray.submissions if s.submission_id in new]


def test_the_scheduler_loop_serves_every_user_before_anyones_third(ctx, ray, clock):
    owner: dict[str, str] = {}
    for u in range(12):  # posted in blocks: u00's three tasks are the oldest
        uid = add_user(ctx, f"u{u:02d}")
        for i in range(3):
            owner[add_task(ctx, uid, gpus=1, created_offset_s=-1000 + u * 10 + i)] = f"u{u:02d}"
    loop = SubmitQueuedTasks(ctx)
    order: list[str] = []
    for _ in range(12):
        order += [owner[t] for t in run_to_completion(ctx, ray, clock, loop=loop)]
    assert sorted(order) == sorted(owner.values())
    first, third = nth_start_index(order, 1), nth_start_index(order, 3)
    assert max(first.values()) < min(third.values())


def test_usage_survives_a_restart(ctx, ray, clock):
    heavy, light = add_user(ctx, "heavy"), add_user(ctx, "light")
    for i in range(3):
        add_task(ctx, heavy, gpus=4, created_offset_s=-100 + i)
    for _ in range(3):
        run_to_completion(ctx, ray, clock, loop=SubmitQueuedTasks(ctx), seconds=600)
    # a new server: a new loop, its ledger rebuilt from the attempt rows only
    older = add_task(ctx, heavy, gpus=4, created_offset_s=-50)
    newer = add_task(ctx, light, gpus=4, created_offset_s=0)
    started = run_to_completion(ctx, ray, clock, loop=SubmitQueuedTasks(ctx))
    assert started == [newer]
    assert older not in started


def test_incremental_ledger_matches_a_rebuild(ctx, ray, clock):
    a, b = add_user(ctx, "a"), add_user(ctx, "b")
    t1 = add_task(ctx, a, gpus=2)
    t2 = add_task(ctx, b, gpus=0, created_offset_s=1)
    loop = SubmitQueuedTasks(ctx)
    live = UsageLedger(3600.0)
    loop.run_once()
    mon = MonitorActiveTasks(ctx)
    for s in ray.submissions:
        ray.set(s.submission_id, RayJobStatus.RUNNING, driver_node_id="w1")
    mon.run_once()
    with ctx.db.session() as s:
        live.read(s, clock())  # builds while both run
    clock.advance(120)
    ray.set(f"{t1}-a1", RayJobStatus.SUCCEEDED, driver_exit_code=0)
    mon.run_once()
    t3 = add_task(ctx, a, gpus=1, created_offset_s=2)
    loop.run_once()
    ray.set(f"{t3}-a1", RayJobStatus.RUNNING, driver_node_id="w1")
    mon.run_once()
    clock.advance(30)
    with ctx.db.session() as s:
        got = live.read(s, clock())
        fresh = UsageLedger(3600.0).read(s, clock())
    assert live.rebuilds == 1
    assert got.keys() == fresh.keys() == {str(a), str(b)}
    for user in got:
        assert got[user].gpu_s == pytest.approx(fresh[user].gpu_s)
        assert got[user].cpu_s == pytest.approx(fresh[user].cpu_s)
    # a: 2 GPUs × 120 s + 1 GPU × 30 s; b: a CPU job running 150 s (barely decayed at h = 1 h)
    assert got[str(a)].gpu_s == pytest.approx(270, rel=0.02)
    assert got[str(b)].cpu_s == pytest.approx(150, rel=0.02)
    assert got[str(b)].gpu_s == 0.0
    with ctx.db.session() as s:  # use older than the horizon is not read at all
        s.execute(update(TaskAttemptModel).where(TaskAttemptModel.task_id == t2)
                  .values(finished_at=clock() - timedelta(days=30), started_at=clock() - timedelta(days=31)))
        s.execute(update(TaskModel).where(TaskModel.id == t2).values(status="SUCCEEDED"))
    with ctx.db.session() as s:
        assert UsageLedger(3600.0).read(s, clock()).get(str(b), Usage()).cpu_s == 0.0
