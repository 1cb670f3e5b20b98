"""A task's training metrics, read from its logs on the shared filesystem.

The driver tees verl's stdout to ``<root>/users/<u>/jobs/<task>/logs/attempt-<n>.log``.
Logs grow for hours and are polled by charts every few seconds, so each file
is read incrementally: a small per-process cache remembers how far it was
parsed and only the appended bytes are read on the next request. A file that
shrank (rewritten) is parsed again from the start. Attempts are merged in
order, so a retry that resumes from a checkpoint overrides the steps it redoes.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.orm import Session

from argus.core.metrics import MetricSeries, MetricsParser
from argus.core.paths import DataLayout
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


def read_log_metrics(path: Path) -> MetricSeries:
    """The metric series of one log file, reading only what was appended since the last call."""
    key = str(path)
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return MetricSeries()
    with _lock:
        cur = _cache.pop(key, None)
        if cur is None or size < cur.offset:
            cur = _Cursor(0, MetricsParser())
        _cache[key] = cur
        while len(_cache) > _MAX_FILES:
            _cache.popitem(last=False)
        with path.open("rb") as fh:
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
    first = DataLayout.at(str(root)).attempt_log(user_name_of(session, task), task.id, 1)
    logs = Path(str(first.parent))
    series = MetricSeries()
    if not logs.is_dir():
        return series
    for path in sorted(logs.glob("attempt-*.log"), key=lambda p: _attempt_no(p.name)):
        series.merge(read_log_metrics(path))
    return series


def _attempt_no(name: str) -> int:
    digits = name.removeprefix("attempt-").removesuffix(".log")
    return int(digits) if digits.isdigit() else 0
