"""Scheduling overhead: Argus vs Ray's own Jobs API, and the submit loop at scale.

    .venv/bin/python bench/overhead.py [--runs 5] [--tasks 10000] [--users 100] [--skip-ray]

Part 1 (real Ray, the embedded LocalCluster): the same entry points are submitted N times
directly with ``JobSubmissionClient`` and N times through Argus (HTTP API → queue →
scheduler loop → Jobs API → launcher → sandbox); it prints the medians of submit→RUNNING
and submit→SUCCEEDED and the Argus/Ray ratios, for a plain program (``argus.jobs.sleep
0``) and a Ray program (``argus.jobs.ray_gpus --gpus 0``: ``ray.init()``; through Argus it
gets a private Ray cluster in its sandbox, issue 21), the private cluster's start time, the
memory (PSS) of a private cluster's Ray processes while a task holds it, and how many Ray
stop requests 50 tasks canceled while SUBMITTED cost until all are CANCELED. Part 2 (real SQLite, fake cluster with enough nodes): the time of one
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


PLAIN = "argus.jobs.sleep 0 --lines 1"
RAY_PROGRAM = "argus.jobs.ray_gpus --gpus 0"


def _pss_kib(pid: int) -> int:
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return 0
    return next((int(line.split()[1]) for line in text.splitlines() if line.startswith("Pss:")), 0)


def private_ray_memory(stack) -> dict[str, float]:  # noqa: ANN001 - tests.e2e.stack.Stack
    """PSS of one task's sandbox while its Ray program holds its private cluster: Ray's processes, and all."""
    import psutil
    from tests.e2e.stack import spec, submit, wait_status

    c = stack.user("bench")
    tid = submit(c, spec("python3 -m argus.jobs.ray_gpus --gpus 0 --hold 60"))
    wait_status(c, tid, set(), timeout=180, until=lambda _t: "ray_gpus: holding" in c.get(
        f"/api/v2/tasks/{tid}/logs").text)
    time.sleep(3)  # let the daemons settle
    launcher = next(p for p in psutil.process_iter(["cmdline"])  # the launcher's python, not Ray's /bin/sh -c
                    if (p.info["cmdline"] or [""])[0].split("/")[-1].startswith("python")
                    and "argus.launcher.driver" in p.info["cmdline"] and tid in " ".join(p.info["cmdline"]))
    ray_kib = all_kib = 0
    for proc in launcher.children(recursive=True):
        try:
            cmd = " ".join(proc.cmdline())
        except psutil.Error:
            continue
        kib = _pss_kib(proc.pid)
        all_kib += kib
        if not any(k in cmd for k in ("bwrap", "private_ray.py", "argus.jobs.ray_gpus")):
            ray_kib += kib
    launcher_kib = _pss_kib(launcher.pid)
    c.post(f"/api/v2/tasks/{tid}/cancel")
    wait_status(c, tid, "CANCELED", timeout=60)
    return {"private_ray_mib": ray_kib / 1024, "sandbox_mib": all_kib / 1024, "launcher_mib": launcher_kib / 1024}


def bench_ray(runs: int, tick_s: float, task_jail: str) -> dict:
    from bench.cancel_storm import cancel_storm  # 50 tasks canceled at once (bench/cancel_storm.py)
    from tests.e2e.stack import argus_vs_ray  # the e2e stack: LocalCluster + live server with real loops

    return argus_vs_ray(runs, tick_s, task_jail, programs=(PLAIN, RAY_PROGRAM),
                        extra=lambda stack: {**private_ray_memory(stack), **cancel_storm(stack)})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--tasks", type=int, default=10_000)
    ap.add_argument("--users", type=int, default=100)
    ap.add_argument("--tick", type=float, default=1.0, help="scheduler tick (s); 1.0 is the default setting")
    ap.add_argument("--skip-ray", action="store_true", help="only the run_once part (no Ray cluster)")
    ap.add_argument("--jail", choices=["auto", "bwrap", "off"], default="auto",
                    help="the task sandbox (auto: when bubblewrap is installed)")
    args = ap.parse_args()
    if not args.skip_ray:
        res = bench_ray(args.runs, args.tick, args.jail)
        print(f"task sandbox: {args.jail}")
        for program in (PLAIN, RAY_PROGRAM):
            r = res[program]
            print(f"[{program}]")
            print(f"  submit→RUNNING   median: Ray {r['ray_running']:.2f} s, Argus {r['argus_running']:.2f} s, "
                  f"ratio {r['argus_running'] / r['ray_running']:.2f}")
            print(f"  submit→SUCCEEDED median: Ray {r['ray_done']:.2f} s, Argus {r['argus_done']:.2f} s, "
                  f"+{r['argus_done'] - r['ray_done']:.2f} s   ({args.runs} runs each)")
            if r["private_ray_up"] is not None:
                print(f"  the task's private Ray cluster started in {r['private_ray_up']:.2f} s (median)")
        print(f"memory (PSS) while a Ray task holds its private cluster: its Ray processes "
              f"{res['private_ray_mib']:.0f} MiB, the whole sandbox {res['sandbox_mib']:.0f} MiB, "
              f"the launcher {res['launcher_mib']:.0f} MiB")
        print(f"{res['cancel_n']} tasks canceled while SUBMITTED/RUNNING: {res['cancel_stops']} Ray stop requests, "
              f"all CANCELED after {res['cancel_s']:.1f} s")
    b = bench_run_once(args.tasks, args.users)
    print(f"run_once with {args.tasks} QUEUED tasks from {args.users} users (16 nodes × 8 GPUs): "
          f"first pass {b['first_s'] * 1000:.0f} ms ({b['submitted_first']:.0f} submitted), "
          f"re-plan after a change {b['replan_s'] * 1000:.0f} ms, "
          f"steady pass median {b['steady_s'] * 1000:.1f} ms (max {b['steady_max_s'] * 1000:.1f} ms of 20; "
          f"{b['submitted_steady']:.0f} submitted)")


if __name__ == "__main__":
    main()
