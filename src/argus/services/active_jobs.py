"""Which folders of a home a task still needs: ``jobs/<task>`` and its ``logs/`` while the task is not over.

A running task writes its log into ``$HOME/jobs/<task>/logs/attempt-<n>.log`` and the server reads it
back from there: a log deleted (or its folder renamed) from the Data page, the files API or SFTP is gone
for good, and the page then shows an empty log for a task that is still training. The files service
(``services/files.py``) therefore refuses, while the task is QUEUED, SUBMITTED, RUNNING or CANCELING,
to delete, rename or overwrite

* ``jobs`` itself (it holds the task's folder),
* ``jobs/<task>`` (the task's folder), and
* ``jobs/<task>/logs`` and everything below it;

and a listing marks those entries ``protected`` (the task and its status), so a page offers no
Delete or Rename for them. The rest of a task's folder (checkpoints, outputs) stays the owner's to
manage. The answer is read from the database at each call: an SFTP session lives for hours, tasks end.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import select
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.orm import Session

from argus.core.states import TERMINAL, TaskStatus
from argus.db.models import TaskModel
from argus.errors import Conflict, FieldError

LIVE = tuple(s.value for s in TaskStatus if s not in TERMINAL)


class ActiveJobs:
    """One user's tasks that are not over, asked for only when a path under ``jobs`` is touched."""

    def __init__(self, bind: Engine | Connection, user_id: int) -> None:
        self.bind, self.user_id = bind, user_id

    def live(self, task_ids: Iterable[str] | None = None) -> dict[str, str]:
        """{task id: status} of the user's live tasks (all of them, or those of ``task_ids``), oldest first."""
        q = (select(TaskModel.id, TaskModel.status)
             .where(TaskModel.user_id == self.user_id, TaskModel.status.in_(LIVE))
             .order_by(TaskModel.created_at, TaskModel.id))
        if task_ids is not None:
            ids = list(task_ids)
            if not ids:
                return {}
            q = q.where(TaskModel.id.in_(ids))
        with Session(self.bind) as s:
            return {tid: status for tid, status in s.execute(q)}

    def holder(self, rel: tuple[str, ...]) -> tuple[str, str] | None:
        """(task, status) of the live task that needs the home-relative path ``rel``, or None."""
        if not rel or rel[0] != "jobs":
            return None
        if len(rel) == 1:
            live = self.live()
        elif len(rel) == 2 or rel[2] == "logs":
            live = self.live([rel[1]])
        else:
            return None
        return next(iter(live.items()), None)

    def marks(self, rel: tuple[str, ...], names: Iterable[str]) -> dict[str, dict[str, str]]:
        """For a listing of the home-relative folder ``rel``: {entry name: {"task", "status"}} of its
        protected entries (one query, and only in the home, ``jobs`` and a task's folder)."""
        names = list(names)
        if rel == () and "jobs" in names:
            held = self.holder(("jobs",))
            return {"jobs": {"task": held[0], "status": held[1]}} if held else {}
        if rel == ("jobs",):  # all live tasks (a few), not an IN list of every folder listed
            shown = set(names)
            return {tid: {"task": tid, "status": st} for tid, st in self.live().items() if tid in shown}
        if len(rel) == 2 and rel[0] == "jobs" and "logs" in names:
            held = self.holder((*rel, "logs"))
            return {"logs": {"task": held[0], "status": held[1]}} if held else {}
        return {}

    def check(self, rel: tuple[str, ...], vpath: str, *, field: str = "path", what: str = "delete") -> None:
        """Conflict (409) naming the task, its status and the fix when a live task needs ``rel``."""
        held = self.holder(rel)
        if held is None:
            return
        task, status = held
        fix = f"task {task} is {status}; cancel it first or wait until it ends"
        whose = "holds the folder of" if rel == ("jobs",) else ("is the folder of" if len(rel) == 2 else
                                                                "holds the log of")
        raise Conflict(f"{vpath}: cannot {what} it: it {whose} task {task}, which is {status}; cancel the task "
                       "first or wait until it ends", code="task_active", errors=[FieldError(field, vpath, fix)])
