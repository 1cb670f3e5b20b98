"""How many of N private-Ray starts succeed on a loaded machine, and how long they take.

    .venv/bin/python bench/start_under_load.py [--runs 10] [--burners 20] [--parallel 1]
                                               [--private-ray PATH] [--burn-s 3600]

Starts ``--burners`` CPU burners (``while True`` loops, each ending by itself after ``--burn-s``, and killed when
the bench ends), then ``--runs`` private Rays, ``--parallel`` at a time, each as a task's launcher starts one
without a sandbox (``task_jail: off``): three free ports, a token of its own, ``private_ray.py --head … -- <a
Ray program>`` (``ray.init()`` and the cluster's CPUs). Per start it prints the exit code, when the private Ray
said it was up and when the task ended, and the retries it logged with their reasons; then how many succeeded,
the median and the slowest, and how many processes of the starts were still running after their task ended
(found by a mark in their environment: must be 0). ``--private-ray`` runs another version of the script, e.g.
the one before a change (``git show REV:src/argus/launcher/private_ray.py > /tmp/old.py``).
"""

from __future__ import annotations

import argparse
import os
import re
import secrets
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from argus.launcher.task_sandbox import PRIVATE_RAY, free_ports  # noqa: E402

BURNER = "import sys, time\nend = time.monotonic() + float(sys.argv[1])\nwhile time.monotonic() < end: pass\n"
PROGRAM = "import ray; ray.init(); print('cpus', ray.cluster_resources()['CPU'], flush=True)"
UP = re.compile(r"up in ([\d.]+) s")
RETRY = re.compile(r"did not start, attempt \d+: (.*?) \(load")


@dataclass
class Start:
    index: int
    code: int | None = None
    took_s: float = 0.0
    up_s: float | None = None
    retries: list[str] = field(default_factory=list)
    error: str = ""
    leftover: int = 0


def alive_with(mark: str) -> int:
    """Processes still running (not zombies) whose environment carries ``mark``."""
    count = 0
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and mark.encode() in (entry / "environ").read_bytes() and \
                    (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                count += 1
        except OSError:
            continue
    return count


def one_start(index: int, script: str, timeout_s: float) -> Start:
    gcs, client = free_ports(2)
    mark = secrets.token_hex(8)
    env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(24),
           "RAY_USAGE_STATS_ENABLED": "0", "ARGUS_BENCH_MARK": mark}
    start = Start(index)
    t0 = time.monotonic()
    try:
        done = subprocess.run([sys.executable, "-I", script, "--head", str(gcs), "--client-port", str(client),
                               "--cpus", "1", "--gpus", "0", "--object-store", str(200 << 20), "--",
                               sys.executable, "-c", PROGRAM], env=env, capture_output=True, text=True,
                              timeout=timeout_s)
        start.code, out = done.returncode, done.stdout + done.stderr
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
    start.took_s = time.monotonic() - t0
    up = UP.search(out)
    start.up_s = float(up.group(1)) if up else None
    start.retries = RETRY.findall(out)
    if start.code != 0:
        lines = [line for line in out.splitlines() if "Exception" in line or "Error" in line or "error:" in line]
        start.error = (lines[-1] if lines else out.strip()[-200:]).strip()[:200]
    time.sleep(2)  # what the task's end killed is gone within this
    start.leftover = alive_with(f"ARGUS_BENCH_MARK={mark}")
    return start


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--burners", type=int, default=20)
    p.add_argument("--parallel", type=int, default=1, help="starts at once (a burst of tasks on one node)")
    p.add_argument("--private-ray", default=PRIVATE_RAY, help="the private_ray.py to run")
    p.add_argument("--burn-s", type=float, default=3600, help="each burner ends by itself after this")
    p.add_argument("--timeout-s", type=float, default=1500, help="one start and its task, at most")
    ns = p.parse_args()
    burners = [subprocess.Popen([sys.executable, "-c", BURNER, str(ns.burn_s)]) for _ in range(ns.burners)]
    try:
        time.sleep(5 if ns.burners else 0)
        load_before = os.getloadavg()[0]
        with ThreadPoolExecutor(ns.parallel) as pool:
            futures = [pool.submit(one_start, i + 1, ns.private_ray, ns.timeout_s) for i in range(ns.runs)]
            starts = []
            for f in futures:
                s = f.result()
                starts.append(s)
                state = "ok  " if s.code == 0 else f"FAIL (exit {s.code})"
                print(f"start {s.index:2d}: {state} up in {s.up_s if s.up_s is not None else '-'} s, task done in "
                      f"{s.took_s:.1f} s, {len(s.retries)} retr{'y' if len(s.retries) == 1 else 'ies'}"
                      f"{': ' + '; '.join(s.retries) if s.retries else ''}{', ' + s.error if s.error else ''}"
                      f"{f', {s.leftover} process(es) left running' if s.leftover else ''}", flush=True)
        load_after = os.getloadavg()[0]
    finally:
        for b in burners:
            b.kill()
            b.wait()
    ok = [s for s in starts if s.code == 0]
    ups = sorted(s.up_s for s in ok if s.up_s is not None)
    print(f"\n{ns.burners} burners on {os.cpu_count()} cores, {ns.parallel} start(s) at once, load {load_before:.1f} "
          f"→ {load_after:.1f}: {len(ok)}/{len(starts)} starts succeeded; Ray up in median "
          f"{statistics.median(ups) if ups else float('nan'):.1f} s, slowest {max(ups) if ups else float('nan'):.1f} s; "
          f"task done in median {statistics.median(s.took_s for s in starts):.1f} s; "
          f"{sum(len(s.retries) for s in starts)} retries; "
          f"{sum(s.leftover for s in starts)} process(es) left running")


if __name__ == "__main__":
    main()
