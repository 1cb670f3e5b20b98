"""Benchmark: what browser sessions and dry runs cost per request.

A real uvicorn server on loopback over a real SQLite file. Times, sequentially:
``GET /api/v2/me`` with a bearer token vs the session cookie (one more indexed
look-up per request), a cookie write with its CSRF check, password sign-in
(Argon2id: the deliberate cost), and ``POST /api/v2/tasks?dry_run=true`` next to a
real submit (verl validation off: the platform's own share). Prints figures;
asserts nothing.

    .venv/bin/python bench/session_auth.py [--requests 300]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx  # noqa: E402
from tests.helpers import live_server  # noqa: E402

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
PASSWORD = "correct horse battery"


def timed(n: int, call: Callable[[], httpx.Response], expect: int) -> list[float]:
    samples = []
    for _ in range(n):
        t0 = time.perf_counter()
        r = call()
        samples.append((time.perf_counter() - t0) * 1000)
        assert r.status_code == expect, r.text
    return samples


def report(label: str, ms: list[float]) -> None:
    s = sorted(ms)
    print(f"{label:48} p50 {statistics.median(s):7.2f} ms   p99 {s[int(0.99 * (len(s) - 1))]:7.2f} ms   (n={len(s)})")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=300)
    n = ap.parse_args().requests
    with tempfile.TemporaryDirectory() as tmp, live_server(
        Settings(state_dir=Path(tmp), sftp_enabled=False, verl_validation="off")
    ) as srv:
        bearer = srv.new_user("alice")
        assert bearer.post("/api/v2/me/password", json={"password": PASSWORD}).status_code == 204
        browser = httpx.Client(base_url=srv.url, timeout=30)
        csrf = browser.post("/api/v2/session", json={"user": "alice", "password": PASSWORD}).json()["csrf_token"]
        yaml = {"Content-Type": "application/yaml"}

        timed(20, lambda: bearer.get("/api/v2/me"), 200)  # warm up
        timed(20, lambda: browser.get("/api/v2/me"), 200)
        by_bearer, by_cookie = [], []
        for _ in range(n):  # interleaved: on a shared machine, load changes between blocks of requests
            by_bearer += timed(1, lambda: bearer.get("/api/v2/me"), 200)
            by_cookie += timed(1, lambda: browser.get("/api/v2/me"), 200)
        report("GET /api/v2/me, bearer token", by_bearer)
        report("GET /api/v2/me, session cookie", by_cookie)
        report("GET /api/v2/session (who am I + CSRF token)", timed(n, lambda: browser.get("/api/v2/session"), 200))
        dry_cookie, dry_bearer = [], []
        for _ in range(n):
            dry_cookie += timed(1, lambda: browser.post("/api/v2/tasks", params={"dry_run": "true"}, content=SPEC,
                                                        headers={**yaml, "X-CSRF-Token": csrf}), 200)
            dry_bearer += timed(1, lambda: bearer.post("/api/v2/tasks", params={"dry_run": "true"}, content=SPEC,
                                                       headers=yaml), 200)
        report("POST /api/v2/tasks?dry_run=true, cookie + CSRF", dry_cookie)
        report("POST /api/v2/tasks?dry_run=true, bearer", dry_bearer)
        report("POST /api/v2/tasks (real submit), bearer",
               timed(n, lambda: bearer.post("/api/v2/tasks", content=SPEC, headers=yaml), 201))
        with httpx.Client(base_url=srv.url, timeout=30) as b:
            report("POST /api/v2/session, password (Argon2id)",
                   timed(min(n, 30), lambda: b.post("/api/v2/session", json={"user": "alice", "password": PASSWORD}),
                         200))
        browser.close()


if __name__ == "__main__":
    main()
