"""Fair share that remembers (issue 11): start-order spread, and what ordering costs at scale.

    .venv/bin/python bench/fairshare.py [--users 20] [--per-user 10] [--slots 4] [--queued 10000]

Part 1 (the real policy, a simulated clock): U users each post N one-second 1-GPU tasks at
t=0, user 1's first (the issue's "20 users × 10 tasks on 4 slots"); every second the
finished tasks free their slots and :func:`argus.scheduler.policy.plan` picks again.
"new" feeds it the decayed usage (fair share that remembers), "old" only what is held
now — the ordering before issue 11. Printed per ordering: each user's wait for their first
start, max/median of that wait, start picks until every user has started once, and
whether every user's first start came before anyone's third.

Part 2 (the real scheduler loop): the same workload through ``SubmitQueuedTasks`` and
``MonitorActiveTasks`` on real SQLite with a fake Ray at the JobsBackend boundary and a
settable clock (each loop tick is one simulated second); prints the same figures and the
wall time of a pass.

Part 3 (cost): ``plan()`` over ``--queued`` QUEUED tasks from 100 users with usage for all
of them (median of 5), and the usage ledger's read over 50 000 past attempts: the rebuild
(at start, then hourly) and the incremental read every other pass does.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from argus.scheduler.fairshare import Usage, decayed, factor  # noqa: E402
from argus.scheduler.policy import HeldTask, Limits, NodeState, QueuedTask, plan  # noqa: E402

HALF_LIFE = 86400.0


def simulate(users: int, per_user: int, slots: int, *, remember: bool) -> list[tuple[float, str]]:
    """(start time, user) of every task, in start order."""
    queued = [QueuedTask(f"u{u + 1:02d}-{i}", f"u{u + 1:02d}", 0, u * 1000 + i, 1, 1)
              for u in range(users) for i in range(per_user)]
    running: list[tuple[str, float]] = []
    history: list[tuple[str, float]] = []
    now = 0.0
    while queued:
        running = [(user, s) for user, s in running if s + 1.0 > now]
        usage: dict[str, Usage] = {}
        if remember:
            for user, start in history:
                usage[user] = usage.get(user, Usage()).plus(1, decayed(1.0, start, min(start + 1, now), now,
                                                                       HALF_LIFE))
        held = [HeldTask(f"h{i}", user, 1, 1, ("w",)) for i, (user, _) in enumerate(running)]
        p = plan(queued, held, [NodeState("w", True, slots, slots - len(held))],
                 Limits(max_running=10_000, max_running_per_user=10_000), usage=usage)
        chosen = {pl.task_id for pl in p.placements}
        for pl in p.placements:
            user = pl.task_id.split("-")[0]
            running.append((user, now))
            history.append((user, now))
        queued = [t for t in queued if t.task_id not in chosen]
        now += 1.0
    return [(t, user) for user, t in history]


def report(label: str, starts: list[tuple[float, str]]) -> None:
    first: dict[str, float] = {}
    first_pick: dict[str, int] = {}
    count: dict[str, int] = {}
    third_pick: dict[str, int] = {}
    done: dict[str, float] = {}
    for pick, (t, user) in enumerate(starts):
        first.setdefault(user, t)
        first_pick.setdefault(user, pick)
        count[user] = count.get(user, 0) + 1
        if count[user] == 3:
            third_pick.setdefault(user, pick)
        done[user] = t + 1.0
    waits = sorted(first.values())
    print(f"  {label}: first-start wait max {max(waits):.0f} s, median {statistics.median(waits):.1f} s; "
          f"all users started after {max(first_pick.values()) + 1} picks; "
          f"last user done at {max(done.values()):.0f} s, first user done at {min(done.values()):.0f} s")
    ok = not third_pick or max(first_pick.values()) < min(third_pick.values())
    print(f"    every user's first start before anyone's third: {'yes' if ok else 'NO'}")
    print("    first start (s) per user: " + " ".join(f"{u}={first[u]:.0f}" for u in sorted(first)))


def part1(args: argparse.Namespace) -> None:
    print(f"Part 1: policy on a simulated clock — {args.users} users × {args.per_user} one-second tasks, "
          f"{args.slots} slots")
    report("new (decayed usage)", simulate(args.users, args.per_user, args.slots, remember=True))
    report("old (held now only)", simulate(args.users, args.per_user, args.slots, remember=False))


def part2(args: argparse.Namespace) -> None:
    from tests.scheduler.fakes import Clock, FakeRay, add_task, add_user, make_ctx

    from argus.cluster.types import RayJobStatus
    from argus.scheduler.monitor import MonitorActiveTasks
    from argus.scheduler.submit import SubmitQueuedTasks
    from argus.settings import Settings

    print(f"Part 2: the real submit + monitor loops, real SQLite, fake Ray ({args.slots} GPUs), 1 tick = 1 s")
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(state_dir=Path(tmp), sftp_enabled=False, verl_validation="off", task_jail="off",
                            max_running_tasks_per_user=10_000)
        ray, clock = FakeRay(), Clock()
        ray.add_node("w1", args.slots)
        ctx = make_ctx(settings, ray, clock)
        owner: dict[str, str] = {}
        for u in range(args.users):
            uid = add_user(ctx, f"u{u + 1:02d}")
            for i in range(args.per_user):
                owner[add_task(ctx, uid, gpus=1, created_offset_s=-10_000 + u * 100 + i)] = f"u{u + 1:02d}"
        submit, monitor = SubmitQueuedTasks(ctx), MonitorActiveTasks(ctx)
        starts: list[tuple[float, str]] = []
        passes: list[float] = []
        t = 0.0
        while len(starts) < len(owner):
            before = len(ray.submissions)
            t0 = time.perf_counter()
            submit.run_once()
            passes.append(time.perf_counter() - t0)
            new = ray.submissions[before:]
            for sub in new:
                ray.set(sub.submission_id, RayJobStatus.RUNNING, driver_node_id="w1")
                starts.append((t, owner[sub.metadata["argus_task_id"]]))
            monitor.run_once()
            clock.advance(1.0)
            t += 1.0
            for sub in new:
                ray.set(sub.submission_id, RayJobStatus.SUCCEEDED, driver_exit_code=0)
            monitor.run_once()
        ctx.db.dispose()
    report("new, through the loops", starts)
    print(f"    submit pass wall time: median {statistics.median(passes) * 1000:.1f} ms, "
          f"max {max(passes) * 1000:.1f} ms")


def part3(args: argparse.Namespace) -> None:
    print(f"Part 3: cost — plan() over {args.queued} queued tasks from 100 users, usage for each")
    queued = [QueuedTask(f"t{i:05d}", f"u{i % 100:03d}", i % 3, i, 1 + (i % 7 == 0), (1, 2, 4, 8)[i % 4])
              for i in range(args.queued)]
    usage = {f"u{u:03d}": Usage(gpu_s=u * 1000.0, cpu_s=u * 10.0) for u in range(100)}
    nodes = [NodeState(f"w{i}", True, 8, 8) for i in range(16)]
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        p = plan(queued, [], nodes, Limits(64, 16), usage=usage)
        times.append(time.perf_counter() - t0)
    print(f"  plan(): median {statistics.median(times) * 1000:.1f} ms, {len(p.placements)} started, "
          f"{len(p.pending)} told why they wait")
    print(f"  fair-share factor F for users with 0 / median / max usage: "
          f"{factor(0.0, {k: v.gpu_s for k, v in usage.items()}):.2f} / "
          f"{factor(usage['u050'].gpu_s, {k: v.gpu_s for k, v in usage.items()}):.2f} / "
          f"{factor(usage['u099'].gpu_s, {k: v.gpu_s for k, v in usage.items()}):.2f}")
    ledger_cost()


def ledger_cost(n_attempts: int = 50_000) -> None:
    from sqlalchemy import insert

    from argus.db.models import TaskAttemptModel, TaskModel, UserModel, utcnow
    from argus.db.session import Database
    from argus.scheduler.usage import UsageLedger

    with tempfile.TemporaryDirectory() as tmp:
        db = Database(f"sqlite:///{tmp}/bench.db")
        db.migrate()
        now = utcnow()
        with db.session() as s:
            s.execute(insert(UserModel), [{"name": f"u{u:03d}"} for u in range(100)])
            uids = [r[0] for r in s.query(UserModel.id).order_by(UserModel.id)]
            tasks, atts = [], []
            for i in range(n_attempts):
                start = now - timedelta(hours=(n_attempts - i) * 0.01)
                live = i >= n_attempts - 64
                tasks.append(dict(id=f"t{i:06d}", user_id=uids[i % 100], kind="advanced", workload="job",
                                  status="RUNNING" if live else "SUCCEEDED", priority=0, nnodes=1,
                                  n_gpus_per_node=(0, 1, 2, 4)[i % 4], spec_raw="", spec_resolved={},
                                  command_raw="x", command_expanded="x", argv=[], warnings=[], attempts=1,
                                  created_at=start, updated_at=start))
                atts.append(dict(task_id=f"t{i:06d}", attempt=1, submission_id=f"t{i:06d}-a1",
                                 status="RUNNING" if live else "SUCCEEDED", created_at=start, started_at=start,
                                 finished_at=None if live else start + timedelta(minutes=20)))
            s.execute(insert(TaskModel), tasks)
            s.execute(insert(TaskAttemptModel), atts)
        ledger = UsageLedger(HALF_LIFE)
        with db.session() as s:
            t0 = time.perf_counter()
            ledger.read(s, now)
            rebuild = time.perf_counter() - t0
        reads = []
        for k in range(10):
            with db.session() as s:
                t0 = time.perf_counter()
                ledger.read(s, now + timedelta(seconds=k + 1))
                reads.append(time.perf_counter() - t0)
        db.dispose()
    print(f"  usage ledger over {n_attempts} attempts ({n_attempts // 100 / 24:.0f}+ days, 64 running): "
          f"rebuild {rebuild * 1000:.0f} ms (at start, then hourly), "
          f"per-pass read median {statistics.median(reads) * 1000:.1f} ms")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--users", type=int, default=20)
    ap.add_argument("--per-user", type=int, default=10)
    ap.add_argument("--slots", type=int, default=4)
    ap.add_argument("--queued", type=int, default=10_000)
    args = ap.parse_args()
    part1(args)
    part2(args)
    part3(args)


if __name__ == "__main__":
    main()
