"""Line numbers and the first error of a whole log, kept in a small per-file index (issue 37, "Logs").

"Where did it first fail, on which worker?" needs the whole log, and the page holds a few thousand lines of
it. A plain scan of a 1 GiB log takes seconds on a 2-core machine (counting its newlines is ~0.2 s with
numpy, looking for the error words with ``bytes.find`` ~0.5 s a word), so each log gets an index, built on the first request that needs
it and extended from where it stopped as the log grows (a log is only ever appended to):

* ``marks``: the line number at every ``MARK_BYTES`` of the file (a few KiB for a GiB log), so the number of
  the line at any offset is one bisect and one count over less than ``MARK_BYTES``. Counting is one pass
  (~0.2 s a GiB); a range read far past the counted part leaves it to a background thread, a block at a time;
* ``first``: the first error line, once seen (the search for it is the costly pass, done only when asked).
  An appended log never changes it, so it is found once. A long span (a log nobody indexed yet) is searched
  by ripgrep in one pass (services/log_grep.py: ~0.2 s a GiB), a short one (what a log grew by) here.

A log that grows while the server watches it (a RUNNING attempt: the monitor's progress watch calls
:func:`keep_warm` when it grew) is searched for its first error in the background as it grows, a block at a
time, so the page's "First error" answers from the index instead of scanning the whole log when clicked
(issue 37: a 1 GiB log searched cold took 4.8 s).

An index is keyed by the file's device and inode and dropped when the file shrinks or its first bytes
change (a new file, not an append). It lives in the server process (API, WebUI and scheduler share one), and
what it learned is also kept in the server's state directory (services/log_index_store.py, the folder given
by :func:`use_store`): after a restart (training outlives the platform head) the index of a log is read back
when that log is first asked about, if it still describes the same file, and only the bytes written since
are read. It is written when a pass has learned a block or more (every ``SAVE_EVERY_S`` at most while a
background pass goes on) or the first error, and at the end of a background pass. Answers after the first
are a ``stat`` and a dictionary look-up.

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
import time
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import astuple, dataclass, field
from pathlib import Path
from typing import BinaryIO

import numpy as np

from argus.core.failures import _CHAIN, _TRACEBACK, _exception_line, _lines
from argus.core.log_text import visible
from argus.core.metrics import CLOCK_SUFFIX, parse_clock
from argus.services import log_grep
from argus.services import log_index_store as store
from argus.services.home_files import open_plain, read_plain
from argus.services.logs import LogRef

BLOCK = 4 * 1024 * 1024
MARK_BYTES = BLOCK  # a mark per block: a GiB log has 256
MAX_TEXT = 300
HEAD_BYTES = 256
DETAIL_BYTES = 512 * 1024  # how far after a traceback's first line its exception is looked for
MAX_INDEXES = 256  # logs indexed at once in one server (least recently used dropped)
SYNC_BYTES = 64 * 1024 * 1024  # a line number further than this from the index is left to a background build
NEWLINE = ord("\n")
FAST_BYTES = 2 * BLOCK  # a span at least this long is searched by ripgrep (services/log_grep.py)
SAVE_EVERY_S = 2.0  # a background pass writes its index to the store at most this often

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
    head: bytes  # the file's first bytes when indexed: a log rewritten in place (same inode) is seen as new
    counted: int = 0  # bytes whose newlines are counted …
    lines: int = 0  # … and how many there are
    searched: int = 0  # bytes looked at for the first error (whole lines but for one longer than a block)
    starts: list[int] = field(default_factory=lambda: [0])  # a byte offset every ~MARK_BYTES …
    marks: list[int] = field(default_factory=lambda: [0])  # … and the newlines before it
    first: ErrorLine | None = None
    first_exception_done: bool = True  # False while a traceback's exception is not yet in the log
    lock: threading.Lock = field(default_factory=threading.Lock)
    building: bool = False
    saved: tuple = ()  # (counted, searched, first, first_exception_done) as last stored or read from the store
    saved_at: float = 0.0  # when (monotonic)


_INDEXES: OrderedDict[str, _Index] = OrderedDict()
_GUARD = threading.Lock()
_STORE: Path | None = None  # where indexes are kept across a restart; None: in memory only


def use_store(folder: Path | None) -> None:
    """Keep indexes in ``folder`` (the composition root passes ``<state_dir>/log-index``: the server's own,
    never a user's home) so that a restarted server does not read its logs again; None: in memory only."""
    global _STORE
    _STORE = folder


def _index_for(ref: LogRef, f: BinaryIO) -> tuple[_Index, int]:
    st = os.fstat(f.fileno())
    key, path = (st.st_dev, st.st_ino), str(ref.path)
    head = os.pread(f.fileno(), HEAD_BYTES, 0)
    with _GUARD:
        idx = _INDEXES.get(path)
    folder = _STORE
    loaded = _loaded(folder, path, f, key, head, st.st_size) if idx is None and folder is not None else None
    with _GUARD:
        idx = _INDEXES.get(path) or loaded
        if idx is None or idx.key != key or idx.counted > st.st_size or not head.startswith(idx.head):
            idx = _Index(key, head)
        _INDEXES[path] = idx
        _INDEXES.move_to_end(path)
        while len(_INDEXES) > MAX_INDEXES:
            _INDEXES.popitem(last=False)
    return idx, st.st_size


def _loaded(folder: Path, path: str, f: BinaryIO, key: tuple[int, int], head: bytes, size: int) -> _Index | None:
    """The index of ``path`` as the store kept it, when it still describes this file (log_index_store)."""
    s = store.load(folder, path, f.fileno(), key, head, size)
    if s is None:
        return None
    first = ErrorLine(*s.first) if s.first else None
    idx = _Index(s.key, s.head, counted=s.counted, lines=s.lines, searched=s.searched, starts=s.starts,
                 marks=s.marks, first=first, first_exception_done=s.first_exception_done)
    idx.saved, idx.saved_at = _state(idx), time.monotonic()
    return idx


def _state(idx: _Index) -> tuple:
    return idx.counted, idx.searched, idx.first, idx.first_exception_done


def _keep(path: str, idx: _Index, f: BinaryIO, *, every: float = 0.0, final: bool = False) -> None:
    """Write the index to the store when it learned the first error (or its exception) or a block or more since
    it was last written (and ``every`` seconds have passed), or anything at all at the end of a background
    pass (``final``). The caller holds ``idx.lock``: what is written is one moment's index."""
    folder = _STORE
    state = _state(idx)
    if folder is None or state == idx.saved:
        return
    was = idx.saved or (0, 0, None, True)
    learned = max(state[0], state[1]) - max(was[0], was[1])
    now = time.monotonic()
    if not (final or state[2:] != was[2:] or (learned >= BLOCK and now - idx.saved_at >= every)):
        return
    stored = store.Stored(idx.key, idx.head, idx.counted, idx.lines, idx.searched, list(idx.starts),
                          list(idx.marks), astuple(idx.first) if idx.first else None, idx.first_exception_done)
    if store.save(folder, path, f.fileno(), stored):
        idx.saved, idx.saved_at = state, now


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


def _count_to(idx: _Index, f: BinaryIO, upto: int) -> None:
    """Count the newlines of ``[idx.counted, upto)`` (a mark at each block); the caller holds ``idx.lock``."""
    pos, lines = idx.counted, idx.lines
    while pos < upto:
        if pos - idx.starts[-1] >= MARK_BYTES:
            idx.starts.append(pos)
            idx.marks.append(lines)
        f.seek(pos)
        block = f.read(min(BLOCK, upto - pos))
        if not block:
            break
        lines += _newlines(block)
        pos += len(block)
    idx.counted, idx.lines = pos, lines


def _line_at(idx: _Index, f: BinaryIO, offset: int) -> int:
    """The number (from 1) of the line holding byte ``offset``; the caller holds ``idx.lock``."""
    if offset > idx.counted:
        _count_to(idx, f, offset)
    at = bisect.bisect_right(idx.starts, offset) - 1
    return idx.marks[at] + _count(f, idx.starts[at], offset) + 1


def _search(idx: _Index, f: BinaryIO, size: int) -> None:
    """Look for the first error in ``[idx.searched, size)`` until found; the caller holds ``idx.lock``. A long
    span goes to ripgrep (:func:`_search_fast`), a short one (a growing log's new block) is read here."""
    if idx.first is None and size - idx.searched >= FAST_BYTES and _search_fast(idx, f, size):
        return
    pos = idx.searched
    while idx.first is None and pos < size:
        f.seek(pos)
        block = f.read(min(BLOCK, size - pos))
        cut = block.rfind(b"\n") + 1
        if not cut:
            if pos + len(block) >= size:
                break  # the last, unfinished line: looked at once it ends
            cut = len(block)  # one line longer than a block: looked at in pieces
        block = block[:cut]
        if idx.counted == pos:  # the same pass counts the lines (the block is in memory already)
            if pos - idx.starts[-1] >= MARK_BYTES:
                idx.starts.append(pos)
                idx.marks.append(idx.lines)
            idx.lines += _newlines(block)
            idx.counted = pos + len(block)
        found = _first_in_block(block, pos)
        if found:
            offset, end, text, kind = found
            idx.first = _detail(f, offset, end, _line_at(idx, f, offset), text, kind, size)
            idx.first_exception_done = kind != "traceback" or bool(idx.first.exception)
        pos += len(block)
    idx.searched = pos


def _search_fast(idx: _Index, f: BinaryIO, size: int) -> bool:
    """:func:`_search` by ripgrep: it names the lines that hold a needle, this judges them (``is_error``) in
    order and stops it at the first error. False when ripgrep is missing or failed (nothing learned: the
    caller reads the span itself). Lines are not counted here (no marks); :func:`first_error` has them counted
    in the background."""
    start, fd = idx.searched, f.fileno()
    end = _last_line_end(fd, start, size)  # the unfinished last line is looked at once it ends
    try:
        with log_grep.lines_with(fd, start, _NEEDLES) as hits:
            if hits is None:
                return False
            for number, rel in hits:
                if start + rel >= end:
                    break
                for offset, raw, line_end in _pieces(fd, start + rel, end):
                    if not any(n in raw for n in _NEEDLES):
                        continue  # a piece of a long line the needle is not in: Python's search skips it too
                    text = visible(raw.decode("utf-8", "replace").rstrip("\n"))
                    kind = is_error(text)
                    if kind:
                        line = idx.lines + number if idx.counted == start else _line_at(idx, f, offset)
                        idx.first = _detail(f, offset, line_end, line, text, kind, size)
                        idx.first_exception_done = kind != "traceback" or bool(idx.first.exception)
                        idx.searched = line_end
                        return True
    except (log_grep.GrepFailed, OSError):
        return False
    idx.searched = end
    return True


def _last_line_end(fd: int, start: int, size: int) -> int:
    """The byte after the last newline in ``[start, size)``, or ``start`` when it has none."""
    hi = size
    while hi > start:
        lo = max(start, hi - BLOCK)
        nl = os.pread(fd, hi - lo, lo).rfind(b"\n")
        if nl >= 0:
            return lo + nl + 1
        hi = lo
    return start


def _pieces(fd: int, offset: int, end: int) -> Iterator[tuple[int, bytes, int]]:
    """``(offset, bytes, end)`` of the line at ``offset`` (which ends by ``end``), newline included, as
    :func:`_search` judges it: whole, or a line longer than a block in pieces of a block from its start."""
    while offset < end:
        want = min(BLOCK, end - offset)
        data = os.pread(fd, min(want, 64 * 1024), offset)  # most lines are short: read a little first
        nl = data.find(b"\n")
        if nl < 0 and 0 < len(data) < want:
            data += os.pread(fd, want - len(data), offset + len(data))
            nl = data.find(b"\n")
        if not data:
            return
        if nl >= 0:
            yield offset, data[:nl + 1], offset + nl + 1
            return
        yield offset, data, offset + len(data)
        offset += len(data)


def _newlines(data: bytes) -> int:
    """How many newlines ``data`` holds: numpy compares a block 4x faster than ``bytes.count`` (0.19 s a GiB
    with the reads, against 0.86 s) and lets go of the GIL meanwhile, so a background count does not hold up
    the requests' threads."""
    return int(np.count_nonzero(np.frombuffer(data, np.uint8) == NEWLINE))


def _count(f: BinaryIO, lo: int, hi: int) -> int:
    n = 0
    f.seek(lo)
    while lo < hi:
        data = f.read(min(BLOCK, hi - lo))
        if not data:
            break
        n += _newlines(data)
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
            _search(idx, f, size)
            if idx.first is not None and not idx.first_exception_done:
                first = idx.first
                idx.first = _detail(f, first.offset, first.end, first.line, first.text, first.kind, size)
                idx.first_exception_done = bool(idx.first.exception)
            _keep(str(ref.path), idx, f)
            first = idx.first
    if size - idx.counted > SYNC_BYTES:  # ripgrep searched without marks: the lines around it come next
        _build_later(ref, idx)
    return first, size


def line_number(ref: LogRef, f: BinaryIO, offset: int) -> int | None:
    """The number (from 1) of the line holding byte ``offset`` of the open log ``f``; None when the index is
    more than SYNC_BYTES short of it: it is then built in the background, and a later request gets it."""
    idx, size = _index_for(ref, f)
    offset = min(offset, size)
    if offset > idx.counted + SYNC_BYTES:
        _build_later(ref, idx)
        return _line_from_first(idx, f, offset)
    with idx.lock:
        number = _line_at(idx, f, offset)
        _keep(str(ref.path), idx, f)
        return number


def _line_from_first(idx: _Index, f: BinaryIO, offset: int) -> int | None:
    """The number of the line at ``offset`` counted from the first error's line when that is near (ripgrep
    found it far past the counted part: the page asks for the lines around it next), else None."""
    first = idx.first
    if first is None or abs(offset - first.offset) > SYNC_BYTES:
        return None
    if offset >= first.offset:
        return first.line + _count(f, first.offset, offset)
    return first.line - _count(f, offset, first.offset)


def line_numbers(ref: LogRef, f: BinaryIO, offsets: list[int]) -> list[int | None]:
    """:func:`line_number` of each of ``offsets`` (ascending, as a search finds them): counted on from one to the
    next, so many matches cost one pass over the span they cover, not one count each."""
    out: list[int | None] = []
    prev: tuple[int, int] | None = None  # (offset, its line number)
    for offset in offsets:
        if prev is not None and 0 <= offset - prev[0] <= MARK_BYTES:
            n = prev[1] + _count(f, prev[0], offset)
        else:
            got = line_number(ref, f, offset)
            if got is None:
                return out + [None] * (len(offsets) - len(out))
            n = got
        out.append(n)
        prev = (offset, n)
    return out


CLOCK_MAX_BYTES = 32 * 1024 * 1024  # ~20 bytes a stamp: a million steps


def log_times(ref: LogRef, offset: int, end: int) -> list[tuple[int, float]]:
    """The clock's stamps (byte offset, unix time) in ``(offset, end]`` and the first one past ``end``: the
    driver stamps the log after each write that holds ``step:`` (core/metrics.py), so a line was in the log by
    the time of the first stamp past its first byte. A log without a clock has no times."""
    data = read_plain(ref.home, Path(ref.path).with_suffix(CLOCK_SUFFIX), CLOCK_MAX_BYTES)
    if not data:
        return []
    clock = parse_clock(data.decode("ascii", "replace").rpartition("\n")[0])
    ends = [o for o, _ in clock]
    lo = bisect.bisect_right(ends, offset)
    hi = bisect.bisect_right(ends, end)
    return clock[lo:hi + 1]


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
                while (st.st_dev, st.st_ino) == idx.key and idx.counted < st.st_size:
                    with idx.lock:  # a block at a time: a request for a line number waits one block at most
                        _count_to(idx, f, min(st.st_size, idx.counted + BLOCK))
                        _keep(str(ref.path), idx, f, every=SAVE_EVERY_S)
                    time.sleep(0.001)  # and the request threads get the interpreter in between
                if (st.st_dev, st.st_ino) == idx.key:
                    with idx.lock:
                        _keep(str(ref.path), idx, f, final=True)
        finally:
            idx.building = False

    threading.Thread(target=run, name="argus-log-index", daemon=True).start()


_WARMING: set[str] = set()  # logs a keep_warm thread is searching now


def keep_warm(ref: LogRef) -> None:
    """Search a growing log for its first error in the background (one thread per log at most, a block at a
    time with the index's lock released in between, so a request waits one block at most); nothing to do
    once the first error and its exception are found, since an appended log never changes them."""
    path = str(ref.path)
    with _GUARD:
        idx = _INDEXES.get(path)
        if path in _WARMING or (idx is not None and idx.first is not None and idx.first_exception_done):
            return
        _WARMING.add(path)

    def run() -> None:
        try:
            _first_error_in_blocks(ref)
        finally:
            with _GUARD:
                _WARMING.discard(path)

    threading.Thread(target=run, name="argus-log-warm", daemon=True).start()


def _first_error_in_blocks(ref: LogRef) -> None:
    """:func:`first_error`'s search, a block per hold of the index's lock (keep_warm's thread)."""
    f = open_plain(ref.home, ref.path)
    if f is None:
        return
    with f:
        idx, size = _index_for(ref, f)
        while idx.first is None and idx.searched < size:  # to the end as it is now: a log written meanwhile too
            before = idx.searched
            with idx.lock:
                _search(idx, f, min(size, idx.searched + BLOCK))
                if idx.searched == before:  # a line longer than a block, or the unfinished last one
                    _search(idx, f, size)
                    break
                _keep(str(ref.path), idx, f, every=SAVE_EVERY_S)
            time.sleep(0.001)
            size = os.fstat(f.fileno()).st_size
        with idx.lock:
            _keep(str(ref.path), idx, f, final=True)
    first_error(ref)  # the exception of a traceback that has ended since, and the last bytes
