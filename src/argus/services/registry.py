"""A model registry (issue 38): a user's checkpoints and exported models under names, versions and aliases.

* **register**: a complete checkpoint step of one of your tasks (``step``, the latest, or the best-scored by a
  metric), a succeeded export task's Hugging Face folder, or a Hugging Face folder in your home, becomes
  version N+1 of ``name``. What is recorded is what it *was* when registered (``lineage``): the task, its
  resolved spec, its environment and that environment's verl, and the SHA-256 of its data and reward files —
  and the scores of the step's latest successful evaluation. Nothing is copied: the version names the path.
* **aliases** (``name@candidate``, ``name@production``): moved by the owner, each move an audit event and a
  ``MODEL_ALIAS`` notification to the owner's channels (through the version's task).

Files are hashed as the owner's files are read everywhere (``home_io``: no link followed below the home);
files in the shared, admin-written ``datasets/`` and ``hf/`` are read without following a final link.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from argus.core import checkpoints as ck
from argus.core.evaluation import Mode
from argus.core.paths import DataLayout, is_under, normalize
from argus.core.states import TaskStatus
from argus.db.models import ModelAliasModel, ModelVersionModel, TaskModel, utcnow
from argus.errors import ClientError, Conflict, FieldError, NotFound
from argus.home_io import open_in_home
from argus.services import audit, notifications
from argus.services.checkpoints import task_listing
from argus.services.evaluations import evaluations_of, pick_step
from argus.services.principal import Principal
from argus.services.tasks import own_task

NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
ALIAS_RE = re.compile(r"[a-z][a-z0-9_-]{0,31}")
HASH_LIMIT = 8 << 30  # a file over this is recorded by size only: registering must not read for an hour
_CHUNK = 1 << 20
DATA_KEYS = ("data.train_files", "data.val_files", "reward.custom_reward_function.path", "custom_reward_function.path")
EXPORT_MODULE = "verl.model_merger"


def _check_name(name: str) -> None:
    if not NAME_RE.fullmatch(name or ""):
        raise ClientError(f"bad model name {name!r}: 1-64 letters, digits, '.', '_' or '-'", code="bad_name", errors=[FieldError(
            "name", name, "1-64 letters, digits, '.', '_' or '-', starting with a letter or digit, e.g. gsm8k-grpo")])


def register(session: Session, principal: Principal, name: str, *, layout: DataLayout,
             task_id: str | None = None, step: int | None = None, best: str | None = None, mode: Mode = "max",
             path: str | None = None, verl_of: Callable[[str], str | None] = lambda env: None) -> ModelVersionModel:
    """Register the next version of ``name`` from a task (its checkpoint, or an export's folder) or a path."""
    _check_name(name)
    if (task_id is None) == (path is None):
        raise ClientError("give a task or a path", code="bad_source", errors=[FieldError(
            "task_id", task_id, "register either a task's checkpoint (task_id, with step or best) or a Hugging "
            "Face folder in your home (path), not both")])
    user = principal.name
    task: TaskModel | None = None
    scores = None
    if task_id is not None:
        task = own_task(session, principal, task_id, "register")
        target = export_target(task)
        if target is not None:
            if task.status != TaskStatus.SUCCEEDED.value:
                raise Conflict(f"export task {task.id} is {task.status}: register its model once it has succeeded",
                               code="task_active")
            kind, shown, step = "hf", target, None
        else:
            listing = task_listing(layout, user, task.id, list(task.argv), task.status)
            chosen = pick_step(session, listing, task.id, layout, step=step, best=best, mode=mode)
            kind, shown, step = "checkpoint", layout.to_virtual(chosen.path, user), chosen.step
            done = [e for e in evaluations_of(session, task.id, layout) if e.step == chosen.step and e.scores]
            scores = done[-1].scores if done else None
    else:
        assert path is not None
        kind, shown = "hf", _hf_folder(layout, user, path)
    lineage = _lineage(layout, user, task, verl_of)
    latest = session.scalar(select(func.max(ModelVersionModel.version)).where(
        ModelVersionModel.user_id == principal.id, ModelVersionModel.name == name)) or 0
    row = ModelVersionModel(user_id=principal.id, name=name, version=latest + 1, kind=kind, path=shown,
                            source_task=task.id if task else None, step=step, lineage=lineage, scores=scores,
                            created_at=utcnow())
    session.add(row)
    session.flush()
    audit.record(session, actor=user, action=audit.MODEL_REGISTERED, target=f"{name}:{row.version}",
                 detail={"path": shown, "task": row.source_task, "step": step})
    return row


def export_target(task: TaskModel) -> str | None:
    """The ``--target_dir`` of a ``verl.model_merger`` export task (as its spec wrote it), else None."""
    words = ck.command_words(list(task.argv))
    if EXPORT_MODULE not in words:
        return None
    return next((words[i + 1] for i, w in enumerate(words[:-1]) if w == "--target_dir"), None)


def _hf_folder(layout: DataLayout, user: str, path: str) -> str:
    """``path`` as written, checked: a folder with a ``config.json`` in the user's home, reached without links."""
    home = Path(str(layout.home(user)))
    real = normalize(layout.expand(path.strip(), user))
    if not is_under(real, PurePosixPath(str(home))) or str(real) == str(home):
        raise ClientError(f"bad model path {path!r}: give a Hugging Face folder in your home", code="bad_path", errors=[FieldError(
            "path", path, "a Hugging Face folder in your home, e.g. $HOME/models/tiny-grpo")])
    try:
        fd = open_in_home(home, (*PurePosixPath(str(real)).relative_to(str(home)).parts, "config.json"), os.O_RDONLY)
        os.close(fd)
    except OSError:
        raise ClientError(f"{path!r} is not a Hugging Face folder (no config.json reached without links)",
                          code="bad_path", errors=[FieldError(
            "path", path, "must be a folder holding config.json (e.g. what `argus export` wrote), reached without "
            "links")]) from None
    return layout.to_virtual(str(real), user)


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
    try:
        if is_under(PurePosixPath(real), PurePosixPath(str(home))):
            fd = open_in_home(home, PurePosixPath(real).relative_to(str(home)).parts, os.O_RDONLY)
        elif any(is_under(PurePosixPath(real), root / shared) for shared in ("datasets", "hf")):
            fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW)
        else:
            return {"path": shown, "error": "outside your home and the shared folders: not read"}
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


# ---------------------------------------------------------------- reads and aliases


def versions(session: Session, principal: Principal, name: str) -> list[ModelVersionModel]:
    rows = list(session.scalars(select(ModelVersionModel).where(
        ModelVersionModel.user_id == principal.id, ModelVersionModel.name == name).order_by(ModelVersionModel.version)))
    if not rows:
        raise NotFound(f"no model {name!r}", code="model_not_found")
    return rows


def aliases(session: Session, user_id: int, name: str | None = None) -> list[ModelAliasModel]:
    query = select(ModelAliasModel).where(ModelAliasModel.user_id == user_id)
    if name is not None:
        query = query.where(ModelAliasModel.name == name)
    return list(session.scalars(query.order_by(ModelAliasModel.name, ModelAliasModel.alias)))


def names(session: Session, principal: Principal) -> list[tuple[str, int, int]]:
    """(name, versions, latest version) of each of the principal's models."""
    rows = session.execute(select(ModelVersionModel.name, func.count(), func.max(ModelVersionModel.version))
                           .where(ModelVersionModel.user_id == principal.id)
                           .group_by(ModelVersionModel.name).order_by(ModelVersionModel.name)).all()
    return [(r[0], r[1], r[2]) for r in rows]


def resolve(session: Session, principal: Principal, ref: str) -> ModelVersionModel:
    """``name`` (its latest version), ``name:3`` or ``name@production``."""
    name, at, alias = ref.partition("@")
    name, colon, number = name.partition(":")
    rows = versions(session, principal, name)
    if at:
        found = next((a for a in aliases(session, principal.id, name) if a.alias == alias), None)
        if found is None:
            raise NotFound(f"model {name!r} has no alias {alias!r}", code="alias_not_found")
        number = str(found.version)
    if colon or at:
        row = next((r for r in rows if str(r.version) == number), None)
        if row is None:
            raise NotFound(f"model {name!r} has no version {number}", code="version_not_found")
        return row
    return rows[-1]


def set_alias(session: Session, principal: Principal, name: str, alias: str, version: int) -> ModelAliasModel:
    """Point ``name@alias`` at ``version``: audited, and the owner's channels hear MODEL_ALIAS."""
    if not ALIAS_RE.fullmatch(alias or ""):
        raise ClientError(f"bad alias {alias!r}: 1-32 lower-case letters, digits, '_' or '-', starting with a letter",
                          code="bad_alias", errors=[FieldError(
            "alias", alias, "1-32 lower-case letters, digits, '_' or '-', starting with a letter, e.g. production")])
    row = next((r for r in versions(session, principal, name) if r.version == version), None)
    if row is None:
        raise ClientError(f"model {name!r} has no version {version}", code="version_not_found",
                          errors=[FieldError("version", version, f"one of {name}'s versions (argus model show {name})")])
    found = next((a for a in aliases(session, principal.id, name) if a.alias == alias), None)
    before = found.version if found else None
    if found is None:
        found = ModelAliasModel(user_id=principal.id, name=name, alias=alias, version=version, updated_at=utcnow())
        session.add(found)
    else:
        found.version, found.updated_at = version, utcnow()
    session.flush()
    said = f"model {name}@{alias} → version {version}" + (f" (was {before})" if before else "") + f": {row.path}"
    audit.record(session, actor=principal.name, action=audit.MODEL_ALIAS_MOVED, target=f"{name}@{alias}",
                 detail={"from": before, "to": version, "path": row.path})
    task = session.get(TaskModel, row.source_task) if row.source_task else None
    if task is not None:
        notifications.enqueue(session, task, notifications.MODEL_ALIAS, said)
    return found
