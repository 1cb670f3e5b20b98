"""The admission hook that asks the installed verl: config, legacy keys, datasets, reward.

``VerlCheck`` is a ``SpecCheck`` (see core.admission): it composes verl's config
for the task's entry module with every override the task will run with, runs
verl's validation for ``nnodes × n_gpus_per_node``, rewrites legacy keys, reads
the datasets' parquet metadata and dry-runs the custom reward. Every problem
becomes a FieldError naming the spec field or ``command: <key>``.

Paths are judged in the config verl will resolve, not in the text: the validator
returns every resolved value that may name a path (``argus.verl.resolve``) and
Argus's path rules (``core.pathrules``) judge each. Only when every resolved path
passed are files touched (parquet metadata, tokenizer, reward dry-run), so a path
that resolves into another home is never opened on the head.

``settings.verl_validation``: ``required`` rejects when the validator cannot
run; ``optional`` accepts with a warning; ``off`` skips every check here.
"""

from __future__ import annotations

import difflib
import re
import time
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from argus.core import messages
from argus.core.admission import Admitted, CheckOutcome
from argus.core.command import ParsedCommand, parse_command, split_list_value
from argus.core.hydra_flags import HydraFlags, split_hydra_flags
from argus.core.messages import field_error, retext
from argus.core.pathrules import REWARD_KEYS, check_path_value, display
from argus.core.paths import DataLayout
from argus.core.taskspec import AdvancedTaskSpec, BasicTaskSpec
from argus.errors import FieldError
from argus.settings import Settings
from argus.verl.config_folder import read_config_folder
from argus.verl.datasets import MISSING, inspect_data_file, required_columns
from argus.verl.legacy import (
    MOVES,
    WRITTEN,
    has_legacy_reward,
    legacy_key,
    reads_old_layout,
    rewrite_legacy_reward,
)
from argus.verl.links import check_links
from argus.verl.messages import did_you_mean
from argus.verl.models import MODEL_KEYS, check_models
from argus.verl.resolve import RESOLVED_KEYS
from argus.verl.rewards import check_reward
from argus.verl.validator import ValidatorTimeout, ValidatorUnavailable, VerlValidator

# Which validator judges a task: (its environment's validator, whether to check at all).
ValidatorSource = Callable[[Admitted, str], tuple[VerlValidator | None, bool]]

# Which of verl's start-up validations an entry module runs, and the config its @hydra.main names.
KIND_FOR_ENTRY = {"verl.trainer.main_ppo": "ppo", "verl.trainer.sft_trainer": "sft",
                  "verl.trainer.fsdp_sft_trainer": "sft"}  # verl < 0.9's SFT trainer (its environment says)
DEFAULT_CONFIG = {"ppo": "ppo_trainer", "sft": "sft_trainer_engine"}
# Which basic-spec field a template key comes from, so errors point at what the user wrote.
_BASIC_FIELD = {
    "data.train_files": "train_file", "data.val_files": "val_file", "trainer.nnodes": "nnodes",
    "trainer.n_gpus_per_node": "n_gpus_per_node", "actor_rollout_ref.model.path": "model_id",
    "model.path": "model_id", "critic.model.path": "model_id", "data.train_batch_size": "train_batch_size",
    "actor_rollout_ref.rollout.n": "rollout_n", "data.max_prompt_length": "max_prompt_length",
    "data.max_response_length": "max_response_length", "reward.custom_reward_function.path": "reward_path",
    "reward.custom_reward_function.name": "reward_name",
}


@dataclass
class _Plan:
    """One validation request: the config to compose, the entry's checks, the overrides, and the
    user's config folder (relative path -> text) when ``--config-path`` names one."""

    config: str
    kind: str
    overrides: list[str]
    config_files: dict[str, str] | None = None
    shown_folder: str = ""


@dataclass
class _Resolved:
    """The values Argus's file checks judge: verl's resolved ones, or the literal ones as a fallback."""

    resolved: dict[str, Any]
    paths: list[dict[str, Any]]
    overrides: list[str]


def _as_written(e: FieldError) -> FieldError:
    """An error about a legacy key Argus rewrote names the key the user wrote, in its message too."""
    old = e.field.removeprefix("command: ")
    new = MOVES.get(old)
    return retext(e, lambda text: text.replace(new, old)) if new and new in e.message else e


def _as_typed(fix: dict[str, str] | None, spec: Any) -> dict[str, str] | None:
    """A validator's fix in the spec's own text: ``key=value`` as the shell parsed it (``['a']`` → ``[a]``) is
    looked up as the user typed it (quotes and all); a fix whose text is not in the spec is dropped (a
    one-click edit must edit what is there, or not be offered)."""
    if fix is None:
        return None
    text = spec.command if isinstance(spec, AdvancedTaskSpec) else "\n".join(spec.overrides)
    old = fix["replace"]
    if old in text:
        return fix
    head, eq, _ = old.partition("=")
    if not eq:
        return None
    m = re.search(r"(?<![\w.+~])" + re.escape(head) + r"=(?:'[^']*'|\"[^\"]*\"|\S)*", text)
    return {"replace": m.group(0), "with": fix["with"]} if m and not fix["with"] else None


def _unquote(value: str) -> str:
    v = value.strip()
    return v[1:-1] if len(v) >= 2 and v[0] == v[-1] and v[0] in "'\"" else v


# The layout of the submit being judged, for the helpers below (a check may run in several threads at once).
_JUDGED_IN: ContextVar[DataLayout | None] = ContextVar("argus_verl_check_layout", default=None)


class VerlCheck:
    """Callable SpecCheck: each task is judged by its training environment's validator (``ValidatorPool``),
    or by one fixed validator (``validator``, no environments: unit tests, tools)."""

    def __init__(self, settings: Settings, validator: VerlValidator | None, *,
                 validators: ValidatorSource | None = None) -> None:
        self.settings = settings
        self.validator = validator
        self.validators = validators

    def _layout(self) -> DataLayout:
        """The layout of the submit being judged (with its owner's teams: ``Admitted.layout``)."""
        return _JUDGED_IN.get() or DataLayout.at(self.settings.root)

    def _validator(self, admitted: Admitted, user: str) -> tuple[VerlValidator | None, bool]:
        """(the validator for this task's environment, whether to check at all: an unknown environment
        is refused by argus.envs.check, with no second message from here)."""
        if self.validators is None:
            return self.validator, True
        return self.validators(admitted, user)

    def __call__(self, admitted: Admitted, user: str, template: list[str]) -> CheckOutcome:
        token = _JUDGED_IN.set(admitted.layout)
        try:
            return self._judge(admitted, user, template)
        finally:
            _JUDGED_IN.reset(token)

    def _judge(self, admitted: Admitted, user: str, template: list[str]) -> CheckOutcome:
        out = CheckOutcome()
        kind = KIND_FOR_ENTRY.get(admitted.entry_module or "")
        if self.settings.verl_validation == "off" or kind is None:
            return out
        validator, wanted = self._validator(admitted, user)
        if not wanted:
            return out
        spec = admitted.spec
        plan = self._plan(validator, admitted, template, user, out)
        resp = None
        if plan is not None:
            started = time.monotonic()
            resp = self._ask(validator, plan, out)
            out.info["verl_validation_s"] = round(time.monotonic() - started, 3)
        if resp is not None:
            for e in resp["errors"]:
                out.errors.append(FieldError(self._field(spec, e["key"], plan.overrides), e["value"], e["message"],
                                             fix=_as_typed(e.get("fix"), spec)))
            out.warnings.extend(resp.get("warnings", []))
            if "paths" not in resp:  # a validator from an older Argus: nothing resolved
                out.warnings.append(messages.msg("warn.verl_no_resolved_paths").text)
        # Argus's own checks never wait for verl's: a wrong key does not hide a missing data file. Where verl
        # could not compose the config, the values are judged as written.
        composed = plan is not None and resp is not None and "paths" in resp and resp.get("composed", True)
        values = (_Resolved(resp.get("resolved", {}), resp["paths"], plan.overrides)
                  if composed and plan is not None and resp is not None else self._literal(admitted, template))
        out.paths_resolved = composed
        refused = self._check_paths(values.paths, spec, user, values.overrides, out)
        self._check_files(validator, values, refused, spec, user, out)
        out.errors = [_as_written(e) for e in out.errors]
        return out

    def _check_files(self, validator: VerlValidator | None, values: _Resolved, refused: set[str], spec: Any,
                     user: str, out: CheckOutcome) -> None:
        """Models, datasets, prompt lengths and the reward function, at the values verl will use; nothing is
        opened at a key whose path was refused (``refused``: path rules, then symbolic links)."""
        layout = self._layout()
        for p in values.paths:  # first where symbolic links lead: nothing is opened through a refused one
            key = str(p["key"])
            if key in refused:
                continue
            found = check_links(key, str(p["value"]), user, layout, fld=self._field(spec, key, values.overrides))
            if found:
                out.errors.extend(found)
                refused.add(key)
        usable = _Resolved({k: v for k, v in values.resolved.items() if k not in refused},
                           [p for p in values.paths if str(p["key"]) not in refused], values.overrides)
        before = len(out.errors)
        self._check_models(usable.paths, spec, user, usable.overrides, out)
        self._check_datasets(validator, spec.workload, usable.resolved, spec, user, usable.overrides, out)
        if len(out.errors) == before and spec.workload != "sft" and validator is not None:
            self._check_prompt_lengths(validator, usable.resolved, spec, user, usable.overrides, out)
        bad = {e.field for e in out.errors}
        reward_fields = {self._field(spec, k, usable.overrides) for k in REWARD_KEYS}
        if not bad & reward_fields:  # the dry run reads the train file only when that passed its checks
            data_ok = self._field(spec, "data.train_files", usable.overrides) not in bad
            self._check_reward(validator, usable.resolved, spec, out, data_ok=data_ok)

    @staticmethod
    def _literal(admitted: Admitted, template: list[str]) -> _Resolved:
        """The values as written, when verl could not resolve them: interpolated ones are left out
        (admission's ``unresolved`` errors stand for them)."""
        if isinstance(admitted.spec, BasicTaskSpec):
            pairs = dict(item.lstrip("+~").split("=", 1) for item in template if "=" in item)
            pairs.update(admitted.overrides)
        else:
            pairs = dict(admitted.overrides)
        literal = {k: _unquote(v) for k, v in pairs.items() if "${" not in v}
        resolved = {k: literal[k] for k in RESOLVED_KEYS if k in literal}
        limit = resolved.get("data.max_prompt_length")
        if isinstance(limit, str) and limit.isdigit():  # the prompt-length check compares it as a number
            resolved["data.max_prompt_length"] = int(limit)
        paths = [{"key": k, "value": v} for k, v in literal.items()]
        return _Resolved(resolved, paths, [f"{k}={v}" for k, v in pairs.items()])

    def _check_paths(self, paths: list[dict[str, Any]], spec: Any, user: str, overrides: list[str],
                     out: CheckOutcome) -> set[str]:
        """Argus's path rules on every value about to be judged; the keys refused (never opened)."""
        layout = self._layout()
        seen: set[tuple[str, str]] = set()
        refused: set[str] = set()
        for p in paths:
            key, value = str(p["key"]), str(p["value"])
            if (key, value) in seen:
                continue
            seen.add((key, value))
            for e in check_path_value(key, value, user, layout, fld=self._field(spec, key, overrides), resolved=True):
                out.errors.append(e)
                refused.add(key)
        return refused

    # ------------------------------------------------------------ overrides

    def _plan(self, validator: VerlValidator | None, admitted: Admitted, template: list[str], user: str,
              out: CheckOutcome) -> _Plan | None:
        """What to ask the validator: the config to compose, where it comes from, and every override."""
        spec = admitted.spec
        kind = KIND_FOR_ENTRY[admitted.entry_module or ""]
        if isinstance(spec, BasicTaskSpec):
            for i, item in enumerate(spec.overrides):
                old = legacy_key(item)
                if old is not None:
                    fix = ("use the spec's reward_path/reward_name" if old.startswith("custom_reward_function")
                           else f"write {MOVES[old]}=...")
                    out.errors.append(FieldError(f"overrides[{i}]", item, f"verl reads {MOVES[old]}, not {old}; "
                                                 f"{fix}", fix=None if old.startswith("custom_reward_function")
                                                 else {"replace": old, "with": MOVES[old]}))
            return _Plan(DEFAULT_CONFIG[kind], kind, list(template))
        assert isinstance(spec, AdvancedTaskSpec) and admitted.command_expanded is not None
        command = admitted.command_expanded
        info = self._info(validator, out)
        if info is None:
            return None
        parsed = parse_command(command)
        assert isinstance(parsed, ParsedCommand)  # admission already parsed this command
        flags = split_hydra_flags(parsed.args)
        if not isinstance(flags, HydraFlags):
            return None  # admission refused the flags: verl would too, before composing anything
        # the config the entry's @hydra.main names in this environment's verl (worker info "entries")
        entry_config = (info.get("entries") or {}).get(admitted.entry_module or "") or DEFAULT_CONFIG[kind]
        plan = _Plan(flags.name or entry_config, kind, [])
        if not self._config_source(flags, plan, info, user, out):
            return None
        if info.get("reward_moved") and has_legacy_reward(command) and not reads_old_layout(plan.config_files):
            command, notes = rewrite_legacy_reward(command, admitted.overrides)
            out.warnings.extend(notes)
            out.command_expanded = command
            parsed = parse_command(command)
            assert isinstance(parsed, ParsedCommand)  # only override keys changed
            flags = split_hydra_flags(parsed.args)
            assert isinstance(flags, HydraFlags)
        # hydra.* overrides go too: hydra.run.dir/sweep.dir are resolved and checked like any path
        items = [a for a in flags.rest if "=" in a]
        for stray in (a for a in flags.rest if "=" not in a and not a.startswith("~")):
            # Hydra refuses a word that is not key=value (OverrideParseException) before training starts
            out.errors.append(FieldError("command", stray, f"{stray!r} is not a Hydra override (key=value): verl "
                                         "would refuse the command; a stray quote, or a comment after a "
                                         "line-continuation `\\` that cut the command short?"))
        # Validate with the spec's gang size where the command is silent (the admission warning says add it);
        # under torchrun the world is the processes it starts, one node (admission refuses more).
        gpus: int = spec.n_gpus_per_node
        nproc = parsed.torchrun.nproc_per_node if parsed.torchrun is not None else None
        if nproc is not None and nproc.isdigit():
            gpus = int(nproc)
        for key, value in (("trainer.nnodes", spec.nnodes), ("trainer.n_gpus_per_node", gpus)):
            if key not in parsed.overrides:
                items.insert(0, f"{key}={value}")
        plan.overrides = items
        return plan

    def _config_source(self, flags: HydraFlags, plan: _Plan, info: dict[str, Any], user: str,
                       out: CheckOutcome) -> bool:
        """Where the config named by ``--config-path/--config-name`` comes from; False: cannot load it
        (a warning says exactly why, and Argus's own checks still run)."""
        if flags.config_dirs:
            out.warnings.append(messages.msg("warn.verl_config_dir").text)
            return False
        if flags.packaged:
            known = info.get("configs") or []
            if known and plan.config not in known:
                hint = did_you_mean(difflib.get_close_matches(plan.config, known, n=2, cutoff=0.6))
                out.errors.append(FieldError("command", f"--config-name={flags.config_name}",
                                             f"verl {info.get('verl_version', '')} has no packaged config "
                                             f"'{plan.config}'{hint} (packaged: {', '.join(known)})"))
                return False
            return True
        folder = flags.config_path or ""
        layout = self._layout()
        shown = layout.to_virtual(folder, user)
        files = read_config_folder(folder, layout.home(user))
        if isinstance(files, str):
            out.errors.append(FieldError("command", f"--config-path={shown}", files))
            return False
        if f"{plan.config}.yaml" not in files:
            near = difflib.get_close_matches(f"{plan.config}.yaml", list(files), n=2, cutoff=0.6)
            out.errors.append(FieldError("command", f"--config-name={flags.config_name}",
                                         f"{shown} has no {plan.config}.yaml{did_you_mean(near)}"))
            return False
        plan.config_files = files
        plan.shown_folder = shown
        return True

    def _info(self, validator: VerlValidator | None, out: CheckOutcome) -> dict[str, Any] | None:
        if validator is None:
            self._unavailable("no verl validator is configured", out)
            return None
        if validator.info is None:
            try:
                validator.request({"op": "info"})
            except (ValidatorUnavailable, ValidatorTimeout) as exc:
                self._unavailable(str(exc), out)
                return None
        return validator.info

    def _ask(self, validator: VerlValidator | None, plan: _Plan, out: CheckOutcome) -> dict[str, Any] | None:
        if validator is None or self._info(validator, out) is None:
            return None
        req: dict[str, Any] = {"op": "validate", "config": plan.config, "kind": plan.kind, "overrides": plan.overrides}
        if plan.config_files is not None:
            req.update(config_files=plan.config_files, config_folder=plan.shown_folder)
        try:
            return validator.request(req, self.settings.verl_timeout_s)
        except ValidatorTimeout as exc:
            self._unavailable(f"{exc}; the validator was restarted", out)
        except ValidatorUnavailable as exc:
            self._unavailable(str(exc), out)
        return None

    def _unavailable(self, why: str, out: CheckOutcome) -> None:
        if self.settings.verl_validation == "required":
            out.errors.append(FieldError("(verl)", None, f"verl validation is required but could not run: {why}; "
                                         "retry, or ask an admin to check verl_python"))
        else:
            out.warnings.append(messages.msg("warn.verl_skipped", why=why).text)

    @staticmethod
    def _field(spec: Any, key: str, overrides: list[str]) -> str:
        if isinstance(spec, BasicTaskSpec):
            for i, item in enumerate(spec.overrides):
                if item.lstrip("+~").split("=", 1)[0] == key:
                    return f"overrides[{i}]"
            return _BASIC_FIELD.get(key, "overrides")
        if key in WRITTEN and key not in spec.command and WRITTEN[key] in spec.command:
            key = WRITTEN[key]  # Argus rewrote the user's legacy key: name the one they wrote
        return f"command: {key}" if key else "command"

    # ------------------------------------------------------------ files

    def _check_models(self, paths: list[dict[str, Any]], spec: Any, user: str, overrides: list[str],
                      out: CheckOutcome) -> None:
        """Model folders / Hugging Face ids exist with config.json and a tokenizer (``settings.model_check``)."""
        if self.settings.model_check == "off":
            return
        wanted = set(MODEL_KEYS) | {k for k in MODEL_KEYS.values() if k}
        values = {str(p["key"]): str(p["value"]) for p in paths if p["key"] in wanted}
        for problem in check_models(values, user, self._layout()):
            if self.settings.model_check == "required":
                out.errors.append(FieldError(self._field(spec, problem.key, overrides), problem.shown,
                                             problem.message))
            else:
                out.warnings.append(problem.message)

    def _check_datasets(self, validator: VerlValidator | None, workload: str, resolved: dict[str, Any], spec: Any,
                        user: str, overrides: list[str], out: CheckOutcome) -> None:
        cols = required_columns(workload, resolved)
        layout = self._layout()
        info = validator.info if validator is not None else None
        formats = (".parquet",) if workload == "sft" else tuple(info["data_formats"]) if info and info.get(
            "data_formats") else None  # verl's SFT datasets read parquet only
        for key, label in (("data.train_files", "train"), ("data.val_files", "val")):
            value = resolved.get(key)
            files = value if isinstance(value, list) else split_list_value(str(value)) if value else []
            total = 0
            for path in files:
                if not str(path).startswith("/"):
                    continue  # verl's own default (~/data/...): admission already warned that it is unset
                report = inspect_data_file(str(path), cols, formats)
                shown = display(str(path), user, layout)  # as the user writes it, never the server's path
                for msg in report.errors:
                    fld = self._field(spec, key, overrides)
                    out.errors.append(field_error(fld, shown, "path.file_missing", path=shown) if msg == MISSING
                                      else FieldError(fld, shown, f"{shown}: {msg}"))
                total += report.rows or 0
            if files:
                out.info[f"{label}_rows"] = total

    def _check_prompt_lengths(self, validator: VerlValidator, resolved: dict[str, Any], spec: Any, user: str,
                              overrides: list[str], out: CheckOutcome) -> None:
        """Sampled prompt lengths against data.max_prompt_length, only when the tokenizer is local."""
        model, limit = resolved.get("actor_rollout_ref.model.path"), resolved.get("data.max_prompt_length")
        train = resolved.get("data.train_files")
        files = train if isinstance(train, list) else split_list_value(str(train)) if train else []
        if not (isinstance(model, str) and isinstance(limit, int) and files and str(files[0]).startswith("/")):
            return
        if not any((Path(model) / f).is_file() for f in ("tokenizer.json", "tokenizer_config.json")):
            return  # a hub id or a model without a local tokenizer: skipped, never downloaded
        try:
            resp = validator.request({"op": "prompt_lengths", "model": model, "file": str(files[0]),  # type: ignore[union-attr]
                                           "prompt_key": resolved.get("data.prompt_key") or "prompt",
                                           "rows": self.settings.reward_check_rows * 4},
                                          self.settings.verl_timeout_s)
        except (ValidatorUnavailable, ValidatorTimeout) as exc:
            out.warnings.append(messages.msg("warn.prompt_lengths_unchecked", error=str(exc)).text)
            return
        lengths = resp.get("lengths") or []
        if lengths:
            out.info["prompt_tokens_max_sampled"] = max(lengths)
        if lengths and max(lengths) > limit:
            msg = messages.msg("warn.prompt_too_long", tokens=max(lengths), limit=limit, rows=len(lengths),
                               model=self._layout().to_virtual(model, user)).text
            if resolved.get("data.truncation") == "error":
                out.errors.append(FieldError(self._field(spec, "data.max_prompt_length", overrides), limit,
                                             msg + "; verl stops with data.truncation=error: raise the limit, "
                                             "shorten prompts, or set data.truncation=left"))
            else:
                out.warnings.append(msg)

    def _check_reward(self, validator: VerlValidator | None, resolved: dict[str, Any], spec: Any,
                      out: CheckOutcome, *, data_ok: bool = True) -> None:
        # verl ≥ 0.9 reads reward.custom_reward_function.*; older verl the top-level key (its environment's worker
        # resolves both; the one that verl reads is set)
        prefix = "reward." if resolved.get("reward.custom_reward_function.path") else ""
        path = resolved.get(f"{prefix}custom_reward_function.path")
        if not path:
            return
        name = resolved.get(f"{prefix}custom_reward_function.name") or None
        train = resolved.get("data.train_files")
        files = train if isinstance(train, list) else split_list_value(str(train)) if train else []
        data = next((f for f in files if str(f).startswith("/")), None) if data_ok else None
        result = check_reward(self.settings, str(path), name, data, python=validator.python if validator else None)
        fld = self._field(spec, f"{prefix}custom_reward_function.path", [])
        if result.error:
            out.errors.append(FieldError(fld, str(path), result.error))
        out.warnings.extend(result.warnings)
        if result.summary:
            out.info["reward_check"] = result.summary
