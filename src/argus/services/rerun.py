"""Re-run a task in another training environment (issue 35): its spec as submitted, with ``env:`` set and the
command moved to the keys that environment's verl reads.

A script written for verl 0.4 that ran (or was accepted) in ``verl-0.4.1-cpu`` can be re-run under verl 0.9.1,
and the other way round. The spec is edited as text, so the user's own layout and comments stay and the diff
shows only what changed: the ``env:`` line, then each one-click fix the target environment's admission offers
(the rename table, a spelling slip, a registry value: ``FieldError.fix``), applied until none is left (a fix
may uncover another). What no fix covers stays a problem of the preview, and the submit is refused with it,
as any submit is. ``preview`` (dry run) stores nothing; ``rerun`` queues the new task through ``submit_task``.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field

from sqlalchemy.orm import Session

from argus.core.admission import AdmissionPolicy, SpecCheck
from argus.core.messages import msg
from argus.core.states import TaskStatus
from argus.core.taskspec import load_spec_document
from argus.db.models import TaskEventModel, TaskModel, utcnow
from argus.errors import ClientError, Conflict, FieldError, NotFound
from argus.services.principal import Principal
from argus.services.tasks import Submitted, check_spec, get_task, submit_task

ROUNDS = 4  # a fix may uncover another problem with a fix of its own; never more than this many passes
_ENV_LINE = re.compile(r"^env:[^\n]*$", re.M)


@dataclass
class Rerun:
    """The spec a re-run would submit, and how it differs from the old one."""

    spec: str
    diff: str
    edits: list[dict[str, str]] = field(default_factory=list)  # {field, replace, with}, in the order applied
    problems: list[FieldError] = field(default_factory=list)  # what no fix covers: the submit is refused with these
    warnings: list[str] = field(default_factory=list)


def _own(session: Session, principal: Principal, task_id: str) -> TaskModel:
    task = get_task(session, principal, task_id)
    if task.user_id != principal.id:  # an admin sees it, but the new task would be the admin's, in the admin's home
        raise NotFound(f"no task {task_id!r} of yours to re-run", code="task_not_found")
    return task


def _is_json(text: str) -> bool:
    return text.lstrip().startswith("{")


def with_env(raw: str, env: str) -> str:
    """``raw`` naming ``env``: the ``env:`` line replaced (or added first) in YAML, the key set in JSON."""
    if _is_json(raw):
        doc = json.loads(raw)
        doc["env"] = env
        return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    line = f"env: {json.dumps(env)}" if not re.fullmatch(r"[\w.~/-]+", env) else f"env: {env}"
    return _ENV_LINE.sub(line, raw, count=1) if _ENV_LINE.search(raw) else f"{line}\n{raw}"


def apply_fix(text: str, fix: dict[str, str]) -> str | None:
    """``text`` with one fix applied as the New Task page applies it (a line it empties goes); None when the
    text it replaces is not there as typed."""
    old, new = fix.get("replace", ""), fix.get("with", "")
    if not old or old not in text:
        return None
    out = text.replace(old, new, 1)
    if not new:
        out = "\n".join(line for line in out.split("\n") if line.strip(" \\") or not line.strip())
    return out


def plan(principal: Principal, old_spec: str, env: str, *, policy: AdmissionPolicy, checks: tuple[SpecCheck, ...],
         max_bytes: int) -> Rerun:
    """The re-run's spec: ``env`` set, then the target environment's one-click fixes applied."""
    if not isinstance(load_spec_document(old_spec, None), dict):
        raise Conflict("this task's spec can no longer be read", code="spec_unreadable")
    text = with_env(old_spec, env)
    content_type = "application/json" if _is_json(text) else "application/yaml"
    edits: list[dict[str, str]] = []
    problems: list[FieldError] = []
    warnings: list[str] = []
    for _ in range(ROUNDS):
        try:
            warnings = check_spec(principal, text, policy=policy, content_type=content_type, max_bytes=max_bytes,
                                  checks=checks).warnings
            problems = []
            break
        except ClientError as exc:
            problems, warnings = list(exc.errors), list(getattr(exc, "warnings", []) or [])
        applied = False
        for problem in problems:
            fixed = apply_fix(text, problem.fix) if problem.fix else None
            if fixed is not None:
                text, applied = fixed, True
                edits.append({"field": problem.field, "replace": problem.fix["replace"], "with": problem.fix["with"]})
        if not applied:
            break
    diff = "".join(difflib.unified_diff(old_spec.splitlines(keepends=True), text.splitlines(keepends=True),
                                        "as submitted", f"re-run in {env}"))
    return Rerun(spec=text, diff=diff, edits=edits, problems=problems, warnings=warnings)


def preview(session: Session, principal: Principal, task_id: str, env: str, *, policy: AdmissionPolicy,
            checks: tuple[SpecCheck, ...], max_bytes: int) -> Rerun:
    """What ``rerun`` would submit (a dry run: nothing is stored)."""
    old = _own(session, principal, task_id)
    return plan(principal, old.spec_raw, env, policy=policy, checks=checks, max_bytes=max_bytes)


def rerun(session: Session, principal: Principal, task_id: str, env: str, *, policy: AdmissionPolicy,
          checks: tuple[SpecCheck, ...], max_bytes: int) -> tuple[Submitted, Rerun]:
    """Queue the re-run (refused, with every problem, as any submit, when fixes do not cover them)."""
    old = _own(session, principal, task_id)
    planned = plan(principal, old.spec_raw, env, policy=policy, checks=checks, max_bytes=max_bytes)
    done = submit_task(session, principal, planned.spec, policy=policy,
                       content_type="application/json" if _is_json(planned.spec) else "application/yaml",
                       max_bytes=max_bytes, checks=checks)
    said = msg("status.rerun_of_moved", task=old.id, env=env, moved=len(planned.edits)) if planned.edits else \
        msg("status.rerun_of", task=old.id, env=env)
    session.add(TaskEventModel(task_id=done.task.id, at=utcnow(), from_status=TaskStatus.QUEUED.value,
                               to_status=TaskStatus.QUEUED.value, reason=None, actor=principal.name,
                               message=said.text, message_code=said.code, message_params=said.params))
    session.flush()
    done.info = {**done.info, "rerun_of": old.id, "env": env, "edits": planned.edits}
    return done, planned
