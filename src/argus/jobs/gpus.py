"""`python3 -m argus.jobs.gpus [--hold S] [--unset-visible] [--nccl]`: which GPUs does my task see?

Run it as an advanced task with ``n_gpus_per_node: N``: Ray reserves N GPUs for the task's
launcher and the sandbox shows only their device files (issue 21). It prints
``CUDA_VISIBLE_DEVICES`` (and what torch and ``nvidia-smi -L`` see, when present) and holds
the GPUs for ``--hold`` seconds, so two tasks can be compared side by side.
``--unset-visible`` drops ``CUDA_VISIBLE_DEVICES`` first, as a program that ignores it
would: the sandbox must still show only the task's GPUs. ``--nccl`` runs an all-reduce over
NCCL between one process per visible GPU (needs ≥ 2), proving NCCL works inside the sandbox.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="argus.jobs.gpus", description=__doc__.splitlines()[0])
    p.add_argument("--hold", type=float, default=0.0, help="seconds to keep running (holding the GPUs)")
    p.add_argument("--unset-visible", action="store_true", help="drop CUDA_VISIBLE_DEVICES before looking")
    p.add_argument("--nccl", action="store_true", help="all-reduce over NCCL between one process per GPU")
    args = p.parse_args(argv)
    if args.unset_visible:
        os.environ.pop("CUDA_VISIBLE_DEVICES", None)
    print(f"gpus: CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', '<unset>')}", flush=True)
    smi = shutil.which("nvidia-smi")
    if smi:
        done = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=60)
        listed = [line for line in done.stdout.splitlines() if line.startswith("GPU ")]
        print(f"gpus: nvidia-smi -L lists {len(listed)} GPU(s)", flush=True)
    count = 0
    try:
        import torch

        count = torch.cuda.device_count()
        print(f"gpus: torch sees {count} CUDA device(s)", flush=True)
    except ImportError:
        pass
    if args.nccl:
        if count < 2:
            print("gpus: nccl skipped (fewer than 2 GPUs)", flush=True)
        else:
            print(f"gpus: nccl all-reduce over {count} GPUs: {_nccl_all_reduce(count)}", flush=True)
    time.sleep(max(args.hold, 0.0))
    return 0


def _nccl_rank(rank: int, world: int, port: int, out) -> None:  # noqa: ANN001 - a multiprocessing queue
    import torch
    import torch.distributed as dist

    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    t = torch.ones(1, device="cuda") * (rank + 1)
    dist.all_reduce(t)
    out.put(float(t.item()))
    dist.destroy_process_group()


def _nccl_all_reduce(world: int) -> str:
    import socket

    import torch.multiprocessing as mp

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=_nccl_rank, args=(r, world, port, out)) for r in range(world)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(300)
    sums = [out.get(timeout=5) for _ in procs if not out.empty()]
    want = world * (world + 1) / 2
    return "ok" if sums and all(v == want for v in sums) else f"FAILED (sums {sums}, want {want})"


if __name__ == "__main__":
    sys.exit(main())
