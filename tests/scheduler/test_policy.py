"""The pure ordering/fit policy: table-driven, no I/O."""

from __future__ import annotations

import pytest

from argus.scheduler.fairshare import Usage
from argus.scheduler.policy import (
    HeldTask,
    Limits,
    NodeState,
    QueuedTask,
    describe_free,
    free_gpus,
    plan,
    take,
)

LIM = Limits(max_running=64, max_running_per_user=16)


def q(tid: str, user: str = "u", prio: int = 0, age: int = 0, nnodes: int = 1, gpus: int = 0) -> QueuedTask:
    return QueuedTask(tid, user, prio, age, nnodes, gpus)


def h(tid: str, user: str = "u", nnodes: int = 1, gpus: int = 0, nodes: tuple[str, ...] | None = ()) -> HeldTask:
    return HeldTask(tid, user, nnodes, gpus, nodes)


def n(node: str, total: int, free: int | None = None, alive: bool = True) -> NodeState:
    return NodeState(node, alive, total, total if free is None else free)


def started(p) -> list[str]:
    return [pl.task_id for pl in p.placements]


# ---------------------------------------------------------------- helpers


@pytest.mark.parametrize(
    "free, expected",
    [
        ([], "none"),
        ([0, 0], "none"),
        ([4], "1 node × 4 GPUs"),
        ([4, 4, 1], "2 nodes × 4 GPUs, 1 node × 1 GPU"),
        ([1, 0, 2], "1 node × 2 GPUs, 1 node × 1 GPU"),
    ],
)
def test_describe_free(free, expected):
    assert describe_free(free) == expected


@pytest.mark.parametrize(
    "free, nnodes, gpus, expected, left",
    [
        ({"a": 4, "b": 2}, 1, 2, ("b",), {"a": 4, "b": 0}),  # best fit keeps the big node whole
        ({"a": 4, "b": 2}, 1, 4, ("a",), {"a": 0, "b": 2}),
        ({"a": 4, "b": 4}, 2, 4, ("a", "b"), {"a": 0, "b": 0}),
        ({"a": 8}, 2, 4, ("a", "a"), {"a": 0}),  # two gang members on one big node
        ({"a": 4, "b": 3}, 2, 4, None, {"a": 4, "b": 3}),  # no partial take
        ({"a": 3, "b": 3}, 1, 4, None, {"a": 3, "b": 3}),  # 6 free but never 4 on one node
    ],
)
def test_take(free, nnodes, gpus, expected, left):
    assert take(free, nnodes, gpus) == expected
    assert free == left


# ---------------------------------------------------------------- ledger


@pytest.mark.parametrize(
    "nodes, held, expected",
    [
        ([n("a", 4)], [], {"a": 4}),
        ([n("a", 4)], [h("t", gpus=2, nodes=("a",))], {"a": 2}),
        # Ray says less is free than the ledger (GPUs used elsewhere): the smaller wins
        ([n("a", 4, free=1)], [h("t", gpus=2, nodes=("a",))], {"a": 1}),
        # Ray has not seen the just-submitted job yet: the ledger wins
        ([n("a", 4, free=4)], [h("t", gpus=4, nodes=("a",))], {"a": 0}),
        # unknown placement: charged best-fit, on the node where it fits tightest
        ([n("a", 4), n("b", 2)], [h("t", gpus=2, nodes=None)], {"a": 4, "b": 0}),
        # unknown and fits nowhere in the ledger: charged against the largest nodes anyway
        ([n("a", 2), n("b", 1)], [h("t", nnodes=2, gpus=2, nodes=None)], {"a": 0, "b": 0}),
        # dead nodes are not offered; held tasks on them are ignored
        ([n("a", 4, alive=False), n("b", 4)], [h("t", gpus=4, nodes=("a",))], {"b": 4}),
        # CPU jobs hold no GPUs
        ([n("a", 4)], [h("t", gpus=0, nodes=())], {"a": 4}),
    ],
)
def test_free_gpus(nodes, held, expected):
    assert free_gpus(nodes, held) == expected


# ---------------------------------------------------------------- ordering


def test_priority_then_age():
    p = plan([q("old", age=1), q("new", age=2), q("urgent", prio=5, age=3)], [], [n("a", 0)],
             Limits(max_running=2, max_running_per_user=10))
    assert started(p) == ["urgent", "old"]
    assert p.pending == {"new": "cluster limit: 2 running tasks"}


def test_fair_share_interleaves_users_within_a_pass():
    queued = [q(f"a{i}", "alice", age=i) for i in range(3)] + [q(f"b{i}", "bob", age=10 + i) for i in range(3)]
    p = plan(queued, [], [n("w", 0)], LIM)
    assert started(p) == ["a0", "b0", "a1", "b1", "a2", "b2"]


def test_fair_share_counts_gpus_in_use_first():
    # bob is older but already holds 4 GPUs; alice holds none, so she goes first
    held = [h("x", "bob", gpus=4, nodes=("w",))]
    p = plan([q("b", "bob", age=0, gpus=1), q("a", "alice", age=5, gpus=1)], held, [n("w", 8)],
             Limits(max_running=2, max_running_per_user=10))
    assert started(p) == ["a"]
    assert p.pending["b"].startswith("cluster limit")


def test_fair_share_beats_priority_across_users():
    # issue 11 replaced "priority first": priority is the owner's own knob, so bob's priority 1
    # cannot jump alice, who holds nothing while bob holds 4 GPUs
    held = [h("x", "bob", gpus=4, nodes=("w",))]
    p = plan([q("b", "bob", prio=1, gpus=1), q("a", "alice", gpus=1)], held, [n("w", 8)],
             Limits(max_running=2, max_running_per_user=10))
    assert started(p) == ["a"]


def test_priority_decides_between_users_of_equal_usage():
    p = plan([q("b", "bob", prio=1, age=9, gpus=1), q("a", "alice", age=0, gpus=1)], [], [n("w", 8)],
             Limits(max_running=1, max_running_per_user=10))
    assert started(p) == ["b"]


def test_past_usage_goes_last_even_with_older_tasks():
    usage = {"bob": Usage(gpu_s=3600.0), "carol": Usage(gpu_s=10.0)}
    queued = [q("b", "bob", age=0, gpus=1), q("c", "carol", age=1, gpus=1), q("a", "alice", age=2, gpus=1)]
    p = plan(queued, [], [n("w", 2)], LIM, usage=usage)
    assert started(p) == ["a", "c"]
    assert p.pending["b"].startswith("needs 1 node × 1 GPU")


def test_gpu_and_cpu_usage_are_separate_pools():
    # bob's GPU history does not hold back his CPU job (the doctor), nor alice's CPU history her GPU task
    usage = {"bob": Usage(gpu_s=1e6), "alice": Usage(cpu_s=1e6)}
    p = plan([q("bc", "bob", age=0, gpus=0), q("ac", "alice", age=1, gpus=0)], [], [n("w", 0)],
             Limits(max_running=1, max_running_per_user=10), usage=usage)
    assert started(p) == ["bc"]
    p = plan([q("ag", "alice", age=1, gpus=1), q("bg", "bob", age=0, gpus=1)], [], [n("w", 4)],
             Limits(max_running=1, max_running_per_user=10), usage=usage)
    assert started(p) == ["ag"]


def test_within_a_user_priority_then_age():
    p = plan([q("t1", age=1), q("t2", age=2, prio=3), q("t3", age=0)], [], [n("w", 0)], LIM)
    assert started(p) == ["t2", "t3", "t1"]


# ---------------------------------------------------------------- fit and reasons


@pytest.mark.parametrize(
    "nodes, task, reason",
    [
        ([], q("t", gpus=1), "no worker nodes in the Ray cluster"),
        ([n("a", 0, alive=False)], q("t"), "no worker nodes in the Ray cluster"),
        ([n("a", 0)], q("t", gpus=1), "0 GPUs in the cluster"),
        ([n("a", 4)], q("t", nnodes=2, gpus=4),
         "needs 2 nodes × 4 GPUs; the cluster has 1 node × 4 GPUs (waiting for nodes to join)"),
        ([n("a", 4, free=1)], q("t", gpus=2), "needs 1 node × 2 GPUs; free: 1 node × 1 GPU"),
        ([n("a", 4), n("b", 4, free=0)], q("t", nnodes=2, gpus=4), "needs 2 nodes × 4 GPUs; free: 1 node × 4 GPUs"),
        ([n("a", 4, free=0), n("b", 4, free=0)], q("t", gpus=1), "needs 1 node × 1 GPU; free: none"),
    ],
)
def test_pending_reasons(nodes, task, reason):
    p = plan([task], [], nodes, LIM)
    assert p.placements == []
    assert p.pending == {"t": reason}


def test_unreachable_cluster_keeps_everything_queued_with_the_error():
    p = plan([q("a"), q("b")], [], [], LIM, cluster_error="connection refused")
    assert p.placements == []
    assert p.pending == {"a": "Ray cluster unreachable: connection refused",
                         "b": "Ray cluster unreachable: connection refused"}


def test_gang_fits_and_is_placed_on_distinct_nodes():
    p = plan([q("t", nnodes=2, gpus=4)], [], [n("a", 4), n("b", 4)], LIM)
    assert p.placements[0].nodes == ("a", "b")


def test_cpu_jobs_share_worker_nodes_even_when_gpus_are_full():
    held = [h("x", gpus=4, nodes=("a",))]
    p = plan([q("cpu1"), q("cpu2")], held, [n("a", 4)], LIM)
    assert started(p) == ["cpu1", "cpu2"]
    assert all(pl.nodes == () for pl in p.placements)


def test_ledger_blocks_double_booking_within_one_pass():
    p = plan([q("t1", gpus=3, age=0), q("t2", gpus=3, age=1)], [], [n("a", 4)], LIM)
    assert started(p) == ["t1"]
    assert p.pending["t2"] == "needs 1 node × 3 GPUs; free: 1 node × 1 GPU"


def test_user_limit_only_blocks_that_user():
    held = [h(f"x{i}", "alice") for i in range(2)]
    p = plan([q("a", "alice"), q("a2", "alice", age=1), q("b", "bob")], held, [n("w", 0)],
             Limits(max_running=10, max_running_per_user=2))
    assert started(p) == ["b"]
    assert p.pending == {"a": "user limit: 2 running tasks", "a2": "user limit: 2 running tasks"}


def test_user_limit_reached_during_the_pass():
    p = plan([q(f"t{i}", age=i) for i in range(3)], [], [n("w", 0)], Limits(max_running=10, max_running_per_user=1))
    assert started(p) == ["t0"]
    assert p.pending == {"t1": "user limit: 1 running task", "t2": "user limit: 1 running task"}


def test_global_limit_counts_held_tasks():
    held = [h("x", "bob")]
    p = plan([q("a", "alice")], held, [n("w", 0)], Limits(max_running=1, max_running_per_user=5))
    assert p.pending == {"a": "cluster limit: 1 running task"}


# ---------------------------------------------------------------- head of line


def test_big_head_reserves_its_nodes_but_small_tasks_backfill_elsewhere():
    # big needs 2×4 and nothing has 4 free: a is half used by Argus, b and c are partly used
    # outside the plan (Ray reports less free). big reserves the two nodes closest to
    # satisfying it (c: 3 free, then a: 2, ties by name); small tasks backfill b only.
    held = [h("x", gpus=2, nodes=("a",))]
    nodes = [n("a", 4), n("b", 4, free=2), n("c", 4, free=3)]
    queued = [q("big", prio=5, nnodes=2, gpus=4), q("s1", age=1, gpus=2), q("s2", age=2, gpus=2)]
    p = plan(queued, held, nodes, LIM)
    assert p.reserved_for == "big"
    assert p.pending["big"] == "needs 2 nodes × 4 GPUs; free: 1 node × 3 GPUs, 2 nodes × 2 GPUs"
    assert started(p) == ["s1"]
    assert p.placements[0].nodes == ("b",)
    assert p.pending["s2"] == ("needs 1 node × 2 GPUs; free: none "
                               "(more GPUs are held back for big, ahead in the queue)")


def test_without_a_blocked_head_small_tasks_use_everything():
    p = plan([q("s1", gpus=2), q("s2", gpus=2, age=1)], [], [n("a", 2), n("b", 2)], LIM)
    assert started(p) == ["s1", "s2"] and p.reserved_for is None


def test_task_larger_than_the_cluster_reserves_nothing():
    p = plan([q("huge", prio=9, nnodes=4, gpus=8), q("small", gpus=1, age=1)], [], [n("a", 4)], LIM)
    assert p.reserved_for is None
    assert started(p) == ["small"]
    assert "waiting for nodes to join" in p.pending["huge"]


def test_only_one_reservation_per_pass():
    held = [h("x", gpus=4, nodes=("a",))]
    queued = [q("big1", gpus=4, age=0), q("big2", gpus=4, age=1), q("s", gpus=1, age=2)]
    p = plan(queued, held, [n("a", 4), n("b", 4, free=3)], LIM)
    assert p.reserved_for == "big1"
    # big1 reserved b (most free); nothing else left for s
    assert started(p) == []
    assert "held back for big1" in p.pending["s"]


def test_cpu_jobs_ignore_reservations():
    held = [h("x", gpus=4, nodes=("a",))]
    p = plan([q("big", gpus=4), q("cpu", age=1)], held, [n("a", 4)], LIM)
    assert started(p) == ["cpu"]


def test_many_users_and_tasks_place_exactly_capacity():
    queued = [q(f"t{u}-{i}", f"user{u}", age=i, gpus=1) for u in range(10) for i in range(20)]
    nodes = [n(f"w{i}", 8) for i in range(4)]
    p = plan(queued, [], nodes, LIM)
    assert len(p.placements) == 32
    assert len(p.pending) == 200 - 32
    per_user = {}
    for pl in p.placements:
        user = pl.task_id.split("-")[0]
        per_user[user] = per_user.get(user, 0) + 1
    assert sorted(per_user.values()) == [3, 3, 3, 3, 3, 3, 3, 3, 4, 4]  # fair: no user more than one ahead
