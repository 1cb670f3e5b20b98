"""Everything a request handler needs, built once by the composition root (argus.server)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import argus
from argus.core.admission import AdmissionPolicy, EnvChoices, SpecCheck
from argus.core.paths import DataLayout
from argus.db.session import Database
from argus.services.eta import QueueEstimates
from argus.settings import Settings

# Where Argus's own modules are: a traceback through them names no server folder in a user's answer.
ARGUS_INSTALL = str(Path(argus.__file__).resolve().parent)


@dataclass
class AppContext:
    settings: Settings
    db: Database
    checks: tuple[SpecCheck, ...] = ()
    # The other environments a spec refused by its own environment's verl is tried in (set with the registry).
    env_choices: EnvChoices | None = None
    # Called after a write that the scheduler should act on (submit, cancel): wakes its loops.
    wake: Callable[[], None] = lambda: None
    # Read-only cluster view for /nodes (set when a cluster adapter is available).
    nodes: Callable[[], dict[str, Any]] | None = None
    # Queue positions and estimated starts (issue 24), over the scheduler's own inputs (set with the scheduler).
    queue_estimates: QueueEstimates | None = None
    extras: dict[str, Any] = field(default_factory=dict)

    @property
    def layout(self) -> DataLayout:
        return DataLayout.at(self.settings.root)

    @property
    def policy(self) -> AdmissionPolicy:
        s = self.settings
        return AdmissionPolicy(
            layout=self.layout,
            entry_allowlist=tuple(s.entry_allowlist),
            env_allowlist=tuple(s.env_allowlist),
            max_nnodes=s.max_nnodes,
            max_gpus_per_node=s.max_gpus_per_node,
            default_env=s.default_env,
            hidden=((str(s.state_dir), "<server>"), (ARGUS_INSTALL, "<argus>")),
        )
