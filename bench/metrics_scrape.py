"""GET /metrics at 100 000 tasks: the scrape must not scan the task table (issue 14 target: < 50 ms).

    .venv/bin/python bench/metrics_scrape.py [--tasks 100000] [--queued 10000] [--scrapes 50]

Real SQLite file, real uvicorn server, real HTTP with an admin token. The tasks carry realistic
big columns (a ~2 KB spec, resolved spec and command each) so that a plan which reads table rows
shows up. Mix: ``--queued`` QUEUED, 200 RUNNING, the rest SUCCEEDED/FAILED/CANCELED, over four
workloads and 100 users. Prints the first scrape of the server process (it counts the table once),
then the scrape latency (median, p99, max) with nothing changed, and with ``--changes`` status changes
(cancels through ``switch_task_status``) before each scrape, and ``GET /api/v2/me`` (same auth, no
work: the HTTP floor) for comparison.
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


def fill(db, n_tasks: int, n_queued: int, n_users: int = 100) -> None:
    from sqlalchemy import insert

    from argus.db.models import TaskModel, UserModel, utcnow

    big = "python3 -m verl.trainer.main_ppo " + " ".join(f"key{i}=value{i}" for i in range(120))  # ~2 KB
    ended = ("SUCCEEDED", "SUCCEEDED", "SUCCEEDED", "FAILED", "CANCELED")
    now = utcnow() - timedelta(days=30)
    with db.session() as s:
        s.execute(insert(UserModel), [{"name": f"bench{u:03d}"} for u in range(n_users)])
        first_user = s.query(UserModel.id).filter(UserModel.name == "bench000").scalar()
    for start in range(0, n_tasks, 10_000):
        rows = []
        for i in range(start, min(n_tasks, start + 10_000)):
            status = "QUEUED" if i < n_queued else "RUNNING" if i < n_queued + 200 else ended[i % len(ended)]
            rows.append(dict(id=f"bench-{i:06d}", user_id=first_user + i % n_users, kind="advanced",
                             workload=("ppo", "grpo", "sft", "job")[i % 4], status=status, priority=0, nnodes=1,
                             n_gpus_per_node=1, spec_raw=big, spec_resolved={"command": big}, command_raw=big,
                             command_expanded=big, argv=["bash", "-lc", big], warnings=[], attempts=0,
                             created_at=now + timedelta(seconds=i), updated_at=now))
        with db.session() as s:
            s.execute(insert(TaskModel), rows)


def cancel_some(db, start: int, n: int) -> None:
    """``n`` status changes the way the product makes them (switch_task_status writes the event)."""
    from argus.core.states import TaskStatus, TerminationReason
    from argus.db.models import TaskModel
    from argus.services.tasks import switch_task_status

    with db.session() as s:
        for i in range(start, start + n):
            task = s.get(TaskModel, f"bench-{i:06d}")
            switch_task_status(s, task, TaskStatus.CANCELED, actor="bench", reason=TerminationReason.USER_CANCELED)


def summary(name: str, xs: list[float]) -> None:
    xs = sorted(xs)
    p99 = xs[min(len(xs) - 1, int(len(xs) * 0.99))]
    print(f"{name:>34}: median {statistics.median(xs) * 1000:6.1f} ms  p99 {p99 * 1000:6.1f} ms  "
          f"max {xs[-1] * 1000:6.1f} ms  (n={len(xs)})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=100_000)
    ap.add_argument("--queued", type=int, default=10_000)
    ap.add_argument("--scrapes", type=int, default=50)
    ap.add_argument("--changes", type=int, default=20, help="status changes between two scrapes (second series)")
    args = ap.parse_args()

    from tests.helpers import live_server

    from argus.settings import Settings

    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(state_dir=Path(tmp), sftp_enabled=False, verl_validation="off")
        with live_server(settings) as live:
            t0 = time.perf_counter()
            fill(live.ctx.db, args.tasks, args.queued)
            print(f"filled {args.tasks} tasks ({args.queued} queued) in {time.perf_counter() - t0:.1f} s")
            with live.admin() as admin:
                t0 = time.perf_counter()
                assert admin.get("/metrics").status_code == 200  # the server process's first: counts the table
                first = time.perf_counter() - t0
                steady, changed, baseline = [], [], []
                for _ in range(args.scrapes):
                    t0 = time.perf_counter()
                    r = admin.get("/metrics")
                    steady.append(time.perf_counter() - t0)
                    assert r.status_code == 200
                    t0 = time.perf_counter()
                    assert admin.get("/api/v2/me").status_code == 200
                    baseline.append(time.perf_counter() - t0)
                for k in range(args.scrapes):
                    cancel_some(live.ctx.db, k * args.changes, args.changes)
                    t0 = time.perf_counter()
                    r = admin.get("/metrics")
                    changed.append(time.perf_counter() - t0)
            size = len(r.content)
    print(f"{'first GET /metrics (counts the table)':>34}: {first * 1000:6.1f} ms")
    summary("GET /metrics, nothing changed", steady)
    summary(f"GET /metrics, {args.changes} changes since last", changed)
    summary("GET /api/v2/me (the HTTP floor)", baseline)
    print(f"scrape body: {size} bytes")


if __name__ == "__main__":
    main()
