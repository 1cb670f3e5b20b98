"""Who holds a task's GPUs in Ray: its driver, or the Ray workers the program places itself.

Ray sets ``CUDA_VISIBLE_DEVICES`` for a process from the GPUs it reserved for it, so a
task sees exactly its own GPUs only if the GPUs are reserved by the processes that use
them (ARCHITECTURE §7). Two kinds of programs:

* **Ray-placed**: verl's Ray trainers (``main_ppo`` & co.) start their GPU workers in
  placement groups of their own; Ray gives each worker its GPUs. The driver must hold
  none, or those placement groups could never be satisfied.
* **Driver-held**: everything else (``torch.distributed.run`` running verl's SFT
  trainer, a GPU diagnostic) uses the GPUs from the entry process and its children, so
  the Ray job reserves them for the entry point (``entrypoint_num_gpus``).

Unknown modules are driver-held: a program that places its own workers but is not listed
sees no GPU in its driver and fails visibly, instead of sharing someone else's.
"""

from __future__ import annotations

from argus.core.command import TORCHRUN_MODULES, parse_command

RAY_PLACED_MODULES = frozenset({
    "verl.trainer.main_ppo",
    "verl.trainer.main_ppo_v0",
    "verl.trainer.main_eval",
    "verl.trainer.main_generation_server",
    "verl.trainer.sft_trainer_ray",
    "argus.jobs.ray_gpus",
})


def entry_module(argv: list[str]) -> str | None:
    """The module an argv runs with ``-m``, for basic and advanced argvs.

    Through torchrun, the module torchrun runs. An advanced command (``bash -lc CMD``) is read
    by core.command's parser, which knows ``torchrun … -m M`` and ``python3 -m
    torch.distributed.run … -m M``. A basic template's argv is a list no shell ever parses
    (its values may hold ``$(…)`` as plain text), so it is scanned word by word.
    """
    if len(argv) == 3 and argv[0] in ("bash", "sh") and argv[1].startswith("-") and argv[1].endswith("c"):
        parsed = parse_command(argv[2])
        return None if isinstance(parsed, list) else parsed.module
    modules = [argv[i + 1] for i, t in enumerate(argv[:-1]) if t in ("-m", "--module")]
    if modules and modules[0] in TORCHRUN_MODULES:
        return modules[1] if len(modules) > 1 else None
    return modules[0] if modules else None


def driver_gpus(argv: list[str], n_gpus_per_node: int) -> int:
    """How many GPUs the Ray job reserves for its entry point (its driver)."""
    if n_gpus_per_node <= 0 or entry_module(argv) in RAY_PLACED_MODULES:
        return 0
    return n_gpus_per_node
