"""Cancel storm: n tasks canceled at once on a real embedded stack; seconds until all are CANCELED, stop requests.

    .venv/bin/python bench/cancel_storm.py [--tasks 50] [--running] [--burn 0] [--jail auto|bwrap|off]

The stack is the e2e suite's (tests/e2e/stack.py: the product's LocalCluster as ``argus up`` runs it, and a live
server with the real scheduler loops), started as bench/overhead.py starts it. ``--tasks`` sleep tasks from 5
users (under the per-user limit of 16 running) are submitted and waited for until Ray has them (SUBMITTED or
RUNNING; with ``--running``, until every driver runs its task, so that the stops go through the drivers). Then
every one is canceled through the API (8 requests at a time, as a bulk cancel in the WebUI sends one per task),
and the bench waits until all are CANCELED. ``--burn k`` runs k busy loops (python processes bounded by
``timeout``) from before the submits to the end: the cancels under a CPU load.

Prints the load average when the cancels were sent, seconds from the first cancel request to all CANCELED (the
tasks' own ``finished_at``, so polling adds nothing) and the median task's, the Ray stop requests
(``CancelTasks.stops_sent``), the cancel loop's slowest pass, and how the cancels were confirmed (the tasks'
status messages). Issue: "Cancel is prompt under load (50 tasks < 10 s at any load; one stop request per
attempt)"; before it, 50 cancels at load 18 took 645 s and 3 205 stop requests.
"""

from __future__ import annotations

import argparse
import collections
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SLEEP = "python3 -m argus.jobs.sleep 600 --lines 1"


def cancel_storm(stack, n: int = 50, *, running: bool = False) -> dict[str, Any]:  # noqa: ANN001 - e2e Stack
    """n tasks canceled while SUBMITTED/RUNNING: Ray stop requests and the time until all are CANCELED."""
    from sqlalchemy import select
    from tests.e2e.stack import spec, submit, wait_status
    from tests.waiting import wait_until

    from argus.db.models import TaskModel

    users = [stack.user(f"canceler{i}") for i in range(5)]  # under the per-user limit of 16 running tasks
    loop = stack.scheduler.runner.cancel
    db = stack.scheduler.runner.ctx.db
    tids = [(c, submit(c, spec(SLEEP))) for i in range(n) for c in [users[i % len(users)]]]
    for c, tid in tids:
        wait_status(c, tid, {"RUNNING"} if running else {"SUBMITTED", "RUNNING"}, timeout=900)
    ids = [tid for _, tid in tids]

    def statuses() -> collections.Counter[str]:
        with db.session() as s:
            return collections.Counter(s.scalars(select(TaskModel.status).where(TaskModel.id.in_(ids))))

    before_status = statuses()
    runner = stack.scheduler.runner
    passes: dict[str, list[float]] = {name: [] for name in ("cancel", "monitor", "submit")}
    real = {name: getattr(runner, name).run_once for name in passes}

    def timed(name: str):  # noqa: ANN202
        def run_once() -> int:
            t = time.monotonic()
            try:
                return real[name]()
            finally:
                passes[name].append(time.monotonic() - t)
        return run_once

    for name in passes:  # what the scheduler thread spends its time on during the storm
        getattr(runner, name).run_once = timed(name)
    stops_before = loop.stops_sent
    load = os.getloadavg()
    t0, wall0 = time.monotonic(), datetime.now(UTC)
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda ct: ct[0].post(f"/api/v2/tasks/{ct[1]}/cancel").status_code, tids))
    sent_s = time.monotonic() - t0
    assert set(answers) == {200}, collections.Counter(answers)
    # polled twice a second: the bench shares the server's process, and the figures are the tasks' own finished_at
    wait_until(lambda: statuses().get("CANCELED") == n, 900, every=0.5,
               what=lambda: f"all {n} CANCELED ({dict(statuses())})")
    polled_s = time.monotonic() - t0
    for name in passes:
        getattr(runner, name).run_once = real[name]
    with db.session() as s:
        rows = s.execute(select(TaskModel.finished_at, TaskModel.status_message).where(TaskModel.id.in_(ids))).all()
    ends = sorted(((f if f.tzinfo else f.replace(tzinfo=UTC)) - wall0).total_seconds() for f, _ in rows)
    return {"cancel_n": n, "cancel_stops": loop.stops_sent - stops_before, "cancel_s": ends[-1],
            "cancel_median_s": statistics.median(ends), "cancel_polled_s": polled_s, "cancel_sent_s": sent_s,
            "cancel_load": load, "cancel_before": dict(before_status),
            "cancel_passes": {name: (len(d), sum(d), max(d, default=0.0)) for name, d in passes.items()},
            "cancel_how": dict(collections.Counter(m for _, m in rows))}


def burners(k: int, limit_s: int) -> list[subprocess.Popen[bytes]]:
    """k busy loops, each ended by ``timeout`` after ``limit_s`` even if this process dies first."""
    return [subprocess.Popen(["timeout", str(limit_s), sys.executable, "-c", "while 1: pass"]) for _ in range(k)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=50)
    ap.add_argument("--running", action="store_true", help="cancel once every task runs (not while Ray starts them)")
    ap.add_argument("--burn", type=int, default=0, help="busy-loop processes for the load (0: none)")
    ap.add_argument("--burn-limit", type=int, default=900, help="seconds after which a burner ends on its own")
    ap.add_argument("--jail", choices=["auto", "bwrap", "off"], default="auto",
                    help="the task sandbox (auto: when bubblewrap is installed)")
    args = ap.parse_args()

    from tests.e2e.stack import argus_on
    from tests.ray_fixtures import local_ray

    from argus.settings import Settings

    burning: list[subprocess.Popen[bytes]] = []
    try:
        with tempfile.TemporaryDirectory() as tmp, local_ray(Path(tmp), task_jail=args.jail) as cluster:
            settings = Settings(state_dir=Path(tmp), sftp_enabled=False, verl_validation="off", task_jail=args.jail)
            with argus_on(cluster, settings) as stack:
                burning = burners(args.burn, args.burn_limit)
                res = cancel_storm(stack, args.tasks, running=args.running)
    finally:
        for p in burning:  # only the processes this bench started
            p.terminate()
            p.wait()
    load = "/".join(f"{x:.1f}" for x in res["cancel_load"])
    print(f"{res['cancel_n']} tasks canceled ({res['cancel_before']} when canceled), {args.burn} CPU burners, "
          f"load average {load} (1/5/15 min) on {os.cpu_count()} CPUs, task sandbox: {args.jail}")
    print(f"  all CANCELED {res['cancel_s']:.1f} s after the first cancel request (median task "
          f"{res['cancel_median_s']:.1f} s; the {res['cancel_n']} requests took {res['cancel_sent_s']:.1f} s; "
          f"seen by polling at {res['cancel_polled_s']:.1f} s)")
    print(f"  Ray stop requests: {res['cancel_stops']}")
    print("  the scheduler thread meanwhile: " + ", ".join(
        f"{name} {k} passes, {total:.1f} s in all, slowest {most * 1000:.0f} ms"
        for name, (k, total, most) in res["cancel_passes"].items()))
    for how, k in sorted(res["cancel_how"].items(), key=lambda kv: -kv[1]):
        print(f"  {k:3d} × {how}")


if __name__ == "__main__":
    main()
