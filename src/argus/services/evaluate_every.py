"""Evaluate every checkpoint (issue 38): queue an evaluation of each complete step of the tasks whose spec says
``evaluate_checkpoints`` (the option's rules: ``core/evaluate_every.py``).

The scheduler's look (``scheduler/evaluations.py``) calls ``tick`` each pass. It must stay cheap with thousands
of tasks in the database, so it reads only the tasks still *watched* (``tasks.evaluate_watching``, indexed) that
are no longer QUEUED, and of each only verl's tracker file unless the tracker has passed the task's mark
(``tasks.evaluated_through``: the highest step a look settled). Each step is queued through ``evaluate_task``,
the service of ``POST /tasks/{id}/evaluate`` — the same admission, fair queue and quotas, as the task's owner.

Exactly once: a step that already has an evaluation (``evaluates_task``/``evaluates_step``, one the user asked
for included) is not queued again, and a look moves the mark with a guarded update (``WHERE evaluated_through``
is what it read) in the transaction that queues the steps, so of two looks that race only one queues them, and
a restart goes on from the mark. A step that cannot be queued (admission refuses it: its val_file was deleted,
the environment is gone) is settled too, with one event on the source task saying why — no retry each pass.
A task that has ended gets one last look (its last checkpoint) and is then no longer watched.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from sqlalchemy import Row, select, update
from sqlalchemy.orm import Session

from argus.core import checkpoints as ck
from argus.core import evaluate_every as ee
from argus.core.messages import Message, from_stored, msg, nested, part
from argus.core.paths import DataLayout
from argus.core.states import TERMINAL, TaskStatus
from argus.db.models import TaskEventModel, TaskModel, UserModel
from argus.errors import ArgusError
from argus.services import evaluations
from argus.services.checkpoints import complete_steps
from argus.services.pipelines import Admission
from argus.services.principal import Principal
from argus.services.tasks import policy_for

log = logging.getLogger("argus.scheduler")

ACTOR = "scheduler"

_WATCHED = (
    select(TaskModel.id, TaskModel.user_id, UserModel.name, TaskModel.status, TaskModel.argv,
           TaskModel.evaluate_checkpoints, TaskModel.evaluated_through)
    .join(UserModel, UserModel.id == TaskModel.user_id)
    .where(TaskModel.evaluate_watching.is_(True), TaskModel.status != TaskStatus.QUEUED.value)
    .order_by(TaskModel.created_at, TaskModel.id)
)


def tick(session: Session, layout: DataLayout, admission: Admission, now: datetime) -> int:
    """One look at every watched task; returns the evaluations queued. One task's unexpected failure is logged
    and rolled back alone: the others are still looked at."""
    queued = 0
    for row in session.execute(_WATCHED).all():
        try:
            with session.begin_nested():
                queued += look(session, layout, admission, row, now)
        except Exception:  # noqa: BLE001 - e.g. an unreadable folder: the next pass tries that task again
            log.exception("evaluate_checkpoints: the look at task %s failed", row.id)
    return queued


def look(session: Session, layout: DataLayout, admission: Admission, row: Row[Any], now: datetime) -> int:
    """Queue the evaluations of one task's newly complete steps (``row``: a ``_WATCHED`` row)."""
    ended = TaskStatus(row.status) in TERMINAL  # read before the folder: a task ending now gets one more look
    latest, complete = complete_steps(layout, row.name, row.id, list(row.argv), after=row.evaluated_through)
    evaluated = set(session.scalars(select(TaskModel.evaluates_step).where(TaskModel.evaluates_task == row.id))) \
        if complete else set()
    plan = ee.plan(complete, latest, row.evaluated_through, evaluated)
    if plan.through == row.evaluated_through and not ended:
        return 0  # nothing new: no write
    mark = TaskModel.evaluated_through.is_(None) if row.evaluated_through is None else \
        TaskModel.evaluated_through == row.evaluated_through
    claimed = session.execute(update(TaskModel).where(TaskModel.id == row.id, TaskModel.evaluate_watching.is_(True),
                                                      mark)
                              .values(evaluated_through=plan.through, evaluate_watching=not ended))
    if claimed.rowcount != 1:
        return 0  # another look moved the mark first: those steps are its own
    owner = Principal(id=row.user_id, name=row.name, is_admin=False)  # the owner's task, never an admin's
    policy = policy_for(session, owner, admission.policy)
    option = row.evaluate_checkpoints or {}
    lm_eval = {"lm_eval": option["lm_eval"]} if ee.uses_lm_eval(option) else {}  # else verl's validation
    queued = 0
    for step in plan.steps:
        try:
            with session.begin_nested():
                evaluations.evaluate_task(session, owner, row.id, step=step, val_file=option.get("val_file"),
                                          reward_path=option.get("reward_path"), reward_name=option.get("reward_name"),
                                          policy=policy, checks=admission.checks, max_bytes=admission.max_bytes,
                                          **lm_eval)
            queued += 1
        except ArgusError as exc:
            said = refusal(step, exc)
            session.add(TaskEventModel(task_id=row.id, at=now, from_status=row.status, to_status=row.status,
                                       reason=None, actor=ACTOR, message=said.text, message_code=said.code,
                                       message_params=said.params))
    return queued


def refusal(step: int, exc: ArgusError) -> Message:
    """The event a refused evaluation leaves on its source task: the step, the refusal and each problem (issue 37:
    coded; the refusal and each problem nested where they have a code that still renders to their text, else their
    English as written)."""
    said = nested(from_stored(exc.message_code, exc.message_params, exc.message) or exc.message)
    details = [part("part.field_problem", field=e.field, problem=nested(from_stored(e.code, e.params, e.message)
                                                                        or e.message)) for e in exc.errors[:5]]
    checkpoint = f"{ck.STEP_PREFIX}{step}"
    if details:
        return msg("status.eval_not_queued_details", checkpoint=checkpoint, message=said, details=details)
    return msg("status.eval_not_queued", checkpoint=checkpoint, message=said)
