"""Shaping the verl validator's findings into ``{"key", "value", "message"}`` errors a user can act on.

Split from ``worker.py`` so the child keeps its request loop and verl calls in
one place and the wording (unknown keys, did-you-mean hints, which key a verl
message is about) in another. It is imported by the validator child, which runs
inside the *training* environment: like ``worker.py`` it must stay importable
with only stdlib + verl + hydra + omegaconf (omegaconf is imported lazily), and
must import no other argus module.
"""

from __future__ import annotations

import difflib
import math
import re
from typing import Any

_NUMERIC = (int, float)
# Keys whose verl default is a number but whose trainer also accepts these strings, per config
# (the name the validator composes). Only what verl's code really handles belongs here, with where:
EXTRA_VALUES: dict[str, dict[str, frozenset[str]]] = {
    # verl/trainer/sft_trainer.py (0.9.1), SFTTrainer._init_...: save_freq/test_freq == "after_each_epoch"
    # become steps_per_epoch (sft_trainer_ray.py does the same).
    "sft_trainer_engine": {
        "trainer.save_freq": frozenset({"after_each_epoch"}),
        "trainer.test_freq": frozenset({"after_each_epoch"}),
    },
    # verl/trainer/ppo/ray_trainer.py compares trainer.save_freq/test_freq with `> 0` and `%`: numbers
    # only, a string fails there at the first step. Nothing extra for ppo_trainer.
    "ppo_trainer": {},
}
# Bare names verl uses in its messages for a config key.
ALIASES = {"real_train_batch_size": "data.train_batch_size", "train_batch_size": "data.train_batch_size"}


class Schema:
    """The flattened default config of one verl entry: leaf key -> default value, plus inner nodes."""

    def __init__(self, cfg: Any, name: str = "") -> None:
        from omegaconf import OmegaConf

        self.name = name  # the config it was composed from ("ppo_trainer", "sft_trainer_engine")
        self.leaves: dict[str, Any] = {}
        self.nodes: set[str] = set()
        self._walk(OmegaConf.to_container(cfg, resolve=False), "")
        self.all_keys = sorted(set(self.leaves) | self.nodes)

    def _walk(self, node: Any, prefix: str) -> None:
        if isinstance(node, dict):
            if prefix:
                self.nodes.add(prefix)
            for k, v in node.items():
                self._walk(v, f"{prefix}.{k}" if prefix else str(k))
        else:
            self.leaves[prefix] = node

    def has(self, key: str) -> bool:
        return key in self.leaves or key in self.nodes

    def suggest(self, key: str, n: int = 3) -> list[str]:
        """Nearest existing keys: whole-key similarity first, then same leaf name under another parent.

        A deprecated key with a ``*_per_gpu`` successor is never offered: using it would clash with
        the successor (verl refuses both set); the successor is offered in its place.
        """
        out = difflib.get_close_matches(key, self.all_keys, n=n, cutoff=0.75)
        leaf = key.rsplit(".", 1)[-1]
        by_leaf = [k for k in self.all_keys if k.rsplit(".", 1)[-1] == leaf]
        by_leaf += [k for k in self.all_keys
                    if difflib.SequenceMatcher(None, k.rsplit(".", 1)[-1], leaf).ratio() >= 0.85 and k not in by_leaf]
        for k in by_leaf:
            if k not in out:
                out.append(k)
        current = [self.successor(k) for k in out]
        return list(dict.fromkeys(k for k in current if k != key))[:n]

    def successor(self, key: str) -> str:
        """``x.ppo_micro_batch_size`` → ``x.ppo_micro_batch_size_per_gpu`` where verl has both."""
        return key + "_per_gpu" if key + "_per_gpu" in self.leaves else key

    def sibling_typo(self, key: str) -> str | None:
        """An existing key under the same parent whose last segment is a near-miss of ``key``'s."""
        parent, _, leaf = key.rpartition(".")
        siblings = [k for k in self.all_keys if k.rpartition(".")[0] == parent]
        for k in siblings:
            if difflib.SequenceMatcher(None, k.rpartition(".")[2], leaf).ratio() >= 0.85:
                return k
        return None


def value_errors(schema: Schema, key: str, value: str) -> list[dict[str, Any]]:
    """Type checks against verl's default, before Hydra: its own type errors name no key and no fix."""
    default = schema.leaves[key]
    v = value.strip().strip("'\"")
    if v.lower() in ("null", "none") or v.startswith("${") or not v:
        return []  # an empty value is the empty string to verl, which reads it as false / unset
    if isinstance(default, bool):
        if v.lower() not in ("true", "false"):
            return [err(key, value, f"expects true or false (verl's default is {default})")]
    elif isinstance(default, _NUMERIC):
        extra = EXTRA_VALUES.get(schema.name, {}).get(key, frozenset())
        try:
            float(v)
        except ValueError:
            if v in extra:
                return []
            also = "".join(f" or '{x}'" for x in sorted(extra))
            return [err(key, value, f"expects a number{also} (verl's default is {default})")]
    if key.endswith(("n_gpus_per_node", "nnodes")) and _is_int(v) and int(v) < 1:
        return [err(key, value, "must be ≥ 1: verl training needs at least one GPU on at least one node")]
    return []


def _is_int(v: str) -> bool:
    try:
        int(v)
    except ValueError:
        return False
    return True


def compose_error(exc: BaseException, schema: Schema | None) -> dict[str, Any]:
    """A Hydra composition failure as one error, with its cause and a did-you-mean for the key it names."""
    text = str(exc).strip()
    cause = exc.__cause__ or exc.__context__
    if cause is not None and str(cause).strip() and str(cause).strip() not in text:
        text = f"{text} ({str(cause).strip().splitlines()[0]})"
    m = re.search(r"'([A-Za-z_][\w.\-]*)'", text)
    if schema is None:
        return err(m.group(1) if m else "", None, f"verl/Hydra: {text}")
    key = m.group(1) if m else key_in(text, schema)
    hint = "" if schema.has(key) else did_you_mean(schema.suggest(key))
    return err(key, None, f"verl/Hydra: {text}{hint}")


# What a check needs from the environment, found in its failure: (pattern, what is missing).
_MISSING_PACKAGE = (
    (re.compile(r"vllm version None not supported"), "vLLM (nor SGLang)"),
    (re.compile(r"No module named '([\w.]+)'"), None),
)


def environment_dependent(exc: BaseException, text: str) -> str | None:
    """The package a verdict depends on when verl failed only because this environment lacks it.

    Such verdicts are statements about the validator's environment, not the user's spec; the
    training environment on the workers decides. A package that *is* installed but refused
    (an unsupported vLLM version) stays an error: that is what verl will say on the workers too
    when the validator runs in their environment (``verl_python``).
    """
    if isinstance(exc, ImportError) and getattr(exc, "name", None):
        return str(exc.name).split(".")[0]
    for pattern, what in _MISSING_PACKAGE:
        m = pattern.search(text)
        if m:
            return what or m.group(1).split(".")[0]
    return None


# verl's arithmetic assertions (verl/utils/config.py validate_config), explained with the keys behind them.
_REAL_BATCH = re.compile(r"real_train_batch_size \((\d+)\) must be divisible by minimal possible batch size \((\d+)\)")
_MP_GPUS = re.compile(r"n_gpus \((\d+)\) must be divisible by model_parallel_size \((\d+)\) times "
                      r"context_parallel_size \((\d+)\)")


_INSTANTIATE = re.compile(r"^Error in call to target '[^']*':\s*\w+\((['\"])(?P<msg>.*)\1\)\s*(?:full_key: \S+)?\s*$", re.S)


def unwrap(text: str) -> str:
    """verl's own message out of Hydra's instantiate wrapper (``Error in call to target 'X': E("...")``)."""
    m = _INSTANTIATE.match(text.strip())
    return m.group("msg").replace("\\'", "'").replace('\\"', '"') if m else text


def explain(text: str, schema: Schema, cfg: Any) -> dict[str, Any]:
    """One of verl's refusals as an error naming the key, its value, the arithmetic and a valid value."""
    text = unwrap(text)
    m = _REAL_BATCH.search(text)
    if m:
        return _explain_real_batch(int(m.group(1)), int(m.group(2)), cfg)
    m = _MP_GPUS.search(text)
    if m:
        gpus, mp, cp = (int(g) for g in m.groups())
        per_node, nnodes = _get(cfg, "trainer.n_gpus_per_node"), _get(cfg, "trainer.nnodes")
        unit = mp * cp
        fix = _multiple_near(per_node, unit // math.gcd(unit, nnodes or 1)) if isinstance(per_node, int) else unit
        return err("trainer.n_gpus_per_node", per_node,
                   f"trainer.nnodes × trainer.n_gpus_per_node = {nnodes} × {per_node} = {gpus} GPUs must divide by "
                   f"actor megatron tensor_model_parallel_size × pipeline_model_parallel_size × "
                   f"context_parallel_size = {unit} (verl: {text}); e.g. trainer.n_gpus_per_node={fix}, or "
                   f"smaller parallel sizes")
    key = key_in(text, schema)
    hint = f" (set `{key}=...`)" if key and key in schema.leaves and key not in text else ""
    value = _get(cfg, key) if key else None
    return err(key, value if isinstance(value, str | int | float | bool) else None, f"verl: {text}{hint}")


def _explain_real_batch(real: int, minimal: int, cfg: Any) -> dict[str, Any]:
    tbs, n = _get(cfg, "data.train_batch_size"), _get(cfg, "actor_rollout_ref.rollout.n")
    nnodes, per_node = _get(cfg, "trainer.nnodes"), _get(cfg, "trainer.n_gpus_per_node")
    megatron = _get(cfg, "actor_rollout_ref.actor.strategy") == "megatron"
    why = ("the megatron data-parallel size × actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu" if megatron
           else f"the number of GPUs, trainer.nnodes × trainer.n_gpus_per_node = {nnodes} × {per_node}")
    fix = ""
    if isinstance(tbs, int) and isinstance(n, int) and n > 0:
        step = minimal // math.gcd(minimal, n)
        lower, upper = max(step, tbs // step * step), (tbs // step + 1) * step
        fix = f"; nearest valid data.train_batch_size: {lower}" + (f" or {upper}" if upper != lower else "")
    return err("data.train_batch_size", tbs,
               f"data.train_batch_size × actor_rollout_ref.rollout.n = {tbs} × {n} = {real} prompts' responses per "
               f"step must divide evenly by {minimal} ({why}){fix}")


def _multiple_near(value: int, unit: int) -> int:
    return max(unit, round(value / unit) * unit)


def _get(cfg: Any, key: str) -> Any:
    from omegaconf import OmegaConf

    try:
        return OmegaConf.select(cfg, key, default=None) if key else None
    except Exception:  # noqa: BLE001 - an unresolvable value: nothing to show
        return None


def key_in(text: str, schema: Schema) -> str:
    """The config key a verl message is about: the first one it names (verl often drops the prefix).

    Where verl names a deprecated key and its ``_per_gpu`` successor, the successor is returned.
    """
    hits: list[tuple[bool, int, int, str]] = []  # (names a section, not a leaf; position; longest first; key)
    for m in re.finditer(r"[A-Za-z_]\w*(?:\.\w+)+", text):
        name = m.group(0)
        full = name if schema.has(name) else next((k for k in schema.all_keys if k.endswith("." + name)), None)
        if full:
            hits.append((full not in schema.leaves, m.start(), -len(full), full))
    for alias, full in ALIASES.items():
        for m in re.finditer(rf"(?<![\w.]){alias}(?!\w)", text):
            hits.append((False, m.start(), -len(full), full))
    if not hits:
        return ""
    found = {h[3] for h in hits}
    key = min(hits)[3]
    return key + "_per_gpu" if key + "_per_gpu" in found else key


def fold_knock_on(rejected: list[dict[str, Any]], later: list[dict[str, Any]], schema: Schema) -> list[dict[str, Any]]:
    """Drop the later errors that follow from a refused override, noting them on the refusal instead.

    An override refused before composition (``ppo_micro_batch_size_per_gpuu=4``: unknown key) is left
    out, so verl then misses the value it meant to set and refuses too; that is one problem, not two.
    A later error is a knock-on when its key is the refused key's suggestion or the section holding it.
    """
    kept = []
    for e in later:
        cause = next((r for r in rejected if _related(r["key"], e["key"], schema)), None)
        if cause is None:
            kept.append(e)
        else:
            first = str(e["message"]).splitlines()[0]
            cause["message"] += f" (until it is fixed, verl also reports: {first})"
    return kept


def _related(refused: str, key: str, schema: Schema) -> bool:
    if not refused or not key:
        return False
    return key == refused or key in schema.suggest(refused) or key == refused.rpartition(".")[0]


def did_you_mean(keys: list[str]) -> str:
    return f"; did you mean {' or '.join(f'`{k}`' for k in keys)}?" if keys else ""


def err(key: str, value: Any, message: str) -> dict[str, Any]:
    """One finding in the shape the server reports per override: the key, the value given, why it is wrong."""
    return {"key": key, "value": value, "message": message}
