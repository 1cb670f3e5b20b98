"""Benchmark: what keeping a live task's folder and log (services/active_jobs.py, issue 37) costs the files API.

A real uvicorn server over a real SQLite file; one user with ``--tasks`` finished tasks and ``--live`` running
ones, each with a ``jobs/<task>/logs/attempt-1.log``. Over HTTP (what the Data page pays), median of
``--repeat`` calls each:

* ``GET /api/v2/files?path=/jobs`` (every task folder, the live ones marked ``protected``), and of ``/`` and a
  task's folder;
* a small PUT outside ``jobs`` (the guard's realpath, no query) and a refused DELETE of a live task's log
  (one query);

and in-process, the guard alone (``UserFiles._keep_task_files``) per call and the listing of ``/jobs``
with and without its marks. Prints milliseconds; asserts nothing.

    .venv/bin/python bench/files_task_guard.py [--tasks 3000] [--live 20] [--repeat 30]
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

from argus.db.models import TaskModel, UserModel  # noqa: E402
from argus.services.files import shared_store, user_files  # noqa: E402
from argus.services.principal import Principal  # noqa: E402
from argus.settings import Settings  # noqa: E402


def median_ms(fn, repeat: int) -> float:  # noqa: ANN001
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=3000)
    ap.add_argument("--live", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=30)
    args = ap.parse_args()
    now = datetime.now(UTC).replace(microsecond=0)
    with tempfile.TemporaryDirectory() as tmp, live_server(
            Settings(state_dir=Path(tmp) / "state", sftp_enabled=False, verl_validation="off")) as live:
        alice = live.new_user("alice")
        with live.ctx.db.session() as s:
            uid = s.scalar(select(UserModel.id).where(UserModel.name == "alice"))
            base = dict(user_id=uid, kind="advanced", workload="job", priority=0, nnodes=1, n_gpus_per_node=0,
                        spec_raw="", spec_resolved={}, command_raw="x", command_expanded="x", argv=[], warnings=[],
                        attempts=1)
            ids = [f"job-{i:06d}" for i in range(args.tasks + args.live)]
            s.execute(insert(TaskModel), [{**base, "id": tid, "name": tid,
                                           "status": "RUNNING" if i < args.live else "SUCCEEDED",
                                           "created_at": now - timedelta(seconds=i), "updated_at": now}
                                          for i, tid in enumerate(ids)])
        home = Path(live.ctx.settings.root) / "users" / "alice"
        for tid in ids:
            (home / "jobs" / tid / "logs").mkdir(parents=True)
            (home / "jobs" / tid / "logs" / "attempt-1.log").write_bytes(b"step:1\n")
        live_id = ids[0]
        r = alice.get("/api/v2/files", params={"path": "/jobs"})
        marked = sum(e["protected"] is not None for e in r.json()["entries"])
        print(f"{len(ids)} task folders, {args.live} live ({marked} marked protected); median of {args.repeat}")
        rows = [
            ("GET /files?path=/jobs", lambda: alice.get("/api/v2/files", params={"path": "/jobs"})),
            ("GET /files?path=/", lambda: alice.get("/api/v2/files", params={"path": "/"})),
            (f"GET /files?path=/jobs/{live_id}", lambda: alice.get("/api/v2/files", params={"path": f"/jobs/{live_id}"})),
            ("PUT /files/content /datasets/x (7 B)",
             lambda: alice.put("/api/v2/files/content", params={"path": "/datasets/x"}, content=b"payload")),
            ("DELETE a live task's log (409)",
             lambda: alice.delete("/api/v2/files", params={"path": f"/jobs/{live_id}/logs/attempt-1.log"})),
        ]
        for name, fn in rows:
            print(f"  {name:45s} {median_ms(fn, args.repeat):8.2f} ms")
        store = shared_store(live.ctx.extras, live.ctx.settings)
        with live.ctx.db.session() as s:
            files = user_files(store, s, Principal(id=uid, name="alice", is_admin=False))

        def refused() -> None:
            try:
                files._keep_task_files(f"/jobs/{live_id}/logs")
            except Exception:  # noqa: BLE001 — the Conflict is the point
                pass

        print("in-process, the guard alone:")
        print(f"  {'a path outside jobs/ (realpath only)':45s} "
              f"{median_ms(lambda: files._keep_task_files('/datasets/x'), args.repeat * 10):8.3f} ms")
        print(f"  {'a live task logs/ (one query, refused)':45s} {median_ms(refused, args.repeat * 10):8.3f} ms")
        guarded = median_ms(lambda: files.list("/jobs"), args.repeat)
        jobs, files.jobs = files.jobs, None
        bare = median_ms(lambda: files.list("/jobs"), args.repeat)
        files.jobs = jobs
        print(f"  {'list /jobs with the marks / without':45s} {guarded:8.2f} / {bare:.2f} ms")


if __name__ == "__main__":
    main()
