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
        """Nearest existing keys: whole-key similarity first, then same leaf name under another parent."""
        out = difflib.get_close_matches(key, self.all_keys, n=n, cutoff=0.75)
        leaf = key.rsplit(".", 1)[-1]
        by_leaf = [k for k in self.all_keys if k.rsplit(".", 1)[-1] == leaf]
        by_leaf += [k for k in self.all_keys
                    if difflib.SequenceMatcher(None, k.rsplit(".", 1)[-1], leaf).ratio() >= 0.85 and k not in by_leaf]
        for k in by_leaf:
            if k not in out:
                out.append(k)
        return out[:n]

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
    if v.lower() in ("null", "none") or v.startswith("${"):
        return []
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


def compose_error(exc: BaseException, schema: Schema) -> dict[str, Any]:
    """A Hydra composition failure as one error, with its cause and a did-you-mean for the key it names."""
    text = str(exc).strip()
    cause = exc.__cause__ or exc.__context__
    if cause is not None and str(cause).strip() and str(cause).strip() not in text:
        text = f"{text} ({str(cause).strip().splitlines()[0]})"
    m = re.search(r"'([A-Za-z_][\w.\-]*)'", text)
    key = m.group(1) if m else key_in(text, schema)
    hint = "" if schema.has(key) else did_you_mean(schema.suggest(key))
    return err(key, None, f"verl/Hydra: {text}{hint}")


def key_in(text: str, schema: Schema) -> str:
    """The config key a verl message is about: the first one it names (verl often drops the prefix).

    Where verl names a deprecated key and its ``_per_gpu`` successor, the successor is returned.
    """
    hits: list[tuple[int, int, str]] = []
    for m in re.finditer(r"[A-Za-z_]\w*(?:\.\w+)+", text):
        name = m.group(0)
        full = name if schema.has(name) else next((k for k in schema.all_keys if k.endswith("." + name)), None)
        if full:
            hits.append((m.start(), -len(full), full))
    for alias, full in ALIASES.items():
        for m in re.finditer(rf"(?<![\w.]){alias}(?!\w)", text):
            hits.append((m.start(), -len(full), full))
    if not hits:
        return ""
    found = {h[2] for h in hits}
    key = min(hits)[2]
    return key + "_per_gpu" if key + "_per_gpu" in found else key


def did_you_mean(keys: list[str]) -> str:
    return f"; did you mean {' or '.join(f'`{k}`' for k in keys)}?" if keys else ""


def err(key: str, value: Any, message: str) -> dict[str, Any]:
    """One finding in the shape the server reports per override: the key, the value given, why it is wrong."""
    return {"key": key, "value": value, "message": message}
