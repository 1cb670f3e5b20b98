"""What the log index (services/log_index.py) learned about a log, kept across a server restart.

Training outlives the platform head: after ``argus up`` restarts, every log would be cold again, and the first
error of a 1 GiB log costs seconds to find. So an index is also written, as one small JSON file per log, to
the *server's* state directory (``<state_dir>/log-index/<sha256 of the log's path>.json``; the composition
root passes the folder), never beside the log: a user's home is the user's to write, and a forged index there
would mislead the page (a made-up "first error", wrong line numbers).

A stored index is used only for the same file grown on: the same device and inode, the same first bytes, the
same bytes just before the indexed end (a hash of the last ``TAIL_BYTES``), and offsets within the file as it
is now; a log replaced, rewritten or truncated starts over. The file is read field by field (as
``core/launch.py``'s ``AttemptStatus.parse`` reads ``status.json``): one of another type, size or order, a
file too large, torn or foreign, and the whole store of that log is ignored (never half an index).

Writes are atomic (a temporary file, then ``os.replace``) and best-effort: a store that cannot be written
leaves the index in memory only. The folder is bounded: files whose log is gone are removed, and past
``MAX_STORED`` the least recently written, at most every ``PRUNE_EVERY_S`` in a background thread.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

VERSION = 1
TAIL_BYTES = 4096  # the bytes before the indexed end whose hash must still match
MAX_FILE_BYTES = 4 * 1024 * 1024  # a larger store file is not ours (a 1 TiB log's marks take ~3 MiB)
MAX_STORED = 2048  # logs kept; the least recently written beyond are dropped
PRUNE_EVERY_S = 600.0
STALE_TMP_S = 3600.0
MAX_FIELD = 4096  # characters of a stored error line's text fields
KINDS = ("traceback", "exception", "level")
SUFFIX = ".json"


@dataclass(frozen=True)
class Stored:
    """An index as stored; ``first`` is the first error's fields in ``ErrorLine``'s order, or None."""

    key: tuple[int, int]
    head: bytes
    counted: int
    lines: int
    searched: int
    starts: list[int]
    marks: list[int]
    first: tuple | None
    first_exception_done: bool


def _name(path: str) -> str:
    return hashlib.sha256(path.encode("utf-8", "surrogateescape")).hexdigest()[:40] + SUFFIX


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _tail(fd: int, end: int) -> str:
    lo = max(0, end - TAIL_BYTES)
    return _digest(os.pread(fd, end - lo, lo))


def load(folder: Path, path: str, fd: int, key: tuple[int, int], head: bytes, size: int) -> Stored | None:
    """The stored index of the log ``path`` (open as ``fd``, ``size`` bytes, first bytes ``head``) when it still
    describes that file; None when there is none, or it is not to be trusted."""
    try:
        with open(folder / _name(path), "rb") as f:
            raw = f.read(MAX_FILE_BYTES + 1)
    except OSError:
        return None
    if len(raw) > MAX_FILE_BYTES:
        return None
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    try:
        return _parse(data, path, fd, key, head, size)
    except OSError:
        return None


def _int(v: object) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else None


def _ints(v: object) -> list[int] | None:
    if not isinstance(v, list) or not v or any(_int(x) is None for x in v):
        return None
    return v


def _hex(v: object, n: int) -> str | None:
    if isinstance(v, str) and len(v) == n and all(c in "0123456789abcdef" for c in v):
        return v
    return None


def _parse(data: object, path: str, fd: int, key: tuple[int, int], head: bytes, size: int) -> Stored | None:
    if not isinstance(data, Mapping) or data.get("v") != VERSION or data.get("path") != path:
        return None
    k, h, t = data.get("key"), data.get("head"), data.get("tail")
    if not (isinstance(k, list) and len(k) == 2 and tuple(_int(x) for x in k) == key):
        return None
    if not (isinstance(h, list) and len(h) == 2 and isinstance(t, list) and len(t) == 2):
        return None
    nums = [_int(x) for x in (h[0], t[0], data.get("counted"), data.get("lines"), data.get("searched"))]
    head_hash, tail_hash, done = _hex(h[1], 64), _hex(t[1], 64), data.get("first_exception_done")
    starts, marks = _ints(data.get("starts")), _ints(data.get("marks"))
    if None in nums or head_hash is None or tail_hash is None or starts is None or marks is None:
        return None
    if not isinstance(done, bool):
        return None
    head_len, end, counted, lines, searched = (n or 0 for n in nums)
    if head_len > len(head) or _digest(head[:head_len]) != head_hash:
        return None  # another file in its place
    if counted > size or searched > size or end != max(counted, searched) or lines > counted:
        return None  # truncated (or not this log's numbers)
    if not _marks_fit(starts, marks, counted, lines):
        return None
    first = _first(data.get("first"), searched)
    if first is False:
        return None
    if _tail(fd, end) != tail_hash:
        return None  # rewritten: the bytes before the indexed end are not the ones indexed
    return Stored(key, head[:head_len], counted, lines, searched, starts, marks, first or None, done)


def _marks_fit(starts: list[int], marks: list[int], counted: int, lines: int) -> bool:
    """A line count at increasing offsets from (0, 0), never more newlines than bytes."""
    if len(starts) != len(marks) or starts[0] != 0 or marks[0] != 0 or starts[-1] > counted or marks[-1] > lines:
        return False
    for i in range(1, len(starts)):
        gap = starts[i] - starts[i - 1]
        if gap <= 0 or not 0 <= marks[i] - marks[i - 1] <= gap:
            return False
    return lines - marks[-1] <= counted - starts[-1]


def _first(v: object, searched: int) -> tuple | None | bool:
    """The stored first error's fields, None for none, False for a field of the wrong shape."""
    if v is None:
        return None
    if not isinstance(v, list) or len(v) != 8:
        return False
    offset, end, line = (_int(x) for x in v[:3])
    texts = v[3:]
    if offset is None or end is None or line is None or not offset < end <= searched or line < 1:
        return False
    if not all(isinstance(x, str) and len(x) <= MAX_FIELD for x in texts) or texts[1] not in KINDS:
        return False
    return (offset, end, line, *texts)


def save(folder: Path, path: str, fd: int, s: Stored) -> bool:
    """Write the index of the log ``path`` (open as ``fd``) atomically; False when it could not be written."""
    end = max(s.counted, s.searched)
    try:
        doc = {"v": VERSION, "path": path, "key": list(s.key), "head": [len(s.head), _digest(s.head)],
               "tail": [end, _tail(fd, end)], "counted": s.counted, "lines": s.lines, "searched": s.searched,
               "starts": s.starts, "marks": s.marks, "first": list(s.first) if s.first else None,
               "first_exception_done": s.first_exception_done}
        text = json.dumps(doc, separators=(",", ":"))
        folder.mkdir(mode=0o700, exist_ok=True)  # not parents: a state directory that is gone is not made again
        target = folder / _name(path)
        tmp = target.with_name(f"{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, target)
    except (OSError, ValueError, UnicodeError) as exc:
        log.debug("log index of %s not stored: %s", path, exc)
        return False
    _prune_when_due(folder)
    return True


_PRUNED: dict[str, float] = {}  # folder -> when it was last pruned (monotonic)
_PRUNE_GUARD = threading.Lock()


def _prune_when_due(folder: Path) -> None:
    now = time.monotonic()
    with _PRUNE_GUARD:
        last = _PRUNED.get(str(folder))
        if last is not None and now - last < PRUNE_EVERY_S:
            return
        _PRUNED[str(folder)] = now
    threading.Thread(target=prune, args=(folder,), name="argus-log-index-prune", daemon=True).start()


def prune(folder: Path, keep: int = MAX_STORED) -> int:
    """Remove the stored indexes of logs that are gone, all but the ``keep`` most recently written, and
    temporary files left by a crash; how many files were removed."""
    removed = 0
    now = time.time()
    kept: list[tuple[float, Path]] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return 0
    for e in entries:
        try:
            st = e.stat(follow_symlinks=False)
            if e.name.endswith(".tmp"):
                if now - st.st_mtime > STALE_TMP_S:
                    os.unlink(e.path)
                    removed += 1
                continue
            if not e.name.endswith(SUFFIX):
                continue
            if _log_gone(Path(e.path)):
                os.unlink(e.path)
                removed += 1
            else:
                kept.append((st.st_mtime, Path(e.path)))
        except OSError:
            continue
    kept.sort(reverse=True)
    for _, p in kept[keep:]:
        try:
            p.unlink()
            removed += 1
        except OSError:
            pass
    return removed


def _log_gone(store: Path) -> bool:
    """Whether the log a store file describes no longer exists (a file that is not a store: gone too)."""
    try:
        with open(store, "rb") as f:
            raw = f.read(MAX_FILE_BYTES + 1)
        data = json.loads(raw) if len(raw) <= MAX_FILE_BYTES else None
    except (OSError, ValueError, RecursionError):
        return True
    path = data.get("path") if isinstance(data, Mapping) else None
    if not isinstance(path, str) or _name(path) != store.name:
        return True
    return not os.path.lexists(path)
