"""Scheduling overhead: Argus vs Ray's own Jobs API, and the submit loop at scale.

    .venv/bin/python bench/overhead.py [--runs 5] [--tasks 10000] [--users 100] [--skip-ray]

Part 1 (real Ray, the embedded LocalCluster): the same trivial entry point
(``python -m argus.jobs.sleep 0``) is submitted N times directly with
``JobSubmissionClient`` and N times through Argus (HTTP API → queue → scheduler loop →
Jobs API → driver); it prints the medians of submit→RUNNING and submit→SUCCEEDED and the
Argus/Ray ratios. Part 2 (real SQLite, fake cluster with enough nodes): the time of one
``SubmitQueuedTasks.run_once()`` over 10 000 QUEUED tasks from 100 users — the first pass
(writes every pending reason), the pass right after it (the tasks it started changed the
held set: the whole queue is planned again) and steady-state passes (nothing changed; the
median and the slowest of 20).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def bench_run_once(n_tasks: int, n_users: int) -> dict[str, float]:
    from sqlalchemy import insert
    from tests.scheduler.fakes import FakeRay, make_ctx

    from argus.db.models import TaskEventModel, TaskModel, UserModel, utcnow
    from argus.scheduler.submit import SubmitQueuedTasks
    from argus.settings import Settings

    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(state_dir=Path(tmp), sftp_enabled=False, verl_validation="off")
        ray = FakeRay()
        for i in range(16):
            ray.add_node(f"w{i}", 8)  # 128 GPUs
        ctx = make_ctx(settings, ray)
        now = utcnow()
        with ctx.db.session() as s:
            s.execute(insert(UserModel), [{"name": f"user{u:03d}"} for u in range(n_users)])
            ids = [r[0] for r in s.query(UserModel.id).order_by(UserModel.id)]
            rows = []
            for i in range(n_tasks):
                tid = f"job-bench-{i:05d}"
                rows.append(dict(id=tid, user_id=ids[i % n_users], kind="advanced", workload="job", status="QUEUED",
                                 priority=i % 3, nnodes=1 + (i % 7 == 0), n_gpus_per_node=(1, 2, 4, 8)[i % 4],
                                 spec_raw="", spec_resolved={}, command_raw="x", command_expanded="x",
                                 argv=["bash", "-lc", "python3 -m argus.jobs.sleep 0"], entry_module="argus.jobs.sleep",
                                 warnings=[], attempts=0, created_at=now + timedelta(milliseconds=i),
                                 updated_at=now))
            s.execute(insert(TaskModel), rows)
            s.execute(insert(TaskEventModel), [{"task_id": r["id"], "at": now, "to_status": "QUEUED", "actor": "bench"}
                                               for r in rows])
        loop = SubmitQueuedTasks(ctx)
        t0 = time.perf_counter()
        submitted = loop.run_once()
        first = time.perf_counter() - t0
        # the pass after a pass that started tasks: the held set changed, so it plans the whole queue again
        t0 = time.perf_counter()
        again = loop.run_once()
        replan = time.perf_counter() - t0
        steady = []  # nothing changed since the last pass
        for _ in range(20):
            t0 = time.perf_counter()
            again += loop.run_once()
            steady.append(time.perf_counter() - t0)
        ctx.db.dispose()
    steady.sort()
    return {"first_s": first, "replan_s": replan, "steady_s": steady[len(steady) // 2], "steady_max_s": steady[-1],
            "submitted_first": submitted, "submitted_steady": again}


def bench_ray(runs: int, tick_s: float, task_jail: str) -> dict[str, float]:
    from tests.e2e.stack import argus_vs_ray  # the e2e stack: LocalCluster + live server with real loops

    return argus_vs_ray(runs, tick_s, task_jail)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--tasks", type=int, default=10_000)
    ap.add_argument("--users", type=int, default=100)
    ap.add_argument("--tick", type=float, default=1.0, help="scheduler tick (s); 1.0 is the default setting")
    ap.add_argument("--skip-ray", action="store_true", help="only the run_once part (no Ray cluster)")
    ap.add_argument("--jail", choices=["auto", "bwrap", "off"], default="auto",
                    help="task jail on both sides (auto: when bubblewrap is installed)")
    args = ap.parse_args()
    if not args.skip_ray:
        r = bench_ray(args.runs, args.tick, args.jail)
        print(f"task jail: {args.jail}")
        print(f"submit→RUNNING   median: Ray {r['ray_running']:.2f} s, Argus {r['argus_running']:.2f} s, "
              f"ratio {r['argus_running'] / r['ray_running']:.2f}")
        print(f"submit→SUCCEEDED median: Ray {r['ray_done']:.2f} s, Argus {r['argus_done']:.2f} s, "
              f"ratio {r['argus_done'] / r['ray_done']:.2f}   ({args.runs} runs each)")
    b = bench_run_once(args.tasks, args.users)
    print(f"run_once with {args.tasks} QUEUED tasks from {args.users} users (16 nodes × 8 GPUs): "
          f"first pass {b['first_s'] * 1000:.0f} ms ({b['submitted_first']:.0f} submitted), "
          f"re-plan after a change {b['replan_s'] * 1000:.0f} ms, "
          f"steady pass median {b['steady_s'] * 1000:.1f} ms (max {b['steady_max_s'] * 1000:.1f} ms of 20; "
          f"{b['submitted_steady']:.0f} submitted)")


if __name__ == "__main__":
    main()
