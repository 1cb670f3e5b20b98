"""Task logs: bytes from the driver's log file on the shared filesystem.

The driver tees the task's output to ``<root>/users/<u>/jobs/<task>/logs/attempt-<n>.log``,
so logs need neither Ray nor the node that ran the task: they work for finished tasks,
after a head restart and after the node died. Reads are chunked generators (memory stays
flat for multi-GB files); ``follow`` polls the file and the task status and ends once the
attempt is over and the file is drained. No function here holds a database session
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
from argus.services.home_files import open_plain
from argus.services.principal import Principal
from argus.services.tasks import get_task, user_name_of

CHUNK = 64 * 1024


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
    task = get_task(session, principal, task_id)
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
           heartbeat: bool = False) -> Iterator[tuple[int, bytes]]:
    """Yield ``(offset_after, complete lines)`` as the file grows, until the attempt ended and the
    file is drained. A partial last line is held back until its newline arrives (or the end).
    With ``heartbeat`` an idle poll yields ``(offset, b"")`` so a server notices a gone client."""
    pending = b""
    pos = offset
    while True:
        done = finished()  # read before the file: whatever was written before the end is drained
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
        time.sleep(poll_s)
