"""Benchmark: follow latency of the task page's log (issue 25: a line appended is on screen in p50 < 100 ms).

A real uvicorn server over a real SQLite file (no Ray: the task stays QUEUED, so its attempt-1 log is
followed live forever) and Debian's Chromium. The page follows the log; this script appends ``--lines``
lines at irregular intervals (so they do not line up with a poll's phase), and the page's
MutationObserver stamps each one when it enters the DOM. Latency = that stamp − the time just before
the write (one machine, one clock: ``performance.timeOrigin + performance.now()`` vs ``time.time()``).

It measures twice in the same server: with inotify (``services/log_watch.py``, the default) and with
``log_watch.ENABLED = False`` — the old 0.5 s poll — so the figures come from the same box and load.

    .venv/bin/python bench/web_log_latency.py [--lines 50]

``bench/web.py`` calls ``measure`` for its own run too.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.helpers import live_server  # noqa: E402

from argus.services import log_watch  # noqa: E402
from argus.settings import Settings  # noqa: E402

SPEC = ("kind: advanced\nworkload: job\nnnodes: 1\nn_gpus_per_node: 0\nname: latency\n"
        "command: python3 -m argus.jobs.sleep 1\n")
OBSERVE = """() => {
  window.__seen = {};
  new MutationObserver((records) => {
    const at = performance.timeOrigin + performance.now();
    for (const r of records) for (const n of r.addedNodes) {
      for (const m of (n.textContent || '').matchAll(/LAT-(\\d+)-END/g)) if (!(m[1] in window.__seen)) window.__seen[m[1]] = at;
    }
  }).observe(document.getElementById('log'), { childList: true, subtree: true });
}"""


def measure(page, url: str, log: Path, n: int) -> list[float]:  # noqa: ANN001
    """Open the task page at ``url``, append ``n`` lines to ``log``; each line's latency in ms."""
    page.goto(url)
    page.locator("#log-state", has_text="live").wait_for(timeout=30_000)
    time.sleep(1.0)  # the SSE stream is open and idle
    page.evaluate(OBSERVE)
    written: dict[int, float] = {}
    with log.open("ab") as f:
        for i in range(n):
            time.sleep(random.uniform(0.08, 0.25))
            written[i] = time.time() * 1000
            f.write(f"(TaskRunner pid=1) step:{i} LAT-{i}-END\n".encode())
            f.flush()
    deadline = time.monotonic() + 30
    while True:
        seen = page.evaluate("window.__seen")
        if len(seen) >= n or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert len(seen) == n, f"only {len(seen)} of {n} lines reached the page"
    return [seen[str(i)] - written[i] for i in range(n)]


def summary(label: str, lat: list[float]) -> str:
    q = statistics.quantiles(lat, n=20)
    return (f"{label:34} p50 {statistics.median(lat):6.1f} ms   p95 {q[18]:6.1f} ms   "
            f"max {max(lat):6.1f} ms   (n={len(lat)})")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=50)
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as tmp, live_server(
        Settings(state_dir=Path(tmp), sftp_enabled=False, verl_validation="off")
    ) as srv:
        c = srv.new_user("alice")
        r = c.post("/api/v2/tasks", content=SPEC, headers={"Content-Type": "application/yaml"})
        assert r.status_code == 201, r.text
        tid = r.json()["task_id"]
        log = Path(str(srv.ctx.layout.attempt_log("alice", tid, 1)))
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_bytes(b"first line\n")
        token = c.headers["Authorization"].split()[1]
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium")
            ctx = browser.new_context(viewport={"width": 1360, "height": 900})
            page = ctx.new_page()
            assert page.request.post(f"{srv.url}/api/v2/session", data={"token": token}).ok
            url = f"{srv.url}/tasks/{tid}"
            print(f"follow latency: append a line → in the page's DOM ({args.lines} lines, 80–250 ms apart)")
            log_watch.ENABLED = False
            try:
                print(summary("before: poll every 0.5 s", measure(page, url, log, args.lines)))
            finally:
                log_watch.ENABLED = True
            print(summary("after: inotify (+0.5 s backstop)", measure(page, url, log, args.lines)))
            browser.close()


if __name__ == "__main__":
    main()
