"""/api/v2/envs: the training environments a user's tasks can name (``env:``), and an admin's registry.

* ``GET`` — every cluster environment and the caller's own (``~/envs/<name>``): what each holds
  (verl, torch, Ray, rollout engines, kernels), whether its last check passed, and which one a
  spec without ``env:`` gets;
* ``POST`` (admin) — register an environment built elsewhere (a venv or an unpacked image's
  prefix): Argus runs its interpreter first (real imports of verl, torch, Ray) and refuses it
  with the reasons when that fails;
* ``DELETE /{name}`` (admin) — refused while a task that is not over still needs it.

Building from a lock is ``argus env build`` on a machine with the shared filesystem: it takes
minutes and downloads gigabytes, which is no HTTP request's job.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from fastapi import APIRouter, Depends
from pydantic import BaseModel, Field
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from argus.api.context import AppContext
from argus.api.deps import current_principal, get_ctx, get_session, require_admin
from argus.envs.registry import EnvError, Registry, python_of
from argus.errors import ClientError, Conflict, FieldError, NotFound
from argus.services.environments import shown_to, tasks_using
from argus.services.principal import Principal

router = APIRouter(prefix="/api/v2/envs", tags=["environments"])


class RegisterBody(BaseModel):
    name: str = Field(min_length=1, max_length=64, description="the name specs use in env:")
    python: str | None = Field(default=None, description="the environment's interpreter (absolute path)")
    prefix: str | None = Field(default=None, description="or its prefix (a venv, an unpacked image): bin/python3")
    description: str = Field(default="", max_length=500)


def registry(ctx: AppContext) -> Registry:
    found = ctx.extras.get("env_registry")
    return found if found is not None else ctx.extras.setdefault("env_registry", Registry.for_settings(ctx.settings))


@router.get("", summary="the training environments your tasks can name in env:")
async def list_envs(principal: Principal = Depends(current_principal), ctx: AppContext = Depends(get_ctx)) -> dict:
    reg = registry(ctx)
    envs = await run_in_threadpool(reg.visible, principal.name)
    return {"default": reg.default, "environments": [shown_to(e, principal, ctx.settings) for e in envs]}


@router.post("", status_code=201, summary="register an environment built elsewhere (admin); it is checked first")
async def register_env(body: RegisterBody, _admin: Principal = Depends(require_admin),
                       ctx: AppContext = Depends(get_ctx)) -> dict:
    if (body.python is None) == (body.prefix is None):
        raise ClientError("give python or prefix", errors=[FieldError("python", body.python, "give exactly one of "
                                                                      "python (the interpreter) and prefix (its venv)")])
    try:
        python = body.python or str(python_of(Path(body.prefix or "")))
        if not Path(python).is_absolute():
            raise EnvError(f"{python}: give an absolute path, the same on every node", field="python")
        reg = registry(ctx)
        if reg.get(body.name) is not None:
            raise EnvError(f"environment {body.name!r} exists: remove it first", field="name")
        env = await run_in_threadpool(reg.register, body.name, python, description=body.description)
    except EnvError as exc:
        fld = "name" if exc.field == "name" else ("python" if body.python else "prefix")
        raise ClientError(str(exc), code="env_refused",
                          errors=[FieldError(fld, body.name if fld == "name" else (body.python or body.prefix),
                                             str(exc))]) from None
    return env.public()


@router.delete("/{name}", summary="remove a cluster environment (admin); refused while a task needs it")
async def remove_env(name: str, _admin: Principal = Depends(require_admin), ctx: AppContext = Depends(get_ctx),
                     session: Session = Depends(get_session)) -> dict:
    reg = registry(ctx)
    if reg.get(name) is None or name.startswith("~"):
        raise NotFound(f"no cluster environment {name!r}", code="env_not_found")
    busy = await run_in_threadpool(tasks_using, session, name)
    if busy:
        raise Conflict(f"environment {name!r} is still needed by {len(busy)} task(s) not over: {', '.join(busy)}; "
                       "cancel them or wait", code="env_in_use")
    try:
        trash = await run_in_threadpool(reg.remove, name)
    except EnvError as exc:
        raise Conflict(str(exc), code="env_in_use") from None
    await run_in_threadpool(shutil.rmtree, trash, True)
    return {"removed": name}
