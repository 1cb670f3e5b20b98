"""One warm verl validator per training environment, so each task is judged by the verl it will run with.

A script written for verl 0.4 is checked by verl 0.4 (its environment's interpreter runs
``argus.verl.worker``), a 0.9 spec by verl 0.9. Validators start on first use (the default
environment's at server start) and the ``env_validators_warm`` most recently used stay warm;
beyond that the least recently used one is stopped (each holds its verl's import: ~0.5 GB).

A user's own environment (``~/envs/<name>``) runs code from their home: its validator's jail
shows that user's home and the shared datasets and models, never the whole data root, and it
is never shared with another user's requests.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from argus.core.paths import DataLayout
from argus.envs.registry import Environment
from argus.settings import Settings
from argus.verl.sandbox import sandbox_prefix
from argus.verl.validator import VerlValidator


class ValidatorPool:
    """Thread-safe: API requests ask for validators concurrently."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._lock = threading.Lock()
        self._warm: OrderedDict[tuple[str, str | None], VerlValidator] = OrderedDict()

    def python_for(self, env: Environment) -> str:
        """The builtin environment keeps ``verl_python`` (an operator's older setting) for validation."""
        return self.settings.verl_python if env.source == "builtin" else env.python

    def _readable(self, env: Environment) -> list[Any]:
        if env.owner is None:  # the data root stays readable (local tokenizers), as before environments
            return [self.settings.root]
        layout = DataLayout.at(self.settings.root)
        return [layout.home(env.owner), layout.datasets_dir, layout.hf_dir]

    def get(self, env: Environment) -> VerlValidator:
        python = self.python_for(env)
        key = (python, env.owner)
        stop: list[VerlValidator] = []
        with self._lock:
            validator = self._warm.get(key)
            if validator is None:
                validator = VerlValidator(
                    python, timeout_s=self.settings.verl_timeout_s,
                    jail=sandbox_prefix(self.settings, readable=self._readable(env), die_with_parent=False,
                                        python=python))
                self._warm[key] = validator
            self._warm.move_to_end(key)
            while len(self._warm) > self.settings.env_validators_warm:
                _, old = self._warm.popitem(last=False)
                stop.append(old)
        for old in stop:
            old.stop()
        return validator

    def start(self, env: Environment) -> None:
        self.get(env).start_background()

    def stop(self) -> None:
        with self._lock:
            warm = list(self._warm.values())
            self._warm.clear()
        for validator in warm:
            validator.stop()

    def warm(self) -> list[dict[str, Any]]:
        """Which environments' validators are warm now (for the metrics and the admin's view)."""
        with self._lock:
            return [{"python": key[0], "owner": key[1], "pid": v.pid, "alive": v.alive()}
                    for key, v in self._warm.items()]

    def alive(self) -> bool:
        """For ``argus_component_up``: the default environment's validator (any warm one) is running."""
        with self._lock:
            return any(v.alive() for v in self._warm.values())

    @property
    def pid(self) -> int | None:
        with self._lock:
            return next((v.pid for v in self._warm.values() if v.pid), None)

    @property
    def restarts(self) -> int:
        with self._lock:
            return sum(v.restarts for v in self._warm.values())
