"""Task logs: bytes from the driver's log file on the shared filesystem.

The driver tees the task's output to ``<root>/users/<u>/jobs/<task>/logs/attempt-<n>.log``,
so logs need neither Ray nor the node that ran the task: they work for finished tasks,
after a head restart and after the node died. Reads are chunked generators (memory stays
flat for multi-GB files); ``read_lines`` aligns a range to whole lines (the WebUI pages through a
GB log by byte ranges); ``follow`` wakes on file-change notification (services/log_watch.py,
with a backstop poll) and ends once the attempt is over and the file is drained. No function here holds a database session
across a wait: each status check is its own short transaction.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from argus.core.paths import DataLayout
from argus.core.states import LIVE_ATTEMPT, is_terminal
from argus.db.models import TaskAttemptModel, TaskModel
from argus.errors import ClientError, FieldError, NotFound
from argus.services import log_watch
from argus.services.home_files import open_plain
from argus.services.log_watch import DirWatch
from argus.services.principal import Principal
from argus.services.tasks import get_task, user_name_of

CHUNK = 64 * 1024
MAX_LINE_SCAN = 1024 * 1024  # a line boundary is looked for this far; a longer line is cut where it is
STATUS_EVERY_S = 0.5  # a busy log re-checks the attempt's status at most this often (one DB query each)


@dataclass(frozen=True)
class LogRef:
    task_id: str
    attempt: int
    path: Path
    home: Path  # the owner's home: the log is reached from there without following links


def log_file(layout: DataLayout, user: str, task_id: str, attempt: int) -> Path:
    return Path(str(layout.attempt_log(user, task_id, attempt)))


def resolve_log(session: Session, principal: Principal, task_id: str, attempt: int | None,
                layout: DataLayout) -> LogRef:
    """The log of ``attempt`` (default: the latest); 404 for another user's task or no such attempt."""
    task = get_task(session, principal, task_id, team_read=True)
    if attempt is None:
        attempt = max(task.attempts, 1)
    elif attempt < 1 or attempt > max(task.attempts, 1):
        raise NotFound(f"task {task_id} has no attempt {attempt} (it has {task.attempts})", code="attempt_not_found")
    user = user_name_of(session, task)
    return LogRef(task_id, attempt, log_file(layout, user, task_id, attempt), Path(str(layout.home(user))))


def read_range(ref: LogRef, offset: int = 0, limit: int | None = None) -> tuple[int, Iterator[bytes]]:
    """(end offset, chunks) for bytes ``[offset, min(size, offset+limit))`` as the file is now.

    The end is fixed when called so a growing file yields a consistent range and the
    client knows the next offset (``X-Next-Offset``). The task can replace its log with a
    link or a FIFO: it is opened from the home without following links, and anything but a
    plain file reads as empty (services/home_files.py).
    """
    if offset < 0 or (limit is not None and limit < 0):
        raise ClientError("offset and limit must be ≥ 0", code="invalid_range",
                          errors=[FieldError("offset", offset, "must be ≥ 0")])
    f = open_plain(ref.home, ref.path)
    size = 0 if f is None else os.fstat(f.fileno()).st_size
    start = min(offset, size)
    end = size if limit is None else min(size, start + limit)

    def chunks() -> Iterator[bytes]:
        if f is None:
            return
        with f:
            if end <= start:
                return
            f.seek(start)
            left = end - start
            while left > 0:
                data = f.read(min(CHUNK, left))
                if not data:
                    break
                left -= len(data)
                yield data

    return end, chunks()


def _line_start(f, offset: int, size: int) -> int:  # noqa: ANN001
    """The first line start at or after ``offset`` (``offset`` itself when a newline precedes it, or no
    newline comes within MAX_LINE_SCAN: a giant line is cut rather than scanned to its end)."""
    if offset <= 0 or offset >= size:
        return min(max(offset, 0), size)
    f.seek(offset - 1)
    pos = offset - 1
    while pos < min(size, offset + MAX_LINE_SCAN):
        block = f.read(min(CHUNK, size - pos))
        if not block:
            break
        at = block.find(b"\n")
        if at >= 0:
            return pos + at + 1
        pos += len(block)
    return offset


def _line_end(f, start: int, end: int) -> int:  # noqa: ANN001
    """``end`` moved back to just after the last newline in ``[start, end)`` (unchanged when that is where it
    is, or when no newline comes within MAX_LINE_SCAN: one long line is returned cut)."""
    if end <= start:
        return end
    pos = end
    while pos > max(start, end - MAX_LINE_SCAN):
        lo = max(start, pos - CHUNK)
        f.seek(lo)
        block = f.read(pos - lo)
        at = block.rfind(b"\n")
        if at >= 0:
            return lo + at + 1
        pos = lo
    return end


def read_lines(ref: LogRef, offset: int, limit: int | None) -> tuple[int, int, Iterator[bytes]]:
    """(start, end, chunks) for the whole lines inside ``[offset, offset+limit)``: the start moves forward
    past a cut line, the end back to the last newline. The WebUI reads a GB log in such ranges (earlier
    ones as the user scrolls up), so every range it shows starts and ends on a line boundary and the
    next range continues exactly where this one stopped."""
    if offset < 0 or (limit is not None and limit < 0):
        raise ClientError("offset and limit must be ≥ 0", code="invalid_range",
                          errors=[FieldError("offset" if offset < 0 else "limit", offset if offset < 0 else limit,
                                             "must be ≥ 0")])
    f = open_plain(ref.home, ref.path)
    if f is None:
        return 0, 0, iter(())
    with f:
        size = os.fstat(f.fileno()).st_size
        start = _line_start(f, offset, size)
        end = size if limit is None else min(size, offset + limit)
        end = _line_end(f, start, end) if end > start else start
    _, chunks = read_range(ref, start, end - start)
    return start, end, chunks


def attempt_finished(session: Session, task_id: str, attempt: int) -> bool:
    """Is this attempt over (so its log will not grow)? The task may already be on a later attempt."""
    task = session.get(TaskModel, task_id)
    if task is None:
        return True
    if task.attempts > attempt or is_terminal(task.status):
        return True
    status = session.scalar(select(TaskAttemptModel.status).where(TaskAttemptModel.task_id == task_id,
                                                                  TaskAttemptModel.attempt == attempt))
    return status is not None and status not in LIVE_ATTEMPT


def follow(ref: LogRef, offset: int, finished: Callable[[], bool], *, poll_s: float = 0.5,
           heartbeat: bool = False, inotify: bool | None = None) -> Iterator[tuple[int, bytes]]:
    """Yield ``(offset_after, complete lines)`` as the file grows, until the attempt ended and the
    file is drained. A partial last line is held back until its newline arrives (or the end).

    It sleeps on the log folder's change notification (``DirWatch``): a write wakes it at once. ``poll_s``
    is the backstop for what inotify cannot see (a network filesystem written from another node) and
    the whole wait where inotify is unavailable or off (``inotify=False``; the default is
    ``log_watch.ENABLED``). With ``heartbeat`` a wake with nothing new yields ``(offset, b"")`` so a
    server notices a gone client."""
    with DirWatch(ref.path.parent, inotify=log_watch.ENABLED if inotify is None else inotify) as watch:
        yield from _follow(ref, offset, finished, watch, poll_s, heartbeat)


def _follow(ref: LogRef, offset: int, finished: Callable[[], bool], watch: DirWatch, poll_s: float,
            heartbeat: bool) -> Iterator[tuple[int, bytes]]:
    pending = b""
    pos = offset
    done = False
    checked = 0.0
    while True:
        now = time.monotonic()
        if now - checked >= STATUS_EVERY_S or not watch.notifying:
            done = finished()  # read before the file: whatever was written before the end is drained
            checked = now
        end, chunks = read_range(ref, pos)
        for data in chunks:
            pos += len(data)
            pending += data
            cut = pending.rfind(b"\n") + 1
            if cut:
                yield pos - (len(pending) - cut), pending[:cut]
                pending = pending[cut:]
            elif len(pending) > CHUNK:  # a huge line without newline: do not buffer without bound
                yield pos, pending
                pending = b""
        if done and pos >= end:
            if pending:
                yield pos, pending
            return
        if heartbeat:
            yield pos - len(pending), b""
        if done:
            continue  # the end was seen but the file grew meanwhile: drain it before stopping
        if not watch.wait(poll_s):
            checked = 0.0  # a quiet backstop period: look at the status on the next turn
