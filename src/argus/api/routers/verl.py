"""/api/v2/verl/keys: verl's config keys for the New Task editor's completion (issue 25).

The keys come from the config the named environment's verl composes for the workload
(``argus.verl.keys``): what the task will be judged by, with each key's default and type, and
``deprecated``/``use`` where this verl superseded it. Any signed-in user may ask: the answer is
verl's packaged config, nothing of anyone's. When the validator cannot answer, the list is empty and
``unavailable`` says why (completion is a help; the page works without it).
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from argus.api.context import AppContext
from argus.api.deps import current_principal, get_ctx
from argus.api.routers.envs import registry
from argus.envs.registry import EnvError
from argus.errors import ClientError, FieldError
from argus.services.principal import Principal
from argus.verl.keys import KeyCatalog

router = APIRouter(prefix="/api/v2/verl", tags=["verl"])


class VerlKey(BaseModel):
    key: str = Field(description="the dotted override key, e.g. actor_rollout_ref.actor.ppo_mini_batch_size")
    default: Any = Field(description="verl's default (a `${...}` text where verl interpolates it)")
    type: str = Field(description="the default's type: int, float, bool, str, list, dict or null")
    deprecated: bool = Field(default=False, description="this verl superseded the key (admission warns)")
    use: str | None = Field(default=None, description="the key to write instead of a deprecated one")


class VerlKeysOut(BaseModel):
    env: str = Field(description="the environment whose verl composed the config")
    config: str | None = Field(description="the config composed, e.g. ppo_trainer")
    verl_version: str | None
    keys: list[VerlKey]
    unavailable: str | None = Field(default=None, description="why there are no keys (the validator could not run)")


def catalog(ctx: AppContext) -> KeyCatalog:
    found = ctx.extras.get("verl_keys")
    return found if found is not None else ctx.extras.setdefault("verl_keys", KeyCatalog())


@router.get("/keys", response_model=VerlKeysOut, response_model_exclude_defaults=False,
            summary="verl's config keys (with defaults) for a workload in an environment: the editor's completion")
async def verl_keys(
    workload: Literal["ppo", "grpo", "sft"] = Query("grpo", description="the task's workload"),
    env: str | None = Query(None, max_length=128, description="the environment (`env:` of the spec); default: "
                            "the cluster's default"),
    principal: Principal = Depends(current_principal),
    ctx: AppContext = Depends(get_ctx),
) -> dict:
    pool = ctx.extras.get("verl_validator")

    def answer() -> dict:
        try:
            environment = registry(ctx).resolve(env or None, principal.name)
        except EnvError as exc:
            raise ClientError(str(exc), code="invalid_env", errors=[FieldError("env", env, str(exc))]) from None
        if pool is None:
            return {"env": environment.name, "config": None, "verl_version": None, "keys": [],
                    "unavailable": "verl validation is off on this server"}
        out = catalog(ctx).keys(pool.get(environment), workload, ctx.settings.verl_timeout_s)
        return {"env": environment.name, **out}

    return await run_in_threadpool(answer)
