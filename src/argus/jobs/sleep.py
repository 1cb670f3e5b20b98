"""`python3 -m argus.jobs.sleep SECONDS [--lines N]`: a CPU job that prints and waits.

Useful to check the queue, logs and cancel end to end without GPUs or verl (submit it as an
advanced task with ``n_gpus_per_node: 0``). It prints a numbered line every
``SECONDS / N`` seconds (flushed, so ``argus logs -f`` shows them live) and exits 0.
"""

from __future__ import annotations

import argparse
import sys
import time


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="argus.jobs.sleep", description=__doc__.splitlines()[0])
    p.add_argument("seconds", type=float)
    p.add_argument("--lines", type=int, default=5, help="how many progress lines to print")
    args = p.parse_args(argv)
    n = max(args.lines, 1)
    for i in range(1, n + 1):
        time.sleep(max(args.seconds, 0) / n)
        print(f"sleep: {i}/{n}", flush=True)
    print("sleep: done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
