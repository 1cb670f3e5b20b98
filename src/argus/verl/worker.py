"""The verl validator child: imports verl once, then answers JSON-lines requests on stdin/stdout.

Runs as ``<verl_python> -m argus.verl.worker`` inside the *training* environment,
so the verl that judges a task is the verl that will run it. It must stay
self-contained (stdlib + verl + hydra + omegaconf): the training environment has
none of the server's dependencies; the only argus modules it imports are its
siblings ``argus.verl.messages`` (the error wording), ``argus.verl.resolve``
(resolved paths) and ``argus.verl.rounds`` (more than verl's first refusal), held to the same rule.
Importing verl costs seconds, composing and validating a config well under one,
hence a warm process.

A training environment may hold an older verl than the server's (0.4.1 as well as
0.9.1 are exercised by the tests). What differs between them (where the PPO checks
live, which SFT trainer exists, how estimators are registered) is decided by what the
installed verl has — a module, an attribute — never by its version string.

Protocol: one JSON object per line in, one per line out, same ``id``.
  {"op": "info"}                       -> {"verl_version", "configs", "reward_moved", "estimators",
                                           "entries": {entry module: config it composes}}
  {"op": "validate", "config": "ppo_trainer" | "sft_trainer_engine" | "sft_trainer" | ...,
   "overrides": ["key=value", "+key=value", ...]}
                                       -> {"errors": [{"key", "value", "message"}], "resolved": {...},
                                           "paths": [{"key", "value"}]}  (see argus.verl.resolve)
  {"op": "keys", "config": name}      -> {"keys": [{"key", "default", "type", "deprecated"?, "use"?}]}
                                          (every leaf of verl's composed config: the editor's completion)
  {"op": "find_module", "module": m}   -> {"found": bool, "replacement": str | None}  (nothing imported)
  {"op": "sleep", "seconds": s[, "burn_every": b]}
                                       -> used by tests to exercise the caller's CPU budget: a hang, or with
                                          burn_every a busy machine's slow answer (a little CPU every b s)
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import gc
import importlib
import io
import json
import os
import re
import select
import sys
import tempfile
import time
import traceback
import types
import warnings
from collections.abc import Callable
from typing import Any

from argus.verl.messages import (
    Schema,
    compose_error,
    deprecation_warning,
    did_you_mean,
    edit,
    environment_dependent,
    err,
    explain,
    fold_knock_on,
    installed_verl,
    key_in,
    raw_value,
    rename_error,
    value_errors,
)
from argus.verl.resolve import RESOLVED_KEYS, hydra_values, lock_resolvers, resolved_paths
from argus.verl.rounds import run_rounds, set_value

_OVERRIDE = re.compile(r"^(?P<prefix>\+\+|\+|~)?(?P<key>[A-Za-z_][\w.\-/@]*)(?:=(?P<value>.*))?$", re.S)


def _not_composed(errors: list[dict[str, Any]]) -> dict[str, Any]:
    """The answer when Hydra could not compose the config: the server then judges files as written."""
    return {"errors": errors, "warnings": [], "resolved": {}, "paths": [], "composed": False}


class Validator:
    def __init__(self) -> None:
        warnings.filterwarnings("ignore")
        with contextlib.redirect_stdout(sys.stderr):
            from hydra import initialize_config_module
            from hydra.core.global_hydra import GlobalHydra

            import verl  # noqa: F401 - the expensive import, paid once

            GlobalHydra.instance().clear()
            initialize_config_module(config_module="verl.trainer.config", version_base=None)
        _parse_config_files_once()
        _compose_defaults_once()
        _parse_interpolations_once()
        lock_resolvers()
        self._schemas: dict[str, Schema] = {}
        self._user_schemas: dict[tuple[str, int], Schema] = {}
        self._warm()

    # What a first task of each entry would otherwise pay on top of its own validation: verl's checks
    # import ~800 modules lazily (its worker configs pull in transformers, accelerate, datasets: ~2 s) and a
    # config's first compose reads its defaults tree (megatron: ~0.4 s). Paid here, before "ready".
    # Each verl ships some of these configs (sft_trainer before 0.9, sft_trainer_engine from then on).
    WARM = (("ppo_trainer", "ppo"), ("ppo_megatron_trainer", "ppo"), ("sft_trainer_engine", "sft"),
            ("sft_trainer", "sft"))

    def _warm(self) -> None:
        packaged = set(packaged_configs())
        for name, kind in self.WARM:
            if name not in packaged:
                continue
            try:
                self.validate(name, ["trainer.nnodes=1", "trainer.n_gpus_per_node=8"], kind)
            except Exception:  # noqa: BLE001, S112 - a config this verl lacks: its first request reports it
                continue

    def compose(self, name: str, overrides: list[str], *, with_hydra: bool = False) -> Any:
        from hydra import compose

        with contextlib.redirect_stdout(sys.stderr):
            return compose(config_name=name, overrides=overrides, return_hydra_config=with_hydra)

    def schema(self, name: str) -> Schema:
        if name not in self._schemas:
            self._schemas[name] = Schema(self.compose(name, []), name)
        return self._schemas[name]

    def estimators(self) -> list[str]:
        return advantage_estimators()

    def info(self) -> dict[str, Any]:
        import verl

        s = self.schema("ppo_trainer")
        return {
            "verl_version": getattr(verl, "__version__", "unknown"),
            "configs": packaged_configs(),
            # verl reads reward.custom_reward_function.* when the schema has it (0.9+), the top level before.
            "reward_moved": s.has("reward.custom_reward_function.path"),
            "estimators": self.estimators(),
            "entries": entries(),
            "data_formats": data_formats(),
        }

    # ------------------------------------------------------------ validate

    def validate(self, name: str, overrides: list[str], kind: str | None = None,
                 files: dict[str, str] | None = None, folder: str = "") -> dict[str, Any]:
        """Compose ``name`` (verl's packaged config, or the user's from ``files``) with the overrides,
        resolve it, and run the start-up validation of the entry ``kind`` ("ppo" / "sft")."""
        kind = kind or {config: k for _, config, k in ENTRIES}.get(name)
        if files is None:
            return self._validate(name, overrides, kind, self.schema(name))
        bad = _searchpath_errors(files.get(f"{name}.yaml", ""), f"{folder}/{name}.yaml")
        if bad:
            return _not_composed(bad)
        with _user_config_dir(files):
            key = (name, hash(tuple(sorted(files.items()))))
            if key not in self._user_schemas:
                self._user_schemas.clear()  # one user's folder at a time is plenty
                try:
                    self._user_schemas[key] = Schema(self.compose(name, []), name)
                except Exception as exc:  # noqa: BLE001 - the user's own config does not compose
                    return _not_composed([compose_error(exc, None)])
            answer = self._validate(name, overrides, kind, self._user_schemas[key])
        return self._old_copy(answer, name, self._user_schemas[key], folder)

    # How many keys of verl's own config a user's config of that name may lack before it is an old copy.
    OLD_COPY_MISSING = 10

    def _old_copy(self, answer: dict[str, Any], name: str, mine: Schema, folder: str) -> dict[str, Any]:
        """A user's config that is a full copy of an older verl's (it lacks many keys this verl reads) makes verl
        fail on the first missing key ("Key 'enable' is not in struct, full_key: critic.enable"): say what it is
        and what to do instead, once, in place of those raw errors."""
        if not answer["errors"] or name not in packaged_configs():
            return answer
        missing = sorted((k for k in self.schema(name).leaves if not mine.has(k) and "_target_" not in k),
                         key=lambda k: (k.count("."), k))
        if len(missing) < self.OLD_COPY_MISSING:
            return answer
        raw = [e for e in answer["errors"] if "not in struct" in str(e["message"]) or "Missing key" in str(e["message"])]
        first = str(raw[0]["message"]).splitlines()[0] if raw else ""
        answer["errors"] = [e for e in answer["errors"] if e not in raw] + [err(
            "", f"--config-path={folder}",
            f"{folder}/{name}.yaml looks like a full copy of an older verl's {name} config: it lacks {len(missing)} "
            f"keys verl {installed_verl()} reads (e.g. {', '.join(missing[:3])})"
            + (f", and verl stops at the first one ({first})" if first else "")
            + f". Keep only your changes: a file of another name (e.g. my_{name}.yaml) that starts with "
            f"`hydra: {{searchpath: [pkg://verl.trainer.config]}}` and `defaults: [{name}, _self_]`, run with "
            f"--config-name=my_{name}; or drop --config-path and write the changes as overrides")]
        return answer

    def _validate(self, name: str, overrides: list[str], kind: str | None, schema: Schema) -> dict[str, Any]:
        errors: list[dict[str, Any]] = []
        keep: list[str] = []
        notes: list[str] = []
        for item in overrides:
            bad = self._precheck(schema, item)
            if bad:
                errors.extend(bad)
            else:
                keep.append(item)
                note = self._ignored(schema, item)
                if note:
                    notes.append(note)
        refused = list(errors)
        try:
            full = self.compose(name, keep, with_hydra=True)  # hydra.run.dir etc. are checked too
        except Exception as exc:  # noqa: BLE001 - Hydra's composition errors come in several types
            errors.append(compose_error(exc, schema))
            return _not_composed(errors)
        hydra = hydra_values(full)
        cfg = _without_hydra(full)  # what the trainer's main() receives
        paths, unresolvable = resolved_paths(cfg, hydra)
        errors.extend(unresolvable)
        found, warned = self._verl_checks(kind, cfg, schema)
        errors.extend(fold_knock_on(refused, found, schema))
        return {"errors": errors, "warnings": notes + warned, "resolved": _resolved(cfg), "paths": paths}

    @staticmethod
    def _ignored(schema: Schema, item: str) -> str | None:
        """The warning for an override verl accepts and then ignores, with what it reads instead: one rule for a
        deprecated key this verl still composes and for an older verl's key added with + (verl's own recipes
        write ``+actor_rollout_ref.rollout.n_val``: refusing it refused scripts verl runs)."""
        m = _OVERRIDE.match(item)
        if not m or m.group("value") is None:
            return None
        prefix, key, value = m.group("prefix") or "", m.group("key"), m.group("value")
        note = deprecation_warning(schema, key)
        if note is None and prefix in ("+", "++") and not schema.has(key):
            old = rename_error(schema, prefix, key, value)
            note = old and f"verl accepts {prefix}{key} and ignores it: {old['message']}"
        return note

    def _precheck(self, schema: Schema, item: str) -> list[dict[str, Any]]:
        m = _OVERRIDE.match(item)
        if not m or "/" in m.group("key") or "@" in m.group("key") or m.group("key").startswith("hydra."):
            return []  # config-group overrides, Hydra's own settings and odd syntax: Hydra itself decides
        prefix, key, value = m.group("prefix") or "", m.group("key"), m.group("value")
        if not schema.has(key):
            old = rename_error(schema, prefix, key, value)  # a key of an older verl: its name here, not a guess
            if old is not None:  # with + verl adds it and never reads it: a warning (_ignored); else Hydra refuses
                return [] if prefix in ("+", "++") else [old]
        if prefix in ("", "~") and not schema.has(key):
            near = schema.suggest(key)
            what = "cannot delete" if prefix == "~" else "cannot override"
            fix_to = schema.safe_fix(key) if near else None  # a one-click fix only where the meaning stays
            return [err(key, value, f"unknown key: verl's {{cfg}} has no '{key}' ({what} it){did_you_mean(near)}",
                        edit(key, fix_to) if fix_to else None)]
        if prefix == "+" and (key in schema.nodes or schema.leaves.get(key) is not None):
            # Hydra: "Could not append to config. An item is already at ..." (a null default may be appended
            # to), and then nothing else would be checked
            return [err(key, value, f"'+{key}' adds a key verl already has; write {key}={value} (without +) "
                                    "to set it", edit(f"+{key}", key))]
        if prefix in ("+", "++") and not schema.has(key):
            near = schema.sibling_typo(key)
            if near:
                return [err(key, value,
                            f"'{prefix}{key}' adds a key verl never reads; did you mean `{near}`? "
                            f"(write {near}={value})", edit(f"{prefix}{key}", near))]
            return []
        if value is None or key not in schema.leaves:
            return []
        return value_errors(schema, key, value)

    def _verl_checks(self, kind: str | None, cfg: Any, schema: Schema) -> tuple[list[dict[str, Any]], list[str]]:
        """verl's own start-up checks for the entry: (errors, warnings about what this environment cannot check)."""
        errors: list[dict[str, Any]] = []
        for key in ("trainer.n_gpus_per_node", "trainer.nnodes"):
            value = _select(cfg, key) if key in schema.leaves else None
            if value is None:
                continue
            if not isinstance(value, int) and not str(value).strip().isdigit():
                errors.append(err(key, value, "expects a whole number ≥ 1 (verl multiplies nodes by GPUs per node)"))
            elif int(value) < 1:
                errors.append(err(key, value, "must be ≥ 1: verl training needs at least one GPU on at least one node"))
        if errors:
            return errors, []
        if kind == "ppo":
            est = str(_select(cfg, "algorithm.adv_estimator"))
            known = self.estimators()
            if est not in known:
                near = difflib.get_close_matches(est, known, n=2, cutoff=0.6)
                errors.append(err("algorithm.adv_estimator", est,
                                  f"unknown advantage estimator{did_you_mean(near)} (verl {len(known)} registered: "
                                  f"{', '.join(known)})", edit(f"={est}", f"={near[0]}") if near else None))
            errors.extend(_reward_manager_errors(cfg, schema))
            found, warned = _run_verl(lambda: _ppo_check()(cfg), schema, cfg)
            return errors + found, warned
        if kind == "sft":
            return _run_verl(lambda: _sft_check(cfg)(cfg), schema, cfg)
        return errors, []


# The entry modules Argus validates: the config each one's @hydra.main composes, and which start-up
# checks it runs. A verl has some of them (verl.trainer.sft_trainer replaced fsdp_sft_trainer in 0.9).
ENTRIES = (
    ("verl.trainer.main_ppo", "ppo_trainer", "ppo"),
    ("verl.trainer.sft_trainer", "sft_trainer_engine", "sft"),
    ("verl.trainer.fsdp_sft_trainer", "sft_trainer", "sft"),
)

# Entry modules verl removed, and what replaced them (shown in the error).
REPLACED_MODULES = {
    "verl.trainer.fsdp_sft_trainer": "verl.trainer.sft_trainer",  # removed in verl 0.9
}


def config_keys(schema: Schema) -> list[dict[str, Any]]:
    """Every leaf key of a composed config with its default and type, and whether this verl superseded it
    (``use``: what to write instead): what the New Task editor completes as the user types a key."""
    out = []
    for key in sorted(schema.leaves):
        if "_target_" in key:
            continue  # Hydra's instantiation plumbing, never something a user sets
        default = schema.leaves[key]
        item: dict[str, Any] = {"key": key, "default": default if isinstance(default, str | int | float | bool)
                                or default is None else json.loads(json.dumps(default, default=str)),
                                "type": type(default).__name__ if default is not None else "null"}
        if deprecation_warning(schema, key) is not None:
            item["deprecated"] = True
            successor = schema.successor(key)
            if successor != key:
                item["use"] = successor
        out.append(item)
    return out


def entries() -> dict[str, str]:
    """Which of ``ENTRIES`` this verl has, and the config each composes: the server picks the config (and
    the checks) per entry from this, as training environments hold different verls."""
    packaged = set(packaged_configs())
    return {module: config for module, config, _ in ENTRIES if config in packaged and _module_exists(module)}


def data_formats() -> list[str]:
    """The data file suffixes this verl's RLHFDataset reads: parquet, and JSON where its loader picks the reader
    by suffix (verl 0.7+: ``.json``; 0.9+: ``.jsonl`` too). Read from its source, not imported (no ``datasets``)."""
    try:
        spec = importlib.util.find_spec("verl.utils.dataset.rl_dataset")
        text = open(spec.origin).read() if spec and spec.origin else ""  # noqa: PTH123, SIM115 - tiny read
    except (ImportError, OSError, ValueError):
        return [".parquet"]
    return [".parquet"] + [s for s in (".json", ".jsonl") if f'endswith("{s}")' in text]


# Where each verl keeps its reward managers: (the config key naming one, the package whose import registers the
# built-in ones, its registry module, the registry's name). verl 0.9: the reward loop's; before: the workers'.
REWARD_MANAGERS = (
    ("reward.reward_manager.name", "verl.experimental.reward_loop.reward_manager",
     "verl.experimental.reward_loop.reward_manager.registry", "REWARD_MANAGER"),
    ("reward_model.reward_manager", "verl.workers.reward_manager", "verl.workers.reward_manager.registry",
     "REWARD_MANAGER_REGISTRY"),
)


def _reward_manager_errors(cfg: Any, schema: Schema) -> list[dict[str, Any]]:
    """verl looks the reward manager up by name when the trainer builds it ("Unknown reward manager: x"), after
    the task got its GPUs: look it up now, in the registry of the verl that will run it."""
    for key, package, registry, attr in REWARD_MANAGERS:
        if not schema.has(key):
            continue
        name = _select(cfg, key)
        source = _select(cfg, key.rpartition(".")[0] + ".source") if key.endswith(".name") else "register"
        if name is None or source != "register":
            return []  # verl's default, or a class of the user's own (source: importlib)
        try:
            importlib.import_module(package)
            known = sorted(getattr(importlib.import_module(registry), attr))
        except Exception:  # noqa: BLE001 - a verl without this registry: nothing to compare with
            return []
        if str(name) in known:
            return []
        hint = did_you_mean(difflib.get_close_matches(str(name), known, n=2, cutoff=0.6))
        own = (f"; a manager of your own: {key.rpartition('.')[0]}.source=importlib with "
               f"{key.rpartition('.')[0]}.module.path=$HOME/code/<file>.py" if key.endswith(".name") else "")
        return [err(key, name, f"unknown reward manager{hint} (this verl registers: {', '.join(known)}){own}")]
    return []


def find_module(module: str) -> dict[str, Any]:
    """Whether ``python3 -m module`` would find it here, and what replaced it when it is missing.

    A replacement is named only when the module is missing *in this environment* and the
    replacement is present in it: an older verl still has ``fsdp_sft_trainer``.
    """
    if _module_exists(module):
        return {"found": True, "replacement": None}
    replacement = REPLACED_MODULES.get(module)
    return {"found": False, "replacement": replacement if replacement and _module_exists(replacement) else None}


def _module_exists(module: str) -> bool:
    """Whether ``python3 -m module`` would find it here, *without importing it* (nor its parents).

    Each level is looked up with the path finder in its parent's search path, as the import
    system would, so no package ``__init__`` runs: the name is user input.
    """
    import importlib.machinery
    import importlib.util

    parts = module.split(".")
    if not all(p.isidentifier() for p in parts):
        return False
    spec = importlib.util.find_spec(parts[0])  # a top-level name: looked up, not imported
    for i in range(1, len(parts)):
        search = spec.submodule_search_locations if spec is not None else None
        if search is None:
            spec = None
            break
        spec = importlib.machinery.PathFinder.find_spec(".".join(parts[: i + 1]), list(search))
    if spec is not None and spec.submodule_search_locations is not None:  # a package runs its __main__
        spec = importlib.machinery.PathFinder.find_spec(module + ".__main__", list(spec.submodule_search_locations))
    return spec is not None


def packaged_configs() -> list[str]:
    """The config names verl ships (``--config-name`` without ``--config-path``, or with ``config``)."""
    from importlib.resources import files

    return sorted(p.name[:-5] for p in files("verl.trainer.config").iterdir()
                  if p.name.endswith(".yaml") and not p.name.startswith("_"))


@contextlib.contextmanager
def _user_config_dir(files: dict[str, str]) -> Any:
    """Hydra initialised on a copy of the user's config folder, then back on verl's packaged configs.

    The working folder is an empty one meanwhile: ``file://relative`` search paths resolve against it,
    as they would against the task's job folder (where verl's configs are not).
    """
    import shutil

    from hydra import initialize_config_dir, initialize_config_module
    from hydra.core.global_hydra import GlobalHydra

    tmp = tempfile.mkdtemp(prefix="argus-cfg-")
    cwd = os.getcwd()
    try:
        root = os.path.join(tmp, "config")
        for rel, text in files.items():
            path = os.path.normpath(os.path.join(root, rel))
            if not path.startswith(root + os.sep):
                continue  # the server sends relative names; anything else is not ours to write
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)
        os.makedirs(os.path.join(tmp, "cwd"))
        os.chdir(os.path.join(tmp, "cwd"))
        GlobalHydra.instance().clear()
        with initialize_config_dir(config_dir=root, version_base=None):
            yield
    finally:
        os.chdir(cwd)
        GlobalHydra.instance().clear()
        with contextlib.redirect_stdout(sys.stderr):
            initialize_config_module(config_module="verl.trainer.config", version_base=None)
        shutil.rmtree(tmp, ignore_errors=True)


def _searchpath_errors(text: str, shown: str) -> list[dict[str, Any]]:
    """A ``file://`` search path relative to the working folder finds nothing where a task runs."""
    from omegaconf import OmegaConf

    try:
        doc = OmegaConf.create(text)
        entries = OmegaConf.select(doc, "hydra.searchpath", default=None) or []
    except Exception:  # noqa: BLE001 - an unparsable file is reported by Hydra's own compose
        return []
    out = []
    for entry in entries:
        e = str(entry)
        if e.startswith("file://") and not e[len("file://"):].startswith("/"):
            out.append(err("hydra.searchpath", e, f"{shown} searches {e}, a folder relative to where the task "
                           "runs ($HOME/jobs/<task>), where verl's configs are not: write "
                           "pkg://verl.trainer.config to use verl's packaged configs"))
    return out


def _parse_config_files_once() -> None:
    """Keep verl's packaged YAML files parsed: Hydra re-reads and re-parses (pure-Python YAML)
    all ~30 of them on every compose, most of a request's time. The files are package data and
    cannot change while this process lives; each compose gets its own deep copy."""
    import copy
    import dataclasses

    from hydra._internal.core_plugins.importlib_resources_config_source import ImportlibResourcesConfigSource

    original = ImportlibResourcesConfigSource.load_config
    parsed: dict[tuple[str, str], Any] = {}

    def load_config(self: Any, config_path: str) -> Any:
        key = (self.path, config_path)
        if key not in parsed:
            parsed[key] = original(self, config_path)
        result = parsed[key]
        return dataclasses.replace(result, config=copy.deepcopy(result.config), header=dict(result.header))

    ImportlibResourcesConfigSource.load_config = load_config  # type: ignore[method-assign]


def _compose_defaults_once() -> None:
    """Build each defaults tree (which files, in which packages) and its merged config once.

    Hydra composes in two steps: the defaults list (which YAML files, under which packages —
    changed only by config-group overrides such as ``actor@actor_rollout_ref.actor=megatron``) and
    the merge of those files, then it applies the plain ``key=value`` overrides to the result. The
    first two steps are the same for every task that names the same config and group overrides:
    they are cached here, keyed by the search path, the config name and the group overrides, and
    every request gets its own copy of the merged config to apply its overrides to — exactly what
    Hydra would have built (``tests/verl/test_compose_cache.py`` compares the two on the corpus).
    """
    import copy

    from hydra._internal import config_loader_impl as loader
    from hydra._internal.defaults_list import DefaultsList

    original_defaults = loader.create_defaults_list
    original_merge = loader.ConfigLoaderImpl._compose_config_from_defaults_list
    trees: dict[tuple[Any, ...], Any] = {}
    merged: dict[tuple[Any, ...], Any] = {}
    spares.clear()

    def sources(repo: Any) -> tuple[str, ...]:
        return tuple(f"{s.scheme()}://{s.path}" for s in repo.get_sources())

    def create_defaults_list(repo: Any, config_name: Any, overrides_list: list[Any], prepend_hydra: bool,
                             skip_missing: bool) -> Any:
        values = [o for o in overrides_list if not o.is_sweep_override()
                  and (isinstance(o.value(), dict) or not repo.group_exists(o.key_or_group))]
        groups = [o for o in overrides_list if o not in values]
        key = (sources(repo), config_name, tuple(o.input_line for o in groups), prepend_hydra, skip_missing)
        if key not in trees:
            if len(trees) > 64:
                trees.clear()
            trees[key] = original_defaults(repo, config_name, groups, prepend_hydra, skip_missing)
        base = trees[key]
        return DefaultsList(defaults=base.defaults, config_overrides=values, defaults_tree=base.defaults_tree,
                            overrides=base.overrides)

    def compose_config_from_defaults_list(self: Any, defaults: list[Any], repo: Any) -> Any:
        key = (sources(repo), tuple(repr(d) for d in defaults))
        if key not in merged:
            if len(merged) > 64:
                merged.clear()
                spares.clear()
            merged[key] = original_merge(self, defaults, repo)
        spare = spares.pop(key, None)
        # the copy made while idle, once (the next one is made after this answer): this config's next use
        spares[key] = _Spare(merged[key])
        if len(spares) > SPARES:
            del spares[next(iter(spares))]  # the least recently used config's copy goes first
        return spare.copy if spare is not None and spare.copy is not None else copy.deepcopy(merged[key])

    loader.create_defaults_list = create_defaults_list  # type: ignore[assignment]
    loader.ConfigLoaderImpl._compose_config_from_defaults_list = compose_config_from_defaults_list  # type: ignore[method-assign]


# The merged configs' spare copies (``_compose_defaults_once``), by cache key, each made between requests
# (``make_spares``). Deep-copying verl's merged config (~14 000 nodes) was half of
# a compose; made while the process waits for the next request, the request takes it ready (issue 37: the New
# Task verdict within 0.5 s of the last keystroke). Only the configs used last keep one.
SPARES = 2


class _Spare:
    """A merged config's next copy: ``copy`` once made (``make``), None until then."""

    def __init__(self, original: Any) -> None:
        self.original, self.copy = original, None

    def make(self) -> None:
        import copy

        self.copy = copy.deepcopy(self.original)


spares: dict[tuple[Any, ...], _Spare] = {}


def make_spares(ready: Callable[[], bool]) -> int:
    """Make the missing spare copies until ``ready()`` says a request is waiting; how many were made. A copy
    already started is finished (one deep copy: tens of milliseconds), so a request waits that long at most."""
    made = 0
    for spare in list(spares.values()):
        if ready():
            break
        if spare.copy is None:
            spare.make()
            made += 1
    return made


def _parse_interpolations_once() -> None:
    """Keep OmegaConf's parse trees of interpolation strings (``${oc.select:...}``): its ANTLR parser is
    pure Python and verl's config holds ~140 interpolations, each parsed again on every resolve. A parse
    tree depends only on its string and is only read by the resolver that walks it."""
    from omegaconf import base, grammar_parser

    cached = functools.lru_cache(maxsize=4096)(grammar_parser.parse)
    base.parse = cached  # type: ignore[attr-defined]


def advantage_estimators() -> list[str]:
    """The names ``algorithm.adv_estimator`` may take in this verl.

    verl registers its estimators in ``core_algos.ADV_ESTIMATOR_REGISTRY`` (what 0.9's trainer looks
    them up in); a verl without the registry compares with the ``AdvantageEstimator`` enum its
    ``ray_trainer`` imports, so those are the names it accepts.
    """
    from verl.trainer.ppo import core_algos

    registry = getattr(core_algos, "ADV_ESTIMATOR_REGISTRY", None)
    if registry is not None:
        return sorted(registry)
    from verl.trainer.ppo.ray_trainer import AdvantageEstimator

    return sorted(str(e.value) for e in AdvantageEstimator)


def _has(module: str, attr: str) -> bool:
    """Whether this verl's ``module`` defines ``attr`` (the module is imported: verl's own, cached once warm)."""
    try:
        return hasattr(importlib.import_module(module), attr)
    except ImportError:
        return False


class _NoCheck(Exception):  # noqa: N818 - a verdict, not a failure
    """This verl has none of the start-up checks the worker knows how to call: a warning, not an error."""


def _ppo_check() -> Callable[[Any], None]:
    """verl's PPO start-up checks as this verl has them: ``verl.utils.config.validate_config`` (0.9), or
    the trainer's own ``RayPPOTrainer._validate_config`` before they were split out of it (0.4)."""
    if _has("verl.utils.config", "validate_config"):
        return _validate_ppo
    from verl.trainer.ppo.ray_trainer import RayPPOTrainer  # an ImportError here: the environment decides

    if hasattr(RayPPOTrainer, "_validate_config"):
        return _validate_ppo_legacy
    raise _NoCheck("this verl has neither verl.utils.config.validate_config nor RayPPOTrainer._validate_config")


def _validate_ppo_legacy(cfg: Any) -> None:
    """``RayPPOTrainer._validate_config`` as the trainer runs it, on a stand-in trainer.

    That method reads only ``self.config``, ``self.use_critic`` and ``self.use_reference_policy``,
    so no trainer (Ray, workers, datasets) is built. The two flags are derived as main_ppo and the
    trainer derive them: a critic for GAE, a reference policy for a KL reward or a KL loss. It loads
    no model, so the critic needs no stand-in model here.
    """
    from verl.trainer.ppo.ray_trainer import RayPPOTrainer

    shim = types.SimpleNamespace(
        config=cfg,
        use_critic=str(_select(cfg, "algorithm.adv_estimator")) == "gae",
        use_reference_policy=bool(_select(cfg, "algorithm.use_kl_in_reward")
                                  or _select(cfg, "actor_rollout_ref.actor.use_kl_loss")),
    )
    RayPPOTrainer._validate_config(shim)  # type: ignore[arg-type]


def _validate_ppo(cfg: Any) -> None:
    """verl's own start-up validation, exactly as main_ppo calls it.

    Building the critic's config loads the model's HF config and tokenizer. When
    the critic model is not a local directory (a hub id: validation never
    downloads) a tiny stand-in model is used, so the batch-size rules verl checks
    for the critic are still checked; only the model's files are not. The stand-in is set in the request's own
    config and taken back out after (a copy of the whole config was ~50 ms, paid again at each of verl's rounds).
    """
    from omegaconf import open_dict
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config

    use_critic = need_critic(cfg)
    path = _select(cfg, "critic.model.path")
    stub: dict[str, Any] = {}
    if use_critic and not (isinstance(path, str) and os.path.isdir(os.path.expanduser(path))):
        stub = {"path": _stub_model_dir(), "tokenizer_path": None, "hf_config_path": None}
    model = cfg.critic.model if stub else {}
    before = {name: (name in model, raw_value(cfg, f"critic.model.{name}")) for name in stub}
    try:
        for name, value in stub.items():
            set_value(cfg, f"critic.model.{name}", value)
        validate_config(cfg, use_reference_policy=need_reference_policy(cfg), use_critic=use_critic)
    finally:
        for name, (present, value) in before.items():
            if present:
                set_value(cfg, f"critic.model.{name}", value)
            else:
                with open_dict(model):
                    model.pop(name, None)


_STUB: list[str] = []


def _stub_model_dir() -> str:
    """A 2-layer Llama config + word-level tokenizer in a temp dir, made once per process."""
    if _STUB:
        return _STUB[0]
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from transformers import LlamaConfig, PreTrainedTokenizerFast

    d = tempfile.mkdtemp(prefix="argus-verl-stub-")
    vocab = {"<unk>": 0, "<pad>": 1, "<s>": 2, "</s>": 3}
    tok = PreTrainedTokenizerFast(tokenizer_object=Tokenizer(WordLevel(vocab, unk_token="<unk>")),
                                  unk_token="<unk>", pad_token="<pad>", bos_token="<s>", eos_token="</s>")
    tok.save_pretrained(d)
    LlamaConfig(vocab_size=len(vocab), hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=64,
                architectures=["LlamaForCausalLM"]).save_pretrained(d)
    _STUB.append(d)
    return d


def _sft_check(cfg: Any) -> Callable[[Any], None]:
    """The SFT trainer that will read this config: verl's engine trainer (``verl.trainer.sft_trainer``,
    whose config has an ``engine`` section) or the FSDP one it replaced (``verl.trainer.fsdp_sft_trainer``).
    A verl with both is told apart by the config itself."""
    engine, fsdp = _module_exists("verl.trainer.sft_trainer"), _module_exists("verl.trainer.fsdp_sft_trainer")
    if engine and (not fsdp or "engine" in cfg):
        return _validate_sft
    if fsdp:
        return _validate_sft_legacy
    raise _NoCheck("this verl has neither verl.trainer.sft_trainer nor verl.trainer.fsdp_sft_trainer")


def _validate_sft_legacy(cfg: Any) -> None:
    """The batch-size rules ``verl.trainer.fsdp_sft_trainer`` enforces once its process group is up, in our
    words: importing that module costs more than the check (and needs flash-attn beside a GPU).

    It lays the GPUs out as data-parallel × ``ulysses_sequence_parallel_size``, splits
    ``data.train_batch_size`` over the data-parallel ranks and each rank's share into micro batches.
    """
    if _select(cfg, "data.chat_template") is not None:
        raise _ArgusRule("data.chat_template must be null: verl's FSDP SFT trainer refuses a chat template "
                         "from the config (the model's tokenizer supplies it)", key="data.chat_template")
    nnodes, per_node = _select(cfg, "trainer.nnodes"), _select(cfg, "trainer.n_gpus_per_node")
    world = int(nnodes) * int(per_node)
    sp = int(_select(cfg, "ulysses_sequence_parallel_size") or 1)
    if sp < 1 or world % sp:
        raise _ArgusRule(f"ulysses_sequence_parallel_size ({sp}) must divide the number of GPUs ({world} = "
                         f"trainer.nnodes × trainer.n_gpus_per_node): verl lays them out as data-parallel × "
                         f"sequence-parallel", key="ulysses_sequence_parallel_size")
    dp, tbs = world // sp, int(_select(cfg, "data.train_batch_size"))
    if tbs % dp:
        raise _ArgusRule(f"data.train_batch_size ({tbs}) must be a multiple of the data-parallel size ({dp} = "
                         f"{world} GPUs / ulysses_sequence_parallel_size {sp}): verl splits it evenly across them")
    micro = _select(cfg, "data.micro_batch_size_per_gpu")
    if not isinstance(micro, int) or micro < 1 or (tbs // dp) % micro:
        raise _ArgusRule(f"data.micro_batch_size_per_gpu ({micro}) must be a whole number ≥ 1 dividing the per-rank "
                         f"batch ({tbs // dp} = data.train_batch_size / {dp} data-parallel ranks)",
                         key="data.micro_batch_size_per_gpu")


def _validate_sft(cfg: Any) -> None:
    """What verl's SFT trainer builds before training (the model config is skipped: it loads the tokenizer)."""
    from verl.utils.config import omega_conf_to_dataclass

    for section in ("engine", "optim", "checkpoint", "profiler"):
        omega_conf_to_dataclass(cfg[section])
    world = int(cfg.trainer.nnodes) * int(cfg.trainer.n_gpus_per_node)
    tbs = int(cfg.data.train_batch_size)
    if tbs < world or tbs % world:
        raise _ArgusRule(f"data.train_batch_size ({tbs}) must be a positive multiple of the data-parallel size "
                         f"({world} = trainer.nnodes × trainer.n_gpus_per_node): verl splits it evenly across GPUs")
    if not cfg.data.use_dynamic_bsz and int(cfg.data.micro_batch_size_per_gpu) > tbs // world:
        raise _ArgusRule(f"data.micro_batch_size_per_gpu ({cfg.data.micro_batch_size_per_gpu}) is larger than the "
                         f"per-GPU batch ({tbs // world} = data.train_batch_size / {world} GPUs)")


def _run_verl(fn: Any, schema: Schema, cfg: Any) -> tuple[list[dict[str, Any]], list[str]]:
    """Run one of verl's checks: (errors, warnings), every refusal verl's checks reach in one answer
    (``rounds.run_rounds``: a missing key gets a stand-in, a refused value verl's default, and the checks run
    again while what they say next cannot be a consequence of that)."""
    return run_rounds(lambda: _run_verl_once(fn, schema, cfg), schema, cfg)


def _run_verl_once(fn: Any, schema: Schema, cfg: Any) -> tuple[list[dict[str, Any]], list[str]]:
    """Run one of verl's checks once: (errors, warnings). A verdict that depends on what this environment
    has installed (a rollout engine, megatron) is a warning: the workers' environment decides."""
    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn()
    except _ArgusRule as exc:
        return [err(exc.key or key_in(str(exc), schema), None, str(exc))], []
    except _NoCheck as exc:
        return [], [f"could not check the config against verl's start-up validation: {exc}"]
    except Exception as exc:  # noqa: BLE001 - verl raises AssertionError/ValueError/TypeError/omegaconf errors
        text = str(exc).strip() or _failed_assertion(exc, cfg) or type(exc).__name__
        missing = environment_dependent(exc, text)
        if missing:
            return [], [f"could not check the config against verl's start-up validation: the validator's "
                        f"environment has no {missing} (verl: {text.splitlines()[0]}); the training "
                        f"environment on the workers must have it"]
        return [explain(text, schema, cfg)], []
    return [], []


class _ArgusRule(ValueError):
    """A rule verl enforces only once training starts, checked here in our words; ``key`` names the key to
    change where the message's first key is not it."""

    def __init__(self, message: str, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


def _failed_assertion(exc: BaseException, cfg: Any) -> str:
    """verl's bare ``assert a >= b`` (older verl has many) as its condition and the values in it:
    the exception itself says nothing. ``config.`` is dropped so the condition names the keys."""
    if not isinstance(exc, AssertionError) or exc.__traceback__ is None:
        return ""
    line = (traceback.extract_tb(exc.__traceback__)[-1].line or "").strip()
    if not line.startswith("assert "):
        return ""
    cond = re.sub(r"\b(?:self\.)?config\.", "", line[len("assert "):]).strip()
    keys = dict.fromkeys(re.findall(r"[A-Za-z_]\w*(?:\.\w+)+", cond))
    values = [f"{k}={v}" for k in keys if isinstance(v := _select(cfg, k), str | int | float | bool)]
    return f"assertion failed: {cond}" + (f" ({', '.join(values)})" if values else "")


def _without_hydra(full: Any) -> Any:
    """The composition without its ``hydra`` node, in place (``hydra_values`` read it first): copying the
    whole config to drop one key was a fifth of a validation (issue 25: the New Task verdict within 0.5 s)."""
    from omegaconf import open_dict

    with open_dict(full):
        full.pop("hydra", None)
    return full


def _select(cfg: Any, key: str) -> Any:
    from omegaconf import OmegaConf

    try:
        return OmegaConf.select(cfg, key, default=None)
    except Exception:  # noqa: BLE001 - an unresolvable interpolation is not our concern here
        return None


def _resolved(cfg: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in RESOLVED_KEYS:
        value = _select(cfg, key)
        if value is not None and not isinstance(value, str | int | float | bool):
            from omegaconf import OmegaConf

            value = OmegaConf.to_container(value, resolve=True)
        out[key] = value
    return out


@functools.lru_cache(maxsize=4)
def _tokenizer(model: str, _mtime: float) -> Any:
    """Loaded once per model directory (and again if it changes): loading costs more than the check."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(model, local_files_only=True)


def prompt_lengths(model: str, path: str, prompt_key: str, rows: int) -> dict[str, Any]:
    """Token lengths of the first ``rows`` prompts with the model's chat template, as RLHFDataset builds them.

    Only a local tokenizer is used (``local_files_only``): validation never downloads. The answer is kept per
    model, file (its size and time: a rewritten file is read again), prompt key and rows: every edit of a spec
    asked again for the same lengths (issue 37: the verdict within 0.5 s; a real chat template costs more than
    the rest of the check).
    """
    st = os.stat(path)
    return {"lengths": list(_prompt_lengths(model, os.path.getmtime(model), path, st.st_mtime_ns, st.st_size,
                                            prompt_key, rows))}


@functools.lru_cache(maxsize=16)
def _prompt_lengths(model: str, _model_mtime: float, path: str, _mtime_ns: int, _size: int, prompt_key: str,
                    rows: int) -> tuple[int, ...]:
    import pyarrow.parquet as pq

    tok = _tokenizer(model, _model_mtime)
    batch = next(pq.ParquetFile(path).iter_batches(batch_size=rows, columns=[prompt_key]), None)
    lengths = []
    for prompt in (batch.to_pylist() if batch is not None else [])[:rows]:
        chat = prompt[prompt_key]
        if isinstance(chat, str):
            lengths.append(len(tok(chat)["input_ids"]))
        else:
            text = tok.apply_chat_template(chat, add_generation_prompt=True, tokenize=False)
            lengths.append(len(tok(text, add_special_tokens=False)["input_ids"]))
    return tuple(lengths)



def _sleep(seconds: float, burn_every: float) -> None:
    """Sleep ``seconds``; with ``burn_every``, use 20 ms of CPU after each ``burn_every`` s of sleep."""
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        time.sleep(min(left, burn_every) if burn_every else left)
        spin = time.process_time()
        while burn_every and time.process_time() - spin < 0.02:
            pass

def main() -> None:
    out = sys.stdout
    sys.stdout = sys.stderr  # stray prints from verl must never corrupt the protocol stream
    try:
        validator = Validator()
    except Exception as exc:  # noqa: BLE001 - reported to the parent, which decides required/optional
        out.write(json.dumps({"ready": False, "error": f"{type(exc).__name__}: {exc}"}) + "\n")
        out.flush()
        return
    # verl, Hydra and the cached configs are ~1M long-lived objects: a full collection walking them all cost
    # ~300 ms on every ~9th request (bench/admission_envs.py); frozen, the collector skips them.
    gc.collect()
    gc.freeze()
    out.write(json.dumps({"ready": True}) + "\n")
    out.flush()
    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        started = time.monotonic()
        try:
            if req["op"] == "info":
                resp = validator.info()
            elif req["op"] == "validate":
                resp = validator.validate(req["config"], list(req.get("overrides", [])), req.get("kind"),
                                          req.get("config_files"), str(req.get("config_folder", "")))
                for e in resp["errors"]:
                    e["message"] = e["message"].replace("{cfg}", req["config"])
            elif req["op"] == "keys":
                resp = {"keys": config_keys(validator.schema(str(req["config"])))}
            elif req["op"] == "find_module":
                resp = find_module(str(req["module"]))
            elif req["op"] == "prompt_lengths":
                resp = prompt_lengths(req["model"], req["file"], req["prompt_key"], int(req.get("rows", 8)))
            elif req["op"] == "sleep":
                _sleep(float(req["seconds"]), float(req.get("burn_every", 0)))
                resp = {}
            else:
                resp = {"fatal": f"unknown op {req['op']!r}"}
        except Exception as exc:  # noqa: BLE001 - one bad request must not kill the warm process
            resp = {"fatal": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()[-2000:]}
        resp["id"] = req.get("id")
        resp["elapsed_s"] = round(time.monotonic() - started, 4)
        out.write(json.dumps(resp, default=str) + "\n")
        out.flush()
        make_spares(lambda: _waiting(sys.stdin))


def _waiting(stream: Any) -> bool:
    """Whether a request is already there to be read (then it goes first, before any spare copy)."""
    try:
        return bool(select.select([stream], [], [], 0)[0])
    except (OSError, ValueError):
        return True  # not a pipe select can watch (a test's stream): make no copy rather than block


if __name__ == "__main__":
    main()
