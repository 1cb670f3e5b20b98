"""The validators as a server Component, and the factory server.py calls to wire them in.

Start-up begins validators in background threads (``import verl`` takes seconds; on a busy head a
first answer took 89 s) so the API is serving at once: the default environment's, then one for each
other verl version among the cluster's environments, up to ``env_validators_warm`` — a refused spec is
tried in those (``services.tasks.accepted_elsewhere``) and a task naming one is not the one that waits.
Other environments' validators start on their first task (argus.verl.pool).
"""

from __future__ import annotations

import asyncio
import logging

from argus.core.admission import Admitted
from argus.core.taskspec import BasicTaskSpec
from argus.envs.registry import EnvError, Registry
from argus.settings import Settings
from argus.verl.check import VerlCheck
from argus.verl.entry import EntryModuleCheck
from argus.verl.pool import ValidatorPool
from argus.verl.sandbox import sandbox_prefix
from argus.verl.validator import VerlValidator

log = logging.getLogger(__name__)


class VerlValidatorComponent:
    name = "verl-validator"

    def __init__(self, pool: ValidatorPool, registry: Registry) -> None:
        self.pool = pool
        self.registry = registry

    async def start(self) -> None:
        try:
            env = await asyncio.to_thread(self.registry.resolve, None, "")
        except EnvError as exc:
            log.warning("default training environment: %s", exc)
            return
        self.pool.start(env)
        versions = {env.verl}
        for other in await asyncio.to_thread(self.registry.cluster):
            if len(versions) >= self.pool.settings.env_validators_warm:
                break
            if other.ok and other.verl and other.verl not in versions:
                versions.add(other.verl)
                self.pool.start(other)

    async def stop(self) -> None:
        await asyncio.to_thread(self.pool.stop)


def environment_validators(registry: Registry, pool: ValidatorPool):  # noqa: ANN201 - a ValidatorSource
    """The ValidatorSource of admission: the task's environment's validator; unknown environments, and
    basic templates for an environment they are not written for, are not checked (``argus.envs.check``
    refuses them)."""

    def pick(admitted: Admitted, user: str) -> tuple[VerlValidator | None, bool]:
        try:
            env = registry.resolve(admitted.spec.env, user)
        except EnvError:
            return None, False
        if isinstance(admitted.spec, BasicTaskSpec) and not env.templates:
            return None, False  # a template for another verl: refused on env:, no second error from that verl
        return pool.get(env), True

    return pick


def make_verl_checks(settings: Settings, registry: Registry) -> tuple[tuple[EntryModuleCheck, VerlCheck],
                                                                       ValidatorPool | None]:
    """The verl SpecChecks for admission and the validator pool they use (None when validation is off)."""
    if settings.verl_validation != "off" and settings.sandbox == "auto" and not sandbox_prefix(settings):
        log.warning("bubblewrap (bwrap) is not installed: reward dry-runs and verl validation run on this "
                    "machine WITHOUT a jail; apt-get install bubblewrap (or set ARGUS_SANDBOX=bwrap to require it)")
    pool = None if settings.verl_validation == "off" else ValidatorPool(settings)
    source = environment_validators(registry, pool) if pool is not None else None
    return (EntryModuleCheck(settings, None, validators=source), VerlCheck(settings, None, validators=source)), pool


def make_verl_check(settings: Settings) -> tuple[VerlCheck, VerlValidator | None]:
    """One validator for ``verl_python``, no environments (tools and tests that judge with one verl)."""
    validator = None if settings.verl_validation == "off" else VerlValidator(
        settings.verl_python, timeout_s=settings.verl_timeout_s,
        # the data root stays readable (local tokenizers); the state dir, secrets and network do not
        # spawned from a start-up thread that ends: the child outlives it (and exits on stdin EOF)
        jail=sandbox_prefix(settings, readable=[settings.root], die_with_parent=False))
    return VerlCheck(settings, validator), validator
