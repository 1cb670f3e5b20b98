"""What one node of a task needs besides GPUs: CPUs and memory (issue 15), and how to read them.

The scheduler fits a task on a node only when the node has the task's GPUs *and* its CPUs
*and* its memory free, so Ray never leaves a job PENDING for lack of CPU (Ray's own queue
cannot say why it waits and fails a PENDING job after 900 s). A spec may set
``cpus_per_node`` and ``memory_per_node``; otherwise :func:`task_need` derives them from the
entry module and the verl overrides. The defaults, and where in verl 0.9.1 they come from:

* **verl's Ray trainers** (``verl.trainer.main_ppo``, PPO/GRPO): ``3 × n_gpus_per_node``
  for the GPU workers — verl's ``RayResourcePool`` asks every GPU bundle of its placement
  group for ``{"CPU": max_colocate_count, "GPU": 1}`` and ``ResourcePoolManager`` keeps the
  default ``max_colocate_count = 3`` (single_controller/ray/base.py, trainer/ppo/v1/
  trainer_base.py) — plus the CPU actors verl ≥ 0.9 starts beside them
  (``TaskRunnerV1.run`` always enables TransferQueue, the data system of seed 004):
  1 CPU for the ``TransferQueueController`` (``@ray.remote(num_cpus=1)``), 1 CPU per
  ``SimpleStorageUnit`` (``num_cpus=1``; ``transfer_queue.backend.SimpleStorage.
  num_data_storage_units``, 8 by default) spread over the task's nodes, and 1 CPU of
  headroom: the TaskRunner, the agent-loop and reward-loop workers are actors without
  ``num_cpus``, which Ray schedules only where 1 CPU is free (they hold 0 once running).
  The fixed part is charged on every node (simple; over-counting only delays). With
  ``trainer.use_v1=False`` (the legacy trainer, no TransferQueue) the storage units and the
  controller are not counted.
* **SFT** (``verl.trainer.sft_trainer`` under torchrun, in the driver): one CPU per rank
  plus the launcher, ``n_gpus_per_node + 1``.
* **Argus's own utility jobs** (``argus.jobs.*``: doctor, sleep, steps…): 0 — light probes
  that reserved no CPU before either (set ``cpus_per_node`` to count one).
* **Other CPU jobs** (``verl.model_merger``, …): 1 CPU; other driver-held GPU programs:
  ``n_gpus_per_node + 1``.
* **CPU training** (``device: cpu``, issue 34): no GPU is reserved and ``n_gpus_per_node`` counts
  the task's CPU training workers; they and the rollout engine compute on the node's cores, so the
  default is ``n_gpus_per_node + 1`` for every entry module. verl's placement groups still ask Ray
  for their ``{"CPU": 3, "GPU": 1}`` bundles and its actors for 1 CPU each: those are the task's
  private Ray's logical slots (``CPU_TRAINING_RAY_CPUS``), not cores the scheduler hands out.
* **Memory**: 0 (not counted) unless the spec sets ``memory_per_node``: neither verl nor
  its actors reserve memory in Ray, so there is nothing to derive it from.

Pure: no Ray, no database.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from argus.core.messages import Invalid

PPO_MODULES = frozenset({"verl.trainer.main_ppo"})
LEGACY_PPO_MODULES = frozenset({"verl.trainer.main_ppo_v0"})
SFT_MODULES = frozenset({"verl.trainer.sft_trainer"})
UTILITY_PREFIX = "argus.jobs."

CPUS_PER_GPU_BUNDLE = 3  # verl ResourcePoolManager.max_colocate_count: {"CPU": 3, "GPU": 1} per GPU
TQ_CONTROLLER_CPUS = 1  # transfer_queue/controller.py: @ray.remote(num_cpus=1)
TQ_STORAGE_UNITS_DEFAULT = 8  # verl's transfer_queue.backend.SimpleStorage.num_data_storage_units
TQ_STORAGE_UNITS_KEY = "transfer_queue.backend.SimpleStorage.num_data_storage_units"
TQ_BACKEND_KEY = "transfer_queue.backend.storage_backend"
CPU_TRAINING_RAY_CPUS = 16  # device cpu: logical CPUs of the task's private Ray (verl's bundles and actors)
ACTOR_HEADROOM_CPUS = 1  # actors without num_cpus need 1 free CPU to be scheduled
RESOURCES_KEY = "resources_per_node"  # in a task's resolved spec: {"gpus", "cpus", "memory"}
MAX_CPUS = 100_000
MAX_MEMORY = 2**60  # one exbibyte: more than any node, small enough for every database

_UNITS = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12, "p": 10**15,
          "ki": 2**10, "mi": 2**20, "gi": 2**30, "ti": 2**40, "pi": 2**50}
_QUANTITY = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([kmgtp]i?)?b?\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class NodeNeed:
    """What one node of a task needs beside its GPUs (memory in bytes; 0 = not counted)."""

    cpus: float = 0.0
    memory: int = 0


def parse_memory(value: object) -> int:
    """Bytes from ``64Gi``/``512Mi``/``16G``/``1.5Ti`` (binary ``Ki…Pi``, decimal ``k…P``) or a number of bytes.

    Raises ValueError with a message that names the fix.
    """
    if isinstance(value, bool):
        raise Invalid("spec.memory")
    if isinstance(value, int | float):
        if not math.isfinite(value) or value < 0:
            raise Invalid("spec.memory_negative")
        amount = int(value)
    elif isinstance(value, str):
        m = _QUANTITY.match(value)
        if m is None:
            raise Invalid("spec.memory_units")
        amount = int(float(m.group(1)) * _UNITS[(m.group(2) or "").lower()])
    else:
        raise Invalid("spec.memory")
    if amount > MAX_MEMORY:
        raise Invalid("spec.memory_too_large")
    return amount


def parse_cpus(value: object) -> float:
    """CPUs as a number (``12``, ``0.5``) or a numeric string; raises ValueError naming the fix."""
    if isinstance(value, bool):
        raise Invalid("spec.cpus")
    try:
        cpus = float(value) if isinstance(value, int | float | str) else math.nan
    except ValueError:
        cpus = math.nan
    if not math.isfinite(cpus):
        raise Invalid("spec.cpus")
    if cpus < 0 or cpus > MAX_CPUS:
        raise Invalid("spec.cpus_range", max=MAX_CPUS)
    return cpus


def format_memory(amount: float) -> str:
    """``64 GiB`` style, for pending reasons."""
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if amount >= size:
            return f"{amount / size:.3g} {unit}"
    return f"{int(amount)} B"


def format_cpus(cpus: float) -> str:
    n = int(cpus) if float(cpus).is_integer() else round(cpus, 2)
    return f"{n} CPU{'' if n == 1 else 's'}"


def _int_override(overrides: Mapping[str, str], key: str, default: int) -> int:
    try:
        return max(0, int(str(overrides.get(key, default)).strip()))
    except ValueError:
        return default  # an interpolation or a typo: verl refuses it; count the default


def reserved_gpus(n_gpus_per_node: int, device: str = "gpu") -> int:
    """The GPUs per node the scheduler reserves: none for CPU training (``device: cpu``)."""
    return 0 if device == "cpu" else n_gpus_per_node


def training_device(spec_resolved: Mapping[str, Any] | None, reserved: int) -> tuple[str, int]:
    """(``device``, training workers per node) of a task from its resolved spec and the GPUs reserved for it:
    for CPU training (``device: cpu``, issue 34) the spec's ``n_gpus_per_node`` counts CPU training workers
    (the logical GPUs of the task's private Ray) while the platform reserved none; else its GPUs."""
    spec = spec_resolved or {}
    if spec.get("device") == "cpu":
        return "cpu", int(spec.get("n_gpus_per_node") or 0)
    return "gpu", reserved


def default_cpus(entry_module: str | None, nnodes: int, n_gpus_per_node: int,
                 overrides: Mapping[str, str] | None = None, device: str = "gpu") -> float:
    """The documented default CPUs per node (module docstring) for a task that sets none."""
    overrides = overrides or {}
    module = entry_module or ""
    if device == "cpu" and not module.startswith(UTILITY_PREFIX):
        return float(n_gpus_per_node + 1)
    if module in PPO_MODULES or module in LEGACY_PPO_MODULES:
        cpus = CPUS_PER_GPU_BUNDLE * n_gpus_per_node + ACTOR_HEADROOM_CPUS
        legacy = module in LEGACY_PPO_MODULES or str(overrides.get("trainer.use_v1", "true")).lower() == "false"
        if not legacy:
            cpus += TQ_CONTROLLER_CPUS
            if str(overrides.get(TQ_BACKEND_KEY, "SimpleStorage")) == "SimpleStorage":
                units = _int_override(overrides, TQ_STORAGE_UNITS_KEY, TQ_STORAGE_UNITS_DEFAULT)
                cpus += math.ceil(units / max(nnodes, 1))
        return float(cpus)
    if module in SFT_MODULES:
        return float(n_gpus_per_node + 1)
    if module.startswith(UTILITY_PREFIX):
        return 0.0
    return float(n_gpus_per_node + 1) if n_gpus_per_node > 0 else 1.0


def task_need(entry_module: str | None, nnodes: int, n_gpus_per_node: int, *,
              cpus_per_node: float | None = None, memory_per_node: int | None = None,
              overrides: Mapping[str, str] | None = None, device: str = "gpu") -> NodeNeed:
    """A task's per-node need: the spec's own values where set, the documented defaults otherwise."""
    cpus = cpus_per_node if cpus_per_node is not None else default_cpus(entry_module, nnodes, n_gpus_per_node,
                                                                        overrides, device)
    return NodeNeed(cpus=float(cpus), memory=int(memory_per_node or 0))
