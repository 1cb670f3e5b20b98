"""Legacy override keys that the installed verl would silently ignore, rewritten where they are read now.

verl ≥ 0.9 reads the custom reward only from ``reward.custom_reward_function.*``;
the top-level ``custom_reward_function.*`` of the seed design (and older verl)
still composes (the key exists in ``ppo_trainer``) but ``main_ppo`` never reads
it, so a task would train with the default reward and nobody would notice.
Whether to rewrite is decided from the installed verl's composed schema (the
validator's ``reward_moved``), never from a version string. The rewrite is
textual on the expanded command so everything else stays as the user wrote it.
"""

from __future__ import annotations

import re

LEGACY_PREFIX = "custom_reward_function."
NEW_PREFIX = "reward.custom_reward_function."
# At the start of a word (start, whitespace or an opening quote), optionally +/++ prefixed.
_LEGACY = re.compile(r"(?<![^\s'\"])(\+{0,2})custom_reward_function\.")


def has_legacy_reward(command: str) -> bool:
    return bool(_LEGACY.search(command))


def rewrite_legacy_reward(command: str, overrides: dict[str, str]) -> tuple[str, list[str]]:
    """``custom_reward_function.X=`` → ``reward.custom_reward_function.X=``; returns (command, warnings)."""
    if not has_legacy_reward(command):
        return command, []
    rewritten = _LEGACY.sub(lambda m: f"{m.group(1)}{NEW_PREFIX}", command)
    keys = sorted(k for k in overrides if k.startswith(LEGACY_PREFIX))
    msg = (
        f"rewrote {', '.join(keys) or 'custom_reward_function.*'} to reward.custom_reward_function.*: the installed "
        "verl reads the custom reward only from reward.custom_reward_function.* and would silently ignore the "
        "top-level key (write the new key to silence this warning)"
    )
    warnings = [msg]
    if f"{LEGACY_PREFIX}path" in overrides and f"{LEGACY_PREFIX}name" not in overrides \
            and f"{NEW_PREFIX}name" not in overrides:
        warnings.append("custom_reward_function.name is not set: verl calls the function named compute_score "
                        "(its default) in the reward file")
    return rewritten, warnings
