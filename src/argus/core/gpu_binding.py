"""Which tasks get a private Ray cluster, and how a task's GPUs reach its processes (issue 21).

Every task's launcher holds the task's whole share of its node in the platform's Ray (GPUs,
CPUs, memory): Ray's ``CUDA_VISIBLE_DEVICES`` for the launcher names the task's GPUs, and
the sandbox shows only their device files. Inside the sandbox two kinds of programs:

* **Ray programs**: verl's Ray trainers (``main_ppo`` & co.) and anything unknown place
  their workers with Ray, so the sandbox starts a private Ray cluster owning exactly the
  task's CPUs and GPUs, and the program's ``ray.init()`` attaches to it.
* **Plain programs**: ``torch.distributed.run`` running verl's SFT trainer, Argus's own
  jobs (the doctor, a GPU probe, the model merger) use the GPUs from their own process
  tree and need no Ray: starting one would cost seconds and hundreds of MB for nothing.
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
    "argus.jobs.gang_steps",
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
        # a compound command (``a; b``, which admission refuses) is not one Argus can name, whatever its parts
        return None if isinstance(parsed, list) or parsed.problems else parsed.module
    modules = [argv[i + 1] for i, t in enumerate(argv[:-1]) if t in ("-m", "--module")]
    if modules and modules[0] in TORCHRUN_MODULES:
        return modules[1] if len(modules) > 1 else None
    return modules[0] if modules else None


def uses_ray(argv: list[str]) -> bool:
    """Whether the task's sandbox starts a private Ray cluster for this argv.

    Known Ray programs do; a command whose program Argus cannot name (a script, a pipeline)
    does too, since it may call ``ray.init()``; known plain programs do not.
    """
    module = entry_module(argv)
    return module is None or module in RAY_PLACED_MODULES or not module.startswith(PLAIN_PREFIXES)


PLAIN_PREFIXES = ("argus.jobs.", "verl.model_merger", "verl.trainer.fsdp_sft_trainer", "verl.trainer.sft_trainer",
                  "torch.distributed.run")

