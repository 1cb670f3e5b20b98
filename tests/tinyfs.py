"""A real tiny or read-only filesystem for the full-disk tests: a tmpfs mounted where the test says.

Mounting needs root (or CAP_SYS_ADMIN); where the test cannot mount, it is skipped, and the
portable stand-ins (``/dev/full``, ``RLIMIT_FSIZE``) in the same files still run.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def tmpfs(path: Path, *options: str) -> Iterator[Path]:
    """``mount -t tmpfs -o <options> tmpfs <path>`` for the block; unmounted after (lazily if busy)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    path.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", ",".join(options or ("size=64k",)), "tmpfs", str(path)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield path
    finally:
        if subprocess.run(["umount", str(path)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(path)], capture_output=True)
