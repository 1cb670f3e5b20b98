"""Line numbers and the first error of a whole log, kept in a small per-file index (issue 37, "Logs").

"Where did it first fail, on which worker?" needs the whole log, and the page holds a few thousand lines of
it. A plain scan of a 1 GiB log takes seconds on a 2-core machine (counting its newlines alone is ~0.5 s,
looking for the error words ~1 s a word), so each log gets an index, built on the first request that needs
it and extended from where it stopped as the log grows (a log is only ever appended to):

* ``marks``: the line number at every ``MARK_BYTES`` of the file (a few KiB for a GiB log), so the number of
  the line at any offset is one bisect and one count over less than ``MARK_BYTES``;
* ``first``: the first error line, once seen. An appended log never changes it, so it is found once.

An index is keyed by the file's device and inode and dropped when the file shrinks (a new file, not an
append). It lives in the server process (API, WebUI and scheduler share one) and is lost on a restart,
when it is rebuilt on the next request. Answers after the first are a ``stat`` and a dictionary look-up.

A line is an error when, as the page shows it (escapes removed, the last ``\\r`` redraw), it says ``error``,
``critical`` or ``fatal`` as a word in any case (``ERROR``, ``Error:``, ``[argus] error:``, not
``error_rate`` or ``errors``), starts a Python traceback, or is an exception line (``ValueError: …``). A
traceback's answer names its exception (the last of its chain); Ray's ``(Actor pid=…, ip=…)`` and
torchrun's ``[rankN]:`` prefixes name the worker (``core/failures.py`` splits them).
"""

from __future__ import annotations

import bisect
import os
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import BinaryIO

from argus.core.failures import _CHAIN, _TRACEBACK, _exception_line, _lines
from argus.core.log_text import visible
from argus.services.home_files import open_plain
from argus.services.logs import LogRef

BLOCK = 4 * 1024 * 1024
MARK_BYTES = BLOCK  # a mark per block: a GiB log has 256
MAX_TEXT = 300
DETAIL_BYTES = 512 * 1024  # how far after a traceback's first line its exception is looked for
MAX_INDEXES = 256  # logs indexed at once in one server (least recently used dropped)
SYNC_BYTES = 16 * 1024 * 1024  # a line number further than this from the index is left to a background build

# the words an error line holds, in every case a log writes them; a block without any is skipped in C
_NEEDLES = (b"rror", b"RROR", b"Traceback", b"xception", b"ritical", b"RITICAL", b"atal", b"ATAL")
_LEVEL = re.compile(r"(?<![\w])(?:error|critical|fatal)(?!\w)", re.IGNORECASE)
_EXC_KIND = re.compile(r"Error|Exception")


@dataclass(frozen=True)
class ErrorLine:
    offset: int  # the line's first byte
    end: int  # the byte after its newline
    line: int  # its number, from 1
    text: str  # as the page shows it, cut to MAX_TEXT
    kind: str  # "traceback", "exception" or "level"
    worker: str  # Ray's actor prefix ("WorkerDict pid=7, ip=10.0.0.7") or ""
    rank: str  # torchrun's "rank3" or ""
    exception: str  # a traceback's exception line (the last of its chain), or the exception line itself, or ""


@dataclass
class _Index:
    key: tuple[int, int]
    scanned: int = 0  # bytes indexed (up to a newline but for a line longer than a block)
    lines: int = 0  # newlines in those bytes
    starts: list[int] = field(default_factory=lambda: [0])  # a byte offset every ~MARK_BYTES …
    marks: list[int] = field(default_factory=lambda: [0])  # … and the newlines before it
    first: ErrorLine | None = None
    first_exception_done: bool = True  # False while a traceback's exception is not yet in the log
    lock: threading.Lock = field(default_factory=threading.Lock)
    building: bool = False


_INDEXES: OrderedDict[str, _Index] = OrderedDict()
_GUARD = threading.Lock()


def _index_for(ref: LogRef, f: BinaryIO) -> tuple[_Index, int]:
    st = os.fstat(f.fileno())
    key, path = (st.st_dev, st.st_ino), str(ref.path)
    with _GUARD:
        idx = _INDEXES.get(path)
        if idx is None or idx.key != key or idx.scanned > st.st_size:
            idx = _Index(key)
            _INDEXES[path] = idx
        _INDEXES.move_to_end(path)
        while len(_INDEXES) > MAX_INDEXES:
            _INDEXES.popitem(last=False)
    return idx, st.st_size


def is_error(text: str) -> str | None:
    """The kind of error a line (visible text) is, or None."""
    ln = _lines(text)[0]
    if ln.text.startswith(_TRACEBACK):
        return "traceback"
    if not ln.indented:
        exc = _exception_line(ln.text)
        if exc and _EXC_KIND.search(exc.split(":", 1)[0]):
            return "exception"
    if _LEVEL.search(text):
        return "level"
    return None


def _first_in_block(block: bytes, base: int) -> tuple[int, int, str, str] | None:
    """(offset, end, visible text, kind) of the first error line of ``block`` (whole lines from byte ``base``)."""
    best: tuple[int, int, str, str] | None = None
    for needle in _NEEDLES:
        at = block.find(needle)
        limit = len(block) if best is None else best[0] - base
        while 0 <= at < limit:
            start = block.rfind(b"\n", 0, at) + 1
            nl = block.find(b"\n", at)
            end = len(block) if nl < 0 else nl + 1
            text = visible(block[start:end].decode("utf-8", "replace").rstrip("\n"))
            kind = is_error(text)
            if kind:
                best = (base + start, base + end, text, kind)
                break
            at = block.find(needle, end)
    return best


def _extend(idx: _Index, f: BinaryIO, size: int, upto: int | None = None) -> None:
    """Index ``[idx.scanned, upto or size)`` block by block; the caller holds ``idx.lock``."""
    stop = size if upto is None else min(size, upto)
    pos, lines = idx.scanned, idx.lines
    while pos < stop:
        if pos - idx.starts[-1] >= MARK_BYTES:
            idx.starts.append(pos)
            idx.marks.append(lines)
        f.seek(pos)
        block = f.read(min(BLOCK, size - pos))
        cut = block.rfind(b"\n") + 1
        if not cut:
            if pos + len(block) >= size:
                break  # the last, unfinished line: indexed once it ends
            cut = len(block)  # one line longer than a block: looked at in pieces
        block = block[:cut]
        if idx.first is None:
            found = _first_in_block(block, pos)
            if found:
                offset, end, text, kind = found
                line = lines + block.count(b"\n", 0, offset - pos) + 1
                idx.first = _detail(f, offset, end, line, text, kind, size)
                idx.first_exception_done = kind != "traceback" or bool(idx.first.exception)
        lines += block.count(b"\n")
        pos += len(block)
    idx.scanned, idx.lines = pos, lines


def _count(f: BinaryIO, lo: int, hi: int) -> int:
    n = 0
    f.seek(lo)
    while lo < hi:
        data = f.read(min(BLOCK, hi - lo))
        if not data:
            break
        n += data.count(b"\n")
        lo += len(data)
    return n


def _detail(f: BinaryIO, offset: int, end: int, line: int, text: str, kind: str, size: int) -> ErrorLine:
    """The error line with its worker, rank and (for a traceback) the exception that ends it."""
    ln = _lines(text)[0]
    exception = (_exception_line(ln.text) or "") if kind == "exception" else ""
    if kind == "traceback":
        f.seek(offset)
        data = f.read(min(DETAIL_BYTES, size - offset))
        exception = _traceback_exception(data.decode("utf-8", "replace"), (ln.actor, ln.rank))
    return ErrorLine(offset, end, line, text[:MAX_TEXT], kind, ln.actor, ln.rank, exception[:MAX_TEXT])


def _traceback_exception(text: str, key: tuple[str, str]) -> str:
    """The exception line closing the traceback that starts ``text`` (lines of the same worker only); ""
    while it is not in the log yet. A chained traceback ("During handling of …") goes on to the next."""
    found = ""
    whole = text[:text.rfind("\n") + 1]  # an unfinished last line is not read yet
    for ln in _lines("\n".join(visible(r) for r in whole.split("\n")))[1:]:
        if ln.key != key:
            continue  # Ray interleaves the lines of other workers
        body = ln.text
        if not body.strip() or ln.indented or body.startswith(_CHAIN) or body.startswith(_TRACEBACK):
            continue
        exc = _exception_line(body)
        if exc:
            found = exc  # a Ray chain goes on with the actor's own exception
            continue
        if found:
            break
    return found


def first_error(ref: LogRef) -> tuple[ErrorLine | None, int]:
    """(the first error line, the log's size) of a whole log, indexing what is new since the last call."""
    f = open_plain(ref.home, ref.path)
    if f is None:
        return None, 0
    with f:
        idx, size = _index_for(ref, f)
        with idx.lock:
            _extend(idx, f, size)
            if idx.first is not None and not idx.first_exception_done:
                first = idx.first
                idx.first = _detail(f, first.offset, first.end, first.line, first.text, first.kind, size)
                idx.first_exception_done = bool(idx.first.exception)
            return idx.first, size


def line_number(ref: LogRef, f: BinaryIO, offset: int) -> int | None:
    """The number (from 1) of the line holding byte ``offset`` of the open log ``f``; None when the index is
    more than SYNC_BYTES short of it: it is then built in the background, and a later request gets it."""
    idx, size = _index_for(ref, f)
    offset = min(offset, size)
    if offset > idx.scanned + SYNC_BYTES:
        _build_later(ref, idx)
        return None
    with idx.lock:
        if offset > idx.scanned:
            _extend(idx, f, size, offset)
        at = bisect.bisect_right(idx.starts, offset) - 1
        return idx.marks[at] + _count(f, idx.starts[at], offset) + 1


def _build_later(ref: LogRef, idx: _Index) -> None:
    with _GUARD:
        if idx.building:
            return
        idx.building = True

    def run() -> None:
        try:
            f = open_plain(ref.home, ref.path)
            if f is None:
                return
            with f:
                st = os.fstat(f.fileno())
                if (st.st_dev, st.st_ino) == idx.key:
                    with idx.lock:
                        _extend(idx, f, st.st_size)
        finally:
            idx.building = False

    threading.Thread(target=run, name="argus-log-index", daemon=True).start()
