"""A task's training metrics, read from its logs on the shared filesystem.

The driver tees verl's stdout to ``<root>/users/<u>/jobs/<task>/logs/attempt-<n>.log``.
Logs grow for hours and are polled by charts every few seconds, so each file
is read incrementally: a small per-process cache remembers how far it was
parsed and only the appended bytes are read on the next request. A file that
shrank (rewritten) is parsed again from the start. Attempts are merged in
order, so a retry that resumes from a checkpoint overrides the steps it redoes.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.orm import Session

from argus.core.metrics import MetricSeries, MetricsParser
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
            cur.parser.feed(chunk.decode("utf-8", errors="replace"))
        out = MetricSeries()
        out.merge(cur.parser.series)
        return out


def get_task_metrics(session: Session, principal: Principal, task_id: str, root: Path) -> MetricSeries:
    """Every attempt's metrics for a task the principal may read (404 otherwise)."""
    task = get_task(session, principal, task_id)
    layout = DataLayout.at(str(root))
    user = user_name_of(session, task)
    home = Path(str(layout.home(user)))
    series = MetricSeries()
    for attempt in range(1, max(task.attempts, 1) + 1):
        series.merge(read_log_metrics(home, Path(str(layout.attempt_log(user, task.id, attempt)))))
    return series

