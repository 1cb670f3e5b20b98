"""Registering model versions (issue 38): a user's checkpoints and exported models under names, versions and
aliases, in their own registry or their team's (``services/model_registries.py``: reads, aliases, who may).

* **register**: a complete checkpoint step of one of your tasks (``step``, the latest, or the best-scored by a
  metric), a succeeded export task's Hugging Face folder, or a Hugging Face folder in your home or in one of
  your teams' folders, becomes version N+1 of ``name`` in its registry. What is recorded is what it *was* when
  registered (``lineage``): the task, its resolved spec, its environment and that environment's verl, and the
  SHA-256 of its data and reward files — and the scores of the step's latest successful evaluation. Nothing is
  copied: the version names the path.
* **which registry** (``core.model_refs.choose_registry``): a folder in ``$HOME/teams/<team>/`` is that team's;
  a task charged to a team makes its versions the team's; else ``team`` when given (one of yours), else your
  own. A team version whose files are in the registrant's home is accepted, and its view says teammates cannot
  read it (``shared: false``) and how to share it: export or move it into the team's folder and register that.

Files are hashed as the owner's files are read everywhere (``home_io``: no link followed below the home or the
team's folder); files in the shared, admin-written ``datasets/`` and ``hf/`` are read without following a final
link.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from argus.core import checkpoints as ck
from argus.core import model_refs as refs
from argus.core.evaluation import Mode
from argus.core.pathrules import team_refusal
from argus.core.paths import DataLayout, is_under, normalize
from argus.core.states import TaskStatus
from argus.db.models import ModelVersionModel, TaskModel, utcnow
from argus.errors import ClientError, Conflict, FieldError, Forbidden
from argus.home_io import open_in_home
from argus.services import audit, teams
from argus.services.checkpoints import task_listing
from argus.services.evaluations import evaluations_of, pick_step
from argus.services.model_registries import Registry, writable
from argus.services.principal import Principal
from argus.services.tasks import own_task

HASH_LIMIT = 8 << 30  # a file over this is recorded by size only: registering must not read for an hour
_CHUNK = 1 << 20
DATA_KEYS = ("data.train_files", "data.val_files", "reward.custom_reward_function.path", "custom_reward_function.path")
EXPORT_MODULE = "verl.model_merger"


@dataclass(frozen=True)
class Registered:
    """A new version, and why it went to a team's registry (``why`` None: asked for, or the registrant's own)."""

    version: ModelVersionModel
    team: str | None
    why: str | None

    @property
    def model(self) -> str:
        """``name`` or ``team/name``: what its aliases are moved on."""
        return refs.shown(self.team, self.version.name)

    @property
    def ref(self) -> str:
        """``name:N`` or ``team/name:N``."""
        return refs.shown(self.team, self.version.name, self.version.version)


def register(session: Session, principal: Principal, name: str, *, layout: DataLayout,
             task_id: str | None = None, step: int | None = None, best: str | None = None, mode: Mode = "max",
             path: str | None = None, team: str | None = None,
             verl_of: Callable[[str], str | None] = lambda env: None) -> Registered:
    """Register the next version of ``name`` from a task (its checkpoint, or an export's folder) or a path, in the
    registry its files, its task or ``team`` choose (module docstring)."""
    refs.check_name(name)
    if team is not None:
        writable(session, principal, refs.check_team(team))  # a team not yours is refused before any file is read
    if (task_id is None) == (path is None):
        raise ClientError("give a task or a path", code="bad_source", errors=[FieldError(
            "task_id", task_id, "register either a task's checkpoint (task_id, with step or best) or a Hugging "
            "Face folder in your home or a team's folder (path), not both")])
    user = principal.name
    mine = [t for t, _, _ in teams.teams_of(session, principal.id)]
    task: TaskModel | None = None
    scores = None
    if task_id is not None:
        task = own_task(session, principal, task_id, "register")
        target = export_target(task)
        if target is not None:
            if task.status != TaskStatus.SUCCEEDED.value:
                raise Conflict(f"export task {task.id} is {task.status}: register its model once it has succeeded",
                               code="task_active")
            kind, shown, step = "hf", layout.to_virtual(target, user), None  # argv holds it expanded
            real = normalize(layout.expand(target, user))
        else:
            listing = task_listing(layout, user, task.id, list(task.argv), task.status)
            chosen = pick_step(session, listing, task.id, layout, step=step, best=best, mode=mode)
            kind, shown, step = "checkpoint", layout.to_virtual(chosen.path, user), chosen.step
            real = normalize(chosen.path)
            done = [e for e in evaluations_of(session, task.id, layout) if e.step == chosen.step and e.scores]
            scores = done[-1].scores if done else None
    else:
        assert path is not None
        kind, shown, real = "hf", *_hf_folder(layout.with_teams(mine), user, path)
    choice = refs.choose_registry(requested=team, task_id=task.id if task else None,
                                  task_team=task.team if task else None, folder_team=layout.team_of(real) or None)
    reg = _registry_for(session, principal, choice, requested=team)
    lineage = _lineage(layout.with_teams(mine), user, task, verl_of)
    row = ModelVersionModel(user_id=principal.id, team_id=reg.team_id, name=name, kind=kind, path=shown,
                            source_task=task.id if task else None, step=step, lineage=lineage, scores=scores,
                            created_at=utcnow())
    _insert_next(session, principal, reg, row)
    done_ = Registered(row, reg.team, choice.why)
    audit.record(session, actor=user, action=audit.MODEL_REGISTERED, target=done_.ref,
                 detail={"team": reg.team, "path": shown, "task": row.source_task, "step": step})
    return done_


def _insert_next(session: Session, principal: Principal, reg: Registry, row: ModelVersionModel) -> None:
    """Insert ``row`` as the next version of its name in ``reg``: numbered in the INSERT itself, one at a time.

    Reading the latest version and inserting the next in two statements let two registrations of one name
    (two requests, two servers) read the same N and both insert N+1: the second met the unique index and
    got a 500. Instead the number is the INSERT's own subquery — on SQLite one statement under the one write
    lock, so it sees every committed version — and on PostgreSQL, where two INSERTs still read the same
    snapshot-time max, a transaction-scoped advisory lock on (registry, name) makes the next one wait for
    this one's commit (its wait is bounded by ``lock_timeout``: a 503 "database busy", as for any lock).
    Serialising beats retrying here: every racer succeeds, in order, where a bounded retry makes the N-th
    of N concurrent registrations try N times.

    A clash that still happens (a server without this, a row written by hand) is a 409 naming the name and
    saying to retry, never a 500."""
    if session.get_bind().dialect.name == "postgresql":
        space = reg.team_id if reg.team_id is not None else -principal.id  # a team's, or a user's own
        session.execute(select(func.pg_advisory_xact_lock(space, func.hashtext(row.name))))
    row.version = (select(func.coalesce(func.max(ModelVersionModel.version), 0) + 1)  # type: ignore[assignment]
                   .where(*reg.versions(principal), ModelVersionModel.name == row.name).scalar_subquery())
    session.add(row)
    try:
        session.flush()
    except IntegrityError as exc:
        raise Conflict(f"could not number the new version of {refs.shown(reg.team, row.name)!r}: a concurrent "
                       "registration (or change to its registry) got in first; retry", code="version_conflict") from exc


def _registry_for(session: Session, principal: Principal, choice: refs.Choice, *, requested: str | None) -> Registry:
    """The registry ``choice`` names, for a member of it. A team the registrant asked for and is not in: "no team"
    (as everywhere). A team their task (or export folder) chose and they have left since: Forbidden, saying why
    — they know that team, and the version cannot go to their own registry instead."""
    if choice.team is None:
        return Registry()
    if requested is None and teams.role_in(session, principal.id, choice.team) is None:
        raise Forbidden(f"{choice.why}, so its versions belong to team {choice.team}'s registry, and you are no "
                        f"longer in team {choice.team}: ask an admin of {choice.team} to add you back, or export it "
                        "into your home (argus export) and register that folder as your own", code="not_in_team")
    return writable(session, principal, choice.team)


def export_target(task: TaskModel) -> str | None:
    """The ``--target_dir`` of a ``verl.model_merger`` export task (as its spec wrote it), else None."""
    words = ck.command_words(list(task.argv))
    if EXPORT_MODULE not in words:
        return None
    return next((words[i + 1] for i, w in enumerate(words[:-1]) if w == "--target_dir"), None)


def _hf_folder(layout: DataLayout, user: str, path: str) -> tuple[str, PurePosixPath]:
    """``path`` checked, as shown and as a real path: a folder with a ``config.json`` in the user's home or in
    the folder of one of their teams (``layout.teams``), reached without links."""
    home = PurePosixPath(str(layout.home(user)))
    real = normalize(layout.expand(path.strip(), user))
    team = layout.team_of(real)
    fix = "a Hugging Face folder in your home or your team's folder, e.g. $HOME/models/tiny-grpo or " \
          "$HOME/teams/<team>/models/tiny-grpo"
    if team is not None and (refused := team_refusal(real, layout)) is not None:
        raise ClientError(f"bad model path {path!r}", code="bad_path", errors=[FieldError("path", path, refused)])
    anchor = layout.team_dir(team) if team else home
    if not is_under(real, anchor) or real == anchor:
        raise ClientError(f"bad model path {path!r}: give a Hugging Face folder in your home or your team's folder",
                          code="bad_path", errors=[FieldError("path", path, fix)])
    if team is None and is_under(real, home / "teams"):  # `~/teams/x` is a folder in the home, not a team's
        raise ClientError(f"bad model path {path!r}", code="bad_path", errors=[FieldError(
            "path", path, "for a team's folder write $HOME/teams/<team>/… (your home's own teams/ is not it)")])
    try:
        fd = open_in_home(Path(str(anchor)), (*real.relative_to(anchor).parts, "config.json"), os.O_RDONLY)
        os.close(fd)
    except OSError:
        raise ClientError(f"{path!r} is not a Hugging Face folder (no config.json reached without links)",
                          code="bad_path", errors=[FieldError(
            "path", path, "must be a folder holding config.json (e.g. what `argus export` wrote), reached without "
            "links")]) from None
    return layout.to_virtual(str(real), user), real


def _lineage(layout: DataLayout, user: str, task: TaskModel | None,
             verl_of: Callable[[str], str | None]) -> dict[str, Any]:
    if task is None:
        return {}
    resolved = dict(task.spec_resolved or {})
    env = resolved.get("env")
    files = []
    for real in _data_files(task, resolved):
        files.append(_hash(layout, user, real))
    return {"task": task.id, "task_name": task.name, "workload": task.workload, "status": task.status,
            "spec": resolved, "env": env, "verl": verl_of(env) if env else None, "files": files}


def _data_files(task: TaskModel, resolved: dict[str, Any]) -> list[str]:
    """The data and reward files a task read (real paths): a basic spec's fields, a command's Hydra keys."""
    out: list[str] = []
    for key in ("train_file", "val_file", "reward_path"):
        if isinstance(resolved.get(key), str):
            out.append(resolved[key])
    words = ck.command_words(list(task.argv))
    for key in DATA_KEYS:
        value = ck.last_value(words, key)
        if value:
            out += [v.strip().strip("'\"") for v in value.strip("[]").split(",") if v.strip()]
    return list(dict.fromkeys(p for p in out if p.startswith("/")))


def _hash(layout: DataLayout, user: str, real: str) -> dict[str, Any]:
    shown = layout.to_virtual(real, user)
    home = Path(str(layout.home(user)))
    root = PurePosixPath(str(layout.root))
    team = layout.team_of(PurePosixPath(real))
    try:
        if is_under(PurePosixPath(real), PurePosixPath(str(home))):
            fd = open_in_home(home, PurePosixPath(real).relative_to(str(home)).parts, os.O_RDONLY)
        elif team and team in layout.teams and real != str(layout.team_dir(team)):
            anchor = layout.team_dir(team)
            fd = open_in_home(Path(str(anchor)), PurePosixPath(real).relative_to(anchor).parts, os.O_RDONLY)
        elif any(is_under(PurePosixPath(real), root / shared) for shared in ("datasets", "hf")):
            fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW)
        else:
            return {"path": shown, "error": "outside your home, your teams' and the shared folders: not read"}
    except OSError as exc:
        return {"path": shown, "error": exc.strerror or type(exc).__name__}
    with os.fdopen(fd, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size > HASH_LIMIT:
            return {"path": shown, "bytes": size, "error": f"over {HASH_LIMIT >> 30} GiB: size only"}
        digest = hashlib.sha256()
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return {"path": shown, "bytes": size, "sha256": digest.hexdigest()}
