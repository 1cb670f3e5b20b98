"""Sweeps (issue 38): submit every trial as an ordinary task, watch them, stop the weak ones and the overspent.

* **Submit** (``submit_sweep``): the sweep spec is parsed (``core/sweeps.py``), its trials made from the base
  spec, and *every* trial's spec checked like a submit (admission, verl's own validation, quotas, team)
  before anything is queued; one refused trial refuses the sweep, with each trial's errors under
  ``trials[i].<field>``. Then all trials are queued at once, in one transaction, each a task of its own
  (``sweep_id``, ``sweep_trial``, ``sweep_params``): fair share, quotas, folders and logs as for any task.
  ``max_concurrent`` is a scheduling limit (``core/scheduling/policy.py``): the other trials wait in the
  queue saying so, and nothing is lost across a restart — the queue *is* the sweep's state.
* **Watch** (``tick``, from the scheduler's loop): a trial behind at an early-stop rung, and every trial once
  the sweep's resource-hours reach its budget, is stopped (``SWEEP_STOPPED``, saying why); a sweep whose
  trials have all ended is SUCCEEDED (one did) or FAILED.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import yaml
from sqlalchemy import select
from sqlalchemy.orm import Session

from argus.core import accounting
from argus.core import checkpoints as ck
from argus.core import sweeps as sw
from argus.core.admission import AdmissionPolicy, SpecCheck
from argus.core.evaluation import EVAL_FIELDS
from argus.core.messages import Message, msg, nested
from argus.core.paths import DataLayout
from argus.core.states import TERMINAL, TaskStatus, TerminationReason
from argus.core.taskspec import AdvancedTaskSpec, BasicTaskSpec, load_spec_document
from argus.db.models import SweepModel, TaskAttemptModel, TaskModel, utcnow
from argus.errors import ClientError, Conflict, FieldError
from argus.services.metrics import task_series
from argus.services.principal import Principal
from argus.services.tasks import (
    Checked,
    Origin,
    allocate_id,
    cancel_task,
    check_spec,
    owned_row,
    owned_rows,
    queue_task,
    request_stop,
    user_name_of,
)

RUNNING = "RUNNING"
FIELDS = {"basic": frozenset(BasicTaskSpec.model_fields), "advanced": frozenset(AdvancedTaskSpec.model_fields),
          "eval": EVAL_FIELDS}  # what a parameter may set as a field, by the base's kind (else: an override)


@dataclass
class Trial:
    index: int
    params: dict[str, Any]
    spec: dict[str, Any]
    checked: Checked | None = None


@dataclass
class SweepSubmitted:
    sweep: SweepModel | None  # None for a dry run
    trials: list[Trial]
    task_ids: list[str] = field(default_factory=list)


def submit_sweep(session: Session, principal: Principal, body: str, *, policy: AdmissionPolicy,
                 content_type: str | None = None, max_bytes: int = 256 * 1024, checks: tuple[SpecCheck, ...] = (),
                 dry_run: bool = False) -> SweepSubmitted:
    """Check the sweep and every trial; queue them all (or, ``dry_run``, only say what would be queued)."""
    if len(body.encode()) > max_bytes:
        raise ClientError(f"the sweep spec is over {max_bytes} bytes", code="too_large")
    doc = load_spec_document(body, content_type)
    if isinstance(doc, list):
        raise ClientError("invalid sweep spec", code="invalid_sweep", errors=doc)
    spec = sw.parse_sweep(doc)
    if isinstance(spec, list):
        raise ClientError("invalid sweep spec", code="invalid_sweep", errors=spec)
    params = sw.trial_params(spec)
    errors = [p for p in params if isinstance(p, FieldError)]
    errors += _rung_errors(spec)
    if errors:
        raise ClientError("invalid sweep spec", code="invalid_sweep", errors=errors)
    name = spec.name or "sweep"
    fields = FIELDS.get(str(spec.base.get("kind", "basic")), frozenset())
    trials = [Trial(i, p, sw.trial_doc(spec.base, p, name=sw.trial_name(name, i, p), spec_fields=fields))
              for i, p in enumerate(params)]  # type: ignore[arg-type]
    for t in trials:
        text = yaml.safe_dump(t.spec, sort_keys=False, allow_unicode=True)
        try:
            t.checked = check_spec(principal, text, policy=policy, content_type="application/yaml",
                                   max_bytes=max_bytes, checks=checks)
        except ClientError as exc:
            shown = ", ".join(f"{k}={v}" for k, v in t.params.items())
            errors += [FieldError(f"trials[{t.index}].{e.field}", e.value, f"{e.message} (trial {t.index}: {shown})")
                       for e in exc.errors] or [FieldError(f"trials[{t.index}]", shown, exc.message)]
    if errors:
        raise ClientError(f"{len({e.field.split('.')[0] for e in errors})} trial(s) of the sweep are refused; nothing "
                          "was queued", code="invalid_sweep", errors=errors)
    if dry_run:
        return SweepSubmitted(None, trials)
    row = SweepModel(id=allocate_id(session, "sweep"), user_id=principal.id, name=name, spec_raw=body,
                     spec=spec.model_dump(mode="json"), status=RUNNING, max_concurrent=spec.max_concurrent,
                     created_at=utcnow())
    session.add(row)
    session.flush()
    out = SweepSubmitted(row, trials)
    for t in trials:
        assert t.checked is not None
        done = queue_task(session, principal, t.checked, policy=policy,
                          origin=Origin(sweep_id=row.id, sweep_trial=t.index, sweep_params=t.params))
        out.task_ids.append(done.task.id)
    return out


def _rung_errors(spec: sw.SweepSpec) -> list[FieldError]:
    """Each rung must be a step where verl validates (a multiple of ``trainer.test_freq``), or the metric
    would never be there to judge by."""
    if spec.early_stop is None:
        return []
    base = spec.base
    if base.get("kind") == "advanced":
        value = ck.last_value(ck.command_words(["bash", "-lc", str(base.get("command") or "")]), "trainer.test_freq")
    else:
        value = base.get("test_freq")
    try:
        freq = int(value) if value is not None else -1
    except (TypeError, ValueError):
        freq = -1
    if freq <= 0:
        return [FieldError("early_stop", spec.early_stop.rungs, "the trials never validate: set test_freq (basic) or "
                           "trainer.test_freq (advanced) in base so verl logs the metric at the rungs")]
    bad = [r for r in spec.early_stop.rungs if r % freq]
    return [FieldError("early_stop.rungs", bad, f"verl validates every test_freq={freq} steps: use multiples of "
                       f"{freq}")] if bad else []


# ---------------------------------------------------------------- reads


def get_sweep(session: Session, principal: Principal, sweep_id: str) -> SweepModel:
    return owned_row(session, principal, SweepModel, sweep_id, "sweep")


def list_sweeps(session: Session, principal: Principal, *, limit: int = 100) -> list[SweepModel]:
    return owned_rows(session, principal, SweepModel, limit=limit)


def trials_of(session: Session, sweep_id: str) -> list[TaskModel]:
    return list(session.scalars(select(TaskModel).where(TaskModel.sweep_id == sweep_id)
                                .order_by(TaskModel.sweep_trial, TaskModel.id)))


@dataclass(frozen=True)
class TrialView:
    task: TaskModel
    values: dict[int, float]  # the sweep's metric per validated step


@dataclass(frozen=True)
class SweepView:
    sweep: SweepModel
    trials: list[TrialView]
    hours_used: float
    best_task: str | None


def sweep_view(session: Session, sweep: SweepModel, layout: DataLayout, now: datetime) -> SweepView:
    spec = sw.SweepSpec.model_validate(sweep.spec)
    rows = trials_of(session, sweep.id)
    values = _metric_values(session, rows, spec.metric, layout)
    trials = [TrialView(r, values.get(r.id, {})) for r in rows]
    found = sw.best(_states(rows, values), spec.mode) if spec.metric else None
    return SweepView(sweep, trials, hours_used(session, rows, now), found.task_id if found else None)


def _metric_values(session: Session, rows: list[TaskModel], metric: str | None,
                   layout: DataLayout) -> dict[str, dict[int, float]]:
    if metric is None:
        return {}
    out = {}
    for r in rows:
        if r.attempts:
            out[r.id] = dict(task_series(layout, user_name_of(session, r), r.id, r.attempts).points.get(metric, {}))
    return out


def _states(rows: list[TaskModel], values: dict[str, dict[int, float]]) -> list[sw.TrialState]:
    return [sw.TrialState(r.id, r.sweep_trial or 0,
                          active=r.status in (TaskStatus.SUBMITTED.value, TaskStatus.RUNNING.value),
                          values=values.get(r.id, {})) for r in rows]


def hours_used(session: Session, rows: list[TaskModel], now: datetime) -> float:
    """The trials' resource-hours as ``argus usage`` counts them: GPU-hours, or node-hours for CPU tasks;
    an attempt still running counts up to now."""
    if not rows:
        return 0.0
    size = {r.id: (r.nnodes, r.n_gpus_per_node) for r in rows}
    total = 0.0
    for a in session.scalars(select(TaskAttemptModel).where(TaskAttemptModel.task_id.in_(list(size)))):
        if a.resource_seconds is not None:
            total += a.resource_seconds
        elif a.started_at is not None and a.finished_at is None:
            total += accounting.seconds(*size[a.task_id], a.started_at, now)
    return total / 3600


# ---------------------------------------------------------------- changes


def cancel_sweep(session: Session, principal: Principal, sweep_id: str) -> SweepModel:
    """Cancel every trial not yet ended (QUEUED ones at once, running ones are stopped) and the sweep."""
    row = get_sweep(session, principal, sweep_id)
    if row.status != RUNNING:
        raise Conflict(f"sweep {sweep_id} already ended ({row.status})", code="sweep_finished")
    for t in trials_of(session, sweep_id):
        if TaskStatus(t.status) not in TERMINAL and t.status != TaskStatus.CANCELING.value:
            cancel_task(session, principal, t.id)
    row.status, row.finished_at, row.message = "CANCELED", utcnow(), msg("sweep.canceled_by", user=principal.name).text
    session.flush()
    return row


def _stop(session: Session, task: TaskModel, sweep_id: str, message: Message) -> int:
    """Stop one trial for its sweep (reason SWEEP_STOPPED, kept by the cancel loop). 1 when it was stopped now."""
    try:
        return int(request_stop(session, task, reason=TerminationReason.SWEEP_STOPPED, message=message,
                                actor=f"sweep {sweep_id}"))
    except Conflict:  # it changed meanwhile (ended, or the monitor moved it): the next look decides again
        return 0


def tick(session: Session, layout: DataLayout, now: datetime) -> int:
    """One look at every running sweep (the scheduler's loop): budget, early stops, the end. Trials stopped."""
    stopped = 0
    for row in session.scalars(select(SweepModel).where(SweepModel.status == RUNNING)).all():
        spec = sw.SweepSpec.model_validate(row.spec)
        trials = trials_of(session, row.id)
        if spec.budget_gpu_hours is not None and not row.message:
            used = hours_used(session, trials, now)
            if used >= spec.budget_gpu_hours:
                said = msg("sweep.budget_reached", used=f"{used:.3g}", budget=f"{spec.budget_gpu_hours:g}")
                row.message = said.text
                for t in trials:
                    stopped += _stop(session, t, row.id, msg("status.sweep_stopped", message=nested(said)))
        if spec.early_stop is not None and spec.metric is not None:
            live = [t for t in trials if t.status in (TaskStatus.SUBMITTED.value, TaskStatus.RUNNING.value)]
            if live:
                states = _states(trials, _metric_values(session, trials, spec.metric, layout))
                by_id = {t.id: t for t in trials}
                for s in sw.stops(states, spec.early_stop, spec.mode):
                    stopped += _stop(session, by_id[s.task_id], row.id, s.said(spec.metric))
        if all(TaskStatus(t.status) in TERMINAL for t in trials):
            ok = any(t.status == TaskStatus.SUCCEEDED.value for t in trials)
            row.status, row.finished_at = ("SUCCEEDED" if ok else "FAILED"), now
            row.message = row.message or msg("sweep.every_trial_ended" if ok else "sweep.no_trial_succeeded").text
    session.flush()
    return stopped
