"""A new user's first screens: the doctor task one click away, then data and a template.

The doctor (``argus.jobs.doctor``, ``examples/doctor.yaml``) is the first task to run: it needs no
GPU, goes the whole way (queue → Ray → driver on a worker → log) and its report answers "what will
my training task find on that node". The tasks page submits this spec through the ordinary
``POST /api/v2/tasks`` (admission judges it like any other), so the spec lives here once, on the
server, and the page's script only sends it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

DOCTOR_SPEC = """\
kind: advanced
workload: job
name: doctor
nnodes: 1
n_gpus_per_node: 0
command: python3 -m argus.jobs.doctor --home $HOME --shared $HOME/common/datasets --shared $HOME/common/hf
"""

# The New Task templates a first run is offered (web/templates_catalog.NAMES has them all), runnable ones first.
FIRST_TEMPLATES = ("basic-grpo", "basic-ppo", "basic-sft")


@dataclass(frozen=True)
class StartingPoint:
    """Where the New Task page opens: a template the cluster's default environment can run (issue 34).

    ``device`` is what the basic templates ask for: ``cpu`` when the default environment trains on CPU
    (verl's CPU platform, ``argus env list`` "(cpu)"), where a GPU spec is refused; ``gpu`` otherwise.
    """

    template: str
    device: str
    first_templates: tuple[str, ...]


def starting_point(default_env: Mapping[str, Any] | None) -> StartingPoint:
    """From the default environment's public record (``Environment.public``; None: not built or not found).

    GRPO and PPO need a rollout engine (vLLM, SGLang): an environment without one — Argus's own, the
    default of a fresh ``argus up`` — opens on SFT, which it runs. With none known, GRPO, as before.
    """
    env = default_env or {}
    device = "cpu" if env.get("cpu_training") else "gpu"
    rollout = bool(env.get("rollout_engines")) or default_env is None
    first = FIRST_TEMPLATES if rollout else ("basic-sft", "basic-grpo", "basic-ppo")
    return StartingPoint(template=first[0], device=device, first_templates=first)
