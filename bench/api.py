"""Benchmark: task submit throughput and GET /api/v2/tasks latency with 100 000 tasks.

The server runs in its own process (a real uvicorn on loopback, a real SQLite file in WAL mode, verl
validation off, no scheduler), the clients in this one: four threads submit over HTTP, as four users
would. It prints throughput, latency and the server's CPU per submit (read from /proc: the figure
that bounds the rate on a busy machine), then bulk-loads the rest of the 100 000 rows and times the
list endpoint for the shapes users hit: first page, a status filter, a deep page, an admin view.
Prints figures; asserts nothing.

    .venv/bin/python bench/api.py [--tasks 100000] [--submits 2000] [--requests 200]
    .venv/bin/python bench/api.py --url http://127.0.0.1:8080 --token TOKEN --submits 2000
        # submits only, against a running `argus up` (its scheduler wakes on every submit)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

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


def serve(state_dir: str, info_file: str, users: int) -> None:
    """The server process: a live server, ``users`` users with a token each, written to ``info_file``."""
    from tests.helpers import live_server

    from argus.settings import Settings

    with live_server(Settings(state_dir=Path(state_dir), sftp_enabled=False, verl_validation="off")) as srv:
        tokens = [srv.new_user(f"user{i:02d}").headers["Authorization"].split(" ", 1)[1] for i in range(users)]
        info = {"url": srv.url, "tokens": tokens, "admin": srv.admin_token, "db": srv.ctx.settings.database_url}
        Path(info_file).write_text(json.dumps(info))
        while True:  # until the parent kills us
            time.sleep(3600)


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def submit_rate(url: str, tokens: list[str], n: int, server_pid: int | None) -> None:
    clients = [httpx.Client(base_url=url, headers={"Authorization": f"Bearer {t}"}, timeout=60) for t in tokens]

    def submit(i: int) -> float:
        t0 = time.perf_counter()
        r = clients[i % len(clients)].post("/api/v2/tasks", content=SPEC.encode(),
                                           headers={"Content-Type": "application/yaml"})
        assert r.status_code == 201, r.text
        return time.perf_counter() - t0

    with ThreadPoolExecutor(4) as pool:  # warm-up: connections, caches, the day's id counter row
        list(pool.map(submit, range(100)))
        cpu0 = cpu_seconds(server_pid) if server_pid else 0.0
        t0 = time.perf_counter()
        lat = list(pool.map(submit, range(n)))
        wall = time.perf_counter() - t0
    cpu = f"; server CPU {(cpu_seconds(server_pid) - cpu0) / n * 1000:.2f} ms per submit" if server_pid else ""
    print(f"submit: {n} tasks in {wall:.2f} s = {n / wall:.0f} tasks/s (4 clients; latency p50 "
          f"{pct(lat, 50) * 1000:.1f} ms, p99 {pct(lat, 99) * 1000:.1f} ms{cpu})", flush=True)
    for c in clients:
        c.close()


def bulk_load(db_url: str, total: int) -> None:
    """Clone a submitted row until there are ``total`` tasks (the list endpoint reads rows, not how they got there)."""
    from sqlalchemy import func, insert, select

    from argus.db.models import TaskEventModel, TaskModel, UserModel
    from argus.db.session import Database

    db = Database(db_url)
    with db.session() as s:
        template = s.scalars(select(TaskModel).limit(1)).one()
        have = s.scalar(select(func.count()).select_from(TaskModel)) or 0
        user_ids = list(s.scalars(select(UserModel.id).where(UserModel.is_admin.is_(False))))
        cols = {c.key: getattr(template, c.key) for c in TaskModel.__table__.columns}
    t0 = time.perf_counter()
    statuses = ["QUEUED", "SUCCEEDED", "FAILED", "CANCELED", "RUNNING"]
    remaining, batch, base = total - have, 5000, template.created_at
    for start in range(0, remaining, batch):
        rows, events = [], []
        for i in range(start, min(start + batch, remaining)):
            tid = f"grpo-bulk-{i:07d}"
            rows.append({**cols, "id": tid, "user_id": user_ids[i % len(user_ids)], "status": statuses[(i // len(user_ids)) % len(statuses)],
                         "created_at": base.replace(microsecond=0) if i % 2 else base})
            events.append({"task_id": tid, "at": base, "from_status": None, "to_status": "QUEUED", "actor": "bench"})
        with db.session() as s:
            s.execute(insert(TaskModel), rows)
            s.execute(insert(TaskEventModel), events)
    db.dispose()
    print(f"loaded {max(remaining, 0)} more tasks in {time.perf_counter() - t0:.1f} s (total {total})", flush=True)


def list_latency(url: str, user_token: str, admin_token: str, requests: int, server_pid: int) -> None:
    user = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {user_token}"}, timeout=60)
    admin = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {admin_token}"}, timeout=60)
    cases = [
        ("user: first page (limit 50)", user, {}),
        ("user: status=QUEUED", user, {"status": "QUEUED"}),
        ("user: deep page (offset 4000)", user, {"offset": 4000}),
        ("admin: first page, all users", admin, {}),
        ("admin: status=RUNNING", admin, {"status": "RUNNING"}),
        ("admin: workload=grpo, limit 500", admin, {"workload": "grpo", "limit": 500}),
    ]
    for label, client, params in cases:
        client.get("/api/v2/tasks", params=params)  # warm: the first count of a shape reads its index
        samples = []
        cpu0 = cpu_seconds(server_pid)
        for _ in range(requests):
            t0 = time.perf_counter()
            r = client.get("/api/v2/tasks", params=params)
            samples.append(time.perf_counter() - t0)
            assert r.status_code == 200, r.text
        cpu = (cpu_seconds(server_pid) - cpu0) / requests
        print(f"GET /api/v2/tasks {label:34} total={r.json()['total']:6d}  p50 {pct(samples, 50) * 1000:6.1f} ms  "
              f"p99 {pct(samples, 99) * 1000:6.1f} ms  mean {statistics.mean(samples) * 1000:6.1f} ms  "
              f"server CPU {cpu * 1000:5.1f} ms", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=100_000)
    ap.add_argument("--submits", type=int, default=2000)
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--users", type=int, default=20)
    ap.add_argument("--url", help="submit to this running server instead of starting one (submits only)")
    ap.add_argument("--token", help="with --url: a user's API token")
    ap.add_argument("--serve", nargs=2, metavar=("STATE_DIR", "INFO_FILE"), help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.serve:
        serve(*args.serve, users=args.users)
        return
    if args.url:
        if not args.token:
            ap.error("--url needs --token")
        submit_rate(args.url, [args.token], args.submits, None)
        return

    with tempfile.TemporaryDirectory() as tmp:
        info_file = Path(tmp, "server.json")
        server = subprocess.Popen([sys.executable, __file__, "--serve", str(Path(tmp, "state")), str(info_file),
                                   "--users", str(args.users)])
        try:
            deadline = time.monotonic() + 60
            while not info_file.exists():
                if server.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("the benchmark server did not start")
                time.sleep(0.1)
            info = json.loads(info_file.read_text())
            submit_rate(info["url"], info["tokens"], args.submits, server.pid)
            bulk_load(info["db"], args.tasks)
            list_latency(info["url"], info["tokens"][0], info["admin"], args.requests, server.pid)
        finally:
            server.kill()
            server.wait()


if __name__ == "__main__":
    main()
