"""Benchmark: fair share between teams (issue 26) — the shares the real policy gives under contention.

Drives ``argus.core.scheduling.policy.plan`` (the scheduler's own pure policy) on a fake clock over a
cluster of 8-GPU nodes, with decayed usage computed as the usage ledger does (``fairshare.decayed``).
Three scenarios:

1. contention: teams nlp (weight 2) and vision (weight 1), each with a backlog of 1-GPU … 8-GPU tasks
   of 30–90 minutes: the GPU-hours each team got over a day;
2. borrowing: nlp queues nothing for the first 6 hours, then a backlog: what vision got while nlp was
   idle, and how long until nlp's first task started after it queued (no task is stopped);
3. a pass's cost with many teams: plan() over 10 000 queued tasks in 50 teams.

Prints figures; asserts nothing.

    .venv/bin/python bench/team_fairshare.py [--nodes 8] [--hours 24]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from argus.core.scheduling.fairshare import Usage, decayed  # noqa: E402
from argus.core.scheduling.policy import HeldTask, Limits, NodeState, QueuedTask, TeamLimits, plan  # noqa: E402

HALF_LIFE = 7 * 86400.0
STEP = 60.0


def backlog(team: str, users: list[str], n: int, rng: random.Random, at: float) -> list[tuple[QueuedTask, float]]:
    out = []
    for i in range(n):
        gpus = rng.choice([1, 2, 4, 8])
        out.append((QueuedTask(f"{team}-{i:05d}", rng.choice(users), 0, at + i * 1e-3, 1, gpus, team=team),
                    rng.uniform(1800, 5400)))
    return out


def simulate(nodes: int, hours: float, teams: dict[str, TeamLimits],
             arrivals: dict[float, list[tuple[QueuedTask, float]]]) -> tuple[list[tuple[float, float, QueuedTask]], float]:
    """(start, end, task) of every started task, and the mean plan() time per pass in ms."""
    queued: dict[str, tuple[QueuedTask, float]] = {}
    running: list[tuple[QueuedTask, float, float, tuple[str, ...]]] = []
    done: list[tuple[float, float, QueuedTask]] = []
    now, costs = 0.0, []
    while now < hours * 3600:
        for t, d in arrivals.get(now, []):
            queued[t.task_id] = (t, d)
        running = [r for r in running if r[2] > now]
        usage: dict[str, Usage] = defaultdict(Usage)
        team_usage: dict[str, Usage] = defaultdict(Usage)
        for start, end, t in done:
            got = decayed(float(t.gpus_per_node), start, min(end, now), now, HALF_LIFE)
            usage[t.user] = usage[t.user].plus(1, got)
            team_usage[t.team or ""] = team_usage[t.team or ""].plus(1, got)
        held = [HeldTask(t.task_id, t.user, 1, t.gpus_per_node, nodes_, team=t.team) for t, _, _, nodes_ in running]
        free = {f"n{i}": 8 for i in range(nodes)}
        for t, _, _, nodes_ in running:
            for n in nodes_:
                free[n] -= t.gpus_per_node
        states = [NodeState(n, True, 8, f) for n, f in free.items()]
        began = time.perf_counter()
        p = plan([t for t, _ in queued.values()], held, states, Limits(10_000, 0, teams=teams),
                 usage=usage, team_usage=team_usage)
        costs.append(time.perf_counter() - began)
        for pl in p.placements:
            t, d = queued.pop(pl.task_id)
            running.append((t, now, now + d, pl.nodes))
            done.append((now, now + d, t))
        now += STEP
    return done, statistics.mean(costs) * 1000


def gpu_hours(done: list[tuple[float, float, QueuedTask]], lo: float, hi: float) -> dict[str, float]:
    out: dict[str, float] = defaultdict(float)
    for start, end, t in done:
        a, b = max(start, lo), min(end, hi)
        if b > a:
            out[t.team or "-"] += t.gpus_per_node * (b - a) / 3600
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=8)
    ap.add_argument("--hours", type=float, default=24)
    args = ap.parse_args()
    rng = random.Random(26)
    teams = {"nlp": TeamLimits(weight=2.0), "vision": TeamLimits(weight=1.0)}
    cap = args.nodes * 8 * args.hours

    arrivals = {0.0: backlog("nlp", ["alice", "carol"], 3000, rng, 0) + backlog("vision", ["bob"], 3000, rng, 0)}
    done, ms = simulate(args.nodes, args.hours, teams, arrivals)
    got = gpu_hours(done, 0, args.hours * 3600)
    print(f"1. contention, {args.nodes} nodes × 8 GPUs, {args.hours:g} h ({cap:.0f} GPU-hours), weights nlp 2 : "
          f"vision 1")
    print(f"   nlp {got['nlp']:.0f} GPU-h ({got['nlp'] / cap:.1%}), vision {got['vision']:.0f} GPU-h "
          f"({got['vision'] / cap:.1%}); ratio {got['nlp'] / got['vision']:.2f} : 1; plan() {ms:.2f} ms/pass")

    rng = random.Random(27)
    idle_h = 6.0
    arrivals = {0.0: backlog("vision", ["bob"], 3000, rng, 0),
                idle_h * 3600: backlog("nlp", ["alice"], 3000, rng, idle_h * 3600)}
    done, _ = simulate(args.nodes, args.hours, {"nlp": TeamLimits(), "vision": TeamLimits()}, arrivals)
    first = min(s for s, _, t in done if t.team == "nlp")
    before = gpu_hours(done, 0, idle_h * 3600)
    after = gpu_hours(done, idle_h * 3600, args.hours * 3600)
    print(f"2. borrowing, equal weights; nlp idle for {idle_h:g} h, then a backlog")
    print(f"   while nlp was idle vision used {before['vision']:.0f} of {args.nodes * 8 * idle_h:.0f} GPU-hours "
          f"({before['vision'] / (args.nodes * 8 * idle_h):.1%}); nlp's first start {(first - idle_h * 3600) / 60:.0f} "
          f"min after it queued (as vision's running tasks ended; none stopped)")
    print(f"   after nlp queued: nlp {after['nlp']:.0f} GPU-h, vision {after['vision']:.0f} GPU-h "
          f"(nlp catches up on the use vision had while it was idle)")

    rng = random.Random(28)
    many = {f"t{i:02d}": TeamLimits(weight=1.0 + i % 3) for i in range(50)}
    queued = [QueuedTask(f"q{i:05d}", f"u{i % 400}", 0, i, 1, rng.choice([1, 2, 4, 8]), team=f"t{i % 50:02d}")
              for i in range(10_000)]
    usage = {f"u{i}": Usage(rng.uniform(0, 1e6)) for i in range(400)}
    team_usage = {t: Usage(rng.uniform(0, 1e7)) for t in many}
    states = [NodeState(f"n{i}", True, 8, 8) for i in range(64)]
    times = []
    for _ in range(5):
        began = time.perf_counter()
        plan(queued, [], states, Limits(10_000, 0, teams=many), usage=usage, team_usage=team_usage)
        times.append((time.perf_counter() - began) * 1000)
    print(f"3. plan() over 10 000 queued tasks, 400 users in 50 teams, 64 nodes: median {statistics.median(times):.0f} ms")


if __name__ == "__main__":
    main()
