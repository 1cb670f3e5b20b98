"""Resume a task from its checkpoint, and export a checkpoint to a Hugging Face folder, as new tasks.

Both build an ordinary spec and go through ``submit_task`` (admission, verl validation, queue,
fair share) — nothing here talks to Ray or bypasses a check:

* **resume**: the old task's spec as submitted, plus verl's ``trainer.resume_mode=resume_path``
  and ``trainer.resume_from_path=$HOME/…/global_step_N`` (a basic spec's ``overrides``; an advanced
  spec's command gets them appended). The new task records ``resumed_from``; its own checkpoints
  go to its own job folder, and verl continues the step count from N.
* **export**: a CPU task (``n_gpus_per_node: 0``) running verl's own
  ``python3 -m verl.model_merger merge --backend fsdp|megatron --local_dir <step>/actor
  --target_dir $HOME/models/<name>``, with its own logs and status.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Collection
from pathlib import Path, PurePosixPath

import yaml
from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from argus.core import checkpoints as ck
from argus.core.admission import AdmissionPolicy, SpecCheck
from argus.core.evaluation import Mode
from argus.core.messages import msg
from argus.core.paths import is_under, normalize
from argus.core.states import TERMINAL, TaskStatus
from argus.db.models import TaskEventModel, TaskModel, utcnow
from argus.errors import ClientError, Conflict, FieldError
from argus.services import model_registries, registry
from argus.services.checkpoints import Listing, Step, task_listing
from argus.services.evaluations import pick_step
from argus.services.home_files import open_in_home
from argus.services.principal import Principal
from argus.services.tasks import Origin, Submitted, get_task, own_task, stored_spec, submit_task, user_name_of

_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def checkpoints_of(session: Session, principal: Principal, task_id: str,
                   policy: AdmissionPolicy) -> tuple[Listing, str]:
    """The task's checkpoint listing and its owner's name (paths are shown as the owner writes them)."""
    task = get_task(session, principal, task_id, team_read=True)
    owner = user_name_of(session, task)
    return task_listing(policy.layout, owner, task.id, list(task.argv), task.status), owner


def resume_task(session: Session, principal: Principal, task_id: str, *, step: int | None,
                policy: AdmissionPolicy, checks: tuple[SpecCheck, ...] = (), max_bytes: int = 256 * 1024,
                best: str | None = None, mode: Mode = "max") -> Submitted:
    """Submit a new task with the old one's spec resuming from ``step`` (default: its latest complete one;
    with ``best``, the step whose evaluation scored best on that metric)."""
    old = own_task(session, principal, task_id, "resume")
    if TaskStatus(old.status) not in TERMINAL:
        raise Conflict(f"task {task_id} is {old.status}: resume it once it has ended (cancel it first to "
                       "continue now)", code="task_active")
    listing = task_listing(policy.layout, principal.name, old.id, list(old.argv), old.status)
    chosen = pick_step(session, listing, old.id, policy.layout, step=step, best=best, mode=mode)
    doc = stored_spec(old)
    shown = policy.layout.to_virtual(chosen.path, principal.name)
    body = yaml.safe_dump(ck.resume_spec(doc, shown), sort_keys=False, allow_unicode=True)
    done = submit_task(session, principal, body, policy=policy, content_type="application/yaml",
                       max_bytes=max_bytes, checks=checks, origin=Origin(resumed_from=old.id))
    said = msg("status.resumes", task=old.id, checkpoint=f"{ck.STEP_PREFIX}{chosen.step}", path=shown)
    session.add(TaskEventModel(task_id=done.task.id, at=utcnow(), from_status=TaskStatus.QUEUED.value,
                               to_status=TaskStatus.QUEUED.value, reason=None, actor=principal.name,
                               message=said.text, message_code=said.code, message_params=said.params))
    session.flush()
    done.info = {**done.info, "resumed_from": old.id, "step": chosen.step}
    return done


def resumed_by(session: Session, task_id: str) -> list[str]:
    """Tasks that resume this one, oldest first."""
    return list(session.scalars(select(TaskModel.id).where(TaskModel.resumed_from == task_id)
                                .order_by(TaskModel.created_at, TaskModel.id)))


def export_target(policy: AdmissionPolicy, user: str, task_id: str, step: int, to: str | None) -> str:
    """``$HOME/models/<name>`` as the user writes it: ``to`` may be a bare name, ``$HOME/…`` or ``~/…`` — or a
    path in the folder of one of their teams (``$HOME/teams/<team>/…``, ``policy.layout.teams``: ``policy_for``),
    where every member can read the model (a team's registry shares it from there). The export task's sandbox
    shows the owner's team folders read-write, as any of their tasks."""
    if to is None or not to.strip():
        return f"$HOME/models/{task_id}-step{step}"
    to = to.strip()
    if _NAME_RE.fullmatch(to):
        return f"$HOME/models/{to}"
    layout = policy.layout
    real = normalize(layout.expand(to, user))
    team = layout.team_of(real)
    area = layout.team_dir(team) if team and team in layout.teams else PurePosixPath(str(layout.home(user)))
    if not to.startswith(("$HOME/", "~/")) or not is_under(real, area) or real == area:
        raise ClientError("bad export target", code="bad_target", errors=[FieldError(
            "to", to, "give a name (exported to $HOME/models/<name>) or a path in your home such as "
            "$HOME/models/my-model, or in a team's folder you are in: $HOME/teams/<team>/models/my-model")])
    return layout.to_virtual(str(real), user)


def _rewritable(session: Session, principal: Principal, policy: AdmissionPolicy, target: str, real: Path,
                retry_of: Collection[str]) -> None:
    """Raise Conflict ``exists`` unless the existing ``target`` is the folder an earlier try of the same pipeline
    step was exporting to: a real folder (no link), that try ended after it ran (a try never started wrote
    nothing; one still running may still write), and no other export of the owner that was live since the
    first such try names it, nor a registered model version. A folder made before the pipeline fails the
    step's first try, so it never gets here with a try of its own."""
    layout, user = policy.layout, principal.name

    def same(path: str | None) -> bool:
        return path is not None and normalize(layout.expand(path, user)) == normalize(str(real))

    tries = [t for t in (session.get(TaskModel, i) for i in retry_of)
             if t is not None and t.user_id == principal.id and same(registry.export_target(t))]
    why = None
    if not tries:
        why = "already exists"
    elif real.is_symlink() or not real.is_dir():
        why = "exists and is not a folder (a link or a file): an earlier try of this step cannot have made it"
    elif running := [t.id for t in tries if TaskStatus(t.status) not in TERMINAL]:
        why = f"is still being written by task {running[0]} (an earlier try of this step)"
    elif not any(t.attempts for t in tries):
        why = "already exists, and the earlier try of this step never ran, so it did not make it"
    else:
        first = min(t.created_at for t in tries)
        ids = [t.id for t in tries]
        others = session.scalars(select(TaskModel).where(
            TaskModel.user_id == principal.id, TaskModel.id.not_in(ids),
            or_(TaskModel.finished_at.is_(None), TaskModel.finished_at >= first)))
        if other := next((o.id for o in others if same(registry.export_target(o))), None):
            why = f"already exists and task {other} also exports to it"
        elif version := next((ref for ref, path in model_registries.paths_registered(session, principal)
                              if same(path)), None):
            why = f"already exists and is registered as {version}"
    if why is not None:
        raise Conflict(f"{target} {why}: choose another --to or remove it", code="exists")


def _backend(home: Path, folder: str) -> str:
    """megatron when the checkpoint holds verl's Megatron ``dist_ckpt/`` folder, else fsdp."""
    try:
        rel = tuple(PurePosixPath(folder, "dist_ckpt").relative_to(home).parts)
        import os

        os.close(open_in_home(home, rel, os.O_RDONLY | os.O_DIRECTORY))
        return "megatron"
    except (OSError, ValueError):
        return "fsdp"


def export_task(session: Session, principal: Principal, task_id: str, *, step: int | None, to: str | None,
                policy: AdmissionPolicy, checks: tuple[SpecCheck, ...] = (), max_bytes: int = 256 * 1024,
                best: str | None = None, mode: Mode = "max", retry_of: Collection[str] = ()) -> Submitted:
    """Queue a CPU task that merges a complete checkpoint (``step``, the latest, or the best by ``best``)
    into a Hugging Face folder with verl.model_merger.

    A target that exists is refused, except the folder an earlier try of the same pipeline step left
    (``retry_of``: those tries' task ids; see :func:`_rewritable`): verl's merger writes into it again."""
    old = own_task(session, principal, task_id, "export")
    listing = task_listing(policy.layout, principal.name, old.id, list(old.argv), old.status)
    chosen: Step = pick_step(session, listing, old.id, policy.layout, step=step, best=best, mode=mode)
    user = principal.name
    target = export_target(policy, user, old.id, chosen.step, to)
    real_target = Path(policy.layout.expand(target, user))
    if real_target.exists() or real_target.is_symlink():
        _rewritable(session, principal, policy, target, real_target, retry_of)
    has_actor = any(c.name == "actor" for c in chosen.components)
    source = f"{chosen.path}/actor" if has_actor else chosen.path  # PPO: actor/; SFT: the step folder itself
    home = Path(str(policy.layout.home(user)))
    backend = _backend(home, source)
    source_shown = policy.layout.to_virtual(source, user)
    command = shlex.join(["python3", "-m", "verl.model_merger", "merge", "--backend", backend,
                          "--local_dir", source_shown, "--target_dir", target])
    spec = {"kind": "advanced", "workload": "job", "name": f"export {old.id} step {chosen.step}",
            "nnodes": 1, "n_gpus_per_node": 0, "command": command}
    body = yaml.safe_dump(spec, sort_keys=False, allow_unicode=True)
    done = submit_task(session, principal, body, policy=policy, content_type="application/yaml",
                       max_bytes=max_bytes, checks=checks)
    said = msg("status.exports", task=old.id, checkpoint=f"{ck.STEP_PREFIX}{chosen.step}", backend=backend,
               target=target)
    session.add(TaskEventModel(task_id=done.task.id, at=utcnow(), from_status=TaskStatus.QUEUED.value,
                               to_status=TaskStatus.QUEUED.value, reason=None, actor=principal.name,
                               message=said.text, message_code=said.code, message_params=said.params))
    session.flush()
    done.info = {**done.info, "source_task": old.id, "step": chosen.step, "target": target, "backend": backend}
    return done
