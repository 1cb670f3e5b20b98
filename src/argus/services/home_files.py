"""Reading and writing in a user's home from the server, which runs unjailed.

A task's processes can change everything in their owner's home — the job folder included —
so a path the server reads there (``jobs/<task>/logs/attempt-1.log``, ``status.json``)
may have become a symlink to another user's file or to the server's own, a FIFO that
blocks forever, or a hard link. Every access here walks from the home with
``O_NOFOLLOW`` at each step (argus/home_io.py, which the launcher's writes use too) and accepts only
a plain, singly-linked file; anything else reads as absent. ``O_NONBLOCK`` keeps a FIFO from blocking
the open.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import BinaryIO

from argus.core.launch import AttemptStatus
from argus.home_io import append_to, open_in_home
from argus.home_io import is_plain as _plain


def open_plain(home: Path, path: Path) -> BinaryIO | None:
    """``path`` (below ``home``) opened for reading, or None: missing, or not a plain file reached without links."""
    try:
        fd = open_in_home(home, path.relative_to(home).parts, os.O_RDONLY)
    except (OSError, ValueError):
        return None
    if not _plain(fd):
        os.close(fd)
        return None
    return os.fdopen(fd, "rb")


def read_plain(home: Path, path: Path, limit: int) -> bytes | None:
    """At most ``limit`` bytes of a plain file below ``home`` (see :func:`open_plain`), or None."""
    f = open_plain(home, path)
    if f is None:
        return None
    with f:
        return f.read(limit)


STATUS_MAX_BYTES = 1 << 20  # the launcher's status.json is a few hundred bytes


def read_attempt_status(home: Path, job_dir: Path, attempt: int) -> AttemptStatus | None:
    """The launcher's ``status.json`` in ``job_dir`` for ``attempt``, or None (absent, torn, or another attempt's).

    It lives on the shared filesystem, so it is there even when Ray lost the node that wrote it.
    The task can change it, so it is read without following links, bounded, and as data only, each field
    checked for its type and size (core/launch.AttemptStatus.parse).
    """
    raw = read_plain(home, job_dir / "status.json", STATUS_MAX_BYTES)
    try:
        data = json.loads(raw or b"")
    except ValueError:
        return None
    return AttemptStatus.parse(data, attempt)


def append_in_home(home: Path, rel: tuple[str, ...], data: bytes) -> None:
    """Append ``data`` to a plain, singly-linked file ``home/rel…``, making its folders (no links followed)."""
    with append_to(home, home.joinpath(*rel)) as out:
        view = memoryview(data)
        while view:
            view = view[out.write(view):]
