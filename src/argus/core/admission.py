"""Admission: pure checks that turn a parsed spec into an accepted plan or every error.

Strong checks reject (HTTP 400) and are all reported at once; weak checks are
warnings returned with the accepted task (seed 000 §2.4, §3.3, §8.2). The
checks are lexical and best-effort by design: the file service enforces
confinement on the real filesystem (symlinks, races); admission stops a task
from *naming* another user's files before it ever reaches the queue.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from argus.core import evaluate_every
from argus.core.builders import transfer_queue_settings
from argus.core.command import (
    SFT_ENTRIES,
    ParsedCommand,
    infer_workload,
    module_allowed,
    parse_command,
    shell_expansions,
    split_list_value,
)
from argus.core.envvars import DEFAULT_ENV_ALLOWLIST, check_env_assignments
from argus.core.hydra_flags import HydraFlags, split_hydra_flags
from argus.core.interpolation import (
    check_interpolations,
    find_interpolations,
    unresolved_path_errors,
)
from argus.core.messages import field_error, msg
from argus.core.pathrules import (
    REWARD_KEYS,
    TRAIN_KEYS,
    check_literal_path,
    code_dirs,
    display,
    team_refusal_code,
)
from argus.core.paths import DataLayout, is_under, normalize
from argus.core.resources import RESOURCES_KEY, reserved_gpus, task_need
from argus.core.taskspec import AdvancedTaskSpec, BasicTaskSpec, TaskSpec
from argus.errors import FieldError

_TILDE_USER = re.compile(r"(?:^|(?<=[\s=,'\"\[(:]))~([A-Za-z_][\w.\-]*)")
_HF_ID = re.compile(r"^[A-Za-z0-9][\w.\-]*(/[A-Za-z0-9][\w.\-]*)?$")
_OVERRIDE_KEY = re.compile(r"^(\+\+|\+|~)?[A-Za-z_][\w.\-/@]*=")
# Path-like pieces of a word: split on the characters that separate values in Hydra/env syntax.
_PIECES = re.compile(r"[^=,\[\]:\s'\"{}()]+")
_GLOB_OR_VAR = re.compile(r"[*?\[\]$\\{}]")
_VERL_TRAINER = "verl.trainer."
RAY_ADDRESS_KEY = "ray_kwargs.ray_init.address"
# Hydra keys that make verl build objects from config: set from the command line they would run
# arbitrary code while Argus validates the config on the head.
HYDRA_INSTANTIATE_KEYS = frozenset({"_target_", "_args_", "_partial_", "_recursive_", "_convert_"})
# Hydra would chdir into hydra.run.dir: relative paths would no longer be relative to the job dir.
HYDRA_CHDIR_KEY = "hydra.job.chdir"
# Basic fields that become verl values: literal only (interpolations belong in `overrides`).
_BASIC_VALUE_FIELDS = ("model_id", "train_file", "val_file", "reward_path", "reward_name")


@dataclass(frozen=True)
class AdmissionPolicy:
    layout: DataLayout
    entry_allowlist: tuple[str, ...]
    env_allowlist: tuple[str, ...] = DEFAULT_ENV_ALLOWLIST
    max_nnodes: int = 1024
    max_gpus_per_node: int = 64
    default_env: str = "argus"  # the training environment of a spec that names none (settings.default_env)
    # The server's own folders no message may show, each with the word shown instead (core.problems).
    hidden: tuple[tuple[str, str], ...] = ()


# Entry points that need no GPU: Argus's CPU jobs and verl's checkpoint merger (`argus export`).
CPU_ENTRIES = ("argus.jobs.", "verl.model_merger")


@dataclass
class Admitted:
    """An accepted spec: what to run (before the task id is known) and what to tell the user.

    ``unresolved`` are errors that stand unless a later check resolves the config and
    judges every resolved path (``CheckOutcome.paths_resolved``): interpolations that no
    one would otherwise check (see ``core.interpolation.unresolved_path_errors``).
    """

    spec: TaskSpec
    warnings: list[str] = field(default_factory=list)
    command_expanded: str | None = None
    entry_module: str | None = None
    overrides: dict[str, str] = field(default_factory=dict)
    unresolved: list[FieldError] = field(default_factory=list)
    # The layout the paths were judged in (with the owner's teams): later checks judge resolved values alike.
    layout: DataLayout | None = None


@dataclass
class Rejected:
    """A refused spec. ``partial`` is the plan as far as it could be made (None when the command could not
    even be parsed): the deeper checks still judge it, so one answer lists every problem."""

    errors: list[FieldError]
    partial: Admitted | None = None


def admit(spec: TaskSpec, user: str, policy: AdmissionPolicy) -> Admitted | Rejected:
    """Run every strong and weak check for ``user``'s spec."""
    errors: list[FieldError] = []
    warnings: list[str] = []
    _check_resources(spec, policy, errors)
    if isinstance(spec, AdvancedTaskSpec):
        if spec.workload_inferred:
            why = infer_workload(spec.command)[1]
            warnings.append(msg("warn.workload_inferred", workload=spec.workload, why=why).text)
        admitted = _admit_advanced(spec, user, policy, errors, warnings)
    else:
        admitted = _admit_basic(spec, user, policy, errors)
    if admitted is not None and admitted.entry_module is not None:
        if spec.n_gpus_per_node == 0 and not admitted.entry_module.startswith(CPU_ENTRIES):
            errors.append(field_error("n_gpus_per_node", 0, "spec.needs_gpus"))
    if admitted is not None and spec.evaluate_checkpoints is not None:
        _check_evaluate_every(spec, admitted, user, policy.layout, errors, warnings)
    if admitted is not None:
        admitted.warnings = warnings + admitted.warnings
    if errors or admitted is None:
        return Rejected(errors, admitted)
    return admitted


def _check_evaluate_every(spec: TaskSpec, admitted: Admitted, user: str, layout: DataLayout,
                          errors: list[FieldError], warnings: list[str]) -> None:
    """``evaluate_checkpoints`` against the rest of the spec (core.evaluate_every: the workload, save_freq), and
    its paths judged like the fields of the same names, so a refusal comes now rather than at each checkpoint."""
    option = spec.evaluate_checkpoints
    assert option is not None
    if isinstance(spec, BasicTaskSpec):
        save_freq, fld = str(spec.save_freq), "save_freq"
        for i, item in enumerate(spec.overrides):  # an override of trainer.save_freq wins over the field
            key, sep, value = item.lstrip("+").partition("=")
            if sep and key == evaluate_every.SAVE_FREQ_KEY:
                save_freq, fld = value, f"overrides[{i}]"
    else:
        save_freq, fld = admitted.overrides.get(evaluate_every.SAVE_FREQ_KEY), f"command: {evaluate_every.SAVE_FREQ_KEY}"
    found, said = evaluate_every.spec_problems(option, workload=spec.workload, save_freq=save_freq, save_freq_field=fld)
    errors += found
    warnings += said
    where = evaluate_every.FIELD
    if isinstance(option.get("val_file"), str):
        check_data_paths(layout.expand(option["val_file"], user), user, layout, errors, fld=f"{where}.val_file")
    if isinstance(option.get("reward_path"), str):
        check_reward_path(layout.expand(option["reward_path"], user), user, layout, errors, fld=f"{where}.reward_path")
    block = option.get("lm_eval")
    include = block.get("include_path") if isinstance(block, dict) else None
    for folder in [include] if isinstance(include, str) else include if isinstance(include, list) else []:
        if isinstance(folder, str):
            check_foreign_paths(layout.expand(folder, user), user, layout, errors, fld=f"{where}.lm_eval.include_path")


def scan_invalid_spec(doc: dict[str, Any], user: str, policy: AdmissionPolicy) -> list[FieldError]:
    """The path rules on a spec that failed its schema, so one answer names every problem.

    A spec missing ``nnodes`` that also names another user's file must hear about both: the
    schema error alone would send the user back for a second refusal. Only the rules that need
    no parsed spec run here (another home, ``~name``); the rest wait for a valid spec.
    """
    errors: list[FieldError] = []
    for name, value in _strings(doc, ""):
        if name in ("name",):
            continue
        for m in _TILDE_USER.finditer(value):
            errors.append(field_error(name, f"~{m.group(1)}", "path.tilde"))
        check_foreign_paths(policy.layout.expand(value, user), user, policy.layout, errors, fld=name)
    return errors


def _strings(node: Any, where: str) -> list[tuple[str, str]]:
    if isinstance(node, str):
        return [(where, node)]
    if isinstance(node, dict):
        return [s for k, v in node.items() for s in _strings(v, f"{where}.{k}" if where else str(k))]
    if isinstance(node, list):
        return [s for i, v in enumerate(node) for s in _strings(v, f"{where}[{i}]")]
    return []


def _check_resources(spec: TaskSpec, policy: AdmissionPolicy, errors: list[FieldError]) -> None:
    if spec.nnodes > policy.max_nnodes:
        errors.append(field_error("nnodes", spec.nnodes, "spec.platform_limit", max=policy.max_nnodes))
    if spec.n_gpus_per_node > policy.max_gpus_per_node:
        errors.append(field_error("n_gpus_per_node", spec.n_gpus_per_node, "spec.platform_limit",
                                  max=policy.max_gpus_per_node))


# ---------------------------------------------------------------- advanced


def _admit_advanced(
    spec: AdvancedTaskSpec, user: str, policy: AdmissionPolicy, errors: list[FieldError], warnings: list[str]
) -> Admitted | None:
    layout = policy.layout
    expanded = layout.expand(spec.command, user)
    parsed = parse_command(expanded)
    # '~name' in an override's value is that key's problem (below); anywhere else, the command's
    in_values = set() if isinstance(parsed, list) else \
        {m.group(1) for _p, v in parsed.overrides.values() for m in _TILDE_USER.finditer(v)}
    for name in dict.fromkeys(m.group(1) for m in _TILDE_USER.finditer(spec.command)):
        if name not in in_values:
            errors.append(field_error("command", f"~{name}", "path.tilde"))
    if isinstance(parsed, list):
        errors.extend(parsed)
        return None
    errors.extend(parsed.problems)
    _check_entry(parsed, policy, errors)
    if parsed.torchrun is not None:
        _check_torchrun(spec, parsed, errors, warnings)
    elif parsed.module in SFT_ENTRIES and spec.nnodes * spec.n_gpus_per_node > 1:
        # The fix changes the launcher only, never the module: a module this environment's verl replaced is the
        # entry check's problem, with its own fix, and the two compose (issue 35: they contradicted each other)
        launcher = f"torchrun --standalone --nnodes=1 --nproc_per_node={spec.n_gpus_per_node} -m"
        code = "command.sft_torchrun_one_node" if spec.nnodes > 1 else "command.sft_torchrun"
        errors.append(replace(field_error("command", f"python3 -m {parsed.module}", code, module=parsed.module,
                                          gpus=spec.nnodes * spec.n_gpus_per_node, launcher=launcher),
                              fix={"replace": "python3 -m", "with": launcher}))
    check_env_assignments(parsed.env, policy.env_allowlist, errors)
    for exp in dict.fromkeys(shell_expansions(expanded)):
        errors.append(field_error("command", exp, "command.shell_expansion"))
    override_args = {a for a in parsed.args if _OVERRIDE_KEY.match(a)}
    for tok in parsed.tokens:  # an override's paths are judged under its key, once (below)
        if tok not in override_args:
            check_foreign_paths(tok, user, layout, errors, fld="command")
    for arg in parsed.args:
        check_interpolations(arg, errors, fld="command")
    overrides = {k: v for k, (_p, v) in parsed.overrides.items()}
    unresolved: list[FieldError] = []
    for key, value in overrides.items():
        check_override_key(key, errors, fld="command")
        _check_override_paths(key, value, user, layout, errors, fld=f"command: {key}")
        unresolved.extend(unresolved_path_errors(key, value, fld=f"command: {key}"))
    if parsed.module and parsed.module.startswith(_VERL_TRAINER):
        _check_hydra_flags(parsed, user, layout, errors)
        _weak_checks(spec, parsed, warnings)
    return Admitted(spec=spec, command_expanded=expanded, entry_module=parsed.module, overrides=overrides,
                    layout=policy.layout,
                    unresolved=unresolved)


def _check_entry(parsed: ParsedCommand, policy: AdmissionPolicy, errors: list[FieldError]) -> None:
    allowed = ", ".join(policy.entry_allowlist)
    if parsed.torchrun is not None:  # torchrun (or python3 -m torch.distributed.run) -m <module>: judge the module
        if not module_allowed(parsed.module or "", policy.entry_allowlist):
            errors.append(field_error("command", parsed.module, "command.torchrun_not_allowed", allowed=allowed))
        return
    if parsed.interpreter != "python3":
        by_path = parsed.interpreter and parsed.interpreter.endswith(("python3", "torchrun"))
        errors.append(field_error("command", parsed.interpreter,
                                  "command.interpreter_by_path" if by_path else "command.interpreter", allowed=allowed))
        return
    if parsed.module is None:
        errors.append(field_error("command", " ".join(parsed.tokens[:3]), "command.python_module", allowed=allowed))
    elif not module_allowed(parsed.module, policy.entry_allowlist):
        errors.append(field_error("command", parsed.module, "command.module_not_allowed", allowed=allowed))


def _check_hydra_flags(parsed: ParsedCommand, user: str, layout: DataLayout, errors: list[FieldError]) -> None:
    """Hydra's flags after a verl module: only the config flags, and config folders in the user's home."""
    flags = split_hydra_flags(parsed.args)
    if not isinstance(flags, HydraFlags):
        errors.extend(flags)
        return
    home = layout.home(user)
    folders = [("--config-path", flags.config_path)] if flags.config_path and not flags.packaged else []
    folders += [("--config-dir", d) for d in flags.config_dirs]
    for flag, folder in folders:
        shown = layout.to_virtual(folder, user)
        if not folder.startswith("/"):
            errors.append(field_error("command", f"{flag}={shown}", "command.config_folder_relative"))
        elif not is_under(normalize(folder), home) or normalize(folder) == home:
            if not _is_foreign(folder, user, layout):  # another user's home is reported by check_foreign_paths
                errors.append(field_error("command", f"{flag}={shown}", "command.config_folder_outside"))


def _is_foreign(path: str, user: str, layout: DataLayout) -> bool:
    real = normalize(path)
    return is_under(real, layout.users_dir) and real != layout.users_dir and not is_under(real, layout.home(user))


# torchrun --nproc_per_node values that mean "every GPU this process sees": the task's reservation.
_NPROC_ALL_GPUS = frozenset({"gpu", "auto"})


def _check_torchrun(spec: AdvancedTaskSpec, parsed: ParsedCommand, errors: list[FieldError],
                    warnings: list[str]) -> None:
    """torchrun's gang against the spec's: Argus runs one driver per task on one node, holding the spec's GPUs.

    ``--nnodes`` > 1 or spec ``nnodes`` > 1 is refused (multi-node torchrun is not supported yet);
    ``--nproc_per_node`` above the reservation is refused (ranks would have no GPU), below it is a
    warning (GPUs reserved and left idle). torchrun's default is one process.
    """
    tr = parsed.torchrun
    assert tr is not None
    for flag in ("--no-python", "--run-path"):
        if flag in tr.options:
            errors.append(field_error("command", flag, "command.torchrun_python_flag", flag=flag))
    if spec.nnodes > 1:
        errors.append(field_error("nnodes", spec.nnodes, "command.torchrun_multinode"))
    if tr.nnodes is not None:
        parts = tr.nnodes.split(":")
        if not all(p.strip().isdigit() for p in parts) or len(parts) > 2:
            errors.append(field_error("command", f"--nnodes={tr.nnodes}", "command.torchrun_nnodes"))
        elif max(int(p) for p in parts) > 1:
            errors.append(field_error("command", f"--nnodes={tr.nnodes}", "command.torchrun_multinode"))
    want = spec.n_gpus_per_node
    nproc = tr.nproc_per_node
    if nproc is None:
        if want > 1:
            warnings.append(msg("warn.torchrun_no_nproc", gpus=want).text)
    elif nproc.strip().lower() in _NPROC_ALL_GPUS:
        pass  # one process per GPU the driver sees: exactly the reservation
    elif not nproc.strip().isdigit() or int(nproc) < 1:
        errors.append(field_error("command", f"--nproc_per_node={nproc}", "command.torchrun_nproc", gpus=want))
    elif int(nproc) > want:
        errors.append(field_error("command", f"--nproc_per_node={nproc}", "command.torchrun_nproc_over", gpus=want))
    elif int(nproc) < want:
        warnings.append(msg("warn.torchrun_nproc_under", nproc=nproc, gpus=want, idle=want - int(nproc)).text)
    if not tr.standalone and not {"--rdzv-endpoint", "--master-port"} & tr.options.keys():
        warnings.append(msg("warn.torchrun_no_standalone").text)


def _weak_checks(spec: AdvancedTaskSpec, parsed: ParsedCommand, warnings: list[str]) -> None:
    ov = parsed.overrides
    for key in TRAIN_KEYS:
        if key not in ov:
            warnings.append(msg("warn.data_key_unset", key=key).text)
    if RAY_ADDRESS_KEY in ov:
        warnings.append(msg("warn.ray_address_override", key=RAY_ADDRESS_KEY, value=ov[RAY_ADDRESS_KEY][1]).text)
    if parsed.torchrun is not None or parsed.module in SFT_ENTRIES:
        return  # torchrun's --nnodes/--nproc_per_node set the gang (checked in _check_torchrun), not trainer.*
    for spec_field, key in (("nnodes", "trainer.nnodes"), ("n_gpus_per_node", "trainer.n_gpus_per_node")):
        want = getattr(spec, spec_field)
        if key not in ov:
            warnings.append(msg("warn.gang_key_unset", key=key, field=spec_field, want=want).text)
        elif ov[key][1].strip() != str(want):
            warnings.append(msg("warn.gang_mismatch", field=spec_field, want=want, key=key, value=ov[key][1]).text)


# ---------------------------------------------------------------- basic


def _admit_basic(
    spec: BasicTaskSpec, user: str, policy: AdmissionPolicy, errors: list[FieldError]
) -> Admitted | None:
    layout = policy.layout
    for name in _BASIC_VALUE_FIELDS:
        value = getattr(spec, name)
        if isinstance(value, str) and find_interpolations(value):
            errors.append(field_error(name, value, "spec.interpolation_basic"))
    _check_model_id(spec.model_id, user, layout, errors)
    check_data_paths(layout.expand(spec.train_file, user), user, layout, errors, fld="train_file")
    if spec.val_file:
        check_data_paths(layout.expand(spec.val_file, user), user, layout, errors, fld="val_file")
    elif spec.workload != "sft":
        errors.append(field_error("val_file", None, "spec.val_file_required"))
    if spec.reward_path:
        check_reward_path(layout.expand(spec.reward_path, user), user, layout, errors, fld="reward_path")
    elif spec.reward_name:
        errors.append(field_error("reward_name", spec.reward_name, "spec.reward_name_without_path"))
    if spec.workload == "sft" and spec.nnodes > 1:
        errors.append(field_error("nnodes", spec.nnodes, "spec.sft_one_node"))
    if spec.workload == "sft" and spec.rollout_n is not None:
        errors.append(field_error("rollout_n", spec.rollout_n, "spec.rollout_n_sft"))
    overrides: dict[str, str] = {}
    unresolved: list[FieldError] = []
    for i, item in enumerate(spec.overrides):
        fld = f"overrides[{i}]"
        if not _OVERRIDE_KEY.match(item):
            errors.append(field_error(fld, item, "spec.override_form"))
            continue
        expanded = layout.expand(item, user)
        key, _, value = expanded.lstrip("+~").partition("=")
        check_override_key(key, errors, fld=fld)
        check_interpolations(value, errors, fld=fld)
        _check_override_paths(key, value, user, layout, errors, fld=fld)
        unresolved.extend(unresolved_path_errors(key, value, fld=fld))
        overrides[key] = value
    entry = "verl.trainer.sft_trainer" if spec.workload == "sft" else "verl.trainer.main_ppo"
    return Admitted(spec=spec, entry_module=entry, overrides=overrides, unresolved=unresolved, layout=policy.layout)


def _check_model_id(model_id: str, user: str, layout: DataLayout, errors: list[FieldError]) -> None:
    if model_id.startswith(("/", "$", "~", ".")):
        real = normalize(layout.expand(model_id, user))
        allowed = (*layout.own_areas(user), layout.hf_dir)
        check_foreign_paths(str(real), user, layout, errors, fld="model_id")
        if not any(is_under(real, base) for base in allowed) and not _has_error(errors, "model_id"):
            errors.append(field_error("model_id", model_id, "path.model_outside"))
    elif not _HF_ID.match(model_id):
        errors.append(field_error("model_id", model_id, "spec.model_id"))


# ---------------------------------------------------------------- shared path rules


def check_foreign_paths(text: str, user: str, layout: DataLayout, errors: list[FieldError], *, fld: str) -> None:
    """Reject any path in ``text`` that lands in another user's home after normalisation."""
    users = str(layout.users_dir)
    for piece in _PIECES.findall(text):
        if "/" not in piece and piece != "..":
            continue
        cwd = layout.home(user) / "jobs" / "_"
        if piece.startswith("/"):
            real = normalize(piece)
        elif ".." in piece.split("/"):
            real = normalize(piece, cwd)
        else:
            continue
        team = team_refusal_code(real, layout)
        if team:
            errors.append(field_error(fld, display(str(real), user, layout), team[0], **team[1]))
            continue
        if not is_under(real, layout.users_dir) or real == layout.users_dir:
            if real == layout.users_dir:
                errors.append(field_error(fld, display(piece, user, layout), "path.users_folder"))
            continue
        owner = real.relative_to(layout.users_dir).parts[0]
        if owner != user:
            errors.append(
                field_error(fld, display(str(real), user, layout), "path.other_users_home", owner=owner)
            )
    # Quotes or variables can hide the owner from the lexical view: /private/users/"bo"b, $U, b*b.
    for m in re.finditer(re.escape(users) + r"/+([^/\s]*)", text.replace("'", "").replace('"', "")):
        owner = m.group(1)
        if _GLOB_OR_VAR.search(owner) and owner != user:
            errors.append(field_error(fld, display(m.group(0), user, layout), "path.users_literal"))
    for m in re.finditer(re.escape(str(layout.teams_dir)) + r"/+([^/\s]*)", text.replace("'", "").replace('"', "")):
        if _GLOB_OR_VAR.search(m.group(1)):
            errors.append(field_error(fld, display(m.group(0), user, layout), "path.team_literal"))


def _check_override_paths(key: str, value: str, user: str, layout: DataLayout, errors: list[FieldError], *,
                          fld: str) -> None:
    """Argus's path rules for one override's value, one problem per key: a path in another home is that
    problem, not also "training data must be under your home" for the same path."""
    found = [field_error(fld, value, "path.tilde") for _ in _TILDE_USER.finditer(value)][:1]
    if not found:
        check_foreign_paths(value, user, layout, found, fld=fld)
    if not found:
        check_literal_path(key, value, user, layout, found, fld=fld)
        if key in TRAIN_KEYS:
            check_data_paths(value, user, layout, found, fld=fld)
        if key in REWARD_KEYS:
            check_reward_path(value, user, layout, found, fld=fld)
    errors.extend(found)


def check_override_key(key: str, errors: list[FieldError], *, fld: str) -> None:
    if key == HYDRA_CHDIR_KEY:
        errors.append(field_error(fld, key, "command.hydra_chdir"))
    if HYDRA_INSTANTIATE_KEYS.intersection(key.split(".")):
        errors.append(field_error(fld, key, "command.hydra_instantiate"))


def check_data_paths(value: str, user: str, layout: DataLayout, errors: list[FieldError], *, fld: str) -> None:
    allowed = (*layout.own_areas(user), layout.datasets_dir, layout.legacy_datasets_dir)
    for item in split_list_value(value):
        if not item.startswith("/"):
            errors.append(
                field_error(fld, item, "path.train_data_absolute")
            )
            continue
        real = normalize(item)
        team = team_refusal_code(real, layout)
        if team:
            errors.append(field_error(fld, display(item, user, layout), team[0], **team[1]))
        elif not any(is_under(real, base) for base in allowed):
            errors.append(
                field_error(fld, display(item, user, layout), "path.train_data_outside")
            )


def check_reward_path(value: str, user: str, layout: DataLayout, errors: list[FieldError], *, fld: str) -> None:
    item = value.strip().strip("'\"")
    real = normalize(item)
    if not item.startswith("/") or not any(is_under(real, code) and real != code for code in code_dirs(user, layout)):
        errors.append(
            field_error(fld, display(item, user, layout), "path.reward_file_outside")
        )


def _has_error(errors: list[FieldError], fld: str) -> bool:
    return any(e.field == fld for e in errors)


def resolved_view(admitted: Admitted, user: str, policy: AdmissionPolicy) -> dict[str, Any]:
    """The spec with defaults filled and macros expanded, as shown by GET /tasks/{id}/spec."""
    layout = policy.layout
    data = admitted.spec.model_dump()
    if isinstance(admitted.spec, BasicTaskSpec):
        for key in ("model_id", "train_file", "val_file", "reward_path"):
            if isinstance(data.get(key), str):
                data[key] = layout.expand(data[key], user)
        data["overrides"] = [layout.expand(o, user) for o in data["overrides"]]
    else:
        data["command"] = admitted.command_expanded
    data["entry_module"] = admitted.entry_module
    data["env"] = admitted.spec.env or policy.default_env  # where it runs; checked by argus.envs.check
    spec = admitted.spec
    overrides = admitted.overrides
    if isinstance(spec, BasicTaskSpec) and spec.workload != "sft":  # the template's TransferQueue settings
        overrides = {**transfer_queue_settings(spec.nnodes), **overrides}
    need = task_need(admitted.entry_module, spec.nnodes, spec.n_gpus_per_node, cpus_per_node=spec.cpus_per_node,
                     memory_per_node=spec.memory_per_node, overrides=overrides, device=spec.device)
    # what the scheduler fits per node (issue 15): the spec's values or core.resources' defaults
    data[RESOURCES_KEY] = {"gpus": reserved_gpus(spec.n_gpus_per_node, spec.device), "cpus": need.cpus,
                           "memory": need.memory}
    return data


@dataclass
class CheckOutcome:
    """What an extra admission check (e.g. verl's own validation) found.

    ``command_expanded`` replaces the advanced command when the check rewrote it
    (legacy keys); ``info`` is returned with the accepted task (e.g. row counts).
    ``paths_resolved`` says the check resolved the task's config exactly as verl will and
    judged every resolved path, which lifts ``Admitted.unresolved``.
    """

    errors: list[FieldError] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    command_expanded: str | None = None
    info: dict[str, Any] = field(default_factory=dict)
    paths_resolved: bool = False


# An extra check run after the pure ones: (admitted spec, user name, template overrides) -> outcome.
SpecCheck = Callable[[Admitted, str, list[str]], CheckOutcome]
# (the spec's env: or None for the default, the user) -> the other environments a refused advanced spec is tried
# in, as (name, verl version): "accepted as written by verl 0.4.1 in verl-0.4.1-cpu" (issue 35)
EnvChoices = Callable[[str | None, str], list[tuple[str, str]]]
