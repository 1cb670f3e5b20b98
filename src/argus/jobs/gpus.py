"""`python3 -m argus.jobs.gpus [--hold S]`: which GPUs does my task's driver see? (a driver-held job)

Run it as an advanced task with ``n_gpus_per_node: N``: Ray reserves N GPUs for the
entry point and sets ``CUDA_VISIBLE_DEVICES`` to exactly those, as for verl's SFT trainer
under torchrun. It prints that list (and what torch sees, when torch is importable) and
holds the GPUs for ``--hold`` seconds, so two tasks can be compared side by side.
"""

from __future__ import annotations

import argparse
import os
import sys
import time


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="argus.jobs.gpus", description=__doc__.splitlines()[0])
    p.add_argument("--hold", type=float, default=0.0, help="seconds to keep running (holding the GPUs)")
    args = p.parse_args(argv)
    print(f"gpus: CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', '<unset>')}", flush=True)
    try:
        import torch

        print(f"gpus: torch sees {torch.cuda.device_count()} CUDA device(s)", flush=True)
    except ImportError:
        pass
    time.sleep(max(args.hold, 0.0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
