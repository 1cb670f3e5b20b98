"""Does the API answer while files move? ``GET /api/v2/tasks`` latency while 4 SFTP clients transfer.

    .venv/bin/python bench/sftp_api.py [--size-mb 200] [--clients 4] [--seconds 30]

The server is ``argus server`` with its API and SFTP parts, in a subprocess (``tests/sftp_process.py``,
the same launcher as ``bench/sftp.py``), holding a few queued tasks so the listing reads real rows.
It runs twice (``--mode``): with SFTP in its own process (the product since issue 11) and, for the
comparison, with the SFTP server inside the API's process and event loop as before.
First the API alone is sampled (idle), then again while ``--clients`` OpenSSH ``sftp`` clients each
upload and download a ``--size-mb`` file of random data in a loop, as fast as loopback allows.
One request at a time, back to back with a 10 ms pause: what an interactive user (or the WebUI) sees.
Printed: requests, p50/p99/max in ms, and the MB/s the clients moved meanwhile.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.sftp_process import SERVE, TOKEN, sftp_server_process  # noqa: E402

SPEC = "kind: advanced\nworkload: job\nnnodes: 1\nn_gpus_per_node: 0\ncommand: python3 -m argus.jobs.sleep 1\n"


def sample(url: str, token: str, seconds: float) -> list[float]:
    """Latencies (ms) of back-to-back ``GET /api/v2/tasks`` for ``seconds``."""
    out: list[float] = []
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=30) as c:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            t0 = time.perf_counter()
            r = c.get("/api/v2/tasks")
            out.append((time.perf_counter() - t0) * 1000)
            assert r.status_code == 200, r.text
            time.sleep(0.01)
    return out


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


def report(label: str, lat: list[float]) -> None:
    print(f"  {label:28s} n={len(lat):5d}  p50={statistics.median(lat):7.1f} ms  p99={pct(lat, 99):7.1f} ms  "
          f"max={max(lat):7.1f} ms")


def transfer_loop(cmd: list[str], cwd: Path, name: str, stop: threading.Event, moved: list[int], size: int) -> None:
    """Upload then download one file, over and over, until ``stop``."""
    while not stop.is_set():
        script = f"put data.bin /{name}\nget /{name} {name}.down\n"
        p = subprocess.run(cmd, input=script, text=True, capture_output=True, cwd=cwd)
        if p.returncode != 0:
            if not stop.is_set():
                print(f"client {name} failed: {p.stderr.strip()[-300:]}", file=sys.stderr)
            return
        moved.append(2 * size)


# SFTP inside the API's process and event loop, as before issue 11 (for the comparison)
SERVE_IN_PROCESS = """
import sys
from argus.server import run_server
from argus.services.files import shared_store
from argus.settings import Settings
from argus.sftp.server import SftpServer
def components(ctx):
    return [SftpServer(ctx.settings, ctx.db, shared_store(ctx.extras, ctx.settings))]
run_server(Settings(state_dir=sys.argv[1], api_port=int(sys.argv[2]), sftp_port=int(sys.argv[3])),
           components_factory=components)
"""
MODES = {"own process": SERVE, "in-process": SERVE_IN_PROCESS}


def run(mode: str, tmp: Path, args: argparse.Namespace, size: int) -> None:
    work = tmp / mode.replace(" ", "-")
    work.mkdir()
    (work / "data.bin").symlink_to(tmp / "data.bin")
    with sftp_server_process(work, "bench", quiet=True, serve=MODES[mode]) as srv:
        with httpx.Client(base_url=srv.url, headers={"Authorization": f"Bearer {TOKEN}"}) as admin:
            for _ in range(20):
                r = admin.post("/api/v2/tasks", content=SPEC, headers={"Content-Type": "application/yaml"})
                assert r.status_code == 201, r.text
        idle = sample(srv.url, TOKEN, min(10.0, args.seconds))
        stop = threading.Event()
        moved: list[int] = []
        threads = [threading.Thread(target=transfer_loop,
                                    args=(srv.sftp_cmd(), work, f"f{i}.bin", stop, moved, size), daemon=True)
                   for i in range(args.clients)]
        for t in threads:
            t.start()
        time.sleep(2)  # let every client log in and reach full speed
        t0 = time.monotonic()
        busy = sample(srv.url, TOKEN, args.seconds)
        elapsed = time.monotonic() - t0
        stop.set()
        for t in threads:
            t.join(300)
    print(f"SFTP server {mode}:")
    report("idle", idle)
    report(f"while {args.clients} clients transfer", busy)
    print(f"  transfers finished during the sample: {sum(moved) / 1e6 / elapsed:.0f} MB/s "
          f"({len(moved)} put+get rounds)", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mb", type=int, default=200)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--mode", choices=[*MODES, "both"], default="both")
    args = ap.parse_args()
    size = args.size_mb * 1024 * 1024
    print(f"GET /api/v2/tasks (20 tasks) while {args.clients} OpenSSH sftp clients each loop put+get of "
          f"{args.size_mb} MiB; {os.cpu_count()} CPUs on this machine", flush=True)
    with tempfile.TemporaryDirectory() as tmpd:
        tmp = Path(tmpd)
        with (tmp / "data.bin").open("wb") as f:  # random: nothing compresses or skips holes
            block = os.urandom(1 << 20)
            for _ in range(args.size_mb):
                f.write(block)
        for mode in MODES if args.mode == "both" else [args.mode]:
            run(mode, tmp, args, size)


if __name__ == "__main__":
    main()
