"""What sampling a task's resource use costs (issue 24): CPU time per sample, and bytes per task-day.

Run: ``.venv/bin/python bench/telemetry_cost.py [--procs 64] [--samples 200]``. Starts ``--procs``
sleeping child processes under one parent (a task's tree: sandbox, private Ray, workers), samples the
tree with ``launcher.telemetry.Sampler`` as the driver does every 15 s, and prints the CPU time one
sample takes, the driver's CPU share at 15 s, and the size of the JSON lines for 0 and 8 GPUs (the GPU
figures are the line's shape; NVML itself is not timed here: no NVIDIA driver on this machine).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from argus.launcher.telemetry import SAMPLE_S, Sampler  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--procs", type=int, default=64)
    ap.add_argument("--samples", type=int, default=200)
    args = ap.parse_args()
    code = (f"import subprocess, sys, time\nps = [subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)']) "
            f"for _ in range({args.procs})]\ntime.sleep(600)")
    parent = subprocess.Popen([sys.executable, "-c", code])
    try:
        time.sleep(3 + args.procs * 0.03)
        with tempfile.TemporaryDirectory() as tmp:
            sampler = Sampler(parent.pid, Path(tmp) / "a.jsonl", visible="", nvml=None)
            sampler.sample()
            started_cpu, started = time.process_time(), time.perf_counter()
            for _ in range(args.samples):
                data = sampler.sample()
            cpu = (time.process_time() - started_cpu) / args.samples
            wall = (time.perf_counter() - started) / args.samples
    finally:
        subprocess.run(["pkill", "-P", str(parent.pid)], check=False)
        parent.kill()
        parent.wait()
    cpu_line = json.dumps({"t": 1764072000, "cpu": 3.52, "rss": 12884901888}, separators=(",", ":")) + "\n"
    gpu_line = json.dumps({"t": 1764072000, "cpu": 23.52, "rss": 412884901888,
                           "gpu": [[97.0, 61440, 412.5]] * 8}, separators=(",", ":")) + "\n"
    per_day = 86400 / SAMPLE_S
    print(f"tree of {args.procs + 1} processes ({len(sampler._cpu)} seen): one sample {cpu * 1000:.2f} ms CPU "
          f"({wall * 1000:.2f} ms wall); at one sample per {SAMPLE_S:g} s the driver spends "
          f"{cpu / SAMPLE_S * 100:.3f} % of a core")
    print(f"last sample: {data}")
    print(f"storage: {len(cpu_line)} B/line without GPUs → {len(cpu_line) * per_day / 1e6:.2f} MB per task-day; "
          f"{len(gpu_line)} B/line with 8 GPUs → {len(gpu_line) * per_day / 1e6:.2f} MB per task-day")


if __name__ == "__main__":
    main()
