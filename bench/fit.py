"""What counting CPUs and memory (issue 15) costs the scheduler's plan().

    .venv/bin/python bench/fit.py [--queued 10000] [--nodes 16]

plan() over ``--queued`` QUEUED tasks from 100 users on ``--nodes`` 8-GPU workers, twice:
GPU-only (nodes that report no CPUs, tasks that need none: the fit before issue 15) and with
every node reporting 64 CPUs / 512 GiB and every task needing CPUs (verl's default for its
GPUs) and memory, so some tasks wait for CPUs. Prints the median of 5 runs each.
"""

from __future__ import annotations

import argparse
import statistics
import time

from argus.core.resources import default_cpus
from argus.scheduler.fairshare import Usage
from argus.scheduler.policy import HeldTask, Limits, NodeState, QueuedTask, plan

GiB = 2**30


def run(queued: list[QueuedTask], held: list[HeldTask], nodes: list[NodeState]) -> tuple[float, int, int, int]:
    usage = {f"u{u:03d}": Usage(gpu_s=u * 1000.0) for u in range(100)}
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        p = plan(queued, held, nodes, Limits(10_000, 10_000), usage=usage)
        times.append(time.perf_counter() - t0)
    cpu_waits = sum("CPU" in why for why in p.pending.values())
    return statistics.median(times) * 1000, len(p.placements), len(p.pending), cpu_waits


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--queued", type=int, default=10_000)
    ap.add_argument("--nodes", type=int, default=16)
    args = ap.parse_args()
    shapes = [(1 + (i % 7 == 0), (1, 2, 4, 8)[i % 4]) for i in range(args.queued)]
    gpu_only = [QueuedTask(f"t{i:05d}", f"u{i % 100:03d}", i % 3, i, nn, g) for i, (nn, g) in enumerate(shapes)]
    with_cpus = [QueuedTask(f"t{i:05d}", f"u{i % 100:03d}", i % 3, i, nn, g,
                            default_cpus("verl.trainer.main_ppo", nn, g), (8 + 8 * (i % 4)) * GiB)
                 for i, (nn, g) in enumerate(shapes)]
    plain_nodes = [NodeState(f"w{i}", True, 8, 8) for i in range(args.nodes)]
    cpu_nodes = [NodeState(f"w{i}", True, 8, 8, 64.0, 64.0, 512 * GiB, 512 * GiB) for i in range(args.nodes)]
    held = [HeldTask(f"h{i}", "u000", 1, 0, (), 4.0, 0) for i in range(args.nodes)]  # CPU jobs, nodes unknown
    print(f"plan() over {args.queued} queued tasks, 100 users, {args.nodes} × 8-GPU nodes (median of 5)")
    for label, q, h, n in (("GPU-only fit", gpu_only, [], plain_nodes),
                           ("GPUs + CPUs + memory", with_cpus, held, cpu_nodes)):
        ms, started, waiting, cpu_waits = run(q, h, n)
        print(f"  {label:22s}: {ms:7.1f} ms, {started} started, {waiting} told why they wait "
              f"({cpu_waits} for CPUs/memory)")


if __name__ == "__main__":
    main()
