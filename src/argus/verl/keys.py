"""verl's config keys for the New Task editor's completion, from the verl that will judge the task.

The keys are the leaves of the config verl composes for the workload's entry (``ppo_trainer``,
``sft_trainer_engine``...), read by the environment's warm validator (worker op ``keys``), so a
user of an older verl is offered that verl's keys. Composing is paid once per (interpreter, config,
verl version): the answer is kept in memory for the server's life (the keys of an installed verl
never change; an environment rebuilt with another verl has another version, hence another entry).
"""

from __future__ import annotations

import threading
from typing import Any

from argus.verl.check import DEFAULT_CONFIG, KIND_FOR_ENTRY
from argus.verl.validator import ValidatorTimeout, ValidatorUnavailable, VerlValidator

WORKLOAD_KIND = {"ppo": "ppo", "grpo": "ppo", "sft": "sft"}


class KeyCatalog:
    """Thread-safe cache of ``keys`` answers; one per server (``ctx.extras``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cache: dict[tuple[str, str, str], list[dict[str, Any]]] = {}

    @staticmethod
    def config_for(info: dict[str, Any], workload: str) -> str:
        """The config the workload's entry composes in this verl (its ``entries``), else Argus's default."""
        kind = WORKLOAD_KIND[workload]
        for module, config in (info.get("entries") or {}).items():
            if KIND_FOR_ENTRY.get(module) == kind:
                return str(config)
        return DEFAULT_CONFIG[kind]

    def keys(self, validator: VerlValidator, workload: str, timeout_s: float) -> dict[str, Any]:
        """``{"config", "verl_version", "keys": [...]}``; ``keys`` empty with ``unavailable`` (why) when the
        validator cannot answer: completion is a help, never a reason to fail the page."""
        try:
            info = validator.info or validator.request({"op": "info"}, timeout_s)
            config = self.config_for(info, workload)
            version = str(info.get("verl_version", ""))
            key = (validator.python, config, version)
            with self._lock:
                cached = self._cache.get(key)
            if cached is None:
                cached = list(validator.request({"op": "keys", "config": config}, timeout_s)["keys"])
                with self._lock:
                    self._cache[key] = cached
        except (ValidatorUnavailable, ValidatorTimeout, KeyError) as exc:
            return {"config": None, "verl_version": None, "keys": [], "unavailable": str(exc)}
        return {"config": config, "verl_version": version, "keys": cached}
