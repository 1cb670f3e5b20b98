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
import functools
import json
import math
import re
from pathlib import Path
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
# Keys verl renamed, moved, replaced or removed across releases, from its own history (see the file's "about").
RENAMES_FILE = Path(__file__).with_name("renames.json")
# Bare names verl uses in its messages for a config key.
ALIASES = {"real_train_batch_size": "data.train_batch_size", "train_batch_size": "data.train_batch_size"}


class Schema:
    """The flattened default config of one verl entry: leaf key -> default value, plus inner nodes."""

    def __init__(self, cfg: Any, name: str = "") -> None:
        from omegaconf import OmegaConf

        self.name = name  # the config it was composed from ("ppo_trainer", "sft_trainer_engine")
        self.family = "sft" if "sft" in name else "ppo"  # which trainer's history the rename table gives
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

    @functools.cached_property
    def by_last(self) -> dict[str, list[str]]:
        """Leaf keys by their last segment (``loss_agg_mode`` -> the actor's and the critic's): how verl's messages
        often name a key."""
        out: dict[str, list[str]] = {}
        for key in self.leaves:
            out.setdefault(key.rpartition(".")[2], []).append(key)
        return out

    def suggest(self, key: str, n: int = 3) -> list[str]:
        """Nearest existing keys: what verl renamed the key to, then whole-key similarity, then the same leaf
        name under another parent.

        A deprecated key is never offered (using it would clash with its successor, and verl is removing it):
        its successor is offered in its place.
        """
        out = [r for r in self.renamed_to(key) if r]
        out += difflib.get_close_matches(key, self.all_keys, n=n, cutoff=0.75)
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
        """The key to write instead of a deprecated one (``x.ppo_micro_batch_size`` →
        ``x.ppo_micro_batch_size_per_gpu``): verl's ``_per_gpu`` pairs and the table's deprecations."""
        entry = renames().get((self.family, key))
        if entry and entry.get("status") == "deprecated" and entry.get("new") and self.has(entry["new"]):
            return str(entry["new"])
        return key + "_per_gpu" if key + "_per_gpu" in self.leaves else key

    def renamed_to(self, key: str) -> list[str | None]:
        """What verl's history says replaced ``key`` here: [new key], [None] when it was removed, [] if unknown."""
        entry = renames().get((self.family, key))
        if entry is None or entry.get("status") == "deprecated":
            return []
        new = entry.get("new")
        return [new] if new is None or self.has(new) else []

    def safe_fix(self, key: str) -> str | None:
        """The key a one-click fix may write for an unknown ``key``: only where the meaning is known to stay —
        what verl's history renamed it to, or a spelling slip of a key under the same parent. A guess from
        similarity across the config (``retriever.url`` → ``reward.sandbox_fusion.url``) is never a fix: it
        stays text ("did you mean"), since applying it would change what the script does without a word."""
        renamed = [r for r in self.renamed_to(key) if r]
        return self.successor(renamed[0]) if renamed else self.sibling_typo(key)

    def sibling_typo(self, key: str) -> str | None:
        """The closest existing key under the same parent whose last segment is a near-miss of ``key``'s
        (a deprecated one is replaced by its successor)."""
        parent, _, leaf = key.rpartition(".")
        scored = [(difflib.SequenceMatcher(None, k.rpartition(".")[2], leaf).ratio(), k)
                  for k in self.all_keys if k.rpartition(".")[0] == parent]
        best = max((s for s in scored if s[0] >= 0.85), default=None)
        return self.successor(best[1]) if best else None


@functools.cache
def renames() -> dict[tuple[str, str], dict[str, Any]]:
    """The rename table by (trainer family, old key), keeping only what the installed verl has already done
    (an entry ``since`` a later verl is not news to this one: verl 0.4.1 still reads reward_model.*); empty
    if the file is missing (a stripped install)."""
    try:
        data = json.loads(RENAMES_FILE.read_text())
    except (OSError, ValueError):
        return {}
    mine = _version(installed_verl())
    return {(str(e["config"]), str(e["old"])): e for e in data.get("renames", [])
            if mine is None or _version(e.get("since") or "") is None or mine >= _version(e["since"])}  # type: ignore[operator]


@functools.cache
def installed_verl() -> str:
    try:
        import verl
    except ImportError:
        return ""
    return str(getattr(verl, "__version__", ""))


def _version(text: str) -> tuple[int, ...] | None:
    """``v0.3.0.post0`` / ``0.9.1`` -> (0, 3, 0) / (0, 9, 1); None when it is not a version."""
    m = re.match(r"v?(\d+)\.(\d+)(?:\.(\d+))?", text.strip())
    return tuple(int(g or 0) for g in m.groups()) if m else None


def rename_error(schema: Schema, prefix: str, key: str, value: str | None) -> dict[str, Any] | None:
    """A key from an older verl, with the name this verl reads it by and the value to give it (None: unknown)."""
    entry = renames().get((schema.family, key))
    if entry is None or entry.get("status") == "deprecated":
        return None
    new, since, last = entry.get("new"), entry.get("since") or "", entry.get("last")
    plus = "+" if entry.get("plus") else ""
    if plus and new == key and prefix in ("+", "++"):
        return None  # already written as this verl wants it
    history = f"verl {last} and older read '{key}'" if last else f"no verl release reads '{key}' (forks of verl did)"
    why = f" ({entry['why']})" if entry.get("why") else ""
    written = f"{prefix}{key}" + (f"={value}" if value is not None else "")
    if new is None:
        return err(key, value, f"{history}; verl {since} removed it{why}: delete {prefix}{key}", edit(written, ""))
    if not plus and not schema.has(new):
        return None
    shown = value
    if value is not None:
        shown = (entry.get("values") or {}).get(str(value).strip().strip("'\"").lower(), value)
    write = f"write {plus}{new}={shown}" if shown is not None else f"use {plus}{new}"
    # the key alone where the value stays (it is then found as written, quotes and all), else key=value
    fix = (edit(written, f"{plus}{new}={shown}") if shown is not None and shown != value
           else edit(f"{prefix}{key}", f"{plus}{new}"))
    also = [k for k in entry.get("also") or [] if schema.has(k)]
    if also:
        write += f" (and {', '.join(also)}, which it was split into)"
    if not last:  # a fork's key: no release to date the change by
        return err(key, value, f"{history}; verl calls it `{new}`{why}: {write}", fix)
    named = "it must be written with a leading +" if new == key else f"it is `{new}`"
    return err(key, value, f"{history}; since verl {since} {named}{why}: {write}", fix)


def deprecation_warning(schema: Schema, key: str) -> str | None:
    """A key this verl still composes but has superseded (or ignores), with what to write instead."""
    entry = renames().get((schema.family, key))
    if entry is None or entry.get("status") != "deprecated" or not schema.has(key):
        return None
    new = entry.get("new")
    instead = f"; write {new}" if new and schema.has(new) else ""
    return f"{key} is deprecated in verl ({entry.get('why') or 'superseded'}){instead}"


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
    near = [] if schema.has(key) else schema.suggest(key)
    fix_to = schema.safe_fix(key) if key and near else None
    return err(key, None, f"verl/Hydra: {text}{did_you_mean(near)}", edit(key, fix_to) if fix_to else None)


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
    key = key_in(text, schema) or _key_by_value(text, schema, cfg)
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


def _key_by_value(text: str, schema: Schema, cfg: Any) -> str:
    """The key a message names by its last segment and the value written there (verl: ``Invalid loss_agg_mode:
    foo``): the one leaf of that name whose value is the user's (not verl's default, not drawn from another key)
    and a word, not a number ("greater than 0" is no value), found in the message; "" when none or several are."""
    hits = []
    for word in dict.fromkeys(re.findall(r"[A-Za-z_]\w*", text)):
        for key in schema.by_last.get(word, ()):
            raw = raw_value(cfg, key)
            if not isinstance(raw, str) or "${" in raw or raw == schema.leaves[key] or _is_number(raw):
                continue
            if re.search(rf"(?<![\w.-]){re.escape(raw)}(?![\w.-])", text):
                hits.append(key)
    return hits[0] if len(hits) == 1 else ""


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def raw_value(cfg: Any, key: str) -> Any:
    """The value of ``key`` as the config holds it: an interpolation as its ``${...}`` text, not resolved."""
    from omegaconf import OmegaConf

    parent, _, leaf = key.rpartition(".")
    try:
        node = OmegaConf.select(cfg, parent) if parent else cfg
        if node is None or leaf not in node:
            return None
        if not OmegaConf.is_interpolation(node, leaf):
            return node[leaf]
        return OmegaConf.to_container(node, resolve=False)[leaf]  # type: ignore[index]
    except Exception:  # noqa: BLE001 - not a section: nothing to show
        return None


def fold_knock_on(rejected: list[dict[str, Any]], later: list[dict[str, Any]], schema: Schema) -> list[dict[str, Any]]:
    """Drop the later errors that follow from a refused override, noting them on the refusal instead.

    An override refused before composition (``ppo_mini_batchsize=4``: unknown key) is left out, so verl
    then runs with the default of the key it meant to set and may refuse that default ("train_batch_size
    (16) must be >= ppo_mini_batch_size (256)"): one problem, not two. A later error is a knock-on when
    its key, or a key its message names, is the refused key's suggestion or the section holding it.
    """
    kept = []
    for e in later:
        cause = next((r for r in rejected if _related(r["key"], e, schema)), None)
        if cause is None:
            kept.append(e)
        else:
            first = str(e["message"]).splitlines()[0]
            cause["message"] += f" (until it is fixed, verl also reports: {first})"
    return kept


def _related(refused: str, later: dict[str, Any], schema: Schema) -> bool:
    key = str(later.get("key") or "")
    if not refused:
        return False
    meant = schema.suggest(refused)
    if key and (key == refused or key in meant or key == refused.rpartition(".")[0]):
        return True
    text = str(later.get("message") or "")
    return any(re.search(rf"(?<![\w]){re.escape(m.rpartition('.')[2])}(?![\w])", text) for m in meant[:1])


def did_you_mean(keys: list[str]) -> str:
    return f"; did you mean {' or '.join(f'`{k}`' for k in keys)}?" if keys else ""


def err(key: str, value: Any, message: str, fix: dict[str, str] | None = None) -> dict[str, Any]:
    """One finding in the shape the server reports per override: the key, the value given, why it is wrong,
    and (``fix``) the one edit the message proposes, so a client applies it without parsing English."""
    out = {"key": key, "value": value, "message": message}
    if fix is not None:
        out["fix"] = fix
    return out


def edit(old: str, new: str) -> dict[str, str]:
    """The fix "write ``new`` where ``old`` is written" (``new`` "": delete ``old``); see FieldError.fix."""
    return {"replace": old, "with": new}
