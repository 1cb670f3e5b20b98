"""The tasks list's order (any column, validated) and what a page of it adds to each row: GPU-hours, nodes.

Sorting is the server's job, not the page's: the list is paged (and scrolled virtually), so only the
database sees every matching task. A column name comes from the URL, so it is checked against
``SORT_COLUMNS`` and an unknown one is a 400 naming the field, the value and the allowed names,
never a raw SQL fragment. Each order ends with the task id, so equal values page stably. Status sorts
in the order of a task's life (QUEUED … RUNNING … SUCCEEDED, FAILED, CANCELED), names by lower case.

GPU-hours follow the accounting rule (``core/accounting.py``): GPUs × the time each attempt ran, the
running one up to now; a CPU job holds no GPU and shows 0. They are computed for the page's rows only
(one query over their attempts); sorting by them sums attempts in SQL for the whole filtered set.
"""

from __future__ import annotations

import re
from collections import defaultdict
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import ColumnElement, case, func, literal, select
from sqlalchemy.orm import Session

from argus.core import accounting
from argus.core.states import TaskStatus
from argus.db.models import TaskAttemptModel, TaskModel, UserModel
from argus.errors import ClientError, FieldError

DEFAULT_SORT = "-created"


def _seconds(start: Any, end: Any, dialect: str) -> ColumnElement[Any]:
    """``end - start`` in seconds, in the database's own date arithmetic."""
    if dialect == "sqlite":
        return (func.julianday(end) - func.julianday(start)) * 86400.0
    return func.extract("epoch", end - start)


def _now(dialect: str) -> ColumnElement[Any]:
    now = datetime.now(UTC)
    return literal(now.strftime("%Y-%m-%d %H:%M:%S.%f")) if dialect == "sqlite" else literal(now)


def _gpu_seconds(dialect: str) -> ColumnElement[Any]:
    """Per task: GPUs × seconds over its attempts (correlated; ``ix_task_attempts_task`` finds them)."""
    ran = _seconds(TaskAttemptModel.started_at, func.coalesce(TaskAttemptModel.finished_at, _now(dialect)), dialect)
    per_task = (select(func.coalesce(func.sum(ran), 0.0))
                .where(TaskAttemptModel.task_id == TaskModel.id, TaskAttemptModel.started_at.is_not(None))
                .scalar_subquery())
    return per_task * (TaskModel.nnodes * TaskModel.n_gpus_per_node)


def _columns(dialect: str) -> dict[str, ColumnElement[Any]]:
    reason = func.coalesce(TaskModel.pending_reason, TaskModel.status_message, TaskModel.termination_reason, "")
    duration = case((TaskModel.started_at.is_(None), -1.0),
                    else_=_seconds(TaskModel.started_at, func.coalesce(TaskModel.finished_at, _now(dialect)), dialect))
    return {
        "id": TaskModel.id,
        "name": func.lower(func.coalesce(TaskModel.name, "")),
        "user": UserModel.name,
        "workload": TaskModel.workload,
        # a task's life, not the alphabet: waiting, running, then the ways it ended
        "status": case({st.value: i for i, st in enumerate(TaskStatus)}, value=TaskModel.status, else_=len(TaskStatus)),
        "gpus": TaskModel.nnodes * TaskModel.n_gpus_per_node,
        "created": TaskModel.created_at,
        "duration": duration,
        "gpu_hours": _gpu_seconds(dialect),
        "reason": reason,
    }


SORT_COLUMNS = ("id", "name", "user", "workload", "status", "gpus", "created", "duration", "gpu_hours", "reason")


def order_by(sort: str | None, dialect: str) -> list[ColumnElement[Any]]:
    """ORDER BY for ``sort`` (a column name, ``-`` in front for descending); 400 for any other name."""
    raw = (sort or DEFAULT_SORT).strip()
    desc = raw.startswith("-")
    name = raw[1:] if desc else raw
    if name not in SORT_COLUMNS:
        raise ClientError("bad sort", code="invalid_sort", errors=[FieldError(
            "sort", sort, f"must be one of {', '.join(SORT_COLUMNS)} (a leading '-' sorts descending)")])
    col = _columns(dialect)[name]
    tie = TaskModel.id.desc() if desc else TaskModel.id.asc()
    return [tie] if name == "id" else [col.desc() if desc else col.asc(), tie]

# What the scheduler records when it hands a task to Ray (scheduler/submit.py): plumbing, not news for a person.
_RAY_PLUMBING = re.compile(r"^(submitted|adopted) Ray job \S+$")


def status_note(message: str | None) -> str | None:
    """A task's status message as a person reads it: the Ray submission id message is dropped (the list says
    where and since when the task runs instead); a stall ("no progress for …") or any other message stays."""
    return None if message is None or _RAY_PLUMBING.match(message) else message


# What scheduler/progress.py writes as the task's message when it finds a stall (cleared by "progressing again").
STALL_PREFIX = "STALLED:"


def stalled(status: str, message: str | None) -> bool:
    """A RUNNING task the stall monitor found silent past its limit, and that has not printed since."""
    return status == TaskStatus.RUNNING.value and (message or "").startswith(STALL_PREFIX)


def page_extras(session: Session, rows: list[Any], *, now: datetime) -> dict[str, tuple[float, list[str]]]:
    """Per task id of the page: (GPU-hours so far, the hosts of its current attempt while it holds them)."""
    ids = [r.id for r in rows]
    if not ids:
        return {}
    shape = {r.id: (r.nnodes, r.n_gpus_per_node, r.attempts) for r in rows}
    seconds: dict[str, float] = defaultdict(float)
    hosts: dict[str, list[str]] = {}
    for a in session.execute(select(TaskAttemptModel.task_id, TaskAttemptModel.attempt, TaskAttemptModel.started_at,
                                    TaskAttemptModel.finished_at, TaskAttemptModel.hostname, TaskAttemptModel.node_id)
                             .where(TaskAttemptModel.task_id.in_(ids))):
        nnodes, per_node, current = shape[a.task_id]
        if per_node > 0:
            seconds[a.task_id] += accounting.seconds(nnodes, per_node, a.started_at, a.finished_at or now)
        if a.attempt == current and a.finished_at is None and (a.hostname or a.node_id):
            hosts[a.task_id] = [a.hostname or a.node_id]
    return {i: (round(seconds.get(i, 0.0) / 3600, 4), hosts.get(i, [])) for i in ids}
