"""What the worker really has: the attention kernel a basic template uses, the rollout engine it needs.

verl defaults ``attn_implementation`` to ``flash_attention_2`` and ``use_remove_padding``
to true (flash-attn's varlen kernels). On a plain GPU install without the flash-attn
package every basic task died at model load (the first H100 run). The driver runs on the
worker with the training interpreter, so it can look instead of guessing: flash-attn
importable → verl's defaults; otherwise PyTorch's ``sdpa`` with padding kept, and the
task's log says which and why.

A Ray trainer whose rollout engine (vLLM, SGLang, TensorRT-LLM) is not installed used to
fail after a minute of actor start-up with an import error deep in a worker log; the
driver checks it before starting anything.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util

from argus.core.command import parse_command
from argus.core.gpu_binding import entry_module

SFT_MODULES = ("verl.trainer.sft_trainer",)
PPO_MODULES = ("verl.trainer.main_ppo",)
# verl 0.9.1's rollout registry (verl/workers/rollout/base.py): engine name → the package it imports
ROLLOUT_PACKAGES = {"vllm": "vllm", "sglang": "sglang", "trtllm": "tensorrt_llm"}


def flash_attn_version() -> str | None:
    if importlib.util.find_spec("flash_attn") is None:
        return None
    try:
        return importlib.metadata.version("flash-attn")
    except importlib.metadata.PackageNotFoundError:
        return "installed"


def _model_prefixes(module: str | None, args: list[str]) -> list[str]:
    if module in SFT_MODULES:
        return ["model"]
    if module in PPO_MODULES:
        uses_critic = any(a.startswith("algorithm.adv_estimator=") and a.split("=", 1)[1] == "gae" for a in args)
        return ["actor_rollout_ref.model", *(["critic.model"] if uses_critic else [])]
    return []


def attention_overrides(argv: list[str], flash_attn: str | None) -> tuple[list[str], str]:
    """The overrides that make a basic template use the kernel this worker has, and the log line.

    A key the user already set in the template's ``overrides`` is left to the user.
    """
    module = entry_module(argv)
    prefixes = _model_prefixes(module, argv)
    if not prefixes:
        return [], ""
    if flash_attn is not None:
        return [], f"attention: flash_attention_2 (flash-attn {flash_attn} on this worker)"
    extra: list[str] = []
    for prefix in prefixes:
        impl_key = f"{prefix}.override_config.attn_implementation"
        pad_key = f"{prefix}.use_remove_padding"
        if not any(_sets(a, impl_key) for a in argv):
            extra.append(f"+{impl_key}=sdpa")
        if not any(_sets(a, pad_key) for a in argv):
            extra.append(f"{pad_key}=False")
    return extra, "attention: sdpa (flash-attn is not installed on this worker; padding removal off)"


def _sets(arg: str, key: str) -> bool:
    return arg.lstrip("+~").split("=", 1)[0] == key


def insert_overrides(argv: list[str], extra: list[str]) -> list[str]:
    """``extra`` right after the verl module, so the template's and the user's overrides come later."""
    if not extra:
        return argv
    module = entry_module(argv)
    for i in range(len(argv) - 1):
        if argv[i] == "-m" and argv[i + 1] == module:
            return [*argv[: i + 2], *extra, *argv[i + 2:]]
    return argv


def rollout_engine(argv: list[str]) -> str | None:
    """The rollout engine a verl Ray trainer command asks for (the last ``…rollout.name=`` wins)."""
    args = argv
    if len(argv) == 3 and argv[0] in ("bash", "sh"):
        parsed = parse_command(argv[2])
        if isinstance(parsed, list) or parsed.problems:
            return None
        args = parsed.args
    if entry_module(argv) not in PPO_MODULES:
        return None
    names = [a.split("=", 1)[1] for a in args if a.lstrip("+").startswith("actor_rollout_ref.rollout.name=")]
    return names[-1].strip("'\"") if names else None


def missing_rollout_engine(argv: list[str], found: dict[str, bool] | None = None) -> str | None:
    """Why this worker cannot run the task's rollout, or None.

    ``found``: which packages the task's training environment has (``argus.envs.probe --find``,
    run by that environment's interpreter); without it, this process is asked.
    """
    engine = rollout_engine(argv)
    if engine is None:
        return None
    package = ROLLOUT_PACKAGES.get(engine)
    if package is None:
        return (f"rollout engine {engine!r} is not one verl supports here "
                f"(actor_rollout_ref.rollout.name: {', '.join(ROLLOUT_PACKAGES)})")
    present = found.get(package) if found is not None and package in found else importlib.util.find_spec(package)
    if not present:
        return (f"rollout engine {engine!r} is not installed on this worker (no Python package {package!r} in the "
                f"training environment): install it there, or choose another rollout engine "
                f"({', '.join(ROLLOUT_PACKAGES)})")
    return None
