"""The validator as a server Component, and the factory server.py calls to wire it in.

Start-up begins the child in a background thread (``import verl`` takes
seconds) so the API is serving at once; the first submit waits for it.
"""

from __future__ import annotations

import asyncio
import logging

from argus.settings import Settings
from argus.verl.check import VerlCheck
from argus.verl.sandbox import sandbox_prefix
from argus.verl.validator import VerlValidator

log = logging.getLogger(__name__)


class VerlValidatorComponent:
    name = "verl-validator"

    def __init__(self, validator: VerlValidator) -> None:
        self.validator = validator

    async def start(self) -> None:
        self.validator.start_background()

    async def stop(self) -> None:
        await asyncio.to_thread(self.validator.stop)


def make_verl_check(settings: Settings) -> tuple[VerlCheck, VerlValidator | None]:
    """The SpecCheck for admission and the validator it uses (None when validation is off)."""
    if settings.verl_validation != "off" and settings.sandbox == "auto" and not sandbox_prefix(settings):
        log.warning("bubblewrap (bwrap) is not installed: reward dry-runs and verl validation run on this "
                    "machine WITHOUT a jail; apt-get install bubblewrap (or set ARGUS_SANDBOX=bwrap to require it)")
    validator = None if settings.verl_validation == "off" else VerlValidator(
        settings.verl_python, timeout_s=settings.verl_timeout_s,
        # the data root stays readable (local tokenizers); the state dir, secrets and network do not
        # spawned from a start-up thread that ends: the child outlives it (and exits on stdin EOF)
        jail=sandbox_prefix(settings, readable=[settings.root], die_with_parent=False))
    return VerlCheck(settings, validator), validator
