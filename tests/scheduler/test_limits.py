"""Per-user limits (GPUs held at once, running tasks): the pure policy, then the real submit loop.

The loop tests run ``SubmitQueuedTasks``/``MonitorActiveTasks`` over real SQLite with a fake Ray
at the JobsBackend boundary: a limit blocks, the pending reason names it, and the limit releases
when the user's tasks end.
"""

from __future__ import annotations

from argus.cluster.types import RayJobStatus
from argus.db.models import UserModel
from argus.scheduler.monitor import MonitorActiveTasks
from argus.scheduler.policy import HeldTask, Limits, NodeState, QueuedTask, UserLimits, plan
from argus.scheduler.submit import SubmitQueuedTasks
from tests.scheduler.fakes import add_task, add_user, task
from tests.scheduler.test_accounting import db_ctx  # noqa: F401 - SQLite and PostgreSQL


def q(tid: str, user: str = "u", prio: int = 0, age: int = 0, nnodes: int = 1, gpus: int = 0) -> QueuedTask:
    return QueuedTask(tid, user, prio, age, nnodes, gpus)


def h(tid: str, user: str, nnodes: int = 1, gpus: int = 0) -> HeldTask:
    return HeldTask(tid, user, nnodes, gpus, None)


def nodes(count: int, gpus: int = 8) -> list[NodeState]:
    return [NodeState(f"w{i}", True, gpus, gpus) for i in range(count)]


def started(p) -> list[str]:
    return [pl.task_id for pl in p.placements]


# ---------------------------------------------------------------- the pure policy


def test_gpu_limit_blocks_the_user_names_the_limit_and_lets_others_start():
    lim = Limits(64, 16, max_gpus_per_user=16)
    held = [h("a1", "alice", gpus=8), h("a2", "alice", gpus=8)]
    queued = [q("a3", "alice", gpus=8, age=1), q("b1", "bob", gpus=8, age=2)]
    p = plan(queued, held, nodes(4), lim)
    assert started(p) == ["b1"]
    assert p.pending == {"a3": "user limit: 16 GPUs held, this task needs 8 (max 16)"}


def test_a_sweep_runs_at_most_max_concurrent_trials_and_other_tasks_pass_it():
    """Issue 38: a sweep's trials beyond its max_concurrent wait saying so; the owner's other tasks do not."""
    lim = Limits(64, 0, sweeps={"sweep-1": 2})
    held = [HeldTask("t0", "alice", 1, 1, None, sweep="sweep-1")]
    queued = [QueuedTask(f"t{i}", "alice", 0, i, 1, 1, sweep="sweep-1") for i in (1, 2, 3)]
    queued.append(q("other", "alice", age=9, gpus=1))
    p = plan(queued, held, nodes(1), lim)
    assert started(p) == ["t1", "other"]
    assert p.pending == {t: "sweep limit: sweep-1 runs 2 trials at a time (its max_concurrent)" for t in ("t2", "t3")}
    assert started(plan(queued, held, nodes(1), Limits(64, 0))) == ["t1", "t2", "t3", "other"]  # sweep ended


def test_a_users_own_order_is_kept_under_the_gpu_limit():
    """alice's big task waits for her limit; her later small task must not overtake it (Slurm-like)."""
    lim = Limits(64, 16, max_gpus_per_user=16)
    held = [h("a1", "alice", gpus=8)]
    queued = [q("big", "alice", gpus=16, age=1), q("small", "alice", gpus=4, age=2), q("cpu", "alice", age=3)]
    p = plan(queued, held, nodes(4), lim)
    assert started(p) == ["cpu"]  # a CPU job holds no GPU: the GPU limit does not hold it back
    assert p.pending["big"] == "user limit: 8 GPUs held, this task needs 16 (max 16)"
    assert p.pending["small"] == "user limit: 8 GPUs held (max 16); big of the same user waits first"


def test_a_task_larger_than_the_limit_says_so_and_blocks_nobody():
    lim = Limits(64, 16, max_gpus_per_user=8)
    p = plan([q("huge", "alice", nnodes=2, gpus=8), q("small", "alice", gpus=4, age=1)], [], nodes(4), lim)
    assert started(p) == ["small"]
    assert p.pending["huge"].startswith("user limit: this task needs 16 GPUs, more than the user's limit of 8")


def test_a_users_own_limits_replace_the_defaults_and_zero_means_none():
    own = {"alice": UserLimits(max_gpus=32, max_running=None), "bob": UserLimits(max_gpus=None, max_running=1)}
    lim = Limits(64, 0, max_gpus_per_user=8, users=own)
    queued = [q(f"a{i}", "alice", gpus=8, age=i) for i in range(5)] + [q(f"b{i}", "bob", age=10 + i) for i in range(3)]
    queued += [q(f"c{i}", "carol", gpus=8, age=20 + i) for i in range(2)]
    p = plan(queued, [], nodes(16), lim)
    assert sorted(started(p)) == ["a0", "a1", "a2", "a3", "b0", "c0"]  # alice 32 GPUs, bob 1 task, carol 8 GPUs
    assert p.pending["a4"] == "user limit: 32 GPUs held, this task needs 8 (max 32)"
    assert p.pending["b1"] == "user limit: 1 running task"
    assert p.pending["c1"] == "user limit: 8 GPUs held, this task needs 8 (max 8)"


def test_priority_still_orders_a_users_tasks_under_the_limit():
    lim = Limits(64, 16, max_gpus_per_user=8)
    p = plan([q("old", "alice", gpus=8, age=0), q("urgent", "alice", prio=5, gpus=8, age=1)], [], nodes(2), lim)
    assert started(p) == ["urgent"]
    assert p.pending["old"] == "user limit: 8 GPUs held, this task needs 8 (max 8)"


def test_no_limit_by_default():
    p = plan([q(f"a{i}", "alice", gpus=8, age=i) for i in range(4)], [], nodes(4), Limits(64, 16))
    assert len(started(p)) == 4 and not p.pending


# ---------------------------------------------------------------- the real loop


def set_limits(ctx, name: str, **kw) -> None:
    with ctx.db.session() as s:
        u = s.query(UserModel).filter_by(name=name).one()
        for k, v in kw.items():
            setattr(u, k, v)


def run_to_running(ctx, ray, submit, monitor) -> None:
    submit.run_once()
    for sid, info in list(ray.jobs.items()):
        if info.status == RayJobStatus.PENDING:
            ray.set(sid, RayJobStatus.RUNNING, start_time_ms=1, driver_node_id="w1")
    monitor.run_once()


def test_limits_block_and_release_as_tasks_end(db_ctx):  # noqa: F811 - the imported fixture
    """On SQLite and PostgreSQL (``db_ctx``: one 8-GPU worker)."""
    ctx, ray, clock = db_ctx
    alice, bob = add_user(ctx, "alice"), add_user(ctx, "bob")
    set_limits(ctx, "alice", max_gpus=4)
    a1 = add_task(ctx, alice, gpus=2)
    a2 = add_task(ctx, alice, gpus=2, created_offset_s=1)
    a3 = add_task(ctx, alice, gpus=2, created_offset_s=2)
    b1 = add_task(ctx, bob, gpus=2, created_offset_s=3)
    submit, monitor = SubmitQueuedTasks(ctx), MonitorActiveTasks(ctx)
    run_to_running(ctx, ray, submit, monitor)
    assert {t: task(ctx, t).status for t in (a1, a2, a3, b1)} == {
        a1: "RUNNING", a2: "RUNNING", a3: "QUEUED", b1: "RUNNING"}
    assert task(ctx, a3).pending_reason == "user limit: 4 GPUs held, this task needs 2 (max 4)"
    submit.run_once()  # a steady pass: the reason stays
    assert task(ctx, a3).status == "QUEUED"

    # one of alice's tasks ends: her limit releases and a3 starts on the next pass
    clock.advance(30)
    ray.set(f"{a1}-a1", RayJobStatus.SUCCEEDED, driver_exit_code=0)
    monitor.run_once()
    assert task(ctx, a1).status == "SUCCEEDED"
    submit.run_once()
    assert task(ctx, a3).status == "SUBMITTED"

    # an admin raises the limit to nothing (null = default: no GPU limit): her next task starts at once
    a4 = add_task(ctx, alice, gpus=2, created_offset_s=4)
    submit.run_once()
    assert task(ctx, a4).status == "QUEUED" and task(ctx, a4).pending_reason.startswith("user limit: 4 GPUs held")
    set_limits(ctx, "alice", max_gpus=None)
    submit.run_once()
    assert task(ctx, a4).status == "SUBMITTED"


def test_running_task_limit_of_one_user(ctx, ray):
    alice = add_user(ctx, "alice")
    set_limits(ctx, "alice", max_running_tasks=1)
    t1, t2 = add_task(ctx, alice), add_task(ctx, alice, created_offset_s=1)
    submit = SubmitQueuedTasks(ctx)
    submit.run_once()
    assert task(ctx, t1).status == "SUBMITTED"
    assert (task(ctx, t2).status, task(ctx, t2).pending_reason) == ("QUEUED", "user limit: 1 running task")
    ray.set(f"{t1}-a1", RayJobStatus.SUCCEEDED, driver_exit_code=0)
    MonitorActiveTasks(ctx).run_once()
    submit.run_once()
    assert task(ctx, t2).status == "SUBMITTED"


def test_the_loop_starts_a_sweeps_trials_max_concurrent_at_a_time(db_ctx):  # noqa: F811
    """Issue 38, on SQLite and PostgreSQL: the submit loop reads the running sweeps' limits; the limit goes with
    the sweep (an ended sweep's leftover trials are not held back)."""
    from argus.db.models import SweepModel, TaskModel, utcnow

    ctx, ray, clock = db_ctx
    alice = add_user(ctx, "alice")
    trials = [add_task(ctx, alice, gpus=1, created_offset_s=i) for i in range(3)]
    with ctx.db.session() as s:
        s.add(SweepModel(id="sweep-x", user_id=alice, name="x", spec_raw="", spec={}, status="RUNNING",
                         max_concurrent=2, created_at=utcnow()))
        for i, tid in enumerate(trials):
            s.get(TaskModel, tid).sweep_id, s.get(TaskModel, tid).sweep_trial = "sweep-x", i
    submit, monitor = SubmitQueuedTasks(ctx), MonitorActiveTasks(ctx)
    run_to_running(ctx, ray, submit, monitor)
    assert [task(ctx, t).status for t in trials] == ["RUNNING", "RUNNING", "QUEUED"]
    assert task(ctx, trials[2]).pending_reason == "sweep limit: sweep-x runs 2 trials at a time (its max_concurrent)"
    clock.advance(30)
    ray.set(f"{trials[0]}-a1", RayJobStatus.SUCCEEDED, driver_exit_code=0)
    monitor.run_once()
    submit.run_once()
    assert task(ctx, trials[2]).status == "SUBMITTED"
