"""Evaluate a task's checkpoint as a new task, and the scores attached to its checkpoints (issue 38).

An evaluation is an ordinary submit (admission with verl's config, the queue, fair share, the owner's
quotas, its own job folder and logs): the source task's spec resuming from the chosen step with verl's
``trainer.val_only`` (see ``core/evaluation.py``). The new task records which task and step it evaluates.
Its scores are the validation metrics it logged; they are read from its log once it has succeeded and
then kept in its row, so they outlive the log (retention may remove the job folder).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import yaml
from sqlalchemy import select
from sqlalchemy.orm import Session

from argus.core import checkpoints as ck
from argus.core import evaluation as ev
from argus.core.admission import AdmissionPolicy, SpecCheck
from argus.core.messages import msg
from argus.core.paths import DataLayout
from argus.core.states import TaskStatus
from argus.db.models import TaskEventModel, TaskModel, utcnow
from argus.errors import ClientError, Conflict, FieldError
from argus.services.checkpoints import Listing, Step, task_listing
from argus.services.metrics import task_series
from argus.services.principal import Principal
from argus.services.tasks import Origin, Submitted, own_task, stored_spec, submit_task, user_name_of


@dataclass(frozen=True)
class Evaluation:
    """One evaluation of a checkpoint: the task that ran it, its state and (once it succeeded) its scores."""

    task_id: str
    step: int
    status: str
    scores: dict[str, float] | None
    created_at: datetime
    finished_at: datetime | None


def evaluations_of(session: Session, task_id: str, layout: DataLayout) -> list[Evaluation]:
    """Every evaluation of the task's checkpoints, oldest first; scores read (and kept) for those that
    succeeded since the last look."""
    rows = session.scalars(select(TaskModel).where(TaskModel.evaluates_task == task_id)
                           .order_by(TaskModel.created_at, TaskModel.id)).all()
    return [Evaluation(task_id=r.id, step=r.evaluates_step or 0, status=r.status, scores=task_scores(session, r, layout),
                       created_at=r.created_at, finished_at=r.finished_at) for r in rows]


def task_scores(session: Session, row: TaskModel, layout: DataLayout) -> dict[str, float] | None:
    """An evaluation task's scores: kept ones, or read from its log once it succeeded (and kept). None for a
    task that is no evaluation (a training run's validations are its metrics, not scores)."""
    if row.scores is not None or row.status != TaskStatus.SUCCEEDED.value or not ev.is_evaluation(list(row.argv)):
        return row.scores
    found = ev.scores_of(task_series(layout, user_name_of(session, row), row.id, row.attempts))
    if found is not None:  # a run that logged none keeps asking: its log may still be on its way
        row.scores = found
        session.flush()
    return found


def pick_step(session: Session, listing: Listing, task_id: str, layout: DataLayout, *, step: int | None,
              best: str | None, mode: ev.Mode = "max") -> Step:
    """The complete step to act on: ``step``, the one whose evaluation scored best on ``best``, or the latest."""
    if best is None:
        return listing.pick(step)
    if step is not None:
        raise ClientError("give a step or a metric to pick the best by, not both", code="bad_step",
                          errors=[FieldError("best", best, f"remove it to use step {step}, or remove 'step'")])
    scored = [(e.step, e.scores) for e in evaluations_of(session, task_id, layout) if e.scores]
    chosen = ev.best_step(scored, best, mode)
    if chosen is None:
        known = sorted({k for _, s in scored for k in s})
        have = f"its evaluations scored: {', '.join(known)}" if known else "it has no evaluation with scores yet"
        raise ClientError(f"no evaluation of {task_id} scored {best!r}", code="no_scores",
                          errors=[FieldError("best", best, f"{have}; evaluate a checkpoint first "
                                             "(POST /api/v2/tasks/{id}/evaluate)")])
    return listing.pick(chosen)


# What an lm-eval evaluation of a checkpoint keeps of its source task's spec: where and as whom it runs.
_LM_EVAL_KEPT = ("env", "device", "team", "priority", "priority_class", "memory_per_node")


def evaluate_task(session: Session, principal: Principal, task_id: str, *, step: int | None,
                  val_file: str | None, reward_path: str | None, reward_name: str | None,
                  policy: AdmissionPolicy, checks: tuple[SpecCheck, ...] = (),
                  max_bytes: int = 256 * 1024, lm_eval: dict | None = None) -> Submitted:
    """Queue a task that evaluates a complete checkpoint of one of the principal's tasks: verl's validation,
    or with ``lm_eval`` (an ``lm_eval:`` block of a ``kind: eval`` spec) lm-eval on the merged checkpoint —
    which any verl checkpoint allows, SFT's included."""
    old = own_task(session, principal, task_id, "evaluate")
    if lm_eval is not None:
        return _lm_evaluate(session, principal, old, step=step, lm_eval=lm_eval, policy=policy, checks=checks,
                            max_bytes=max_bytes, verl_only={"val_file": val_file, "reward_path": reward_path,
                                                         "reward_name": reward_name})
    if old.workload not in ev.EVALUABLE_WORKLOADS:
        raise Conflict(f"task {task_id} is a {old.workload} task: evaluation runs verl's PPO trainer's validation "
                       f"(trainer.val_only), which only a {' or '.join(ev.EVALUABLE_WORKLOADS)} checkpoint can load",
                       code="not_evaluable")
    listing = task_listing(policy.layout, principal.name, old.id, list(old.argv), old.status)
    chosen = listing.pick(step)
    doc = stored_spec(old)
    shown = policy.layout.to_virtual(chosen.path, principal.name)
    spec = ev.eval_spec(doc, shown, name=ev.eval_name(old.id, chosen.step), val_file=val_file,
                        reward_path=reward_path, reward_name=reward_name)
    return _submit_evaluation(session, principal, old.id, chosen.step, spec, policy=policy, checks=checks,
                              max_bytes=max_bytes, shown=shown, code="status.evaluates")


def _lm_evaluate(session: Session, principal: Principal, old: TaskModel, *, step: int | None, lm_eval: dict,
                 policy: AdmissionPolicy, checks: tuple[SpecCheck, ...], max_bytes: int,
                 verl_only: dict[str, str | None]) -> Submitted:
    listing = task_listing(policy.layout, principal.name, old.id, list(old.argv), old.status)
    chosen = listing.pick(step)
    doc = stored_spec(old)
    shown = policy.layout.to_virtual(chosen.path, principal.name)
    spec = {"kind": "eval", "name": ev.eval_name(old.id, chosen.step), "checkpoint": shown, "lm_eval": lm_eval,
            **{k: doc[k] for k in _LM_EVAL_KEPT if k in doc},
            **{k: v for k, v in verl_only.items() if v is not None}}  # refused by the spec check, by name
    return _submit_evaluation(session, principal, old.id, chosen.step, spec, policy=policy, checks=checks,
                              max_bytes=max_bytes, shown=shown, code="status.evaluates_lm_eval")


def _submit_evaluation(session: Session, principal: Principal, source: str, step: int, spec: dict, *,
                       policy: AdmissionPolicy, checks: tuple[SpecCheck, ...], max_bytes: int,
                       shown: str, code: str) -> Submitted:
    """Queue ``spec`` and say on its timeline what it evaluates (``code``: ``status.evaluates`` for verl's
    validation, ``status.evaluates_lm_eval``; ``shown``: the checkpoint's folder as its owner writes it)."""
    body = yaml.safe_dump(spec, sort_keys=False, allow_unicode=True)
    done = submit_task(session, principal, body, policy=policy, content_type="application/yaml",
                       max_bytes=max_bytes, checks=checks, origin=Origin(evaluates_task=source, evaluates_step=step))
    said = msg(code, task=source, checkpoint=f"{ck.STEP_PREFIX}{step}", path=shown)
    session.add(TaskEventModel(task_id=done.task.id, at=utcnow(), from_status=TaskStatus.QUEUED.value,
                               to_status=TaskStatus.QUEUED.value, reason=None, actor=principal.name,
                               message=said.text, message_code=said.code, message_params=said.params))
    session.flush()
    done.info = {**done.info, "evaluates_task": source, "step": step}
    return done
