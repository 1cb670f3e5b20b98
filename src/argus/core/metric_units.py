"""The unit of a verl metric key, so a chart that holds several keys gives each unit its own y axis.

verl prints no units; its key names carry them by convention (``verl/trainer/ppo/metric_utils.py``,
``verl/utils/profiler``): ``timing_s/*`` and ``perf/time_per_step`` are seconds,
``timing_per_token_ms/*`` milliseconds, ``perf/throughput`` tokens per second, ``perf/*_gb`` GiB
(verl divides by 1024³), ``response_length/*``, ``prompt_length/*`` and ``global_seqlen/*`` tokens
(except their ``*ratio``/``*frac`` entries, which are fractions), ``perf/total_num_tokens`` tokens.
Everything else (losses, scores, KL, entropy, clip fractions, grad norms, learning rates, MFU) is
a plain number: ``None``. The server decides this (the page only draws what it is told), and the
answer is a code the WebUI names in the user's language.
"""

from __future__ import annotations

import re

SECONDS, MILLISECONDS, TOKENS, TOKENS_PER_S, GIB = "s", "ms", "tokens", "tokens_per_s", "gib"
UNITS = (SECONDS, MILLISECONDS, TOKENS, TOKENS_PER_S, GIB)

_FRACTION = re.compile(r"(ratio|frac|fraction|percent|pct)[^/]*$")
_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^timing_per_token_ms/"), MILLISECONDS),
    (re.compile(r"^timing_s/|^perf/time_per_step$|(^|/)time_s$|_time_s$|_seconds$"), SECONDS),
    (re.compile(r"^perf/throughput$|tokens_per_s(ec(ond)?)?$"), TOKENS_PER_S),
    (re.compile(r"_gb$"), GIB),
    (re.compile(r"^(response_length|prompt_length|global_seqlen)/|^perf/total_num_tokens$"), TOKENS),
)


def unit_of(key: str) -> str | None:
    """One of :data:`UNITS`, or ``None`` for a plain number (or a key whose unit is not known)."""
    if _FRACTION.search(key):
        return None
    for pattern, unit in _RULES:
        if pattern.search(key):
            return unit
    return None


def units_of(keys: list[str]) -> dict[str, str]:
    """``{key: unit}`` for the keys that have one (a plain number is left out)."""
    return {k: u for k in keys if (u := unit_of(k)) is not None}
