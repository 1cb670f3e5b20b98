"""Pipelines (issue 38): submit a DAG of steps checked whole, then run each step when what it needs succeeded.

* **Submit** (``submit_pipeline``): the spec is parsed (``core/pipelines.py``: names, needs, sources, gates,
  ``{{ steps.X.artifact }}`` references), then every ``spec`` step is checked like a submit with its
  references replaced by placeholder paths of the right shape — verl's own validation runs on the steps that
  name no artifact (a placeholder model cannot be read); the others get it when they start, with the real
  paths. One refused step refuses the pipeline (``steps.<name>.<field>``); nothing is queued.
* **Run** (``tick``, from the scheduler's loop, as the owner): a step whose needs all succeeded and whose gate
  passes is started — a task (``spec``), an export or an evaluation of a needed step's checkpoint (the same
  services as the API's), or a registration in the model registry. A failed task is submitted again up to
  ``retries`` times (an export's retry writes again into the folder its own earlier try left; any other folder
  at the target still refuses it); then the step fails, the steps after it are skipped and the pipeline FAILED. Cancelling
  the pipeline cancels its running step. The state lives in the pipeline's row and the steps' tasks, so a
  restart resumes where it was.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import yaml
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from argus.core import pipelines as pl
from argus.core.admission import AdmissionPolicy, SpecCheck
from argus.core.messages import msg
from argus.core.paths import DataLayout
from argus.core.states import TERMINAL, TaskStatus
from argus.core.taskspec import load_spec_document
from argus.db.models import PipelineModel, TaskModel, UserModel, utcnow
from argus.errors import ClientError, Conflict, FieldError, Forbidden, NotFound
from argus.services import evaluations, model_registries, registry
from argus.services import resume as resume_svc
from argus.services.checkpoints import task_listing
from argus.services.metrics import task_series
from argus.services.principal import Principal
from argus.services.tasks import (
    Origin,
    Submitted,
    allocate_id,
    cancel_task,
    check_spec,
    owned_row,
    owned_rows,
    policy_for,
    queue_task,
    user_name_of,
)

RUNNING = "RUNNING"
WAITING, STARTED, DONE, FAILED, SKIPPED, CANCELED = "waiting", "running", "succeeded", "failed", "skipped", "canceled"
SETTLED = frozenset({DONE, FAILED, SKIPPED, CANCELED})
YAML = "application/yaml"


@dataclass(frozen=True)
class Admission:
    """What starting a step needs from the server: its admission policy and checks (verl's validation)."""

    policy: AdmissionPolicy
    checks: tuple[SpecCheck, ...] = ()
    max_bytes: int = 256 * 1024


def _dump(doc: dict[str, Any]) -> str:
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)


def submit_pipeline(session: Session, principal: Principal, body: str, *, admission: Admission,
                    content_type: str | None = None, dry_run: bool = False) -> PipelineModel | None:
    """Check the pipeline and each step; store it (its first steps start on the scheduler's next look)."""
    if len(body.encode()) > admission.max_bytes:
        raise ClientError(f"the pipeline spec is over {admission.max_bytes} bytes", code="too_large")
    doc = load_spec_document(body, content_type)
    if isinstance(doc, list):
        raise ClientError("invalid pipeline spec", code="invalid_pipeline", errors=doc)
    spec = pl.parse_pipeline(doc)
    if isinstance(spec, list):
        raise ClientError("invalid pipeline spec", code="invalid_pipeline", errors=spec)
    policy = policy_for(session, principal, admission.policy)
    errors: list[FieldError] = []
    fake = pl.placeholders(spec)
    for name, step in spec.steps.items():
        if step.spec is None:
            continue
        named = bool(pl.references(step.spec))
        try:
            check_spec(principal, _dump(pl.render(step.spec, fake)), policy=policy, content_type=YAML,
                       max_bytes=admission.max_bytes, checks=() if named else admission.checks)
        except ClientError as exc:
            errors += [FieldError(f"steps.{name}.{e.field}", e.value, e.message, code=e.code, params=e.params)
                       for e in exc.errors] or [
                FieldError(f"steps.{name}", None, exc.message)]
    if errors:
        raise ClientError(f"the pipeline is refused ({len(errors)} problem(s)); nothing was queued",
                          code="invalid_pipeline", errors=errors)
    if dry_run:
        return None
    row = PipelineModel(id=allocate_id(session, "pipeline"), user_id=principal.id, name=spec.name or "pipeline",
                        spec_raw=body, spec=spec.model_dump(mode="json", by_alias=True, exclude_none=True),
                        state={n: {"status": WAITING, "tries": 0} for n in spec.steps}, status=RUNNING,
                        created_at=utcnow())
    session.add(row)
    session.flush()
    return row


def get_pipeline(session: Session, principal: Principal, pipeline_id: str) -> PipelineModel:
    return owned_row(session, principal, PipelineModel, pipeline_id, "pipeline")


def list_pipelines(session: Session, principal: Principal, *, limit: int = 100) -> list[PipelineModel]:
    return owned_rows(session, principal, PipelineModel, limit=limit)


def cancel_pipeline(session: Session, principal: Principal, pipeline_id: str) -> PipelineModel:
    """Cancel the running step's task and every step not yet settled."""
    row = get_pipeline(session, principal, pipeline_id)
    if row.status != RUNNING:
        raise Conflict(f"pipeline {pipeline_id} already ended ({row.status})", code="pipeline_finished")
    state = {k: dict(v) for k, v in row.state.items()}
    for st in state.values():
        if st["status"] == STARTED and st.get("task_id"):
            task = session.get(TaskModel, st["task_id"])
            if task is not None and TaskStatus(task.status) not in TERMINAL and task.status != "CANCELING":
                cancel_task(session, principal, task.id)
        if st["status"] not in SETTLED:
            st.update(status=CANCELED, message=msg("pipeline.canceled_by", user=principal.name).text)
    row.state, row.status, row.finished_at = state, "CANCELED", utcnow()
    row.message = msg("pipeline.canceled_by", user=principal.name).text
    session.flush()
    return row


# ---------------------------------------------------------------- running


def tick(session: Session, layout: DataLayout, admission: Admission | None, now: datetime) -> int:
    """One look at every running pipeline: settle started steps, start ready ones. Returns steps started."""
    started = 0
    for row in session.scalars(select(PipelineModel).where(PipelineModel.status == RUNNING)).all():
        started += _advance(session, row, layout, admission, now)
    session.flush()
    return started


def _owner(session: Session, row: PipelineModel) -> Principal:
    user = session.get(UserModel, row.user_id)
    assert user is not None
    return Principal(id=user.id, name=user.name, is_admin=False)  # a step is the owner's task, never an admin's


def _advance(session: Session, row: PipelineModel, layout: DataLayout, admission: Admission | None,
             now: datetime) -> int:
    spec = pl.PipelineSpec.model_validate(row.spec)
    state = {k: dict(v) for k, v in row.state.items()}
    owner = _owner(session, row)
    started = 0
    for name, step in spec.steps.items():
        st = state[name]
        if st["status"] == STARTED:
            _settle(session, layout, owner, step, st)
        if st["status"] != WAITING:
            continue
        needs = [state[n]["status"] for n in step.needs]
        if any(s in (FAILED, SKIPPED, CANCELED) for s in needs):
            st.update(status=SKIPPED, message=msg("pipeline.skipped_needs").text)
            continue
        if any(s != DONE for s in needs):
            continue
        if step.when is not None:
            ok, said = step.when.passes(_metric(session, layout, owner, state[step.when.step], step.when.metric))
            if not ok:
                st.update(status=SKIPPED, message=said)
                continue
            st["gate"] = said
        if admission is None:  # no server to admit with (a bare scheduler in tests): wait
            continue
        _start(session, row, layout, admission, owner, name, step, st, {n: state[n].get("artifacts") or {}
                                                                          for n in state})
        started += st["status"] == STARTED
    if all(s["status"] in SETTLED for s in state.values()):
        failed = [n for n, s in state.items() if s["status"] == FAILED]
        row.status = "FAILED" if failed else "SUCCEEDED"
        row.message = (msg("pipeline.step_failed", step=failed[0], message=str(state[failed[0]].get("message"))) if failed
                       else msg("pipeline.every_step_settled")).text
        row.finished_at = now
    row.state = state
    return started


def _start(session: Session, row: PipelineModel, layout: DataLayout, admission: Admission, owner: Principal,
           name: str, step: pl.Step, st: dict[str, Any], artifacts: dict[str, dict[str, Any]]) -> None:
    """Start one step (its task, or a registration, which settles at once); a refusal fails the step."""
    policy = policy_for(session, owner, admission.policy)
    source = artifacts.get(step.source or "", {}).get("task_id")
    try:
        with session.begin_nested():
            if step.spec is not None:
                checked = check_spec(owner, _dump(pl.render(step.spec, artifacts)), policy=policy, content_type=YAML,
                                     max_bytes=admission.max_bytes, checks=admission.checks)
                done: Submitted | None = queue_task(session, owner, checked, policy=policy,
                                                    origin=Origin(pipeline_id=row.id, pipeline_step=name))
            elif step.export is not None:  # a retry may write again into the folder its own earlier try left
                done = resume_svc.export_task(session, owner, source, step=step.export.step, to=step.export.to,
                                              policy=policy, checks=admission.checks, max_bytes=admission.max_bytes,
                                              retry_of=_tries(session, row.id, name))
            elif step.evaluate is not None:
                e = step.evaluate
                done = evaluations.evaluate_task(session, owner, source, step=e.step, val_file=e.val_file,
                                                 reward_path=e.reward_path, reward_name=e.reward_name, policy=policy,
                                                 checks=admission.checks, max_bytes=admission.max_bytes)
            else:
                assert step.register_ is not None
                r = step.register_
                done_ = registry.register(session, owner, r.name, layout=layout, task_id=source, step=r.step)
                if r.alias:  # a team's registry (the source task is charged to a team) needs a team admin
                    model_registries.set_alias(session, owner, done_.model, r.alias, done_.version.version)
                said = msg("pipeline.registered" + ("_as" if r.alias else "") + ("_why" if done_.why else ""),
                           ref=done_.ref, **({"alias": r.alias} if r.alias else {}),
                           **({"why": done_.why} if done_.why else {}))
                st.update(status=DONE, message=said.text, artifacts={"model": done_.ref, "path": done_.version.path})
                return
    except KeyError as exc:  # a {{ steps.X.artifact }} the step X did not leave (no checkpoint, not an export)
        st.update(status=FAILED, message=msg("pipeline.left_no", artifact=str(exc.args[0])).text)
        return
    except (ClientError, Conflict, NotFound, Forbidden) as exc:
        details = "; ".join(f"{e.field}: {e.message}" for e in getattr(exc, "errors", []) or [])
        st.update(status=FAILED, message=msg("pipeline.refused_details" if details else "pipeline.refused",
                                             message=exc.message, **({"details": details} if details else {})).text)
        return
    assert done is not None
    session.execute(update(TaskModel).where(TaskModel.id == done.task.id)
                    .values(pipeline_id=row.id, pipeline_step=name))
    st.update(status=STARTED, task_id=done.task.id, tries=st.get("tries", 0) + 1, message=None)


def _tries(session: Session, pipeline_id: str, name: str) -> list[str]:
    """The tasks of this pipeline step's earlier tries."""
    return list(session.scalars(select(TaskModel.id).where(TaskModel.pipeline_id == pipeline_id,
                                                           TaskModel.pipeline_step == name)))


def _settle(session: Session, layout: DataLayout, owner: Principal, step: pl.Step, st: dict[str, Any]) -> None:
    task = session.get(TaskModel, st["task_id"])
    if task is None:
        st.update(status=FAILED, message=msg("pipeline.task_gone", task=st["task_id"]).text)
        return
    status = TaskStatus(task.status)
    if status not in TERMINAL:
        return
    if status == TaskStatus.SUCCEEDED:
        st.update(status=DONE, artifacts=_artifacts(session, layout, owner, task), message=None)
    elif status == TaskStatus.FAILED and st.get("tries", 1) <= step.retries:
        st.update(status=WAITING, message=msg("pipeline.retrying", tries=st.get("tries", 1),
                                              message=str(task.status_message)).text)
    else:
        said = msg("pipeline.task_ended", task=task.id, status=status.value, message=task.status_message) \
            if task.status_message else msg("pipeline.task_ended_bare", task=task.id, status=status.value)
        st.update(status=FAILED if status == TaskStatus.FAILED else CANCELED, message=said.text)


def _artifacts(session: Session, layout: DataLayout, owner: Principal, task: TaskModel) -> dict[str, Any]:
    out: dict[str, Any] = {"task_id": task.id, "job_dir": f"$HOME/jobs/{task.id}"}
    listing = task_listing(layout, owner.name, task.id, list(task.argv), task.status)
    latest = listing.latest_complete()
    if latest is not None:
        out["checkpoint"] = layout.to_virtual(latest.path, owner.name)
        out["checkpoint_step"] = latest.step
    target = registry.export_target(task)
    if target is not None:  # the task's argv holds it expanded: shown, and rendered, as the owner writes it
        out["hf_path"] = layout.to_virtual(target, owner.name)
    scores = evaluations.task_scores(session, task, layout)
    if scores:
        out["scores"] = scores
    return out


def _metric(session: Session, layout: DataLayout, owner: Principal, st: dict[str, Any], metric: str) -> float | None:
    """A gate's value: the step's evaluation score, else the last value its task logged for ``metric``."""
    art = st.get("artifacts") or {}
    if metric in (art.get("scores") or {}):
        return float(art["scores"][metric])
    task = session.get(TaskModel, art.get("task_id")) if art.get("task_id") else None
    if task is None:
        return None
    points = task_series(layout, user_name_of(session, task), task.id, task.attempts).points.get(metric) or {}
    return points[max(points)] if points else None
