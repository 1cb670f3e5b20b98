"""Search a task's whole log on the server (issue 25: "the whole log reachable without downloading").

The page holds a bounded window of lines (a few thousand of a GB log); "next match" past the window
asks here for the byte offsets of the next (or previous) matching lines, then loads a window there.
A plain-text query is looked for by ripgrep over the rest of the file (services/log_grep.py: one pass,
~0.2 s a GiB; Python judges only the lines it names, as the page shows them), so a rare text is found
across a 1 GiB log in one answer (issue 37). A regex, a non-ASCII query or a missing ripgrep takes Python's
scan: the file is streamed in blocks (memory stays flat), each answer scans at most ``SCAN_BYTES`` and
says where to go on, so one request never holds a worker for the whole of a huge file. Access is the
log endpoint's (``resolve_log``): another user's task is a 404 before any byte is read.
"""

from __future__ import annotations

import os
import re
from collections import deque
from dataclasses import dataclass, field, replace
from pathlib import Path

from sqlalchemy.orm import Session

from argus.core.log_text import ESCAPE, LineSearch, visible
from argus.core.paths import DataLayout
from argus.errors import ClientError, FieldError
from argus.services import log_grep
from argus.services.home_files import open_plain
from argus.services.logs import LogRef, _line_start, resolve_log
from argus.services.principal import Principal
from argus.services.tasks import get_task

BLOCK = 1024 * 1024
SCAN_BYTES = 64 * 1024 * 1024  # per request: ~0.3–1 s of scanning on one core (Python's scan)
MAX_CANDIDATES = 20_000  # lines ripgrep names that one answer judges at most (~0.1 s of Python)
ESCAPE_BYTES = re.compile(ESCAPE.pattern.encode())
MAX_TEXT = 300  # characters of a matching line sent back (the page loads the line itself to show it)


def node_log(ref: LogRef, node: int) -> LogRef:
    """Node ``node``'s log of the attempt: node 1 is the launcher's (``attempt-<n>.log``), node K ≥ 2 of a
    multi-node task writes ``attempt-<n>.node-<K>.log`` beside it (launcher/gang.py)."""
    if node == 1:
        return ref
    return replace(ref, path=Path(ref.path).with_name(f"attempt-{ref.attempt}.node-{node}.log"))


def resolve_node_logs(session: Session, principal: Principal, task_id: str, attempt: int | None,
                      node: int | None, layout: DataLayout) -> list[tuple[int, LogRef]]:
    """(node, log) of ``node`` — or of every node of the task when None; 404 for another user's task (the log
    endpoint's rule), 400 naming ``node`` when the task has no such node."""
    ref = resolve_log(session, principal, task_id, attempt, layout)
    nnodes = max(1, get_task(session, principal, task_id, team_read=True).nnodes or 1)
    if node is None:
        return [(k, node_log(ref, k)) for k in range(1, nnodes + 1)]
    if not 1 <= node <= nnodes:
        raise ClientError(f"task {task_id} has no node {node}", code="invalid_node",
                          errors=[FieldError("node", node, f"a node of this task: 1 to {nnodes} (1 is the first node)")])
    return [(node, node_log(ref, node))]


@dataclass(frozen=True)
class LogMatch:
    offset: int  # the matching line's first byte
    end: int  # the byte after its newline
    text: str  # its visible text, cut to MAX_TEXT


@dataclass
class LogSearch:
    matches: list[LogMatch] = field(default_factory=list)
    scanned_from: int = 0
    scanned_to: int = 0
    size: int = 0
    complete: bool = False  # the scan reached the file's end (forward) or start (backward)


def _block_matches(block: bytes, base: int, s: LineSearch) -> list[LogMatch]:
    """The matching lines of ``block`` (whole lines starting at byte ``base``)."""
    out: list[LogMatch] = []
    if not s.regex and s.query.isascii() and b"\x1b" not in block and b"\r" not in block:
        # fast path: find the (ASCII, any case) needle in the block; only the lines it lands on are decoded
        low, needle = block.lower(), s.query.lower().encode()
        at = low.find(needle)
        while at >= 0:
            start = block.rfind(b"\n", 0, at) + 1
            nl = block.find(b"\n", at)
            end = len(block) if nl < 0 else nl + 1
            out.append(LogMatch(base + start, base + end, block[start:end].decode("utf-8", "replace").rstrip("\n")[:MAX_TEXT]))
            at = low.find(needle, end)
        return out
    if not s.regex and s.query.isascii():
        # a sound prefilter: what a line shows is its text without escapes (and after its last \r), so a
        # needle absent from the escape-free block is in none of its lines — most blocks end here, in C
        bare = ESCAPE_BYTES.sub(b"", block) if b"\x1b" in block else block
        if s.query.lower().encode() not in bare.lower():
            return out
    elif s.in_block is not None and b"\r" not in block:
        # the same for a regex, run once over the block (a per-line loop in Python is ~10 times slower)
        bare = ESCAPE_BYTES.sub(b"", block) if b"\x1b" in block else block
        if not s.in_block(bare.decode("utf-8", "replace")):
            return out
    pos = 0
    while pos < len(block):  # lines end at "\n" only (bytes.splitlines would also cut at tqdm's "\r")
        nl = block.find(b"\n", pos)
        end = len(block) if nl < 0 else nl + 1
        text = visible(block[pos:end].decode("utf-8", "replace").rstrip("\n"))
        if s.match(text):
            out.append(LogMatch(base + pos, base + end, text[:MAX_TEXT]))
        pos = end
    return out


def _whole_lines(f, lo: int, hi: int, size: int) -> tuple[int, bytes]:  # noqa: ANN001
    """The bytes of ``[lo, hi)`` cut back to the last newline (unless ``hi`` is the file's end)."""
    f.seek(lo)
    block = f.read(hi - lo)
    if lo + len(block) < size:
        cut = block.rfind(b"\n") + 1
        if cut:
            block = block[:cut]
    return lo, block


def search_log(ref: LogRef, s: LineSearch, *, offset: int = 0, before: int | None = None,
               max_matches: int = 50, budget: int = SCAN_BYTES) -> LogSearch:
    """Matching lines after ``offset`` (forward), or the last ones before ``before`` (backward), at most
    ``max_matches``, scanning at most ``budget`` bytes; ``scanned_from``/``scanned_to`` say where to go on."""
    f = open_plain(ref.home, ref.path)
    if f is None:
        return LogSearch(complete=True)
    with f:
        size = os.fstat(f.fileno()).st_size
        fast = budget >= SCAN_BYTES and _words(s) is not None  # a smaller budget is kept exactly (Python's scan)
        if before is None:
            start = _line_start(f, min(offset, size), size)
            return (fast and _forward_fast(f, s, start, size, max_matches)) or _forward(
                f, s, start, size, max_matches, budget)
        found = _backward(f, s, min(before, size), size, max_matches, budget)
        if not fast or len(found.matches) >= max_matches or found.complete:
            return found  # the last matches were near (a dense text ends here in C)
        more = _backward_fast(f, s, found.scanned_from, size, max_matches - len(found.matches))
        if more is None:
            return found
        return replace(more, matches=more.matches + found.matches, scanned_to=found.scanned_to)


def _words(s: LineSearch) -> tuple[bytes, ...] | None:
    """What ripgrep looks for (any case) so that every line that *shows* the plain-text query is found: the
    query, and each of its beginnings followed by an escape (a colour can split what the page shows as one
    word: ``\x1b[31mNee\x1b[0mdle``). None for a regex or a non-ASCII query (Python's scan)."""
    if s.regex or not s.query.isascii() or "\x00" in s.query:
        return None
    q = s.query.encode()
    return (q, *(q[:k] + b"\x1b" for k in range(1, len(q))))


def _candidates(f, s: LineSearch, start: int, size: int):  # noqa: ANN001, ANN202 - a context manager
    return log_grep.lines_with(f.fileno(), start, _words(s), ignore_case=True)


def _line(f, offset: int, size: int) -> bytes:  # noqa: ANN001
    """The line at ``offset`` with its newline (at most a block of it)."""
    data = os.pread(f.fileno(), min(BLOCK, size - offset), offset)
    nl = data.find(b"\n")
    return data if nl < 0 else data[:nl + 1]


def _judged(f, s: LineSearch, offset: int, size: int) -> LogMatch | None:  # noqa: ANN001
    """The line at ``offset`` (ripgrep named it) if it shows a match, as :func:`_block_matches` judges it."""
    line = _line(f, offset, size)
    text = visible(line.decode("utf-8", "replace").rstrip("\n"))
    return LogMatch(offset, offset + len(line), text[:MAX_TEXT]) if s.match(text) else None


def _forward_fast(f, s: LineSearch, pos: int, size: int, max_matches: int) -> LogSearch | None:  # noqa: ANN001
    """:func:`_forward` by ripgrep over the rest of the file (0.2 s a GiB) instead of SCAN_BYTES a request; it
    stops at ``max_matches`` or after MAX_CANDIDATES lines that only look like one (then: go on from there).
    None when ripgrep is missing or failed."""
    out = LogSearch(scanned_from=pos, scanned_to=size, size=size, complete=True)
    try:
        with _candidates(f, s, pos, size) as hits:
            if hits is None:
                return None
            for seen, (_, rel) in enumerate(hits, 1):
                if pos + rel >= size:
                    break  # written since the question
                m = _judged(f, s, pos + rel, size)
                if m is not None:
                    out.matches.append(m)
                if len(out.matches) >= max_matches or seen >= MAX_CANDIDATES:
                    out.scanned_to = m.end if m is not None else pos + rel + len(_line(f, pos + rel, size))
                    out.complete = out.scanned_to >= size
                    break
    except (log_grep.GrepFailed, OSError):
        return None
    return out


def _backward_fast(f, s: LineSearch, before: int, size: int, max_matches: int) -> LogSearch | None:  # noqa: ANN001
    """The last ``max_matches`` matching lines before ``before`` (the start of a line), by ripgrep from the
    file's start; None when it is missing or failed, or when more than MAX_CANDIDATES lines look like a match
    (the caller's bounded scan stands: its answer says where to go on)."""
    found: deque[LogMatch] = deque(maxlen=max_matches)
    try:
        with _candidates(f, s, 0, size) as hits:
            if hits is None:
                return None
            for seen, (_, rel) in enumerate(hits, 1):
                if rel >= before or seen > MAX_CANDIDATES:
                    if rel < before:
                        return None
                    break
                m = _judged(f, s, rel, size)
                if m is not None:
                    found.append(m)
    except (log_grep.GrepFailed, OSError):
        return None
    out = LogSearch(matches=list(found), scanned_from=0, scanned_to=before, size=size, complete=True)
    if len(found) == max_matches:
        out.scanned_from = found[0].offset
        out.complete = found[0].offset <= 0
    return out


def _forward(f, s: LineSearch, pos: int, size: int, max_matches: int, budget: int) -> LogSearch:  # noqa: ANN001
    out = LogSearch(scanned_from=pos, scanned_to=pos, size=size)
    stop = min(size, pos + budget)
    while pos < stop:
        lo, block = _whole_lines(f, pos, min(size, pos + BLOCK), size)
        if not block:
            break
        found = _block_matches(block, lo, s)
        room = max_matches - len(out.matches)
        out.matches.extend(found[:room])
        pos = lo + len(block)
        if len(found) >= room:
            pos = found[room - 1].end if found and room > 0 else pos
            out.scanned_to = pos
            out.complete = pos >= size
            return out
    out.scanned_to = pos
    out.complete = pos >= size
    return out


def _backward(f, s: LineSearch, pos: int, size: int, max_matches: int, budget: int) -> LogSearch:  # noqa: ANN001
    out = LogSearch(scanned_from=pos, scanned_to=pos, size=size)
    stop = max(0, pos - budget)
    while pos > stop and len(out.matches) < max_matches:
        lo = max(0, pos - BLOCK)
        start = _line_start(f, lo, size) if lo > 0 else 0
        if start >= pos:  # one line longer than a block: take it cut
            start = lo
        f.seek(start)
        block = f.read(pos - start)
        out.matches[:0] = _block_matches(block, start, s)
        pos = start
    if len(out.matches) > max_matches:
        out.matches = out.matches[-max_matches:]
        pos = out.matches[0].offset
    out.scanned_from = pos
    out.complete = pos <= 0
    return out
