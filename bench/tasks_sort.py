"""Benchmark: GET /api/v2/tasks?sort=<column> over 100 000 tasks (issue 25: lists that scale).

A real uvicorn server over a real SQLite file; 100 000 finished tasks with one attempt each are
bulk-inserted, then each sortable column is asked for descending at offset 50 000 (a deep page, the
worst case: SQLite sorts every row for the columns without an index). Prints milliseconds per
column; asserts nothing.

    .venv/bin/python bench/tasks_sort.py [--tasks 100000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import insert, select  # noqa: E402
from tests.helpers import live_server  # noqa: E402

from argus.db.models import TaskAttemptModel, TaskModel, UserModel  # noqa: E402
from argus.services.task_list import SORT_COLUMNS  # noqa: E402
from argus.settings import Settings  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    now = datetime.now(UTC).replace(microsecond=0)
    with tempfile.TemporaryDirectory() as tmp, live_server(
            Settings(state_dir=Path(tmp) / "state", sftp_enabled=False, verl_validation="off")) as live:
        live.new_user("alice").close()
        with live.ctx.db.session() as s:
            uid = s.scalar(select(UserModel.id).where(UserModel.name == "alice"))
            base = dict(user_id=uid, kind="advanced", workload="grpo", status="SUCCEEDED", priority=0, nnodes=1,
                        n_gpus_per_node=1, spec_raw="", spec_resolved={}, command_raw="x", command_expanded="x",
                        argv=[], warnings=[], attempts=1)
            rows = [{**base, "id": f"grpo-{i:06d}", "name": f"run {i * 7919 % args.tasks}",
                     "created_at": now - timedelta(seconds=i), "updated_at": now,
                     "started_at": now - timedelta(seconds=i), "finished_at": now - timedelta(seconds=i // 2)}
                    for i in range(args.tasks)]
            s.execute(insert(TaskModel), rows)
            s.execute(insert(TaskAttemptModel), [{"task_id": r["id"], "attempt": 1, "submission_id": r["id"] + "-1",
                                                  "status": "SUCCEEDED", "created_at": r["created_at"],
                                                  "started_at": r["started_at"], "finished_at": r["finished_at"]}
                                                 for r in rows])
        print(f"{args.tasks} tasks; GET /api/v2/tasks?sort=-<column>&offset={args.tasks // 2}, median of "
              f"{args.repeat} (ms):")
        with live.admin() as a:
            for col in SORT_COLUMNS:
                times = []
                for _ in range(args.repeat):
                    t0 = time.perf_counter()
                    r = a.get("/api/v2/tasks", params={"sort": f"-{col}", "offset": args.tasks // 2})
                    times.append((time.perf_counter() - t0) * 1000)
                    assert r.status_code == 200, r.text
                print(f"  {col:10s} {statistics.median(times):7.0f}")


if __name__ == "__main__":
    main()
