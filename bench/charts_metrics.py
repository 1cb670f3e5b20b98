"""Benchmark: the metrics a chart polls (GET …/metrics: parse + clock + JSON shape) for a verl-sized log.

A verl PPO run prints ~100 keys per step; a long run has thousands of steps. The task page asks for
every key every 10 s while it is open, and the Compare page asks for each task's. This measures,
in-process (no HTTP), ``read_log_metrics`` + ``as_lists`` + ``times`` for a log of --steps lines of
--keys keys with a driver clock beside it:

* cold: the first request after a server start (the whole log parsed);
* warm: a request with nothing appended (the cached parser);
* one step appended: what a live chart pays per refresh;
* the response size (JSON bytes) the browser downloads per refresh.

Prints figures; asserts nothing.

    .venv/bin/python bench/charts_metrics.py [--steps 5000] [--keys 100]
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

from argus.core.metrics import clock_line
from argus.services import metrics as svc


def line(step: int, keys: list[str], rng: random.Random) -> bytes:
    return (f"(TaskRunner pid=4242) step:{step} - " + " - ".join(f"{k}:{rng.gauss(0, 1):.6g}" for k in keys)
            + "\n").encode()


def request(home: Path, log: Path, wanted: list[str] | None = None) -> tuple[float, int]:
    """``wanted``: the keys the page draws (it asks for those only); None: every key."""
    t0 = time.perf_counter()
    s = svc.read_log_metrics(home, log)
    body = json.dumps({"keys": s.keys, "last_step": s.last_step, "points": s.as_lists(wanted), "times": s.times})
    return time.perf_counter() - t0, len(body)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=5000)
    ap.add_argument("--keys", type=int, default=100)
    a = ap.parse_args()
    rng = random.Random(0)
    prefixes = ["actor", "critic", "perf", "timing_s", "response_length", "val-core"]
    keys = [f"{prefixes[i % len(prefixes)]}/metric_{i}" for i in range(a.keys)]
    home = Path(tempfile.mkdtemp())
    log = home / "logs" / "attempt-1.log"
    log.parent.mkdir()
    t = 1.7e9
    with open(log, "wb") as f, open(log.with_suffix(".clock"), "wb") as c:
        for step in range(1, a.steps + 1):
            f.write(line(step, keys, rng))
            c.write(clock_line(f.tell(), t + step * 40))
    print(f"log: {a.steps} steps x {a.keys} keys = {log.stat().st_size / 2**20:.1f} MiB")
    cold, size = request(home, log)
    print(f"cold (first request after start): {cold * 1000:.0f} ms, response {size / 2**20:.1f} MiB")
    warm = sorted(request(home, log)[0] for _ in range(5))[2]
    print(f"warm (nothing appended), every key, median of 5: {warm * 1000:.0f} ms")
    chosen = keys[:4]
    runs = [request(home, log, chosen) for _ in range(5)]
    print(f"warm, the 4 keys a page draws (?key=…), median of 5: {sorted(r[0] for r in runs)[2] * 1000:.0f} ms, "
          f"response {runs[0][1] / 1024:.0f} KiB")
    times = []
    for step in range(a.steps + 1, a.steps + 6):
        with open(log, "ab") as f, open(log.with_suffix(".clock"), "ab") as c:
            f.write(line(step, keys, rng))
            c.write(clock_line(f.tell(), t + step * 40))
        times.append(request(home, log, chosen)[0])
    print(f"one step appended, 4 keys, median of 5: {sorted(times)[2] * 1000:.0f} ms")


if __name__ == "__main__":
    main()
