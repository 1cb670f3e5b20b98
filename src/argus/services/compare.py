"""Compare runs: several tasks' specs aligned key by key (core/spec_diff.py) for the Compare page.

Every task is looked up with the same ``get_task`` as ``GET /tasks/{id}``, so a task the user may
not see reads exactly like one that does not exist. All unknown ids are named at once (a shared
link with two stale ids should not take two round trips to fix), as a 404 with one field error each.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session

from argus.core.spec_diff import DiffRow, align, spec_rows
from argus.db.models import TaskModel
from argus.errors import ClientError, FieldError, NotFound
from argus.services.principal import Principal
from argus.services.tasks import get_task

MAX_TASKS = 8  # one colour each on a chart stays readable up to about this many


@dataclass
class Comparison:
    tasks: list[TaskModel]
    rows: list[DiffRow]


def parse_task_ids(raw: list[str] | None) -> list[str]:
    """``?tasks=a,b&tasks=c`` → ``[a, b, c]``, duplicates dropped, order kept; 1…MAX_TASKS ids or a 400
    that names the field, the value and the fix."""
    ids: list[str] = []
    for item in raw or []:
        for tid in item.split(","):
            tid = tid.strip()
            if tid and tid not in ids:
                ids.append(tid)
    shown = ",".join(raw or [])
    if not ids:
        raise ClientError("name the tasks to compare", code="invalid_request", errors=[
            FieldError("tasks", shown, "give task ids separated by commas, e.g. ?tasks=t-1,t-2")])
    if len(ids) > MAX_TASKS:
        raise ClientError(f"at most {MAX_TASKS} tasks can be compared", code="invalid_request", errors=[
            FieldError("tasks", shown, f"{len(ids)} task ids given; remove {len(ids) - MAX_TASKS}")])
    return ids


def compare_tasks(session: Session, principal: Principal, task_ids: list[str]) -> Comparison:
    """The tasks (in the order asked) and their aligned spec rows; NotFound naming every unknown id."""
    found: list[TaskModel] = []
    missing: list[FieldError] = []
    for tid in task_ids:
        try:
            found.append(get_task(session, principal, tid, team_read=True))
        except NotFound:
            missing.append(FieldError("tasks", tid, f"no task {tid!r}: check the id, or remove it from the list"))
    if missing:
        names = ", ".join(repr(e.value) for e in missing)
        raise NotFound(f"no task {names}", code="task_not_found", errors=missing)
    rows = align([spec_rows(t.spec_resolved or {}, list(t.argv or [])) for t in found])
    return Comparison(found, rows)
