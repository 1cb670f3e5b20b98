"""Queue position and ETA (core/eta.py): hand-built queues, pure, no I/O."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from argus.core.eta import (
    Inputs,
    estimate,
    expected_end,
    positions,
    start_step,
    step_rate,
    total_steps,
)
from argus.core.scheduling.fairshare import Usage
from argus.core.scheduling.policy import HeldTask, Limits, NodeState, QueuedTask, UserLimits, fair_order

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
LIM = Limits(max_running=64, max_running_per_user=0)


def q(tid: str, user: str = "u", gpus: int = 1, nnodes: int = 1, prio: int = 0, age: int = 0) -> QueuedTask:
    return QueuedTask(tid, user, prio, age, nnodes, gpus)


def h(tid: str, nodes: tuple[str, ...], user: str = "r", gpus: int = 1) -> HeldTask:
    return HeldTask(tid, user, len(nodes), gpus, nodes)


def node(name: str, total: int, free: int | None = None) -> NodeState:
    return NodeState(name, True, total, total if free is None else free)


def mins(n: float) -> datetime:
    return NOW + timedelta(minutes=n)


def run(queued, held, nodes, ends, limits=LIM, usage=None, error=None):  # noqa: ANN001, ANN201
    return estimate(Inputs(queued, held, nodes, limits, usage or {}, error), ends, now=NOW)


# ------------------------------------------------------------------ a running task's progress

def test_total_steps_comes_from_the_last_override_of_the_command() -> None:
    assert total_steps(["python3", "-m", "verl.trainer.main_ppo", "trainer.total_training_steps=500"]) == 500
    assert total_steps(["bash", "-lc", "python3 -m argus.jobs.steps trainer.total_training_steps=5 "
                        "+trainer.total_training_steps=9"]) == 9
    assert total_steps(["python3", "-m", "verl.trainer.main_ppo", "trainer.total_epochs=3"]) is None  # epochs: unknown
    assert total_steps(["x", "trainer.total_training_steps=null"]) is None
    assert total_steps(["x", "trainer.total_training_steps=${oc.env:N}"]) is None
    assert total_steps(["x", "trainer.total_training_steps=0"]) is None


def test_a_resumed_attempt_starts_after_its_checkpoint_step() -> None:
    argv = ["bash", "-lc", "python3 -m argus.jobs.steps trainer.resume_mode=resume_path "
            "trainer.resume_from_path=/h/jobs/t/checkpoints/global_step_40"]
    assert start_step(argv) == 40
    assert start_step(["python3", "-m", "verl.trainer.main_ppo"]) == 0


def test_step_rate_prefers_verls_own_step_times_over_the_recent_steps() -> None:
    assert step_rate([100.0] * 30 + [10.0] * 20, steps_done=50, elapsed_s=9999) == 0.1  # the last 20 steps
    assert step_rate([], steps_done=30, elapsed_s=600) == 0.05  # since the attempt started
    assert step_rate([float("nan")], steps_done=0, elapsed_s=600) is None
    assert step_rate([], steps_done=10, elapsed_s=0) is None


def test_expected_end_from_the_last_step_never_before_now() -> None:
    assert expected_end(NOW, step=120, total=500, rate=380 / 3600 / 10) == NOW + timedelta(hours=10)
    assert expected_end(NOW, step=10, total=20, rate=1.0, step_at=NOW - timedelta(seconds=4)) == NOW + timedelta(seconds=6)
    assert expected_end(NOW, step=10, total=20, rate=1.0, step_at=NOW - timedelta(hours=1)) == NOW  # overdue: now
    assert expected_end(NOW, step=None, total=20, rate=1.0) is None
    assert expected_end(NOW, step=3, total=None, rate=1.0) is None
    assert expected_end(NOW, step=3, total=20, rate=None) is None


# ------------------------------------------------------------------ order and competing sets

def test_positions_follow_the_schedulers_fair_share_order_not_age() -> None:
    queued = [q("a1", "alice", age=1), q("a2", "alice", age=2), q("b1", "bob", age=3), q("a0", "alice", prio=5, age=9)]
    usage = {"alice": Usage(gpu_s=1000.0)}
    order = fair_order(queued, [], usage)
    assert [t.task_id for t in order] == ["b1", "a0", "a1", "a2"]  # bob used less; alice's own by priority, age
    est = run(queued, [], [node("n", 8, 0)], {}, usage=usage)
    assert [(tid, est[tid].position, est[tid].ahead, est[tid].competing) for tid in ("b1", "a0", "a1", "a2")] == [
        ("b1", 1, 0, 4), ("a0", 2, 1, 4), ("a1", 3, 2, 4), ("a2", 4, 3, 4)]


def test_gpu_tasks_and_cpu_jobs_compete_only_among_themselves() -> None:
    queued = [q("g1", age=1), q("c1", gpus=0, age=2), q("g2", age=3), q("c2", gpus=0, age=4), q("g3", age=5)]
    pos = positions(fair_order(queued, []), [node("n", 8)])
    assert pos == {"g1": (1, 0, 3, "GPU"), "c1": (1, 0, 2, "CPU"), "g2": (2, 1, 3, "GPU"),
                   "c2": (2, 1, 2, "CPU"), "g3": (3, 2, 3, "GPU")}


def test_a_task_bigger_than_any_node_holds_nobody_up_and_its_start_is_unknown() -> None:
    nodes = [node("a", 4, 0), node("b", 4, 0)]
    queued = [q("small1", age=1), q("huge", gpus=8, age=2), q("wide", gpus=4, nnodes=3, age=3), q("small2", age=4)]
    held = [h("r1", ("a",), gpus=4), h("r2", ("b",), gpus=4)]
    est = run(queued, held, nodes, {"r1": mins(10), "r2": mins(30)})
    assert (est["huge"].position, est["huge"].ahead) == (2, 1)  # behind small1, which fits
    assert (est["wide"].position, est["wide"].ahead) == (2, 1)  # 3 nodes × 4 on a 2-node cluster: never fits
    assert (est["small2"].position, est["small2"].ahead, est["small2"].competing) == (2, 1, 2)  # neither counts
    for big in ("huge", "wide"):
        assert est[big].eta is None and "cannot hold this task even when empty" in est[big].reason.text
    assert est["small1"].eta == mins(10) and est["small2"].eta == mins(10)  # both fit node a once r1 ends


def test_a_task_whose_cpus_no_node_has_holds_nobody_up_either() -> None:
    nodes = [NodeState("a", True, 8, 8, cpus_total=16.0, cpus_free=16.0)]
    queued = [QueuedTask("greedy", "u", 0, 1, 1, 1, 64.0), QueuedTask("fine", "u", 0, 2, 1, 1, 4.0),
              QueuedTask("cpu-greedy", "u", 0, 3, 1, 0, 64.0), QueuedTask("cpu-fine", "u", 0, 4, 1, 0, 1.0)]
    est = run(queued, [], nodes, {})
    assert (est["fine"].position, est["fine"].competing, est["fine"].eta) == (1, 1, NOW)  # greedy counts for nobody
    assert (est["cpu-fine"].position, est["cpu-fine"].eta) == (1, NOW)
    for big in ("greedy", "cpu-greedy"):
        assert (est[big].position, est[big].competing, est[big].eta) == (1, 2, None)
        assert "even when empty" in est[big].reason.text


def test_with_an_unknown_cluster_every_gpu_task_counts() -> None:
    queued = [q("huge", gpus=64, age=1), q("small", age=2)]
    est = run(queued, [], [node("n", 8)], {}, error="connection refused")
    assert est["small"].position == 2 and est["small"].eta is None
    assert est["small"].reason.text == "unknown: the Ray cluster is unreachable"


# ------------------------------------------------------------------ the estimated start

def test_a_task_that_fits_now_starts_now() -> None:
    est = run([q("x", gpus=2)], [h("r", ("n",), gpus=4)], [node("n", 8, 4)], {})
    assert est["x"].eta == NOW and est["x"].reason.text.startswith("fits now")


def test_each_queued_task_starts_when_the_running_task_it_needs_ends() -> None:
    nodes = [node("n", 2, 0)]
    held = [h("r1", ("n",)), h("r2", ("n",))]
    est = run([q("q1", age=1), q("q2", age=2), q("q3", age=3)], held, nodes, {"r1": mins(10), "r2": mins(20)})
    assert est["q1"].eta == mins(10) and est["q2"].eta == mins(20)
    assert est["q1"].reason.text == "when running tasks end, estimated from their steps and step rates"
    assert est["q3"].eta is None  # it needs what q1 or q2 hold: their run time is unknown until they run
    assert "queued tasks that would start before it" in est["q3"].reason.text
    assert "holding resources whose end is unknown" not in est["q3"].reason.text


def test_unknown_end_of_a_running_task_propagates_to_who_waits_on_it_only() -> None:
    nodes = [node("n", 8, 0)]
    held = [h("a", ("n",), gpus=4), h("b", ("n",), gpus=4)]  # a: no total_training_steps; b: ends in 1 h
    est = run([q("x", gpus=4, age=1), q("y", gpus=8, age=2)], held, nodes, {"b": mins(60)})
    assert est["x"].eta == mins(60)  # b's GPUs are enough: a's unknown end does not matter
    assert est["y"].eta is None and "running without trainer.total_training_steps" in est["y"].reason.text


def test_the_head_of_line_reservation_is_simulated_as_the_scheduler_does_it() -> None:
    nodes = [node("n1", 8, 4), node("n2", 8, 0)]
    held = [h("a", ("n1",), gpus=4), h("b", ("n2",), gpus=8)]
    est = run([q("big", gpus=8, age=1), q("small", gpus=4, age=2)], held, nodes, {"a": mins(30), "b": mins(90)})
    # big reserves n1 (most free): small may not backfill it, and fits nowhere else until big has started
    assert est["big"].eta == mins(30)
    assert est["small"].eta == mins(90)


def test_a_users_running_limit_delays_their_task_until_their_own_task_ends() -> None:
    limits = Limits(64, 0, users={"alice": UserLimits(max_running=1)})
    held = [h("mine", ("n",), user="alice")]
    est = run([q("next", "alice")], held, [node("n", 8, 7)], {"mine": mins(45)}, limits=limits)
    assert est["next"].eta == mins(45)
    over = run([q("greedy", "bob", gpus=8)], [], [node("n", 8)], {}, limits=Limits(64, 0, max_gpus_per_user=4))
    assert over["greedy"].eta is None and "more GPUs than the user's limit of 4" in over["greedy"].reason.text


def test_cpu_jobs_wait_for_cpu_room_and_start_as_cpu_jobs_end() -> None:
    n = NodeState("w", True, 0, 0, cpus_total=2.0, cpus_free=0.0)
    held = [HeldTask("c0", "u", 1, 0, ("w",), 2.0)]
    queued = [QueuedTask("c1", "u", 0, 1, 1, 0, 2.0), QueuedTask("c2", "u", 0, 2, 1, 0, 2.0)]
    est = run(queued, held, [n], {"c0": mins(5)})
    assert est["c1"].eta == mins(5) and est["c1"].resource == "CPU"
    assert est["c2"].eta is None and est["c2"].position == 2


def test_positions_and_estimates_change_as_tasks_start() -> None:
    nodes = [node("n", 2, 0)]
    before = run([q("q1", age=1), q("q2", age=2)], [h("r1", ("n",)), h("r2", ("n",))], nodes,
                 {"r1": mins(10), "r2": mins(20)})
    assert (before["q2"].position, before["q2"].eta) == (2, mins(20))
    # r1 ended and q1 started (it logs steps now: ends in 40 min); q2 moves up, still waiting for r2
    after = run([q("q2", age=2)], [h("q1", ("n",)), h("r2", ("n",))], nodes, {"q1": mins(40), "r2": mins(20)})
    assert (after["q2"].position, after["q2"].ahead, after["q2"].competing, after["q2"].eta) == (1, 0, 1, mins(20))
    # r2 ran slower than expected: the estimate follows
    later = run([q("q2", age=2)], [h("q1", ("n",)), h("r2", ("n",))], nodes, {"q1": mins(40), "r2": mins(35)})
    assert later["q2"].eta == mins(35)


def test_no_estimate_names_another_task() -> None:
    nodes = [node("n", 4, 0)]
    held = [h("secret-running", ("n",), user="bob", gpus=4)]
    est = run([q("secret-queued", "bob", gpus=4, age=1), q("mine", "alice", gpus=4, age=2)], held, nodes, {})
    assert "secret" not in repr(est["mine"])


def test_a_sweeps_max_concurrent_holds_its_next_trial_until_a_running_trial_ends() -> None:
    limits = Limits(64, 0, sweeps={"s": 1})  # issue 38: at most one trial of sweep s at once
    held = [HeldTask("t0", "u", 1, 1, ("n",), sweep="s"), h("other", ("n",), user="v")]
    queued = [QueuedTask("t1", "u", 0, 1, 1, 1, sweep="s"), QueuedTask("t2", "u", 0, 2, 1, 1, sweep="s")]
    est = run(queued, held, [node("n", 8, 6)], {"t0": mins(10), "other": mins(20)}, limits=limits)
    assert est["t1"].eta == mins(10)  # when t0 ends, not now: 6 GPUs are free
    assert est["t2"].eta is None  # t1 runs on with no known end; another task's end frees no sweep slot
