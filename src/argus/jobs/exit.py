"""`python3 -m argus.jobs.exit CODE [--after SECONDS] [--message TEXT]`: exit with a given code.

A CPU job for checking how failures are reported (``FAILED`` with ``EXIT_NONZERO`` and
"exit code CODE"): it prints the message (to stderr when CODE ≠ 0) and exits with CODE.
"""

from __future__ import annotations

import argparse
import sys
import time


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="argus.jobs.exit", description=__doc__.splitlines()[0])
    p.add_argument("code", type=int)
    p.add_argument("--after", type=float, default=0.0, help="wait this long first")
    p.add_argument("--message", default="", help="print this first")
    args = p.parse_args(argv)
    time.sleep(max(args.after, 0))
    if args.message:
        print(args.message, file=sys.stderr if args.code else sys.stdout, flush=True)
    return args.code


if __name__ == "__main__":
    sys.exit(main())
