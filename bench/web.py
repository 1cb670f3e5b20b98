"""Benchmark: the WebUI in Debian's Chromium with 100 000 tasks in the database, and a 200 MB log.

A real uvicorn server over a real SQLite file (no Ray: nothing here runs a task). Tasks are
bulk-inserted through the DB layer after one real submit per user. Then Playwright drives
``/usr/bin/chromium``:

* page load of /tasks, /tasks/new and a task page (navigation start → load event, and for
  /tasks → first table rendered: the ``argus:tasks-render`` measure of static/js/tasks.js);
* tasks-list render (API call + DOM) for the first page, a status filter, a deep page, and the
  admin's all-users view, each the median of several loads;
* the page's memory (JS heap, DOM nodes; Chromium's own Performance metrics) while following a
  log that starts at 200 MB and grows by --grow-mb while the page is open.
* follow latency: a line appended → in the page's DOM, p50/p95 of 50 lines, with the old 0.5 s poll
  and with inotify (bench/web_log_latency.py, which also runs on its own).
* New Task verdict (issue 25): last keystroke → verdict rendered, with real verl validation, is
  bench/web_verdict.py (it needs the validator, which this server runs without). 2-core box, load
  average 3–6, 20 edits each: before (900 ms debounce) p50 1016 ms / p95 1140 ms; after (250 ms
  debounce, the worker no longer deep-copies the composed config to drop its hydra node) p50 398 ms /
  p95 610 ms; the dry-run request alone p50 80 ms / p95 119 ms (at load ~15: 787 / 916 ms).
* Data page (issue 25): a folder of 100 small files uploaded through the page, and a 2 000-file folder
  opened (listing API + render, rows in the DOM), are ``bench/web_upload.py --folder 100 --listing 2000``
  (a separate script: it runs ``argus server`` in a subprocess, as for its upload-memory figures).

Prints figures; asserts nothing.

    .venv/bin/python bench/web.py [--tasks 100000] [--log-mb 200] [--grow-mb 50] [--loads 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import insert, select  # noqa: E402
from tests.helpers import live_server  # noqa: E402

from argus.db.models import TaskModel, UserModel  # noqa: E402
from argus.settings import Settings  # noqa: E402

SPEC = ("kind: advanced\nworkload: grpo\nnnodes: 1\nn_gpus_per_node: 8\nname: bench\ncommand: python3 -m "
        "verl.trainer.main_ppo data.train_files=$HOME/d/t.parquet data.val_files=$HOME/d/v.parquet\n")
LINE = "step:{i} - actor/entropy:0.5 - critic/score/mean:0.25 - perf/throughput:1234.5 - some padding text xx\n"


def bulk_load(srv, n: int) -> None:  # noqa: ANN001
    db = srv.ctx.db
    with db.session() as s:
        template = s.scalars(select(TaskModel).limit(1)).one()
        user_ids = list(s.scalars(select(UserModel.id)))
        cols = {c.key: getattr(template, c.key) for c in TaskModel.__table__.columns}
    statuses = ["QUEUED", "SUCCEEDED", "FAILED", "CANCELED", "RUNNING"]
    for start in range(0, n, 5000):
        rows = [{**cols, "id": f"grpo-bulk-{i:07d}", "user_id": user_ids[i % len(user_ids)],
                 "status": statuses[i % len(statuses)], "name": f"bulk {i}"} for i in range(start, min(start + 5000, n))]
        with db.session() as s:
            s.execute(insert(TaskModel), rows)


def load_ms(page) -> float:  # noqa: ANN001
    return page.evaluate("(() => { const n = performance.getEntriesByType('navigation')[0];"
                         " return n.loadEventEnd - n.startTime; })()")


def render_ms(page) -> float:  # noqa: ANN001
    deadline = time.monotonic() + 60
    while not page.evaluate("performance.getEntriesByName('argus:tasks-render').length"):  # CSP: no wait_for_function
        assert time.monotonic() < deadline, "the tasks list never rendered"
        time.sleep(0.01)
    return page.evaluate("performance.getEntriesByName('argus:tasks-render')[0].duration")


def metrics(cdp) -> dict[str, float]:  # noqa: ANN001
    return {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=100_000)
    ap.add_argument("--users", type=int, default=20)
    ap.add_argument("--log-mb", type=int, default=200)
    ap.add_argument("--grow-mb", type=int, default=50)
    ap.add_argument("--loads", type=int, default=5)
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as tmp, live_server(
        Settings(state_dir=Path(tmp), sftp_enabled=False, verl_validation="off")
    ) as srv:
        clients = [srv.new_user(f"user{i:02d}") for i in range(args.users)]
        tids = []
        for c in clients:
            r = c.post("/api/v2/tasks", content=SPEC, headers={"Content-Type": "application/yaml"})
            assert r.status_code == 201, r.text
            tids.append(r.json()["task_id"])
        t0 = time.perf_counter()
        bulk_load(srv, args.tasks - len(clients))
        print(f"loaded {args.tasks} tasks ({args.users} users) in {time.perf_counter() - t0:.1f} s")
        user_token = clients[0].headers["Authorization"].split()[1]

        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium")

            def signed_in(token: str):  # noqa: ANN202
                ctx = browser.new_context(viewport={"width": 1360, "height": 900})
                page = ctx.new_page()
                r = page.request.post(f"{srv.url}/api/v2/session", data={"token": token})
                assert r.ok, r.text()
                return ctx, page

            ctx, page = signed_in(user_token)
            admin_ctx, admin_page = signed_in(srv.admin_token)
            cases = [("user: /tasks first page", page, "/tasks"),
                     ("user: /tasks?status=QUEUED", page, "/tasks?status=QUEUED"),
                     ("user: /tasks deep page (offset 4000)", page, "/tasks?offset=4000"),
                     ("admin: /tasks all users", admin_page, "/tasks"),
                     ("admin: /tasks?status=RUNNING", admin_page, "/tasks?status=RUNNING")]
            print(f"\n{'tasks page':40} {'load (ms)':>10} {'list render (ms)':>17}   (median of {args.loads})")
            for label, pg, path in cases:
                loads, renders = [], []
                for _ in range(args.loads):
                    pg.goto(srv.url + path)
                    renders.append(render_ms(pg))
                    loads.append(load_ms(pg))
                print(f"{label:40} {statistics.median(loads):10.1f} {statistics.median(renders):17.1f}")
            for label, path, ready in [("/tasks/new (editor bundle)", "/tasks/new", "#editor .cm-content"),
                                       (f"/tasks/{tids[0]}", f"/tasks/{tids[0]}", "#t-status .badge")]:
                loads, readies = [], []
                for _ in range(args.loads):
                    t0 = time.perf_counter()
                    page.goto(srv.url + path)
                    page.locator(ready).first.wait_for()
                    readies.append((time.perf_counter() - t0) * 1000)
                    loads.append(load_ms(page))
                print(f"{label:40} {statistics.median(loads):10.1f}   ready {statistics.median(readies):7.1f} ms")

            # a big log: the page shows its tail and follows what is appended, keeping a bounded window
            layout = srv.ctx.layout
            log = Path(str(layout.attempt_log("user00", tids[0], 1)))
            log.parent.mkdir(parents=True, exist_ok=True)
            line_bytes = len(LINE.format(i=0))
            with log.open("w") as f:
                chunk = "".join(LINE.format(i=i) for i in range(10_000))
                for _ in range(args.log_mb * 1024 * 1024 // len(chunk)):
                    f.write(chunk)
            size_mb = log.stat().st_size / 1048576
            cdp = ctx.new_cdp_session(page)
            cdp.send("Performance.enable")
            t0 = time.perf_counter()
            page.goto(f"{srv.url}/tasks/{tids[0]}")
            page.locator("#log .ln").first.wait_for()
            opened = (time.perf_counter() - t0) * 1000
            m0 = metrics(cdp)
            grown = threading.Event()

            def grow() -> None:
                with log.open("a") as f:
                    chunk = "".join(LINE.format(i=i) for i in range(2_000))
                    for _ in range(args.grow_mb * 1024 * 1024 // len(chunk)):
                        f.write(chunk)
                        f.flush()
                        time.sleep(0.01)
                    f.write("END-OF-BENCH\n")
                grown.set()

            t0 = time.perf_counter()
            threading.Thread(target=grow, daemon=True).start()
            peak_heap = 0.0
            peak_nodes = 0.0
            final_size = None
            while True:
                m = metrics(cdp)
                peak_heap, peak_nodes = max(peak_heap, m["JSHeapUsedSize"]), max(peak_nodes, m["Nodes"])
                if grown.is_set():
                    final_size = log.stat().st_size
                    break
                time.sleep(0.5)
            lines_written = (final_size - size_mb * 1048576) / line_bytes
            page.locator("#log .ln", has_text="END-OF-BENCH").wait_for(timeout=300_000)
            followed = time.perf_counter() - t0
            m1 = metrics(cdp)
            dom_lines = page.evaluate("document.querySelectorAll('#log .ln').length")
            print(f"\nlog of {size_mb:.0f} MB: page showed its tail in {opened:.0f} ms; "
                  f"JS heap {m0['JSHeapUsedSize'] / 1048576:.1f} MB, {m0['Nodes']:.0f} DOM nodes")
            print(f"while {args.grow_mb} MB (~{lines_written:,.0f} lines) were appended and followed live in "
                  f"{followed:.1f} s: peak JS heap {peak_heap / 1048576:.1f} MB, peak DOM nodes "
                  f"{peak_nodes:.0f} (Chromium's count: removed lines awaiting GC included); after: JS heap {m1['JSHeapUsedSize'] / 1048576:.1f} MB, "
                  f"{dom_lines} log lines in the DOM")
            # issue 25: follow latency (append → in the DOM), old 0.5 s poll vs inotify (bench/web_log_latency.py)
            sys.path.insert(0, str(Path(__file__).resolve().parent))
            from web_log_latency import measure, summary

            from argus.services import log_watch
            log_watch.ENABLED = False
            poll_lat = measure(page, f"{srv.url}/tasks/{tids[0]}", log, 50)
            log_watch.ENABLED = True
            print(summary("follow latency, before: poll 0.5 s", poll_lat))
            print(summary("follow latency, after: inotify", measure(page, f"{srv.url}/tasks/{tids[0]}", log, 50)))
            admin_ctx.close()
            ctx.close()
            browser.close()


if __name__ == "__main__":
    main()
