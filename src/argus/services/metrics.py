"""A task's training metrics, read from its logs on the shared filesystem.

The driver tees verl's stdout to ``<root>/users/<u>/jobs/<task>/logs/attempt-<n>.log``.
Logs grow for hours and are polled by charts every few seconds, so each file
is read incrementally: a small per-process cache remembers how far it was
parsed and only the appended bytes are read on the next request. A file that
shrank (rewritten) is parsed again from the start. Attempts are merged in
order, so a retry that resumes from a checkpoint overrides the steps it redoes.

Each log's clock (``attempt-<n>.clock``, written by the driver; see core/metrics.py) is read the
same way and turns the byte where a step's line starts into the wall time it was written.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.orm import Session

from argus.core.metrics import CLOCK_SUFFIX, MetricSeries, MetricsParser, parse_clock, step_times
from argus.core.paths import DataLayout
from argus.services.home_files import open_plain
from argus.services.principal import Principal
from argus.services.tasks import get_task, user_name_of

_CHUNK = 4 * 1024 * 1024
_MAX_FILES = 256


@dataclass
class _Cursor:
    offset: int
    parser: MetricsParser
    clock_offset: int = 0
    clock_partial: str = ""
    clock: list[tuple[int, float]] | None = None


_cache: OrderedDict[str, _Cursor] = OrderedDict()
_lock = threading.Lock()


def read_log_metrics(home: Path, path: Path) -> MetricSeries:
    """The metric series of one log file, reading only what was appended since the last call.

    Opened from the owner's home without following links (a task can replace its log).
    """
    key = str(path)
    fh = open_plain(home, path)
    if fh is None:
        return MetricSeries()
    with fh, _lock:
        size = os.fstat(fh.fileno()).st_size
        cur = _cache.pop(key, None)
        if cur is None or size < cur.offset:
            cur = _Cursor(0, MetricsParser())
        _cache[key] = cur
        while len(_cache) > _MAX_FILES:
            _cache.popitem(last=False)
        fh.seek(cur.offset)
        while cur.offset < size:
            chunk = fh.read(min(_CHUNK, size - cur.offset))
            if not chunk:
                break
            cur.offset += len(chunk)
            cur.parser.feed_bytes(chunk)
        _read_clock(home, path.with_suffix(CLOCK_SUFFIX), cur)
        out = MetricSeries()
        out.merge(cur.parser.series)
        out.times = step_times(cur.parser.step_offsets, cur.clock or [])
        return out


def _read_clock(home: Path, path: Path, cur: _Cursor) -> None:
    """Append the clock's new complete lines to ``cur.clock`` (under ``_lock``); no clock, no times."""
    fh = open_plain(home, path)
    if fh is None:
        return
    with fh:
        size = os.fstat(fh.fileno()).st_size
        if cur.clock is None or size < cur.clock_offset:
            cur.clock, cur.clock_offset, cur.clock_partial = [], 0, ""
        if size == cur.clock_offset:
            return
        fh.seek(cur.clock_offset)
        text = cur.clock_partial + fh.read(min(_CHUNK, size - cur.clock_offset)).decode("ascii", errors="replace")
        cur.clock_offset = fh.tell()
        done, _, cur.clock_partial = text.rpartition("\n")
        cur.clock.extend(parse_clock(done))
        cur.clock.sort()


def get_task_metrics(session: Session, principal: Principal, task_id: str, root: Path) -> MetricSeries:
    """Every attempt's metrics for a task the principal may read (404 otherwise)."""
    task = get_task(session, principal, task_id, team_read=True)
    return task_series(DataLayout.at(str(root)), user_name_of(session, task), task.id, task.attempts)


def task_series(layout: DataLayout, user: str, task_id: str, attempts: int) -> MetricSeries:
    """Every attempt's metrics of one task of ``user``, later attempts over earlier ones (no access check)."""
    home = Path(str(layout.home(user)))
    series = MetricSeries()
    for attempt in range(1, max(attempts, 1) + 1):
        series.merge(read_log_metrics(home, Path(str(layout.attempt_log(user, task_id, attempt)))))
    return series

