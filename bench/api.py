"""Benchmark: task submit throughput and GET /api/v2/tasks latency with 100 000 tasks.

Runs a real uvicorn server on loopback against a real SQLite file (WAL), submits
tasks over HTTP to measure throughput, bulk-loads the rest of the 100 000 rows
directly, then times the list endpoint for the shapes users hit: first page,
a status filter, a deep page, an admin view. Prints figures; asserts nothing.

    .venv/bin/python bench/api.py [--tasks 100000] [--submits 500] [--requests 200]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import insert, select  # noqa: E402
from tests.helpers import live_server  # noqa: E402

from argus.db.models import TaskEventModel, TaskModel, UserModel  # noqa: E402
from argus.settings import Settings  # noqa: E402

SPEC = """\
kind: advanced
workload: grpo
nnodes: 1
n_gpus_per_node: 8
command: |
  python3 -m verl.trainer.main_ppo data.train_files=$HOME/datasets/t.parquet \\
    data.val_files=$HOME/datasets/v.parquet trainer.nnodes=1 trainer.n_gpus_per_node=8
"""


def pct(samples: list[float], p: float) -> float:
    s = sorted(samples)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=100_000)
    ap.add_argument("--submits", type=int, default=500)
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--users", type=int, default=20)
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp, live_server(
        Settings(state_dir=Path(tmp), sftp_enabled=False, verl_validation="off")
    ) as srv:
        clients = [srv.new_user(f"user{i:02d}") for i in range(args.users)]

        # 1. submit throughput over HTTP (admission + id allocation + insert), 4 concurrent clients
        def submit(i: int) -> float:
            t0 = time.perf_counter()
            r = clients[i % len(clients)].post("/api/v2/tasks", content=SPEC.encode(),
                                               headers={"Content-Type": "application/yaml"})
            assert r.status_code == 201, r.text
            return time.perf_counter() - t0

        t0, cpu0 = time.perf_counter(), time.process_time()
        with ThreadPoolExecutor(4) as pool:
            lat = list(pool.map(submit, range(args.submits)))
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        # server and clients share this process (one GIL): CPU per submit bounds the rate whatever the load
        print(f"submit: {args.submits} tasks in {wall:.2f} s = {args.submits / wall:.0f} tasks/s "
              f"(4 clients; latency p50 {pct(lat, 50) * 1000:.1f} ms, p99 {pct(lat, 99) * 1000:.1f} ms; "
              f"CPU {cpu / args.submits * 1000:.2f} ms per submit, server and client)")

        # 2. bulk-load the rest by cloning a submitted row (the list endpoint reads rows, not how they got there)
        db = srv.ctx.db
        with db.session() as s:
            template = s.scalars(select(TaskModel).limit(1)).one()
            user_ids = list(s.scalars(select(UserModel.id)))
            cols = {c.key: getattr(template, c.key) for c in TaskModel.__table__.columns}
        t0 = time.perf_counter()
        statuses = ["QUEUED", "SUCCEEDED", "FAILED", "CANCELED", "RUNNING"]
        remaining = args.tasks - args.submits
        batch = 5000
        base = template.created_at
        for start in range(0, remaining, batch):
            rows, events = [], []
            for i in range(start, min(start + batch, remaining)):
                tid = f"grpo-bulk-{i:07d}"
                rows.append({**cols, "id": tid, "user_id": user_ids[i % len(user_ids)],
                             "status": statuses[i % len(statuses)],
                             "created_at": base.replace(microsecond=0) if i % 2 else base})
                events.append({"task_id": tid, "at": base, "from_status": None, "to_status": "QUEUED",
                               "actor": "bench"})
            with db.session() as s:
                s.execute(insert(TaskModel), rows)
                s.execute(insert(TaskEventModel), events)
        print(f"loaded {remaining} more tasks in {time.perf_counter() - t0:.1f} s (total {args.tasks})")

        # 3. list latency
        user = clients[0]
        with srv.admin() as admin:
            cases = [
                ("user: first page (limit 50)", user, {}),
                ("user: status=QUEUED", user, {"status": "QUEUED"}),
                ("user: deep page (offset 4000)", user, {"offset": 4000}),
                ("admin: first page, all users", admin, {}),
                ("admin: status=RUNNING", admin, {"status": "RUNNING"}),
                ("admin: workload=grpo, limit 500", admin, {"workload": "grpo", "limit": 500}),
            ]
            for label, client, params in cases:
                samples = []
                cpu0 = time.process_time()
                for _ in range(args.requests):
                    t0 = time.perf_counter()
                    r = client.get("/api/v2/tasks", params=params)
                    samples.append(time.perf_counter() - t0)
                    assert r.status_code == 200, r.text
                cpu = (time.process_time() - cpu0) / args.requests
                total = r.json()["total"]
                print(f"GET /api/v2/tasks {label:34} total={total:6d}  p50 {pct(samples, 50) * 1000:6.1f} ms  "
                      f"p99 {pct(samples, 99) * 1000:6.1f} ms  mean {statistics.mean(samples) * 1000:6.1f} ms  "
                      f"CPU {cpu * 1000:5.1f} ms")


if __name__ == "__main__":
    main()
