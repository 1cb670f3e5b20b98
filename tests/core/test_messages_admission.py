"""Admission's refusals beyond the generic ones as a code and parameters (issue 37, item 7): an advanced
command's (``command.*``), resources and durations, the rest of a spec's own fields and a spec document that is
not YAML or not a mapping (``spec.*``), ``evaluate_checkpoints`` and eval specs (``eval.*``), team folders, the
users folder and ``~name`` (``path.*``). Each is made here by the function that refuses it, from a bad input,
and must say exactly the English it always did, carry its code and params, and read in Chinese with every value
it names."""

from __future__ import annotations

import re
from typing import Any

import pytest

from argus.core.admission import (
    AdmissionPolicy,
    Rejected,
    admit,
    check_data_paths,
    check_foreign_paths,
    scan_invalid_spec,
)
from argus.core.command import parse_command
from argus.core.envvars import DEFAULT_ENV_ALLOWLIST, check_env_assignments
from argus.core.evaluate_every import option_problems, spec_problems
from argus.core.hydra_flags import _REFUSED, split_hydra_flags
from argus.core.interpolation import check_interpolations, unresolved_path_errors
from argus.core.messages import EN, Invalid, render
from argus.core.pathrules import check_path_value
from argus.core.paths import DataLayout
from argus.core.stall import parse_duration
from argus.core.taskspec import load_spec_document, parse_taskspec
from argus.errors import FieldError
from argus.settings import DEFAULT_ENTRY_ALLOWLIST
from argus.web import i18n

LAYOUT = DataLayout.at("/private")
POLICY = AdmissionPolicy(layout=LAYOUT, entry_allowlist=tuple(DEFAULT_ENTRY_ALLOWLIST))
BASIC = {"workload": "grpo", "model_id": "Qwen/Qwen2.5-0.5B-Instruct", "nnodes": 1, "n_gpus_per_node": 1,
         "train_file": "$HOME/datasets/t.parquet", "val_file": "$HOME/datasets/v.parquet"}
PPO = "python3 -m verl.trainer.main_ppo data.train_files=$HOME/datasets/t.parquet"
SFT = "verl.trainer.sft_trainer"
LM = {"kind": "eval", "model_id": "$HOME/models/tiny", "lm_eval": {"tasks": ["t"]}}


def parsed(command: str) -> list[FieldError]:
    out = parse_command(command)
    return out if isinstance(out, list) else out.problems


def admitted(gpus: int = 1, nnodes: int = 1, **fields: Any) -> list[FieldError]:
    """The refusals of a spec that parses (a basic one unless it has a command) by admission itself."""
    doc = {**BASIC, "nnodes": nnodes, "n_gpus_per_node": gpus, **fields}
    if "command" in doc:
        doc = {"kind": "advanced", "nnodes": nnodes, "n_gpus_per_node": gpus, "command": doc["command"]}
    spec = parse_taskspec(doc)
    assert not isinstance(spec, list), spec
    verdict = admit(spec, "alice", POLICY)
    return [*verdict.errors, *(verdict.partial.unresolved if verdict.partial else [])] if isinstance(
        verdict, Rejected) else verdict.unresolved


def spec(**fields: Any) -> list[FieldError]:
    out = parse_taskspec({**BASIC, **fields})
    assert isinstance(out, list), out
    return out


def doc(d: dict[str, Any]) -> list[FieldError]:
    out = parse_taskspec(d)
    assert isinstance(out, list), out
    return out


def hydra(*args: str) -> list[FieldError]:
    out = split_hydra_flags(list(args))
    assert isinstance(out, list), out
    return out


def env(name: str, value: str) -> list[FieldError]:
    errors: list[FieldError] = []
    check_env_assignments({name: value}, DEFAULT_ENV_ALLOWLIST, errors)
    return errors


def interpolations(text: str) -> list[FieldError]:
    errors: list[FieldError] = []
    check_interpolations(text, errors, fld="command")
    return errors


def paths(fn: Any, text: str) -> list[FieldError]:
    errors: list[FieldError] = []
    fn(text, "alice", LAYOUT, errors, fld="f")
    return errors


def loaded(text: str, content_type: str | None = None) -> list[FieldError]:
    out = load_spec_document(text, content_type)
    assert isinstance(out, list), out
    return out


def evaluate(workload: str, save_freq: str, fld: str = "save_freq", option: dict | None = None) -> list[FieldError]:
    return spec_problems(option or {}, workload=workload, save_freq=save_freq, save_freq_field=fld)[0]




# One bad input per code, each through the function that refuses it (admission itself where it can be).
MAKERS: dict[str, Any] = {
    # --- an advanced command ---
    "command.second_line": lambda: parsed("python3 -m a\npython3 -m b"),
    "command.substitution": lambda: parsed("python3 -m a x=$(id)"),
    "command.unsplittable": lambda: parsed("python3 -m a 'x"),
    "command.shell_operator": lambda: parsed(PPO + " | tee out.log"),
    "command.env_program": lambda: parsed("env A=1 python3 -m a"),
    "command.no_program": lambda: parsed("A=1"),
    "command.interpreter": lambda: admitted(command="python -m verl.trainer.main_ppo"),
    "command.interpreter_by_path": lambda: admitted(command="/usr/bin/python3 -m verl.trainer.main_ppo"),
    "command.python_module": lambda: admitted(command="python3 train.py"),
    "command.module_not_allowed": lambda: admitted(command="python3 -m os"),
    "command.shell_expansion": lambda: admitted(command=PPO + " trainer.default_local_dir=$PWD/x"),
    "command.torchrun_option": lambda: parsed("torchrun --bogus -m m"),
    "command.torchrun_option_value": lambda: parsed("torchrun --nnodes"),
    "command.torchrun_option_no_value": lambda: parsed("torchrun --standalone=1 -m m"),
    "command.torchrun_module": lambda: parsed("torchrun --standalone train.py"),
    "command.torchrun_not_allowed": lambda: admitted(command="torchrun --standalone -m os"),
    "command.torchrun_python_flag": lambda: admitted(command=f"torchrun --standalone --no-python -m {SFT}"),
    "command.torchrun_multinode": lambda: admitted(nnodes=2, command=f"torchrun --nnodes=2 -m {SFT}"),
    "command.torchrun_nnodes": lambda: admitted(command=f"torchrun --nnodes=x -m {SFT}"),
    "command.torchrun_nproc": lambda: admitted(command=f"torchrun --standalone --nproc_per_node=x -m {SFT}"),
    "command.torchrun_nproc_over": lambda: admitted(command=f"torchrun --standalone --nproc_per_node=8 -m {SFT}"),
    "command.sft_torchrun": lambda: admitted(gpus=2, command=f"python3 -m {SFT}"),
    "command.sft_torchrun_one_node": lambda: admitted(gpus=2, nnodes=2, command=f"python3 -m {SFT}"),
    "command.hydra_flag_value": lambda: hydra("--config-name"),
    "command.hydra_flag_refused": lambda: hydra("--multirun"),
    "command.hydra_flag_unknown": lambda: hydra("--bogus"),
    "command.config_name_empty": lambda: hydra("--config-name="),
    "command.config_folder_relative": lambda: admitted(command=PPO + " --config-path=myconf"),
    "command.config_folder_outside": lambda: admitted(command=PPO + " --config-path=/tmp/conf"),
    "command.hydra_chdir": lambda: admitted(command=PPO + " hydra.job.chdir=True"),
    "command.hydra_instantiate": lambda: admitted(overrides=["actor_rollout_ref.model._target_=x.Y"]),
    "command.env_gpu_visibility": lambda: env("CUDA_VISIBLE_DEVICES", "0"),
    "command.env_values": lambda: env("WANDB_MODE", "online"),
    "command.env_not_allowed": lambda: env("FOO", "1"),
    "command.env_not_allowed_why": lambda: env("LD_PRELOAD", "x.so"),
    "command.interpolation": lambda: interpolations("x=${oc.env:HOME}"),
    "command.path_interpolation": lambda: unresolved_path_errors("data.train_files", "${x}/t.parquet", fld="f"),
    "command.interpolation_reads_path": lambda: unresolved_path_errors("x.y", "${data.train_files}", fld="f"),
    "command.path_piece": lambda: unresolved_path_errors("trainer.project_name", "a/b", fld="f"),
    # --- resources, durations and the spec's own fields ---
    "spec.platform_limit": lambda: admitted(nnodes=2000),
    "spec.needs_gpus": lambda: admitted(gpus=0, command=PPO),
    "spec.memory": lambda: spec(memory_per_node=True),
    "spec.memory_negative": lambda: spec(memory_per_node=-1),
    "spec.memory_units": lambda: spec(memory_per_node="64 gigs"),
    "spec.memory_too_large": lambda: spec(memory_per_node=10**20),
    "spec.cpus": lambda: spec(cpus_per_node="many"),
    "spec.cpus_range": lambda: spec(cpus_per_node=10**6),
    "spec.duration": lambda: spec(stall_after="soon"),
    "spec.duration_negative": lambda: spec(stall_first_step=-1),
    "spec.duration_too_long": lambda: spec(stall_after="8d"),
    "spec.control_characters": lambda: spec(name="a\nb"),
    "spec.submit_elsewhere": lambda: doc({"kind": "sweep"}),
    "spec.val_file_required": lambda: admitted(val_file=None),
    "spec.reward_name_without_path": lambda: admitted(reward_name="compute_score"),
    "spec.sft_one_node": lambda: admitted(nnodes=2, workload="sft"),
    "spec.rollout_n_sft": lambda: admitted(workload="sft", rollout_n=4),
    "spec.override_form": lambda: admitted(overrides=["trainer.val_before_train"]),
    "spec.interpolation_basic": lambda: admitted(train_file="$HOME/datasets/${x}.parquet"),
    "spec.model_id": lambda: admitted(model_id="not a model!"),
    "spec.yaml": lambda: loaded("a: [1"),
    "spec.yaml_nowhere": lambda: loaded("a: \x07"),
    "spec.json": lambda: loaded('{"a": ', "application/json"),
    "spec.too_deep": lambda: loaded("[" * 40, "application/json"),
    "spec.not_a_mapping": lambda: loaded("[1]"),
    "spec.empty_document": lambda: loaded(""),
    "spec.field_name": lambda: loaded("1: a"),
    # --- evaluate_checkpoints and eval specs ---
    "eval.option": lambda: option_problems(3),
    "eval.unknown_field": lambda: doc({**LM, "lm_eval": {"tasks": ["t"], "shots": 5}}),
    "eval.unknown_field_did_you_mean": lambda: option_problems({"val_fil": "x"}),
    "eval.option_string": lambda: option_problems({"val_file": ""}),
    "eval.option_verl_only": lambda: option_problems({"val_file": "x", "lm_eval": {"tasks": ["t"]}}),
    "eval.verl_workload": lambda: evaluate("sft", "5"),
    "eval.no_checkpoint": lambda: evaluate("grpo", "0", "command: trainer.save_freq"),
    "eval.no_checkpoint_default": lambda: evaluate("grpo", "-1"),
    "eval.checkpoint": lambda: doc({"kind": "eval", "model_id": "m", "val_file": "v", "checkpoint": "x"}),
    "eval.lm_eval_mapping": lambda: doc({**LM, "lm_eval": 3}),
    "eval.lm_eval_tasks": lambda: doc({**LM, "lm_eval": {"tasks": []}}),
    "eval.lm_eval_include_path": lambda: doc({**LM, "lm_eval": {"tasks": ["t"], "include_path": 3}}),
    "eval.lm_eval_limit": lambda: doc({**LM, "lm_eval": {"tasks": ["t"], "limit": 0}}),
    "eval.lm_eval_verl_only": lambda: doc({**LM, "val_file": "v"}),
    "eval.lm_eval_both_models": lambda: doc({**LM, "checkpoint": "$HOME/jobs/t/checkpoints/global_step_1"}),
    "eval.lm_eval_no_model": lambda: doc({"kind": "eval", "lm_eval": {"tasks": ["t"]}}),
    "eval.lm_eval_model_folder": lambda: doc({**LM, "model_id": " "}),
    "eval.lm_eval_one_worker": lambda: doc({**LM, "nnodes": 2}),
    # --- team folders, the users folder, '~name' ---
    "path.all_teams": lambda: paths(check_data_paths, "/private/teams"),
    "path.all_teams_at": lambda: check_path_value("data.train_files", "/private/teams", "alice", LAYOUT, fld="f"),
    "path.other_team": lambda: paths(check_data_paths, "/private/teams/nlp/t.parquet"),
    "path.other_team_at": lambda: check_path_value("data.train_files", "/private/teams/nlp/t.parquet", "alice",
                                                   LAYOUT, fld="f"),
    "path.team_literal": lambda: paths(check_foreign_paths, "cat /private/teams/$T/x"),
    "path.users_folder": lambda: paths(check_foreign_paths, "ls /private/users"),
    "path.users_literal": lambda: paths(check_foreign_paths, "cat /private/users/$U/x"),
    "path.tilde": lambda: scan_invalid_spec({"train_file": "~bob/t.parquet"}, "alice", POLICY),
    "path.tilde_at": lambda: check_path_value("data.train_files", "~bob/t.parquet", "alice", LAYOUT, fld="f"),
    "path.model_outside": lambda: admitted(model_id="/tmp/m"),
}

ENGLISH = {  # what each refusal says in English: today's text, written out
    "command.second_line": ("must be a single command: end each continued line with '\\' (found a second command on its own "
                            "line)"),
    "command.substitution": "command substitution (`...` or $(...)) is not allowed; write the value itself",
    "command.unsplittable": "cannot be split into words (No closing quotation); check that every quote is closed",
    "command.shell_operator": ("shell operator '|' is not allowed: submit one python3 command; Argus already writes "
                               "stdout/stderr to the task log (jobs/<task>/logs), so pipes and redirections are not needed"),
    "command.env_program": "write VAR=value before python3 directly instead of using 'env'",
    "command.no_program": "has no program to run; expected 'python3 -m verl.trainer.main_ppo ...'",
    "command.interpreter": ("must run 'python3 -m <module>' (or 'torchrun --nproc_per_node=<GPUs> --standalone -m <module>') "
                            "with a module from the allowlist (verl.trainer., verl.model_merger, argus.jobs.)"),
    "command.interpreter_by_path": ("must run 'python3 -m <module>' (or 'torchrun --nproc_per_node=<GPUs> --standalone -m <module>') "
                                    "with a module from the allowlist (verl.trainer., verl.model_merger, argus.jobs.) (Argus points "
                                    "python3 and torchrun at the training environment; do not name an interpreter by path)"),
    "command.python_module": ("python3 must be run with '-m <module>' where module is one of: verl.trainer., "
                              "verl.model_merger, argus.jobs."),
    "command.module_not_allowed": "module is not on the allowlist; allowed: verl.trainer., verl.model_merger, argus.jobs.",
    "command.shell_expansion": ("the shell would fill this in from the task's environment after Argus checked the command; write "
                                "the value itself (a Hydra interpolation goes in single quotes: 'key=${other.key}')"),
    "command.torchrun_option": ("is not a torchrun option Argus knows; write torchrun's options in full (e.g. --nproc_per_node=8 "
                                "--standalone) before '-m <module>'"),
    "command.torchrun_option_value": "torchrun option needs a value",
    "command.torchrun_option_no_value": "this torchrun option takes no value",
    "command.torchrun_module": ("torchrun must run a module: write 'torchrun --nproc_per_node=<GPUs> --standalone -m <module> "
                                "key=value ...' with a module from the allowlist (a script path is not accepted)"),
    "command.torchrun_not_allowed": ("module torchrun would run is not on the allowlist; allowed: verl.trainer., verl.model_merger, "
                                     "argus.jobs."),
    "command.torchrun_python_flag": "torchrun must run a Python module with -m; remove --no-python",
    "command.torchrun_multinode": ("Argus runs one driver per task, so torchrun (SFT) runs on one node; multi-node SFT is not "
                                   "supported yet: set nnodes: 1 and --nnodes=1 (or --standalone)"),
    "command.torchrun_nnodes": "must be a number of nodes (1)",
    "command.torchrun_nproc": "must be a number of processes, one per GPU (n_gpus_per_node=1)",
    "command.torchrun_nproc_over": ("starts more processes than the task has GPUs (n_gpus_per_node=1): ranks would share or miss "
                                    "GPUs; set --nproc_per_node=1 or raise n_gpus_per_node"),
    "command.sft_torchrun": ("verl's SFT trainer runs one process per GPU, started by torchrun; 'python3 -m "
                             "verl.trainer.sft_trainer' starts one process, which would use 1 of the 2 GPUs this task "
                             "reserves (it never reads trainer.n_gpus_per_node): replace 'python3 -m' with 'torchrun "
                             "--standalone --nnodes=1 --nproc_per_node=2 -m' (the module and its arguments stay), or reserve "
                             "n_gpus_per_node: 1"),
    "command.sft_torchrun_one_node": ("verl's SFT trainer runs one process per GPU, started by torchrun; 'python3 -m "
                                      "verl.trainer.sft_trainer' starts one process, which would use 1 of the 4 GPUs this task "
                                      "reserves (it never reads trainer.n_gpus_per_node): replace 'python3 -m' with 'torchrun "
                                      "--standalone --nnodes=1 --nproc_per_node=2 -m' (the module and its arguments stay) (one node: "
                                      "SFT under torchrun runs on one node), or reserve n_gpus_per_node: 1"),
    "command.hydra_flag_value": "--config-name needs a value, e.g. --config-name=...",
    "command.hydra_flag_refused": ("Hydra's --multirun runs a sweep of several jobs inside one task; submit one task per "
                                   "configuration; remove it"),
    "command.hydra_flag_unknown": ("is not a Hydra flag: verl's command line takes key=value overrides and Hydra's --config-path / "
                                   "--config-name / --config-dir"),
    "command.config_name_empty": "needs a config name, e.g. --config-name=ppo_megatron_trainer",
    "command.config_folder_relative": ("Hydra reads a relative config folder inside verl's trainer package: write config (verl's own "
                                       "configs) or your folder as $HOME/code/<project>/config"),
    "command.config_folder_outside": "a config folder must be under your home, e.g. $HOME/code/<project>/config",
    "command.hydra_chdir": ("Argus runs the task in $HOME/jobs/<task> and checks relative paths against it; remove "
                            "hydra.job.chdir"),
    "command.hydra_instantiate": ("overriding Hydra instantiation keys (_target_, _args_, ...) is not allowed: they would run code "
                                  "while Argus validates the config; use the classes verl's config names"),
    "command.env_gpu_visibility": ("CUDA_VISIBLE_DEVICES is set by the platform from the GPUs Ray gives this task (setting it would "
                                   "use GPUs another task holds); remove it and size the task with n_gpus_per_node"),
    "command.env_values": "WANDB_MODE may only be set to offline, disabled",
    "command.env_not_allowed": ("setting FOO is not allowed; remove it. A command may set only: PYTHONUNBUFFERED, "
                                "PYTHONHASHSEED, PYTHONFAULTHANDLER, PYTHONDONTWRITEBYTECODE, HYDRA_FULL_ERROR, "
                                "TOKENIZERS_PARALLELISM, WANDB_MODE=offline|disabled, HF_HUB_OFFLINE, HF_DATASETS_OFFLINE, "
                                "TRANSFORMERS_OFFLINE, RAY_DEDUP_LOGS, RAY_LOGGING_LEVEL, CUDA_DEVICE_MAX_CONNECTIONS, "
                                "CUDA_LAUNCH_BLOCKING, OMP_NUM_THREADS, MKL_NUM_THREADS, PYTORCH_CUDA_ALLOC_CONF, TORCH_NCCL_*, "
                                "TORCH_DISTRIBUTED_DEBUG, NCCL_*, VLLM_*, SGLANG_*, NVTE_*, VERL_* (setting env_allowlist)"),
    "command.env_not_allowed_why": ("setting LD_PRELOAD is not allowed (it changes which native code every process loads); remove "
                                    "it. A command may set only: PYTHONUNBUFFERED, PYTHONHASHSEED, PYTHONFAULTHANDLER, "
                                    "PYTHONDONTWRITEBYTECODE, HYDRA_FULL_ERROR, TOKENIZERS_PARALLELISM, WANDB_MODE=offline|disabled, "
                                    "HF_HUB_OFFLINE, HF_DATASETS_OFFLINE, TRANSFORMERS_OFFLINE, RAY_DEDUP_LOGS, RAY_LOGGING_LEVEL, "
                                    "CUDA_DEVICE_MAX_CONNECTIONS, CUDA_LAUNCH_BLOCKING, OMP_NUM_THREADS, MKL_NUM_THREADS, "
                                    "PYTORCH_CUDA_ALLOC_CONF, TORCH_NCCL_*, TORCH_DISTRIBUTED_DEBUG, NCCL_*, VLLM_*, SGLANG_*, "
                                    "NVTE_*, VERL_* (setting env_allowlist)"),
    "command.interpolation": ("interpolation uses the 'oc.env' resolver, which is not allowed: it reads the server's "
                              "environment variables; write the value itself (Argus checks paths in the config verl will "
                              "resolve)"),
    "command.path_interpolation": ("data.train_files is a path and contains the interpolation ${x}; verl validation is off, "
                                   "unavailable, or does not cover this entry module, so Argus cannot resolve the config to check "
                                   "where the path lands: write the path itself ($HOME/...)"),
    "command.interpolation_reads_path": ("${data.train_files} reads the path data.train_files; verl validation is off, unavailable, or "
                                         "does not cover this entry module, so Argus cannot resolve the config to check where the path "
                                         "lands: write the value itself"),
    "command.path_piece": ("verl builds trainer.default_local_dir from trainer.project_name, so it must be a plain name (no "
                           "'/', '..' or ${...}); verl validation is off, unavailable, or does not cover this entry module, "
                           "so Argus cannot resolve the config to check where the path lands"),
    "spec.platform_limit": "must be ≤ 1024 (the platform limit)",
    "spec.needs_gpus": ("verl training needs GPUs: set n_gpus_per_node ≥ 1 (0 is only for CPU jobs such as "
                        "argus.jobs.doctor)"),
    "spec.memory": "must be a size such as '64Gi' or a number of bytes",
    "spec.memory_negative": "must be ≥ 0 bytes, e.g. '64Gi'",
    "spec.memory_units": "must be a size such as '64Gi', '512Mi' or '16G' (units: Ki Mi Gi Ti Pi, k M G T P)",
    "spec.memory_too_large": "is larger than any node (at most 1Ei)",
    "spec.cpus": "must be a number of CPUs, e.g. 12",
    "spec.cpus_range": "must be from 0 to 100000 CPUs",
    "spec.duration": "must be a duration such as '30m', '2h' or a number of seconds (0: never)",
    "spec.duration_negative": "must be ≥ 0 seconds (0: never)",
    "spec.duration_too_long": "must be at most 7 days (0: never)",
    "spec.control_characters": "must not contain control characters (NUL, newline, tab, escape, …); use a plain one-line label",
    "spec.submit_elsewhere": ("a sweep is submitted as a sweep: argus sweep submit FILE (argus submit does that for you), or "
                              "POST /api/v2/sweeps"),
    "spec.val_file_required": "required for ppo/grpo; add 'val_file: $HOME/datasets/.../test.parquet'",
    "spec.reward_name_without_path": "set reward_path too (a file under $HOME/code/)",
    "spec.sft_one_node": ("a basic sft task runs on one node (torchrun); set nnodes: 1 or write an advanced spec for "
                          "multi-node SFT"),
    "spec.rollout_n_sft": "only applies to ppo/grpo; remove it for sft",
    "spec.override_form": "must be a Hydra override 'key=value', e.g. 'trainer.val_before_train=False'",
    "spec.interpolation_basic": "must be written out: ${...} interpolations are only accepted in 'overrides'",
    "spec.model_id": ("is neither a Hugging Face id like 'Qwen/Qwen2.5-0.5B-Instruct' nor a path like "
                      "$HOME/models/<name>"),
    "spec.yaml": "invalid YAML at line 2 column 1: did not find expected ',' or ']'",
    "spec.yaml_nowhere": ("invalid YAML: unacceptable character #x0007: control characters are not allowed\n  in \"<unicode "
                          "string>\", position 3"),
    "spec.json": "invalid JSON at line 1 column 7: Expecting value",
    "spec.too_deep": ("nested deeper than 32 levels; a task spec is a flat mapping of fields (only 'overrides' is a "
                      "list of strings)"),
    "spec.not_a_mapping": "a task spec must be a mapping of fields, got list",
    "spec.empty_document": "a task spec must be a mapping of fields, got empty",
    "spec.field_name": "field names must be strings",
    "eval.option": ("must be true (verl's validation of each complete checkpoint) or a mapping of val_file, "
                    "reward_path, reward_name, lm_eval, e.g. evaluate_checkpoints: {val_file: "
                    "$HOME/datasets/math/test.parquet}"),
    "eval.unknown_field": ("unknown field of an lm_eval block; allowed fields: batch_size, include_path, limit, "
                           "num_fewshot, tasks"),
    "eval.unknown_field_did_you_mean": ("unknown field of evaluate_checkpoints; did you mean 'val_file'? allowed fields: val_file, "
                                        "reward_path, reward_name, lm_eval"),
    "eval.option_string": ("must be a non-empty string of at most 4096 characters, e.g. evaluate_checkpoints: {val_file: "
                           "$HOME/datasets/math/test.parquet}"),
    "eval.option_verl_only": ("is read by verl's validation only; lm-eval's tasks bring their own data and metrics: remove it, "
                              "or remove lm_eval to evaluate with verl"),
    "eval.verl_workload": ("verl's validation (trainer.val_only) loads only a ppo or grpo checkpoint, and this is a sft "
                           "task: evaluate its checkpoints with lm-eval instead, e.g. evaluate_checkpoints: {lm_eval: "
                           "{tasks: [my_task], include_path: $HOME/code/lm_tasks}}"),
    "eval.no_checkpoint": ("trainer.save_freq 0 saves no checkpoint, so evaluate_checkpoints would never evaluate one: set "
                           "trainer.save_freq=N (verl saves a checkpoint every N steps and at the last one), or remove "
                           "evaluate_checkpoints"),
    "eval.no_checkpoint_default": ("save_freq -1 (the default) saves no checkpoint, so evaluate_checkpoints would never evaluate "
                                   "one: set save_freq: N (verl saves a checkpoint every N steps and at the last one), or remove "
                                   "evaluate_checkpoints"),
    "eval.checkpoint": ("must be a verl step folder, e.g. $HOME/jobs/<task>/checkpoints/global_step_4 (argus checkpoints "
                        "<task> lists them)"),
    "eval.lm_eval_mapping": "must be a mapping, e.g. {tasks: [my_task], include_path: $HOME/code/lm_tasks, limit: 32}",
    "eval.lm_eval_tasks": ("must name one or more lm-eval tasks or groups (letters, digits, '_', '.', '-'), e.g. tasks: "
                           "[my_task]: a task YAML's 'task:' under include_path, or one of lm-eval's own whose data is in "
                           "common/hf"),
    "eval.lm_eval_include_path": "must be a folder (or a list of folders) of task YAMLs, e.g. $HOME/code/lm_tasks",
    "eval.lm_eval_limit": ("must be a number of examples per task (≥ 1) or a fraction of each task's examples (between 0 "
                           "and 1), e.g. limit: 32"),
    "eval.lm_eval_verl_only": ("is read by verl's validation only; an lm_eval spec's tasks bring their own data and metrics: "
                               "remove it, or evaluate with verl in another eval spec (without lm_eval)"),
    "eval.lm_eval_both_models": ("an lm_eval spec evaluates one model: give model_id (a Hugging Face folder, e.g. "
                                 "$HOME/models/tiny) or checkpoint (a verl step folder, merged first), not both"),
    "eval.lm_eval_no_model": ("an lm_eval spec needs the model: add 'model_id: $HOME/models/tiny' or 'checkpoint: "
                              "$HOME/jobs/<task>/checkpoints/global_step_N'"),
    "eval.lm_eval_model_folder": "must be a folder path, e.g. $HOME/models/tiny",
    "eval.lm_eval_one_worker": "lm-eval runs as one process on one worker: set it to 1",
    "path.all_teams": "names the folder of all teams; use $HOME/teams/<team>/... for a team you are in",
    "path.all_teams_at": ("data.train_files=$HOME/teams names the folder of all teams; use $HOME/teams/<team>/... for a "
                          "team you are in"),
    "path.other_team": ("is in the folder of team nlp, which you are not in; use $HOME/teams/<team>/... for a team you "
                        "are in (argus teams lists them), your own files ($HOME/...) or the shared $HOME/common/..."),
    "path.other_team_at": ("data.train_files=$HOME/teams/nlp/t.parquet is in the folder of team nlp, which you are not in; "
                           "use $HOME/teams/<team>/... for a team you are in (argus teams lists them), your own files "
                           "($HOME/...) or the shared $HOME/common/..."),
    "path.team_literal": "a team folder must be named literally ($HOME/teams/<team>, no variables or globs)",
    "path.users_folder": "must not name the folder of all users' homes; use $HOME/...",
    "path.users_literal": "a path under the users directory must name your own home literally (no variables or globs)",
    "path.tilde": "'~name' is another account's home; write your own paths as $HOME/...",
    "path.tilde_at": "data.train_files=~bob/t.parquet: '~name' is another account's home; write $HOME/... instead",
    "path.model_outside": ("a model path must be under $HOME/models (your uploads), a team folder of yours "
                           "($HOME/teams/<team>/...) or $HOME/common/hf (shared cache)"),
}

ZH = {k.removeprefix("msg."): v for k, v in i18n.catalog("zh").items() if k.startswith("msg.")}
PLACEHOLDER = re.compile(r"\{(?:s:)?(\w+)\}")
CHINESE = re.compile(r"[\u4e00-\u9fff]")
SCENARIOS = {code: (MAKERS[code], ENGLISH[code]) for code in MAKERS}  # tests/core/test_field_error_codes.py


def said_in_chinese(code: str, params: dict[str, Any]) -> str:
    """``code`` in the zh catalog, checked to name every value the English names."""
    assert {m.group(1) for m in PLACEHOLDER.finditer(ZH[code])} <= set(params), "a value is not given"
    text = render(code, params, ZH)
    assert CHINESE.search(text), text
    for v in params.values():
        if isinstance(v, dict):
            assert render(v["code"], v, ZH) in text
        elif isinstance(v, list):
            assert all(render(i["code"], i, ZH) in text for i in v)
        else:
            assert str(v) in text, (v, text)
    return text


@pytest.mark.parametrize("code", sorted(MAKERS))
def test_each_refusal_keeps_its_english_and_says_its_code_and_params(code: str) -> None:
    errors = MAKERS[code]()
    found = [e for e in errors if e.code == code]
    assert found, [(e.code, e.message) for e in errors]
    e = found[0]
    assert e.message == ENGLISH[code]  # byte for byte what scripts have always read
    assert e.message == render(code, e.params)
    body = e.as_dict()
    assert body["code"] == code and body["params"] == e.params and body["message"] == e.message
    said_in_chinese(code, e.params)


def test_every_command_and_eval_code_has_a_scenario() -> None:
    areas = ("command.", "eval.")
    assert {c for c in MAKERS if c.startswith(areas)} == {c for c in EN if c.startswith(areas)}


@pytest.mark.parametrize("flag", sorted(_REFUSED))
def test_each_refused_hydra_flag_says_why_in_chinese(flag: str) -> None:
    e = hydra(flag)[0]
    assert e.code == "command.hydra_flag_refused" and e.params["flag"] == flag
    assert e.message.startswith(f"Hydra's {flag} ") and e.message.endswith("; remove it")
    assert "training" not in said_in_chinese(e.code, e.params)


@pytest.mark.parametrize("text", ["${oc.env:X}", "${oc.decode:x}", "${oc.create:x}", "${oc.deprecated:x}",
                                  "${hydra:runtime.cwd}", "${mine:1}", "${${a}:HOME}", "${a b}", "${x"])
def test_each_refused_interpolation_says_why_in_chinese(text: str) -> None:
    e = interpolations(f"k={text}")[0]
    assert e.code == "command.interpolation" and e.message.startswith("interpolation ")
    assert "not allowed" not in said_in_chinese(e.code, e.params)


@pytest.mark.parametrize("name", ["PYTHONPATH", "LD_PRELOAD", "HOME", "RAY_ADDRESS"])
def test_a_refused_variable_says_why_in_chinese(name: str) -> None:
    e = env(name, "x")[0]
    assert e.code == "command.env_not_allowed_why" and f"setting {name} is not allowed (" in e.message
    said_in_chinese(e.code, e.params)


def test_a_resolved_team_path_keeps_its_english_without_a_code() -> None:
    e = check_path_value("data.train_files", "/private/teams/nlp/t.parquet", "alice", LAYOUT, fld="f",
                         resolved=True)[0]
    assert e.code is None and e.message.startswith("data.train_files resolves to $HOME/teams/nlp/t.parquet is in ")


def test_a_validators_refusal_is_still_a_value_error_with_its_english() -> None:
    with pytest.raises(ValueError, match=r"^must be at most 7 days \(0: never\)$") as caught:
        parse_duration("8d")
    assert isinstance(caught.value, Invalid) and caught.value.message.params == {"days": 7}
