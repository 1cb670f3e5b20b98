"""Benchmark (issue 38): what a sweep costs the server — checking and queueing its trials at submit, and one
scheduler look (``services/sweeps.tick``) at a sweep whose running trials have long logs.

A live server in this process (real SQLite file, verl validation off — on a cluster it adds verl's own check
per trial, see bench/validation.py), one user. Submit: a grid of N trials of an advanced ``argus.jobs.steps``
spec, timed end to end over HTTP. Tick: K trials marked RUNNING, each with a log of L verl metric lines (a
validation every 10 steps); the first look parses every log, later looks read only what was appended.
Prints figures; asserts nothing.

    .venv/bin/python bench/sweeps.py [--trials 16,64,256] [--running 32] [--lines 20000]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

METRIC = "val-core/steps/score/mean@1"


def sweep(n: int) -> dict:
    return {"kind": "sweep", "name": "bench",
            "base": {"kind": "advanced", "workload": "job", "nnodes": 1, "n_gpus_per_node": 0,
                     "command": "python3 -m argus.jobs.steps trainer.total_training_steps=100000 trainer.test_freq=10"},
            "parameters": {"val_per_step": [round(0.001 * (i + 1), 6) for i in range(n)]},
            "max_concurrent": n, "metric": METRIC, "early_stop": {"rungs": [10, 100, 1000], "keep": 0.5}}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", default="16,64,256")
    ap.add_argument("--running", type=int, default=32)
    ap.add_argument("--lines", type=int, default=20000)
    a = ap.parse_args()
    from tests.helpers import live_server

    from argus.core.paths import DataLayout
    from argus.db.models import TaskModel
    from argus.services import sweeps as svc
    from argus.settings import Settings

    with tempfile.TemporaryDirectory() as tmp, live_server(Settings(state_dir=Path(tmp), sftp_enabled=False,
                                                                    verl_validation="off")) as srv:
        c = srv.new_user("bench")
        for n in (int(x) for x in a.trials.split(",")):
            body = yaml.safe_dump(sweep(n), sort_keys=False).encode()
            t0 = time.perf_counter()
            r = c.post("/api/v2/sweeps", content=body, headers={"Content-Type": "application/yaml"}, timeout=600)
            wall = time.perf_counter() - t0
            assert r.status_code == 201, r.text
            print(f"submit: a sweep of {n} trials checked and queued in {wall * 1000:.0f} ms "
                  f"({wall / n * 1000:.1f} ms per trial)", flush=True)
        sid = c.post("/api/v2/sweeps", content=yaml.safe_dump(sweep(a.running), sort_keys=False).encode(),
                     headers={"Content-Type": "application/yaml"}).json()["sweep_id"]
        root = Path(srv.ctx.settings.root)
        layout = DataLayout.at(str(root))
        with srv.ctx.db.session() as s:
            rows = s.query(TaskModel).filter(TaskModel.sweep_id == sid).all()
            for i, row in enumerate(rows):
                row.status, row.attempts = "RUNNING", 1
                log = root / "users" / "bench" / "jobs" / row.id / "logs" / "attempt-1.log"
                log.parent.mkdir(parents=True, exist_ok=True)
                log.write_text("".join(
                    f"step:{k} - actor/pg_loss:0.01 - critic/score/mean:0.5 - timing_s/gen:1.9"
                    + (f" - {METRIC}:{0.001 * (i + 1) * k}" if k % 10 == 0 else "") + "\n"
                    for k in range(1, a.lines + 1)))
        mib = sum(p.stat().st_size for p in (root / "users" / "bench" / "jobs").rglob("attempt-1.log")) / 2**20
        for label in ("first look (parses every log)", "next look (nothing appended)"):
            with srv.ctx.db.session() as s:
                t0 = time.perf_counter()
                stopped = svc.tick(s, layout, datetime.now(UTC))
                wall = time.perf_counter() - t0
            print(f"tick: {a.running} running trials, {a.lines} lines each ({mib:.0f} MiB of logs): {label} "
                  f"{wall * 1000:.0f} ms, {stopped} stopped", flush=True)


if __name__ == "__main__":
    main()
