"""Every refusal of verl's start-up checks that one answer can honestly give (issue 37).

verl's checks raise on the first problem: a spec with two bad values heard of the second only after the first
was fixed and sent again. After a refusal that names one key the worker changes that key in the composed config
and runs the checks again, so the next check can speak:

* a key refused for having no value (``Please set at least one of …``) gets a stand-in, 1 (a size no rule refuses);
* a key refused for its value goes back to verl's default (the default config's), when that default is a plain
  value other than the user's and the key does not decide which checks run or what they divide by
  (``is_switch``: the world size, a strategy, dynamic batching, the estimator, KL, a true/false, a section's
  ``name`` / ``mode``): with another value there verl would judge another training than the user's.

A later refusal is reported only where it cannot follow from those changes: it names a key (as its key or in its
message), and none it names is a changed key, one whose value is drawn from one (``critic.ppo_mini_batch_size`` is
the actor's unless set) or a quantity verl derives from one (``real_train_batch_size``). Otherwise — and after a
refusal that names no key, or a key that cannot be changed — the rounds end: what verl would say with the user's
own value there would be a guess. At most ``MAX_VERL_ROUNDS`` runs, and none starts once the rounds have used
``ROUNDS_BUDGET_S`` of CPU. The config is the request's own composed copy, changed in place (verl's checks only read
it) and given back its values before this returns.

Runs in the validator child (training environment): stdlib + omegaconf, and its sibling ``argus.verl.messages``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

from argus.verl.messages import ALIASES, Schema, raw_value

# How many runs of verl's checks one verdict makes at most: each collects one more refusal.
MAX_VERL_ROUNDS = 6
# No further run starts after the rounds have used this much of the worker's CPU (one run: ~20 ms with GRPO, ~50 to
# 150 ms with a critic, whose config loads a tokenizer): the verdict stays within issue 25's 0.5 s. CPU time, not
# the clock: on a busy head the same spec gets the same answer.
ROUNDS_BUDGET_S = 0.2
# The value a key refused for having none gets: verl's sizes divide by it and nothing refuses it.
STAND_IN = 1

# Quantities verl's messages name that it computes from keys.
DERIVED = {
    "real_train_batch_size": ("data.train_batch_size", "actor_rollout_ref.rollout.n"),
    "n_gpus": ("trainer.nnodes", "trainer.n_gpus_per_node"),
}
# Keys that decide which of verl's checks run, or the sizes they all divide by.
_SWITCH = re.compile(r"(?:^|\.)(?:nnodes|n_gpus_per_node|strategy|use_dynamic_bsz|adv_estimator|use_kl_loss|"
                     r"use_kl_in_reward|name|mode|enable|enabled)$")
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.\w+)+")
_WORD = re.compile(r"(?<![\w.])[A-Za-z_]\w*(?!\w)(?!\.\w)")  # not part of a dotted name

Found = tuple[list[dict[str, Any]], list[str]]


def run_rounds(once: Callable[[], Found], schema: Schema, cfg: Any) -> Found:
    """(errors, warnings): ``once`` runs verl's checks on ``cfg`` and gives (at most one refusal, warnings)."""
    errors: list[dict[str, Any]] = []
    changed: dict[str, Any] = {}  # key -> the value to put back
    drawn: set[str] = set()  # the changed keys and those whose values come from them
    links: dict[str, str] = {}  # key -> its interpolation, read at the first change
    started = time.process_time()
    try:
        for _ in range(MAX_VERL_ROUNDS):
            found, warned = once()
            if warned or not found:
                return errors + found, warned  # what this environment cannot check ends the rounds as before
            if changed and follows_from(found[0], drawn, schema):
                break  # it may be only what our change made verl say
            errors.extend(e for e in found if e not in errors)
            key = str(found[0].get("key") or "")
            value = next_value(key, schema, cfg, changed)
            if value is None or time.process_time() - started >= ROUNDS_BUDGET_S:
                break
            before = raw_value(cfg, key)
            if not set_value(cfg, key, value):
                break
            changed[key] = before
            links = links or interpolations(cfg)
            drawn |= drawn_from(key, links)
    finally:
        for key, before in reversed(changed.items()):
            set_value(cfg, key, before)
    return errors, []


def next_value(key: str, schema: Schema, cfg: Any, changed: dict[str, Any]) -> Any:
    """The value ``key`` takes for the next run after verl refused it, or None: the rounds end."""
    if not key or key in changed or key not in schema.leaves:
        return None
    current, default = raw_value(cfg, key), schema.leaves[key]
    if current is None:
        return STAND_IN if default is None else None
    if default is None or isinstance(default, dict | list) or is_switch(key, default) or current == default:
        return None
    if isinstance(default, str) and "${" in default:
        return None  # drawn from another key: which value that means here is a guess
    return default


def is_switch(key: str, default: Any) -> bool:
    """Whether ``key`` decides which of verl's checks run or the sizes they use: its default in the user's
    value's place would have verl judge another training."""
    return isinstance(default, bool) or bool(_SWITCH.search(key))


def keys_named(text: str, schema: Schema) -> set[str]:
    """Every key (or section) a message names: in full, by a tail (verl drops prefixes), by its last segment, by
    an alias, or through a quantity verl derives from it."""
    named: set[str] = set()
    for m in _DOTTED.finditer(text):
        name = m.group(0)
        named |= {name} if schema.has(name) else {k for k in schema.all_keys if k.endswith("." + name)}
    for word in set(_WORD.findall(text)):
        named.update(schema.by_last.get(word, ()))
        named.update(DERIVED.get(word, ()))
        if word in ALIASES:
            named.add(ALIASES[word])
    return named


def follows_from(error: dict[str, Any], drawn: set[str], schema: Schema) -> bool:
    """Whether a refusal may be a consequence of the changed keys (``drawn``), or cannot be told from one: it
    names no key at all, or it names one of them or a section holding one."""
    named = keys_named(str(error.get("message") or ""), schema)
    if error.get("key"):
        named.add(str(error["key"]))
    if not named:
        return True
    return any(n == d or d.startswith(n + ".") for n in named for d in drawn)


def interpolations(cfg: Any) -> dict[str, str]:
    """Every leaf of ``cfg`` whose value is an interpolation, with its text."""
    from omegaconf import OmegaConf

    return {k: v for k, v in _leaves(OmegaConf.to_container(cfg, resolve=False), "") if isinstance(v, str) and "${" in v}


def drawn_from(key: str, links: dict[str, str]) -> set[str]:
    """``key`` and every leaf whose interpolation (``links``) may read it, by its full name or, relative, its last
    segment, and theirs in turn."""
    out, todo = {key}, [key]
    while todo:
        last = todo.pop().rpartition(".")[2]
        for k, v in links.items():
            if k not in out and re.search(rf"(?<!\w){re.escape(last)}(?!\w)", v):
                out.add(k)
                todo.append(k)
    return out


def _leaves(node: Any, prefix: str) -> Any:
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _leaves(v, f"{prefix}.{k}" if prefix else str(k))
    else:
        yield prefix, node


def set_value(cfg: Any, key: str, value: Any) -> bool:
    """Set ``key`` in ``cfg`` in place (``${...}`` text is an interpolation again); whether it could be set."""
    from omegaconf import OmegaConf, open_dict

    try:
        with open_dict(cfg):
            OmegaConf.update(cfg, key, value, merge=False)
        return True
    except Exception:  # noqa: BLE001 - a read-only or typed node: no further round then
        return False
