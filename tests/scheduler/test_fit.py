"""The fit counts CPUs and memory, not only GPUs (issue 15): the pure policy, then the submit loop on a fake Ray."""

from __future__ import annotations

import itertools

import pytest

from argus.scheduler.policy import HeldTask, Limits, NodeState, QueuedTask, plan
from argus.scheduler.submit import SubmitQueuedTasks
from tests.pg import create_database
from tests.scheduler.fakes import FakeRay, add_task, add_user, make_ctx, task

LIM = Limits(max_running=64, max_running_per_user=16)
GiB = 2**30
_n = itertools.count()


def q(tid: str, *, gpus: int = 0, cpus: float = 0, mem: int = 0, nnodes: int = 1, user: str = "u",
      age: int = 0) -> QueuedTask:
    return QueuedTask(tid, user, 0, age, nnodes, gpus, cpus, mem)


def node(name: str, gpus: int, cpus: float | None, mem: int | None = None, *, cpus_free: float | None = None,
         mem_free: int | None = None) -> NodeState:
    return NodeState(name, True, gpus, gpus, cpus, cpus if cpus_free is None else cpus_free, mem,
                     mem if mem_free is None else mem_free)


def started(p) -> list[str]:
    return [pl.task_id for pl in p.placements]


def test_a_cpu_hungry_task_waits_with_a_cpu_reason_while_a_smaller_one_runs() -> None:
    p = plan([q("big", gpus=8, cpus=34, age=0), q("small", gpus=4, cpus=4, age=1)], [],
             [node("node-a", 8, 16)], LIM)
    assert started(p) == ["small"]
    assert p.pending["big"] == ("needs 1 node × 8 GPUs, 34 CPUs; the largest worker has 16 CPUs (lower "
                                "cpus_per_node/memory_per_node in the spec, or wait for bigger nodes to join)")
    assert p.reserved_for is None  # it can never fit: it holds nothing back


def test_the_reason_names_the_node_and_the_short_resource() -> None:
    held = [HeldTask("h", "v", 1, 0, (), 12.0, 0)]  # a CPU job whose driver sits somewhere: charged on node-a
    p = plan([q("t", gpus=8, cpus=12)], held, [node("node-a", 8, 16)], LIM)
    assert started(p) == []
    assert p.pending["t"] == "needs 1 node × 8 GPUs, 12 CPUs; free: node-a 8 GPUs but 4 CPUs"
    assert p.reserved_for is None  # GPUs are not what it waits for


def test_held_tasks_subtract_their_cpus_on_their_nodes() -> None:
    nodes = [node("a", 8, 16), node("b", 8, 16)]
    held = [HeldTask("h", "v", 1, 4, ("a",), 14.0, 0)]
    p = plan([q("t", gpus=4, cpus=8)], held, nodes, LIM)
    assert [pl.nodes for pl in p.placements] == [("b",)]  # a has 4 GPUs but only 2 CPUs left


def test_ray_reported_usage_counts_too() -> None:
    # nothing Argus placed, but Ray says 14 of a's CPUs are reserved (another job, a leftover actor)
    p = plan([q("t", gpus=1, cpus=4)], [], [node("a", 8, 16, cpus_free=2), node("b", 8, 16)], LIM)
    assert [pl.nodes for pl in p.placements] == [("b",)]


def test_gang_members_share_a_node_only_when_its_cpus_hold_both() -> None:
    p = plan([q("t", gpus=4, cpus=10, nnodes=2)], [], [node("a", 8, 16), node("b", 8, 16)], LIM)
    assert sorted(p.placements[0].nodes) == ["a", "b"]  # 8 GPUs on a, but 2 × 10 CPUs do not fit there
    p = plan([q("t", gpus=4, cpus=10, nnodes=2)], [], [node("a", 8, 16)], LIM)
    assert started(p) == [] and p.pending["t"] == (
        "needs 2 nodes × 4 GPUs, 10 CPUs; free: a 8 GPUs, 16 CPUs "
        "(more than the cluster holds even empty: waiting for nodes to join)")


def test_memory_is_counted_like_cpus() -> None:
    p = plan([q("t", gpus=1, mem=64 * GiB)], [], [node("a", 8, None, 256 * GiB, mem_free=32 * GiB)], LIM)
    assert p.pending["t"] == "needs 1 node × 1 GPU, 64 GiB memory; free: a 8 GPUs but 32 GiB memory"


def test_cpu_jobs_need_a_node_with_their_cpus() -> None:
    nodes = [node("a", 0, 2)]
    p = plan([q("j1", cpus=1, age=0), q("j2", cpus=1, age=1), q("j3", cpus=1, age=2), q("light", age=3)], [],
             nodes, LIM)
    assert started(p) == ["j1", "j2", "light"]  # a job that reserves nothing never waits for CPUs
    assert p.pending["j3"] == "needs 1 node × 1 CPU; free: a 0 CPUs"


def test_nodes_that_report_no_cpus_keep_the_fit_gpu_only() -> None:
    p = plan([q("t", gpus=8, cpus=1000)], [], [NodeState("a", True, 8, 8)], LIM)
    assert started(p) == ["t"]


def test_a_gpu_blocked_task_that_fits_by_cpu_still_reserves() -> None:
    held = [HeldTask("h", "v", 1, 8, ("a",), 4.0, 0)]
    p = plan([q("big", gpus=8, cpus=8, age=0), q("small", gpus=1, cpus=1, age=1)], held,
             [node("a", 8, 16), node("b", 4, 16)], LIM)
    assert p.reserved_for == "big" and started(p) == ["small"]


# ---------------------------------------------------------------- the submit loop on a fake Ray


def test_loop_keeps_the_hungry_task_queued_with_the_reason_and_reserves_cpus_in_ray(settings, clock) -> None:
    ray = FakeRay()
    ray.add_node("w1", 4, cpus=8, memory=64 * GiB)
    ctx = make_ctx(settings, ray, clock)
    try:
        uid = add_user(ctx, "alice")
        hungry = add_task(ctx, uid, gpus=4, cpus=16, entry_module="my.trainer",
                          argv=["bash", "-lc", "python3 -m my.trainer"])
        small = add_task(ctx, uid, gpus=1, cpus=3, memory=8 * GiB, entry_module="my.trainer",
                         argv=["bash", "-lc", "python3 -m my.trainer"], created_offset_s=1)
        merger = add_task(ctx, uid, cpus=2, entry_module="verl.model_merger",
                          argv=["bash", "-lc", "python3 -m verl.model_merger merge"], created_offset_s=2)
        assert SubmitQueuedTasks(ctx).run_once() == 2
        assert task(ctx, hungry).status == "QUEUED"
        assert task(ctx, hungry).pending_reason == (
            "needs 1 node × 4 GPUs, 16 CPUs; the largest worker has 8 CPUs (lower cpus_per_node/memory_per_node "
            "in the spec, or wait for bigger nodes to join)")
        subs = {s.submission_id.rsplit("-a", 1)[0]: s for s in ray.submissions}
        assert set(subs) == {small, merger}
        # driver-held programs reserve in Ray what the policy counted, so Ray and Argus agree
        assert (subs[small].entrypoint_num_cpus, subs[small].entrypoint_memory) == (3, 8 * GiB)
        assert (subs[merger].entrypoint_num_cpus, subs[merger].entrypoint_memory) == (2, 0)
    finally:
        ctx.db.dispose()


def test_loop_ppo_launcher_holds_the_tasks_cpus_for_its_private_ray(settings, clock) -> None:
    ray = FakeRay()
    ray.add_node("w1", 8, cpus=64)
    ctx = make_ctx(settings, ray, clock)
    try:
        uid = add_user(ctx, "alice")
        ppo = add_task(ctx, uid, gpus=8, entry_module="verl.trainer.main_ppo",
                       argv=["bash", "-lc", "python3 -m verl.trainer.main_ppo trainer.n_gpus_per_node=8"])
        tiny = add_task(ctx, uid, gpus=0, cpus=40, entry_module="verl.model_merger",
                        argv=["bash", "-lc", "python3 -m verl.model_merger merge"], created_offset_s=1)
        assert SubmitQueuedTasks(ctx).run_once() == 1  # an old-style row: main_ppo's default, 34 CPUs
        # the launcher holds the task's whole share; the task's private Ray hands it out (issue 21)
        assert (ray.submissions[0].entrypoint_num_cpus, ray.submissions[0].entrypoint_num_gpus) == (34, 8)
        assert task(ctx, tiny).pending_reason == "needs 1 node × 40 CPUs; free: w1 30 CPUs"
        assert task(ctx, ppo).status == "SUBMITTED"
    finally:
        ctx.db.dispose()


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_the_need_is_read_from_the_resolved_spec_on_both_databases(request, backend, settings, clock) -> None:
    """The queue reads ``resources_per_node`` with a JSON path (no whole-spec load) on SQLite and PostgreSQL."""
    if backend == "postgres":
        admin = request.getfixturevalue("pg_admin_url")
        url = create_database(admin, f"argus_fit_{next(_n)}")
        settings = settings.model_copy(update={"database_url": url})
    ray = FakeRay()
    ray.add_node("w1", 8, cpus=10, memory=16 * GiB)
    ctx = make_ctx(settings, ray, clock)
    try:
        uid = add_user(ctx, "alice")
        a = add_task(ctx, uid, cpus=6, memory=4 * GiB)
        b = add_task(ctx, uid, cpus=6, created_offset_s=1)  # 4 CPUs left after a
        c = add_task(ctx, uid, cpus=0.5, memory=13 * GiB, created_offset_s=2)  # 12 GiB left after a
        d = add_task(ctx, uid, cpus=3.5, memory=12 * GiB, created_offset_s=3)
        assert SubmitQueuedTasks(ctx).run_once() == 2
        assert task(ctx, a).status == task(ctx, d).status == "SUBMITTED"
        # each reason is what was free when the task's turn came (d then took the rest)
        assert task(ctx, b).pending_reason == "needs 1 node × 6 CPUs; free: w1 4 CPUs"
        assert task(ctx, c).pending_reason == "needs 1 node × 0.5 CPUs, 13 GiB memory; free: w1 12 GiB memory"
    finally:
        ctx.db.dispose()
