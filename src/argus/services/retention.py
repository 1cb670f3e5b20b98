"""Retention (issue 14): the admin's prune of old task events and logs, and an owner's checkpoint removal.

Policy (after the DI-orchestrator seed, 002: finished jobs are cleaned up by rule, not by hand):

* **Task rows are never deleted**: the status, reason, message, times and attempts of every task stay.
* ``prune`` removes, for tasks that *ended* before a cutoff, their timeline events and the attempt
  logs Argus keeps in the job folder (``jobs/<task>/logs/attempt-<n>.log``: the driver's copy of the
  output, or the copy of Ray's driver log). Nothing else: not checkpoints, not other files of the job.
* The cutoff is an absolute time. A dry run returns the plan with that time; running again with the
  same ``before`` removes exactly the plan (a task cannot end in the past, so no new item can join),
  which is why ``plan_prune`` and ``apply_prune`` are separate and the real run reports the plan it
  applied.
* Files are removed the way ``home_files`` reads them: walked from the owner's home with
  ``O_NOFOLLOW`` at every step, and only a plain file is unlinked — a task may have replaced its
  ``logs`` folder with a link to another user's files.

Ray's own job records are the scheduler's business (``scheduler/janitor.py``, ``ray_job_retention_days``).
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from argus.core import checkpoints as ck
from argus.core.paths import DataLayout
from argus.core.states import TERMINAL, TaskStatus
from argus.db.models import TaskEventModel, TaskModel, UserModel
from argus.errors import ClientError, Conflict, FieldError, Forbidden, NotFound
from argus.services import audit, telemetry
from argus.services.checkpoints import task_listing
from argus.services.files import FileStore, user_files
from argus.services.home_files import open_in_home
from argus.services.principal import Principal
from argus.services.tasks import get_task

_LOG_NAME = re.compile(r"attempt-[0-9]{1,6}\.log")
_DIR = os.O_RDONLY | os.O_DIRECTORY
_CHUNK = 500  # ids per IN (…): far below SQLite's and PostgreSQL's parameter limits
TERMINAL_VALUES = tuple(s.value for s in TERMINAL)


@dataclass(frozen=True)
class LogFile:
    name: str  # attempt-<n>.log
    size_bytes: int


@dataclass
class PrunedTask:
    task_id: str
    user: str
    finished_at: datetime | None
    events: int
    logs: list[LogFile] = field(default_factory=list)


@dataclass
class PrunePlan:
    before: datetime
    tasks: list[PrunedTask]

    @property
    def events(self) -> int:
        return sum(t.events for t in self.tasks)

    @property
    def log_files(self) -> int:
        return sum(len(t.logs) for t in self.tasks)

    @property
    def log_bytes(self) -> int:
        return sum(f.size_bytes for t in self.tasks for f in t.logs)


def plan_prune(session: Session, layout: DataLayout, before: datetime) -> PrunePlan:
    """What a prune at ``before`` removes: events and attempt logs of tasks that ended before it."""
    if before.tzinfo is None:
        raise ClientError("cutoff without a time zone", code="invalid_cutoff",
                          errors=[FieldError("before", before.isoformat(), "give a time with a zone, e.g. …Z")])
    ended = func.coalesce(TaskModel.finished_at, TaskModel.updated_at)
    rows = session.execute(
        select(TaskModel.id, UserModel.name, TaskModel.finished_at)
        .join(UserModel, UserModel.id == TaskModel.user_id)
        .where(TaskModel.status.in_(TERMINAL_VALUES), ended < before)
        .order_by(TaskModel.id)
    ).all()
    counts: dict[str, int] = {}
    ids = [r.id for r in rows]
    for i in range(0, len(ids), _CHUNK):
        counts.update(session.execute(
            select(TaskEventModel.task_id, func.count())
            .where(TaskEventModel.task_id.in_(ids[i:i + _CHUNK]), TaskEventModel.at < before)
            .group_by(TaskEventModel.task_id)).all())
    tasks = []
    for r in rows:
        logs = _attempt_logs(layout, r.name, r.id)
        if counts.get(r.id) or logs:
            tasks.append(PrunedTask(r.id, r.name, r.finished_at, counts.get(r.id, 0), logs))
    return PrunePlan(before=before, tasks=tasks)


def apply_prune(session: Session, layout: DataLayout, plan: PrunePlan, *, actor: str, store: FileStore | None = None,
                source_ip: str | None = None) -> PrunePlan:
    """Remove exactly ``plan``'s items (events in this transaction, then the files); returns the plan."""
    ids = [t.task_id for t in plan.tasks if t.events]
    for i in range(0, len(ids), _CHUNK):
        session.execute(delete(TaskEventModel).where(TaskEventModel.task_id.in_(ids[i:i + _CHUNK]),
                                                     TaskEventModel.at < plan.before))
    telemetry.invalidate_task_counts()  # /metrics keeps task counts from the events: they are recounted
    audit.record(session, actor=actor, action=audit.PRUNE, target=None, source_ip=source_ip,
                 detail={"before": plan.before.isoformat(), "tasks": len(plan.tasks), "events": plan.events,
                         "log_files": plan.log_files, "log_bytes": plan.log_bytes})
    session.flush()
    touched = set()
    for t in plan.tasks:
        for f in t.logs:
            if _unlink_plain(layout, t.user, t.task_id, f.name):
                touched.add(t.user)
    if store is not None:
        for user in touched:
            store.ledger.invalidate(user)  # the home's usage changed behind the quota ledger's back
    return plan


def _logs_dir(layout: DataLayout, user: str, task_id: str) -> tuple[Path, tuple[str, ...]]:
    return Path(str(layout.home(user))), ("jobs", task_id, "logs")


def _attempt_logs(layout: DataLayout, user: str, task_id: str) -> list[LogFile]:
    """The plain ``attempt-<n>.log`` files of a job, found without following any link."""
    home, rel = _logs_dir(layout, user, task_id)
    try:
        fd = open_in_home(home, rel, _DIR)
    except OSError:
        return []
    try:
        found = []
        for name in sorted(os.listdir(fd)):
            if not _LOG_NAME.fullmatch(name):
                continue
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if stat.S_ISREG(st.st_mode) and st.st_nlink == 1:
                found.append(LogFile(name, st.st_size))
        return found
    finally:
        os.close(fd)


def _unlink_plain(layout: DataLayout, user: str, task_id: str, name: str) -> bool:
    """Unlink ``jobs/<task>/logs/<name>`` if it is (still) a plain file reached without links."""
    home, rel = _logs_dir(layout, user, task_id)
    try:
        fd = open_in_home(home, rel, _DIR)
    except OSError:
        return False
    try:
        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        if not (stat.S_ISREG(st.st_mode) and st.st_nlink == 1):
            return False
        os.unlink(name, dir_fd=fd)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


# ---------------------------------------------------------------- checkpoints


def remove_checkpoints(session: Session, store: FileStore, principal: Principal, task_id: str,
                       step: int | None = None, layout: DataLayout | None = None) -> str:
    """Delete ``$HOME/jobs/<task>/checkpoints`` of the caller's own ended task, or with ``step`` (and the
    ``layout``) only that step's ``global_step_<step>`` folder in the folder the checkpoint list shows;
    returns what was deleted as written.

    Only the owner (an admin cannot delete a user's results through this), only an ended task (a
    running one is writing there), and only the folder itself: a ``checkpoints`` that is a link is
    refused, never followed, and the tree is removed by an fd-based walk (``UserFiles.remove``).
    One step is refused while verl's ``latest_checkpointed_iteration.txt`` names it: verl's auto-resume
    and Argus's resume would then point at a folder that is gone (delete them all instead)."""
    task = get_task(session, principal, task_id)
    if task.user_id != principal.id:
        raise Forbidden(f"only the owner of {task_id} can delete its checkpoints", code="not_owner")
    if TaskStatus(task.status) not in TERMINAL:
        raise Conflict(f"task {task_id} is {task.status}: its checkpoints can be deleted once it has ended "
                       "(cancel it first)", code="task_active")
    files = user_files(store, session, principal)
    if step is not None and layout is not None:
        vpath = _step_path(layout, principal, task, step)
    else:
        vpath = f"/jobs/{task.id}/checkpoints"
    info = files.stat(vpath, follow=False)  # NotFound when there is none
    if info.type != "dir":
        raise ClientError(f"$HOME{vpath} is not a folder ({info.type}); nothing was deleted", code="not_directory",
                          errors=[FieldError("step" if step is not None else "task_id",
                                             step if step is not None else task_id,
                                             "remove that entry with the file commands instead")])
    files.remove(vpath, recursive=True, expect="dir")
    audit.record(session, actor=principal.name, action=audit.CHECKPOINTS_REMOVED, target=task.id,
                 detail={"step": step} if step is not None else None)
    return "$HOME" + vpath


def _step_path(layout: DataLayout, principal: Principal, task: TaskModel, step: int) -> str:
    """The home-relative path of one listed step; 404 for a step the list does not show, 409 for the latest."""
    listing = task_listing(layout, principal.name, task.id, list(task.argv), task.status)
    found = next((s for s in listing.steps if s.step == step), None)
    if found is None:
        shown = ", ".join(str(s.step) for s in listing.steps) or "none"
        raise NotFound(f"task {task.id} has no checkpoint step {step} (its steps: {shown})",
                       code="checkpoint_not_found")
    if listing.latest == step:
        raise Conflict(f"step {step} is the latest checkpoint of {task.id} (verl's {ck.TRACKER} names it): "
                       "deleting it alone would leave resume pointing at nothing; delete all checkpoints "
                       "instead", code="latest_checkpoint")
    try:
        rel = Path(str(found.path)).relative_to(Path(str(layout.home(principal.name))))
    except ValueError:
        raise ClientError(f"step {step} is outside your home; nothing was deleted", code="not_in_home",
                          errors=[FieldError("step", step, "remove it with the file commands instead")]) from None
    return "/" + rel.as_posix()
