"""Queue position and estimated start of QUEUED tasks, progress and expected end of RUNNING ones (issue 24).

The arithmetic is :mod:`argus.core.eta`'s; this module reads what it needs, bounded:

* **a running task's progress** comes from its current attempt's log (where the driver tees verl's
  output, ``<home>/jobs/<task>/logs/attempt-<n>.log``): the last ``step:N`` line, verl's
  ``timing_s/step`` of the recent steps, and when the last step was logged (the log's mtime when
  the step line was read). Each log is read incrementally — only what it gained since the last look,
  at most :data:`READ_CAP` bytes of its newest part (the first look at a long log reads its tail) —
  and never through a link (``home_files.open_plain``). The cursor per log is kept in a small LRU
  (:data:`MAX_LOGS`): only SUBMITTED/RUNNING/CANCELING tasks are ever read, however long the list of
  tasks is. GPU-hours so far are the attempts' GPU-seconds (``core.accounting``), the running one up
  to now.
* **queue estimates** need the scheduler's inputs (its queue, ledger, nodes, limits and fair share),
  which the scheduler side reads (``scheduler/queue_inputs.py``) and the composition root passes in
  as a callable; :class:`QueueEstimates` adds the held tasks' expected ends and runs
  :func:`argus.core.eta.estimate`, keeping the answer for :data:`CACHE_S` seconds while those
  inputs are unchanged (one computation serves every request of that window; :data:`MIN_S` while
  they change).
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Collection, Hashable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from argus.core import accounting, eta
from argus.core.metrics import is_training_step, parse_metric_line
from argus.core.paths import DataLayout
from argus.core.states import ACTIVE, TaskStatus
from argus.db.models import TaskAttemptModel, TaskModel, UserModel
from argus.services.home_files import open_plain

READ_CAP = 1 << 20  # bytes of a log read per look, its newest part
MAX_LOGS = 4096  # log cursors kept (one per attempt that was looked at)
CACHE_S = 10.0  # how long one queue estimate serves every request, while the scheduler's inputs are unchanged
MIN_S = 2.0  # ... and at least this long even when they changed (a burst of submits), when it covers the tasks asked
_SPLIT = re.compile(rb"\r\n|\r|\n")  # verl's SFT trainer prints its step line after a tqdm bar's \r


# ------------------------------------------------------------------ a log's progress


@dataclass
class _Cursor:
    inode: int
    offset: int = 0
    carry: bytes = b""
    step: int | None = None
    step_at: datetime | None = None
    first_step: int | None = None  # the attempt's first step, when its log was read from the start
    whole: bool = True  # every byte so far was read (no skip to the tail)
    timings: deque[float] = field(default_factory=lambda: deque(maxlen=eta.RECENT_STEPS))


@dataclass(frozen=True)
class LogProgress:
    step: int | None = None  # the last verl step logged
    step_at: datetime | None = None  # when (the log's mtime when that line was read)
    timings: tuple[float, ...] = ()  # verl's timing_s/step of the recent steps
    first_step: int | None = None  # the attempt's first step logged (None: not seen, the log was read from its tail)


_cursors: OrderedDict[str, _Cursor] = OrderedDict()
_lock = threading.Lock()


def read_log_progress(home: Path, path: Path) -> LogProgress:
    """The progress a log shows, reading only what it gained since the last call (at most READ_CAP bytes)."""
    fh = open_plain(home, path)
    if fh is None:
        return LogProgress()
    with fh, _lock:
        st = os.fstat(fh.fileno())
        cur = _cursors.pop(str(path), None)
        if cur is None or st.st_size < cur.offset or cur.inode != st.st_ino:  # new, or rewritten
            cur = _Cursor(st.st_ino)
        _cursors[str(path)] = cur
        while len(_cursors) > MAX_LOGS:
            _cursors.popitem(last=False)
        if st.st_size > cur.offset:
            start = max(cur.offset, st.st_size - READ_CAP)
            cut = start > cur.offset  # skipped ahead: the first line read is a fragment
            cur.whole = cur.whole and not cut
            fh.seek(start)
            data = (b"" if cut else cur.carry) + fh.read(st.st_size - start)
            cur.offset = st.st_size
            lines = _SPLIT.split(data)
            cur.carry = lines.pop()[-4096:]
            if cut:
                lines = lines[1:]
            found = False
            for raw in lines:
                if b"step:" not in raw:
                    continue
                parsed = parse_metric_line(raw.decode("utf-8", errors="replace"))
                if parsed is None or not is_training_step(parsed[1]):
                    continue
                cur.step, found = parsed[0], True
                if cur.first_step is None and cur.whole:
                    cur.first_step = cur.step
                timing = parsed[1].get(eta.TIMING_KEY)
                if timing is not None:
                    cur.timings.append(timing)
            if found:
                cur.step_at = datetime.fromtimestamp(st.st_mtime, UTC)
        return LogProgress(cur.step, cur.step_at, tuple(cur.timings), cur.first_step)


# ------------------------------------------------------------------ a running task


@dataclass(frozen=True)
class RunProgress:
    step: int | None
    total_steps: int | None  # trainer.total_training_steps, when the command sets a number
    steps_per_hour: float | None
    gpu_hours: float  # every attempt's GPUs × time, the running one up to now
    eta_end: datetime | None  # expected end; None: unknown
    step_at: datetime | None = None  # when its last step was logged (None: no step yet)


def _expected(argv: list[str], attempt_started: datetime | None, log: LogProgress,
              now: datetime) -> tuple[int | None, float | None, datetime | None]:
    """(total steps, steps per second, expected end) of an attempt."""
    total = eta.total_steps(argv)
    # the steps this attempt made: from its first logged step (a resumed run, verl's own auto-resume too), else
    # from the checkpoint its command resumes from
    before = log.first_step - 1 if log.first_step is not None else eta.start_step(argv)
    done = log.step - before if log.step is not None else 0
    elapsed = (log.step_at - attempt_started).total_seconds() if log.step_at and attempt_started else None
    rate = eta.step_rate(log.timings, steps_done=done, elapsed_s=elapsed)
    return total, rate, eta.expected_end(now, step=log.step, total=total, rate=rate, step_at=log.step_at)


def task_progress(session: Session, task: TaskModel, user: str, root: Path, *, now: datetime) -> RunProgress:
    """The progress of a task (RUNNING: its current attempt's log) and the GPU-hours its attempts held."""
    layout = DataLayout.at(str(root))
    attempts = session.execute(
        select(TaskAttemptModel.attempt, TaskAttemptModel.started_at, TaskAttemptModel.finished_at)
        .where(TaskAttemptModel.task_id == task.id)).all()
    gpu_s = sum(accounting.seconds(task.nnodes, task.n_gpus_per_node, a.started_at, a.finished_at or now)
                for a in attempts) if task.n_gpus_per_node > 0 else 0.0
    started = next((a.started_at for a in attempts if a.attempt == task.attempts), None)
    log = read_log_progress(Path(str(layout.home(user))), Path(str(layout.attempt_log(user, task.id, task.attempts))))
    total, rate, end = _expected(list(task.argv), started, log, now)
    return RunProgress(log.step, total, rate * 3600 if rate is not None else None, gpu_s / 3600, end, log.step_at)


def held_ends(session: Session, root: Path, *, now: datetime) -> dict[str, datetime | None]:
    """Expected end of every task holding resources: RUNNING from its log, CANCELING now, SUBMITTED unknown."""
    layout = DataLayout.at(str(root))
    rows = session.execute(
        select(TaskModel.id, TaskModel.status, UserModel.name, TaskModel.argv, TaskModel.attempts,
               TaskAttemptModel.started_at)
        .join(UserModel, UserModel.id == TaskModel.user_id)
        .outerjoin(TaskAttemptModel, (TaskAttemptModel.task_id == TaskModel.id)
                   & (TaskAttemptModel.attempt == TaskModel.attempts))
        .where(TaskModel.status.in_([s.value for s in ACTIVE]))).all()
    ends: dict[str, datetime | None] = {}
    for tid, status, user, argv, attempt, started in rows:
        if status == TaskStatus.CANCELING.value:
            ends[tid] = now  # stopped within seconds
        elif status == TaskStatus.RUNNING.value and attempt:
            log = read_log_progress(Path(str(layout.home(user))), Path(str(layout.attempt_log(user, tid, attempt))))
            ends[tid] = _expected(list(argv or []), started, log, now)[2]
        else:
            ends[tid] = None  # Ray has not started it: its run time is unknown
    return ends


# ------------------------------------------------------------------ the queue


class QueueEstimates:
    """Queue estimates for one server: ``inputs()`` gives (a key, the scheduler's inputs). One answer serves the
    requests of the next ``cache_s`` seconds while the key is unchanged, and of the next :data:`MIN_S` seconds
    anyway (a burst of submits changes the key every few milliseconds), as long as it covers the tasks asked
    for: a task queued since is always estimated afresh."""

    def __init__(self, inputs: Callable[[], tuple[Hashable, eta.Inputs]], root: Path, *,
                 cache_s: float = CACHE_S) -> None:
        self.inputs = inputs
        self.root = root
        self.cache_s = cache_s
        self._lock = threading.Lock()
        self._kept: tuple[Hashable, float, dict[str, eta.QueueEstimate]] | None = None

    def for_tasks(self, session: Session, wanted: Collection[str], *, now: datetime) -> dict[str, eta.QueueEstimate]:
        """Estimates covering at least the QUEUED tasks among ``wanted`` (other users' tasks count, unnamed)."""
        key, inputs = self.inputs()
        queued = {t.task_id for t in inputs.queued}
        asked = [w for w in wanted if w in queued]
        with self._lock:
            kept = self._kept
        if kept is not None and all(w in kept[2] for w in asked):
            age = time.monotonic() - kept[1]
            if age < min(self.cache_s, MIN_S) or (kept[0] == key and age < self.cache_s):
                return kept[2]
        result = eta.estimate(inputs, held_ends(session, self.root, now=now), now=now, wanted=asked)
        with self._lock:
            self._kept = (key, time.monotonic(), result)
        return result
