"""Compare runs: several tasks' specs aligned key by key (core/spec_diff.py) for the Compare page.

Every task is looked up with the same ``get_task`` as ``GET /tasks/{id}``, so a task the user may
not see reads exactly like one that does not exist. An id that cannot be shown does not sink the
others (issue 37: one stale id in a shared link blanked the page): the comparison holds the tasks
found and names every missing id with a stable code (``task_not_found``) the WebUI words in the
user's language. Only when none of the ids can be shown is the answer a 404, naming each of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy.orm import Session

from argus.core.spec_diff import DiffRow, align, spec_rows
from argus.db.models import TaskModel
from argus.errors import ClientError, FieldError, NotFound
from argus.services.principal import Principal
from argus.services.tasks import get_task

MAX_TASKS = 8  # one colour each on a chart stays readable up to about this many


MISSING_CODE = "task_not_found"  # unknown, or another user's (the same answer: no existence leak)


@dataclass
class Comparison:
    tasks: list[TaskModel]
    rows: list[DiffRow]
    # the ids asked for that are not shown, each with why (field "tasks", the id, the fix)
    missing: list[FieldError] = field(default_factory=list)


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
    """The tasks found (in the order asked), their aligned spec rows and the ids not shown; NotFound
    naming every id when none can be shown."""
    found: list[TaskModel] = []
    missing: list[FieldError] = []
    for tid in task_ids:
        try:
            found.append(get_task(session, principal, tid, team_read=True))
        except NotFound:
            missing.append(FieldError("tasks", tid, f"no task {tid!r}: check the id, or remove it from the list"))
    if not found:
        names = ", ".join(repr(e.value) for e in missing)
        raise NotFound(f"no task {names}", code=MISSING_CODE, errors=missing)
    rows = align([spec_rows(t.spec_resolved or {}, list(t.argv or [])) for t in found])
    return Comparison(found, rows, missing)
