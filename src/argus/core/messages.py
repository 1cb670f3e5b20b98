"""Server messages as a code and parameters, so every client can say them in its own language (issue 37).

A :class:`Message` is ``(code, params, text)``: ``code`` is stable and dotted (``queue.user_gpu_limit``),
``params`` are the values it names, and ``text`` is its English rendering from :data:`EN` — what the API
has always returned, so a script that reads the text keeps working. The WebUI renders ``code`` + ``params``
with its catalogs (``web/i18n/{en,zh}.json``, key ``msg.<code>``; ``static/js/messages.js``) and falls back
to ``text`` for a code it does not know. docs/reference.md lists the codes.

Admission's common refusals are coded the same way: a :class:`~argus.errors.FieldError` built by
:func:`field_error` carries ``code`` (``spec.*``, ``path.*``, ``command.*``, ``eval.*``) and ``params``, its
``message`` rendered from :data:`EN`, so the English scripts read and the template the WebUI translates cannot
drift apart; a pydantic validator (or a parser it calls) raises :class:`Invalid` for the same.
A refusal as a whole (an :class:`~argus.errors.ArgusError`: what the Account, Admin and Teams pages are refused —
a wrong password, a team rule, a limit) is built by :func:`refusal`: its ``message`` rendered from :data:`EN`, and
``message_code``/``message_params`` sent beside the API's ``code`` in the error's ``detail``. A request the API's
schema refuses says ``request.invalid``, each field's pydantic error coded ``request.<type>`` only where the
template renders to exactly pydantic's English.

The template language is deliberately tiny, and the same here and in ``messages.js``:

* ``{name}`` — the parameter. A number or string is written as is; a **dict** is a nested message (its
  ``code`` key names the template, its other keys are its parameters); a **list** of such dicts is written
  item by item, joined by the catalog's ``sep.<name>`` (else ``sep``), and an empty list as ``none``.
  Lists carry what a language must arrange itself: the free GPUs of each node, what a task needs.
* ``{s:name}`` — ``s`` unless the parameter is 1 (English plurals; other languages leave it out).
* The parameter ``then`` (a list of nested messages) is appended, each after a space: a suffix such as
  ``(priority class urgent)`` that can follow any reason without doubling the codes.

Pure: no I/O, importable from everywhere (core).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from argus.core.failures import HINTS_EN, FailureKind, hint_for
from argus.errors import ArgusError, FieldError

Param = Any  # str | int | float | dict (a nested message) | list[dict]
E = TypeVar("E", bound=ArgusError)

# --- admission's refusals beyond the generic spec.*/path.* ones (issue 37, item 7), by area; spliced into EN --
_WHY_UNCHECKED = ("verl validation is off, unavailable, or does not cover this entry module, so Argus cannot "
                  "resolve the config to check where the path lands")
_INTERPRETER = ("must run 'python3 -m <module>' (or 'torchrun --nproc_per_node=<GPUs> --standalone -m <module>') "
                "with a module from the allowlist ({allowed})")
_SFT_TORCHRUN = ("verl's SFT trainer runs one process per GPU, started by torchrun; 'python3 -m {module}' starts one "
                 "process, which would use 1 of the {gpus} GPUs this task reserves (it never reads "
                 "trainer.n_gpus_per_node): replace 'python3 -m' with '{launcher}' (the module and its arguments "
                 "stay)")
_ENV_ONLY = "; remove it. A command may set only: {allowed} (setting env_allowlist)"
_OTHER_TEAM = ("is in the folder of team {team}, which you are not in; use $HOME/teams/<team>/... for a team you are "
               "in (argus teams lists them), your own files ($HOME/...) or the shared $HOME/common/...")
_ALL_TEAMS = "names the folder of all teams; use $HOME/teams/<team>/... for a team you are in"
_NO_CHECKPOINT = ("saves no checkpoint, so evaluate_checkpoints would never evaluate one: set {fix} (verl saves a "
                  "checkpoint every N steps and at the last one), or remove evaluate_checkpoints")

# an advanced command (core/command.py, hydra_flags.py, envvars.py, interpolation.py; admission's checks of it)
_COMMAND: dict[str, str] = {
    "command.second_line": ("must be a single command: end each continued line with '\\' (found a second command "
                            "on its own line)"),
    "command.substitution": "command substitution (`...` or $(...)) is not allowed; write the value itself",
    "command.unsplittable": "cannot be split into words ({error}); check that every quote is closed",
    "command.shell_operator": ("shell operator '{op}' is not allowed: submit one python3 command; Argus already "
                               "writes stdout/stderr to the task log (jobs/<task>/logs), so pipes and redirections "
                               "are not needed"),
    "command.env_program": "write VAR=value before python3 directly instead of using 'env'",
    "command.no_program": "has no program to run; expected 'python3 -m verl.trainer.main_ppo ...'",
    "command.interpreter": _INTERPRETER,
    "command.interpreter_by_path": _INTERPRETER + (" (Argus points python3 and torchrun at the training environment; "
                                                   "do not name an interpreter by path)"),
    "command.python_module": "python3 must be run with '-m <module>' where module is one of: {allowed}",
    "command.module_not_allowed": "module is not on the allowlist; allowed: {allowed}",
    "command.shell_expansion": ("the shell would fill this in from the task's environment after Argus checked the "
                                "command; write the value itself (a Hydra interpolation goes in single quotes: "
                                "'key=${other.key}')"),
    "command.torchrun_option": ("is not a torchrun option Argus knows; write torchrun's options in full (e.g. "
                                "--nproc_per_node=8 --standalone) before '-m <module>'"),
    "command.torchrun_option_value": "torchrun option needs a value",
    "command.torchrun_option_no_value": "this torchrun option takes no value",
    "command.torchrun_module": ("{launcher} must run a module: write '{launcher} --nproc_per_node=<GPUs> --standalone "
                                "-m <module> key=value ...' with a module from the allowlist (a script path is not "
                                "accepted)"),
    "command.torchrun_not_allowed": "module torchrun would run is not on the allowlist; allowed: {allowed}",
    "command.torchrun_python_flag": "torchrun must run a Python module with -m; remove {flag}",
    "command.torchrun_multinode": ("Argus runs one driver per task, so torchrun (SFT) runs on one node; multi-node "
                                   "SFT is not supported yet: set nnodes: 1 and --nnodes=1 (or --standalone)"),
    "command.torchrun_nnodes": "must be a number of nodes (1)",
    "command.torchrun_nproc": "must be a number of processes, one per GPU (n_gpus_per_node={gpus})",
    "command.torchrun_nproc_over": ("starts more processes than the task has GPUs (n_gpus_per_node={gpus}): ranks "
                                    "would share or miss GPUs; set --nproc_per_node={gpus} or raise n_gpus_per_node"),
    "command.sft_torchrun": _SFT_TORCHRUN + ", or reserve n_gpus_per_node: 1",
    "command.sft_torchrun_one_node": _SFT_TORCHRUN + (" (one node: SFT under torchrun runs on one node), or reserve "
                                                      "n_gpus_per_node: 1"),
    "command.hydra_flag_value": "{flag} needs a value, e.g. {flag}=...",
    "command.hydra_flag_refused": "Hydra's {flag} {why}; remove it",
    "command.hydra_flag_unknown": ("is not a Hydra flag: verl's command line takes key=value overrides and Hydra's "
                                   "--config-path / --config-name / --config-dir"),
    "command.config_name_empty": "needs a config name, e.g. --config-name=ppo_megatron_trainer",
    "command.config_folder_relative": ("Hydra reads a relative config folder inside verl's trainer package: write "
                                       "config (verl's own configs) or your folder as $HOME/code/<project>/config"),
    "command.config_folder_outside": "a config folder must be under your home, e.g. $HOME/code/<project>/config",
    "command.hydra_chdir": ("Argus runs the task in $HOME/jobs/<task> and checks relative paths against it; remove "
                            "hydra.job.chdir"),
    "command.hydra_instantiate": ("overriding Hydra instantiation keys (_target_, _args_, ...) is not allowed: they "
                                  "would run code while Argus validates the config; use the classes verl's config "
                                  "names"),
    "command.env_gpu_visibility": ("{name} is set by the platform from the GPUs Ray gives this task (setting it would "
                                   "use GPUs another task holds); remove it and size the task with n_gpus_per_node"),
    "command.env_values": "{name} may only be set to {values}",
    "command.env_not_allowed": "setting {name} is not allowed" + _ENV_ONLY,
    "command.env_not_allowed_why": "setting {name} is not allowed ({why})" + _ENV_ONLY,
    "command.interpolation": ("interpolation {refused}; write the value itself (Argus checks paths in the config verl "
                              "will resolve)"),
    "command.path_interpolation": ("{key} is a path and contains the interpolation {interpolation}; "
                                   + _WHY_UNCHECKED + ": write the path itself ($HOME/...)"),
    "command.interpolation_reads_path": "{interpolation} reads the path {ref}; " + _WHY_UNCHECKED
                                        + ": write the value itself",
    "command.path_piece": ("verl builds trainer.default_local_dir from {key}, so it must be a plain name (no '/', "
                           "'..' or ${...}); " + _WHY_UNCHECKED),
    # why a Hydra flag, a variable or an interpolation is refused (the {why}/{refused} of the codes above)
    "part.hydra_multirun": "runs a sweep of several jobs inside one task; submit one task per configuration",
    "part.hydra_cfg": "prints the config and exits without training",
    "part.hydra_help": "prints help and exits without training",
    "part.hydra_info": "prints information and exits without training",
    "part.hydra_version": "prints Hydra's version and exits without training",
    "part.hydra_completion": "installs shell completion instead of training",
    "part.hydra_cfg_only": "only applies with --cfg, which is refused",
    "part.hydra_rerun": "re-runs a pickled earlier job instead of this command",
    "part.env_platform": "the platform sets it for python3 and the training environment",
    "part.env_native": "it changes which native code every process loads",
    "part.env_home": "Argus sets HOME to your home; '~' and $HOME already mean it",
    "part.env_ray": "Argus points the task at its Ray cluster",
    "part.interp_unclosed": "is not closed with '}'",
    "part.interp_built_resolver": ("builds a resolver name from an interpolation; only plain ${key.path} references "
                                   "to your config are allowed"),
    "part.interp_resolver": "uses the '{resolver}' resolver, which is not allowed: {why}",
    "part.interp_not_a_key": "is not a reference to a config key; only ${key.path} (or {resolvers}) may be used",
    "part.resolver_env": "it reads the server's environment variables",
    "part.resolver_decode": "it turns a string into new interpolations that Argus cannot see",
    "part.resolver_create": "it turns a string into new config that Argus cannot see",
    "part.resolver_deprecated": "it is not needed in a task: set the key verl reads",
    "part.resolver_hydra": "it reads Hydra's runtime state (the process's directories), not your config",
    "part.resolver_custom": "it is not a built-in config resolver (custom resolvers run code)",
}

# resources, durations and the rest of a spec's own fields (core/resources.py, stall.py, taskspec.py, admission.py)
_SPEC: dict[str, str] = {
    "spec.platform_limit": "must be ≤ {max} (the platform limit)",
    "spec.needs_gpus": ("verl training needs GPUs: set n_gpus_per_node ≥ 1 (0 is only for CPU jobs such as "
                        "argus.jobs.doctor)"),
    "spec.memory": "must be a size such as '64Gi' or a number of bytes",
    "spec.memory_negative": "must be ≥ 0 bytes, e.g. '64Gi'",
    "spec.memory_units": "must be a size such as '64Gi', '512Mi' or '16G' (units: Ki Mi Gi Ti Pi, k M G T P)",
    "spec.memory_too_large": "is larger than any node (at most 1Ei)",
    "spec.cpus": "must be a number of CPUs, e.g. 12",
    "spec.cpus_range": "must be from 0 to {max} CPUs",
    "spec.duration": "must be a duration such as '30m', '2h' or a number of seconds (0: never)",
    "spec.duration_negative": "must be ≥ 0 seconds (0: never)",
    "spec.duration_too_long": "must be at most {days} days (0: never)",
    "spec.control_characters": ("must not contain control characters (NUL, newline, tab, escape, …); use a plain "
                                "one-line label"),
    "spec.submit_elsewhere": ("a {kind} is submitted as a {kind}: argus {kind} submit FILE (argus submit does that "
                              "for you), or POST /api/v2/{kind}s"),
    "spec.val_file_required": "required for ppo/grpo; add 'val_file: $HOME/datasets/.../test.parquet'",
    "spec.reward_name_without_path": "set reward_path too (a file under $HOME/code/)",
    "spec.sft_one_node": ("a basic sft task runs on one node (torchrun); set nnodes: 1 or write an advanced spec for "
                          "multi-node SFT"),
    "spec.rollout_n_sft": "only applies to ppo/grpo; remove it for sft",
    "spec.override_form": "must be a Hydra override 'key=value', e.g. 'trainer.val_before_train=False'",
    "spec.interpolation_basic": "must be written out: ${...} interpolations are only accepted in 'overrides'",
    "spec.model_id": ("is neither a Hugging Face id like 'Qwen/Qwen2.5-0.5B-Instruct' nor a path like "
                      "$HOME/models/<name>"),
    # a spec document that is not YAML/JSON or not a mapping (core/taskspec.py load_spec_document)
    "spec.yaml": "invalid YAML at line {line} column {column}: {problem}",
    "spec.yaml_nowhere": "invalid YAML: {problem}",
    "spec.json": "invalid JSON at line {line} column {column}: {problem}",
    "spec.too_deep": ("nested deeper than {max} levels; a task spec is a flat mapping of fields (only 'overrides' is "
                      "a list of strings)"),
    "spec.not_a_mapping": "a task spec must be a mapping of fields, got {type}",
    "spec.empty_document": "a task spec must be a mapping of fields, got empty",
    "spec.field_name": "field names must be strings",
}

# evaluate_checkpoints and eval specs (core/evaluate_every.py, core/evaluation.py)
_EVAL: dict[str, str] = {
    "eval.option": ("must be true (verl's validation of each complete checkpoint) or a mapping of {keys}, e.g. "
                    "{example}"),
    "eval.unknown_field": "unknown field of {what}; allowed fields: {allowed}",
    "eval.unknown_field_did_you_mean": "unknown field of {what}; did you mean '{close}'? allowed fields: {allowed}",
    "eval.option_string": "must be a non-empty string of at most {max} characters, e.g. {example}",
    "eval.option_verl_only": ("is read by verl's validation only; lm-eval's tasks bring their own data and metrics: "
                              "remove it, or remove lm_eval to evaluate with verl"),
    "eval.verl_workload": ("verl's validation (trainer.val_only) loads only a {workloads} checkpoint, and this is a "
                           "{workload} task: evaluate its checkpoints with lm-eval instead, e.g. {example}"),
    "eval.no_checkpoint": "{key} {every} " + _NO_CHECKPOINT,
    "eval.no_checkpoint_default": "{key} {every} (the default) " + _NO_CHECKPOINT,
    "eval.checkpoint": ("must be a verl step folder, e.g. $HOME/jobs/<task>/checkpoints/global_step_4 (argus "
                        "checkpoints <task> lists them)"),
    "eval.lm_eval_mapping": "must be a mapping, e.g. {tasks: [my_task], include_path: $HOME/code/lm_tasks, limit: 32}",
    "eval.lm_eval_tasks": ("must name one or more lm-eval tasks or groups (letters, digits, '_', '.', '-'), e.g. "
                           "tasks: [my_task]: a task YAML's 'task:' under include_path, or one of lm-eval's own whose "
                           "data is in common/hf"),
    "eval.lm_eval_include_path": "must be a folder (or a list of folders) of task YAMLs, e.g. $HOME/code/lm_tasks",
    "eval.lm_eval_limit": ("must be a number of examples per task (≥ 1) or a fraction of each task's examples "
                           "(between 0 and 1), e.g. limit: 32"),
    "eval.lm_eval_verl_only": ("is read by verl's validation only; an lm_eval spec's tasks bring their own data and "
                               "metrics: remove it, or evaluate with verl in another eval spec (without lm_eval)"),
    "eval.lm_eval_both_models": ("an lm_eval spec evaluates one model: give model_id (a Hugging Face folder, e.g. "
                                 "$HOME/models/tiny) or checkpoint (a verl step folder, merged first), not both"),
    "eval.lm_eval_no_model": ("an lm_eval spec needs the model: add 'model_id: $HOME/models/tiny' or 'checkpoint: "
                              "$HOME/jobs/<task>/checkpoints/global_step_N'"),
    "eval.lm_eval_model_folder": "must be a folder path, e.g. $HOME/models/tiny",
    "eval.lm_eval_one_worker": "lm-eval runs as one process on one worker: set it to 1",
    "part.eval_spec": "an eval spec",
    "part.lm_eval_block": "an lm_eval block",
    "part.evaluate_option": "evaluate_checkpoints",
    "part.workload": "{workload}",
    "sep.workloads": " or ",
}

# team folders, the users folder and '~name' (core/pathrules.py, admission.py)
_PATH: dict[str, str] = {
    "path.all_teams": _ALL_TEAMS,
    "path.all_teams_at": "{at} " + _ALL_TEAMS,
    "path.other_team": _OTHER_TEAM,
    "path.other_team_at": "{at} " + _OTHER_TEAM,
    "path.team_literal": "a team folder must be named literally ($HOME/teams/<team>, no variables or globs)",
    "path.users_folder": "must not name the folder of all users' homes; use $HOME/...",
    "path.users_literal": ("a path under the users directory must name your own home literally (no variables or "
                           "globs)"),
    "path.tilde": "'~name' is another account's home; write your own paths as $HOME/...",
    "path.tilde_at": "{at}: '~name' is another account's home; write $HOME/... instead",
    "path.model_outside": ("a model path must be under $HOME/models (your uploads), a team folder of yours "
                           "($HOME/teams/<team>/...) or $HOME/common/hf (shared cache)"),
}

# --- a task's status message (issue 37, item 7): what services/tasks.py, the scheduler's loops and its monitor
# write to tasks.status_message and the timeline (status_message_code/params, task_events.message_code/params).
# A program's own words (an exception's text, Ray's message) are parameters and stay as written; a message that
# wraps another (``{message}; retrying ...``) takes it as a nested message, or as its text where it has no code.
_STATUS: dict[str, str] = {
    "status.canceled_by": "canceled by {user}",
    "status.exit_code": "exit code {exit_code}",
    "status.exit_code_cause": "exit code {exit_code}: {cause}",
    "status.retrying": "{message}; retrying as attempt {attempt}",
    "status.no_retries": "{message}; no retries left ({max} allowed)",
    "status.ray_said": "{message}\nRay's message:\n{detail}",
    "status.hinted": "{message}\nhint: {hint}",
    # the cancel loop's ending (scheduler/cancel.py); a stop for another reason keeps its message first (stop_note)
    "status.stop_note": "{message}; {note}",
    "status.canceled_stopped": "canceled; the Ray job stopped",
    "status.canceled_job_ended": "canceled; the Ray job had already ended ({status})",
    "status.canceled_task_ended": "canceled; the task had already ended (exit code {exit_code})",
    "status.canceled_driver_stopped": "canceled; its driver stopped it",
    "status.canceled_driver_gone": "canceled; its driver's process is gone",
    "status.canceled_no_confirm": "canceled; its driver did not confirm the stop within {seconds} s",
    "status.canceled_no_job": "canceled (Ray had no job for it)",
    "status.canceled_before_start": "canceled before it started",
    "part.ray_lost": "(Ray had lost the job)",
    # the monitor's other endings (scheduler/monitor.py classify); Ray's own text is a parameter (detail)
    "status.ray_lost": "Ray no longer knows this job",
    "status.ray_lost_ended": "Ray no longer knows this job; its driver ended it with exit code {exit_code} meanwhile",
    "status.start_timeout_unknown": "did not start within {seconds} s (Ray does not know the job)",
    "status.start_timeout_pending": "did not start within {seconds} s (Ray kept it PENDING)",
    "status.stopped_outside": "the Ray job was stopped outside Argus",
    "status.ray_could_not_start": "Ray could not start the job",
    "status.ray_could_not_start_why": "Ray could not start the job: {detail}",
    "status.ray_job_failed": "the Ray job failed",
    "status.ray_job_failed_why": "the Ray job failed: {detail}",
    # services/tasks.py: a team quoted as Python's repr wrote it ('nlp'), so the text stays what it was
    "status.left_team": "stopped: its owner left team {team}, whose folder it could write",
    # scheduler/monitor.py's notes on a RUNNING task (its message and timeline, no status change)
    "status.followed": ("Ray lost this job; its driver on {where} still runs it: followed through its attempt "
                        "record, not restarted (the platform's Ray restarted under it)"),
    "status.followed_ray_ended": ("Ray ended this job ({ray}) but its driver on {where} still runs it: followed "
                                  "through its attempt record, not restarted"),
    "status.driver_silent": ("the driver has not reported for over {limit} s ({last}) while Ray says RUNNING: its "
                             "node may be hung or its job folder unwritable; the task is left running"),
    "status.driver_silent_last": "last at {at}",
    "status.driver_silent_never": "no status.json for this attempt",
    "status.driver_reports_again": "the driver reports again",
    # scheduler/monitor.py: the driver's node lost (core/failures.py node_lost_parts; Ray's reason a parameter)
    "status.node_lost": "the driver's node {who} was lost at {at} UTC",
    "status.node_lost_why": "the driver's node {who} was lost at {at} UTC: {reason}",
    "status.node_lost_unknown": "the driver's node was lost at {at} UTC",
    "status.node_lost_unknown_why": "the driver's node was lost at {at} UTC: {reason}",
    # scheduler/progress.py: a stall (core/stall.py) and what on_stall does about it
    "status.stalled": "STALLED: {stall}; {action}",
    "status.stalled_capturing": "STALLED: {stall}; capturing its processes' stacks, then {action}",
    "status.stalled_capture_note": "STALLED: {stall}; {action}; capturing its processes' stacks",
    "status.progressing_again": "progressing again",
    "status.progressing_again_after": "progressing again after a stall",
    "part.stall": "no progress for {silent} ({what}; {last}; limit {limit})",
    "part.stall_before_first": "before its first step",
    "part.stall_no_output": "no new step and no output",
    "part.stall_last_step": "last step {step}",
    "part.stall_no_step": "no step yet",
    "part.on_stall_keep": "left running (on_stall: keep)",
    "part.on_stall_cancel": "stopping it (on_stall: cancel)",
    "part.on_stall_requeue": "stopping it to run it again (on_stall: requeue)",
    "part.on_stall_other": "left running",
    # scheduler/submit.py: a task started (or adopted) and a job Ray refused; a retry's pending reason (monitor.py)
    "status.submitted": "submitted Ray job {sid}",
    "status.adopted": "adopted Ray job {sid}",
    "status.adopted_after_restart": "adopted Ray job {sid} after a restart",
    "status.ray_refused": "Ray refused the job: {error}",
    "queue.requeued_after_stall": "requeued after a stall",
    "queue.retrying_after_failure": "retrying after an infrastructure failure",
    # scheduler/autoresume.py: where Argus's own retry starts (timeline)
    "status.resume_disabled": "attempt {attempt} starts over: the command sets trainer.resume_mode=disable",
    "status.resume_no_checkpoint": "attempt {attempt} starts over: no complete checkpoint in {folder}",
    "status.resume_from": ("attempt {attempt} resumes from checkpoint {checkpoint} ({path}) {after}: "
                           "trainer.resume_mode=resume_path trainer.resume_from_path=…/{checkpoint}"),
    "part.after_node_lost": "after the lost node",
    "part.after_ray_lost": "after Ray lost the job",
    "part.after_stall": "after the stall",
    # scheduler/progress.py: a resumed run's first step (core/stall.py resume_problem), stacks, idle GPUs
    "status.resumed_as_expected": "resumed from checkpoint {checkpoint}: first step {first}, as expected",
    "status.resume_warning": "warning: {problem}",
    "status.resume_check": "resume check: {problem}",
    "part.resume_skipped": ("the resumed run skipped steps: its first step is {first}, the checkpoint ends at {last} "
                            "(steps {expected}–{before} never ran)"),
    "part.resume_repeated": ("the resumed run repeated steps: its first step is {first}, the checkpoint ends at "
                             "{last} (steps {first}–{last} ran twice; did it load the checkpoint?)"),
    "status.stacks_no_answer": "no stacks of the stalled attempt: its driver did not answer within {seconds} s",
    "status.stacks_file": ("stacks of the stalled attempt's {processes} processes ({dumped} of {python} Python ones "
                           "with their stack): {file} in your home"),
    "status.stacks_none": "no stacks of the stalled attempt: {error}",
    "part.no_reason_given": "no reason given",
    "status.idle_gpus": ("idle GPUs: all {gpus} of this task's GPUs below {pct} % for {duration} (the task is left "
                         "running)"),
    "status.gpus_busy_again": "GPUs busy again",
    "status.gpus_busy_again_after": "GPUs busy again after an idle spell",
    # scheduler/gpu_holds.py: a GPU an ended attempt left a process on (core/gpu_free.py HeldGpu.said)
    "status.gpu_held": ("{gpu} still has {pids} using {memory} after the task ended; held back (no new task is "
                        "placed on it until the node agent finds it free)"),
    "status.gpu_held_on": ("{gpu} on {host} still has {pids} using {memory} after the task ended; held back (no new "
                           "task is placed on it until the node agent finds it free)"),
    "part.gpu_index": "GPU {index} ({uuid})",
    "part.gpu_uuid": "GPU {uuid}",
    "part.pid": "pid {pids}",
    "part.pids": "pids {pids}",
    "part.memory_unknown": "an unknown amount of memory",
    # the monitor's ending for a log the driver could not write (core/log_write.py said: the driver's own words,
    # known again piece by piece; a piece no template makes keeps the whole reason as English text)
    "status.log_write_failed": "LOG_WRITE_FAILED: {why}",
    "sep.why": "; ",
    "part.log_no_space": "no space left on {folder}",
    "part.log_quota": "disk quota exceeded on {folder}",
    "part.log_read_only": "read-only file system at {folder}",
    "part.log_permission": "permission denied writing to {folder}",
    "part.log_io_error": "I/O error writing to {folder}",
    "part.log_too_large": "file too large in {folder}",
    "part.log_cannot_write": "cannot write to {folder}: {error}",
    "part.log_dropped": "{size} ({lines} line{s:lines}) of output not written",
    "part.log_not_started": "the task was not started",
    "part.log_stopped": "the task was stopped (exit code {exit_code})",
    # services: the first event of a task a user's action queued (timeline; services/tasks.py, evaluations.py,
    # rerun.py, resume.py) and an evaluation evaluate_checkpoints could not queue (services/evaluate_every.py)
    "status.accepted": "accepted",
    "status.evaluates": "evaluates {task} checkpoint {checkpoint} ({path}) with verl's validation (trainer.val_only)",
    "status.evaluates_lm_eval": "evaluates {task} checkpoint {checkpoint} ({path}) with lm-eval",
    "status.rerun_of": "re-run of {task} in environment {env}",
    "status.rerun_of_moved": "re-run of {task} in environment {env} ({moved} keys moved for its verl)",
    "status.resumes": "resumes {task} from checkpoint {checkpoint} ({path})",
    "status.exports": "exports {task} {checkpoint} ({backend}) to {target}",
    "status.eval_not_queued": ("evaluate_checkpoints: the evaluation of checkpoint {checkpoint} could not be queued "
                               "({message}); it is not tried again — evaluate the step yourself once fixed (argus "
                               "evaluate)"),
    "status.eval_not_queued_details": ("evaluate_checkpoints: the evaluation of checkpoint {checkpoint} could not be "
                                       "queued ({message}: {details}); it is not tried again — evaluate the step "
                                       "yourself once fixed (argus evaluate)"),
    "part.field_problem": "{field}: {problem}",
    "sep.details": "; ",
    # a sweep's trials stopped by it (services/sweeps.py, core/sweeps.py Stop): the trial's status message
    "status.sweep_stopped": "stopped by its sweep: {message}",
    "status.early_stopped": ("early-stopped by its sweep at step {rung}: {metric} = {value}, ranked {rank} of the "
                             "{reported} trials that reached that step; the best {kept} go on"),
    # --- a sweep's and a pipeline's own message, a pipeline step's message and gate (services/sweeps.py,
    # services/pipelines.py, core/pipelines.py): stored as English, rendered from these templates, and served with
    # the code and params :func:`known_message` recovers from the text (``sweep.``, ``pipeline.``). Where two
    # templates could make one text, the more specific comes first.
    "sweep.canceled_by": "canceled by {user}",
    "sweep.budget_reached": ("budget reached: the trials used {used} of budget_gpu_hours={budget}; the rest were "
                             "stopped"),
    "sweep.every_trial_ended": "every trial ended",
    "sweep.no_trial_succeeded": "no trial succeeded",
    "pipeline.canceled_by": "canceled by {user}",
    "pipeline.skipped_needs": "skipped: a step it needs did not succeed",
    "pipeline.gate_no_metric": "gate not passed: {step} has no {metric}",
    "pipeline.gate_passed": "gate passed: {step} {metric} = {value}, needs {op} {limit}",
    "pipeline.gate_not_passed": "gate not passed: {step} {metric} = {value}, needs {op} {limit}",
    "pipeline.step_failed": "step {step} failed: {message}",
    "pipeline.every_step_settled": "every step settled",
    "pipeline.registered_as_why": "registered {ref} as @{alias} ({why})",
    "pipeline.registered_as": "registered {ref} as @{alias}",
    "pipeline.registered_why": "registered {ref} ({why})",
    "pipeline.registered": "registered {ref}",
    "pipeline.left_no": "refused when it was to start: a step it needs left no {artifact}",
    "pipeline.refused_details": "refused when it was to start: {message} ({details})",
    "pipeline.refused": "refused when it was to start: {message}",
    "pipeline.task_gone": "its task {task} is gone",
    "pipeline.retrying": "try {tries} failed ({message}); retrying",
    "pipeline.task_ended": "task {task} {status}: {message}",
    "pipeline.task_ended_bare": "task {task} {status}",
}

# --- what admission warns of, environments, the Nodes page (issue 37, item 7; spliced into EN) ----------------
# A warning is kept, stored and served as its English text (a list of strings, as it always was); its producer
# renders it from its warn.* template (msg(...).text), and :func:`known_message` recovers the code and params
# from the text, so a warning stored before the codes existed is said in the reader's language too.
_ADVICE: dict[str, str] = {
    # admission's warnings (core/admission.py, core/evaluate_every.py, envs/check.py, verl/check.py)
    "warn.workload_inferred": ("workload: {workload}, inferred from the command ({why}); write workload: (ppo, grpo, "
                               "sft or job) to choose it"),
    "warn.torchrun_no_nproc": ("command does not set torchrun's --nproc_per_node, so torchrun starts 1 process while "
                               "the task reserves n_gpus_per_node={gpus} GPUs; add --nproc_per_node={gpus}"),
    "warn.torchrun_nproc_under": ("command runs torchrun --nproc_per_node={nproc} but the task reserves "
                                  "n_gpus_per_node={gpus}: {idle} reserved GPU(s) stay idle; set "
                                  "--nproc_per_node={gpus} or n_gpus_per_node: {nproc}"),
    "warn.torchrun_no_standalone": ("torchrun without --standalone rendezvous on the fixed port 29500, which another "
                                    "task on the same node may hold; add --standalone"),
    "warn.data_key_unset": ("command does not set {key}=...; verl will use its config default (set it explicitly, "
                            "e.g. $HOME/common/datasets/...)"),
    "warn.ray_address_override": ("command overrides {key}={value}: Argus already points the driver at its cluster "
                                  "(RAY_ADDRESS); remove the override unless you mean to attach elsewhere"),
    "warn.gang_key_unset": ("command does not set {key}; verl will use its default, while Argus reserves "
                            "{field}={want}: add {key}={want}"),
    "warn.gang_mismatch": ("spec {field}={want} but command sets {key}={value}: Argus schedules by the spec "
                           "({field}={want}) and verl runs with the command's value; make them agree"),
    "warn.save_freq_unset": ("{field}: the command does not set {key}, and verl's default (-1) saves no checkpoint, "
                             "so none would be evaluated unless your config file sets it; add {key}=N (a checkpoint "
                             "every N steps)"),
    "warn.env_no_rollout_engine": ("{workload} needs the {engine} rollout engine and environment {env} does not have "
                                   "it (it has no rollout engine: a CPU or SFT-only environment); name an environment "
                                   "with {engine} in env: (argus env list)"),
    "warn.env_lm_eval_unknown": ("environment {env} was last checked before Argus looked for lm-eval, so whether it "
                                 "has the lm_eval package is not known: an admin runs argus env check {name} (without "
                                 "it the task fails at its start on the import)"),
    "warn.verl_no_resolved_paths": "the verl validator did not return resolved paths; restart the server",
    "warn.verl_config_dir": ("verl validation skipped: the command adds config folders with --config-dir, which Argus "
                             "cannot compose yet; Argus's own checks (files, paths, reward) ran"),
    # verl's checks (verl/legacy.py, verl/entry.py, verl/check.py): a program's own words stay parameters
    "warn.legacy_key_moved": "rewrote {old} to {new}: the installed verl's main_ppo reads only {new} and would silently ignore the old key (write the new key to silence this warning)",
    "warn.legacy_reward_name": "custom_reward_function.name is not set: verl calls the function named compute_score (its default) in the reward file",
    "warn.module_unchecked_no_validator": "could not check that module {module} exists in the training environment (no verl validator is configured)",
    "warn.module_unchecked": "could not check that module {module} exists in the training environment ({error})",
    "warn.verl_skipped": "verl validation skipped ({why}); the task was not checked against verl's config",
    "warn.prompt_lengths_unchecked": "prompt lengths not checked: {error}",
    "warn.prompt_too_long": "a sampled prompt has {tokens} tokens > data.max_prompt_length={limit} (first {rows} rows, {model}'s chat template)",
    # the Environments page and New Task's environment hint (envs/registry.py, envs/probe.py)
    "env.server_description": ("Argus's own environment (the server's interpreter): no build needed; set default_env "
                               "to a built environment so tasks do not share the platform's packages"),
    "env.no_rollout_engine": ("no rollout engine (vllm, sglang, tensorrt-llm): PPO/GRPO cannot run here; SFT and "
                              "jobs can"),
    # the Nodes page (api/routers/nodes.py, scheduler/queue_inputs.py)
    "nodes.no_ray": "no Ray cluster configured",
}

# English templates by code. Every code here has msg.<code> in both WebUI catalogs with the same
# placeholders (tests/core/test_messages.py).
EN: dict[str, str] = {
    # --- why a QUEUED task waits (core/scheduling/policy.py, fit.py; scheduler/submit.py) -------------
    "queue.ray_unreachable": "Ray cluster unreachable: {error}",
    "queue.cluster_task_limit": "cluster limit: {max} running task{s:max}",
    "queue.user_task_limit": "user limit: {max} running task{s:max}",
    "queue.team_task_limit": "team limit: {team} runs {max} task{s:max} (its max)",
    "queue.sweep_limit": "sweep limit: {sweep} runs {max} trial{s:max} at a time (its max_concurrent)",
    "queue.user_gpu_limit": "user limit: {held} GPU{s:held} held, this task needs {need} (max {max})",
    "queue.team_gpu_limit": "team limit ({team}): {held} GPU{s:held} held, this task needs {need} (max {max})",
    "queue.user_gpu_never": ("user limit: this task needs {need} GPU{s:need}, more than the user's limit of {max} "
                             "(it cannot start until an admin raises the limit)"),
    "queue.team_gpu_never": ("team limit ({team}): this task needs {need} GPU{s:need}, more than the team's limit "
                             "of {max} (it cannot start until an admin raises the limit)"),
    "queue.user_gpu_first": "user limit: {held} GPU{s:held} held (max {max}); {first} of the same user waits first",
    "queue.team_gpu_first": ("team limit ({team}): {held} GPU{s:held} held (max {max}); {first} of the same team "
                             "waits first"),
    "queue.no_workers": "no worker nodes in the Ray cluster",
    "queue.no_gpus": "0 GPUs in the cluster",
    "queue.cluster_too_small": ("needs {nnodes} node{s:nnodes} × {need}; the cluster has {nodes} "
                                "(waiting for nodes to join)"),
    "queue.gpus_busy": "needs {nnodes} node{s:nnodes} × {need}; free: {free}",
    "queue.gpus_reserved": ("needs {nnodes} node{s:nnodes} × {need}; free: {free} (more GPUs are held back for "
                            "{reserved_for}, ahead in the queue)"),
    "queue.resources_never": ("needs {nnodes} node{s:nnodes} × {need}; the largest worker has {largest} (lower "
                              "cpus_per_node/memory_per_node in the spec, or wait for bigger nodes to join)"),
    "queue.resources_short": "needs {nnodes} node{s:nnodes} × {need}; free: {free}",
    "queue.submitting": "submitting to Ray",
    "queue.previous_attempt": ("waiting for attempt {attempt} to stop: its driver on {host} still reports "
                               "(asked to stop; never two live attempts)"),
    # --- how a QUEUED task's start was estimated, or why it is unknown (core/eta.py) -------------------
    "eta.fits_now": "fits now: the scheduler starts it on its next pass",
    "eta.from_steps": "when running tasks end, estimated from their steps and step rates",
    "eta.beyond_horizon": "unknown: further ahead than the estimate looks (the next {ends} ends of running tasks)",
    "eta.cluster_unreachable": "unknown: the Ray cluster is unreachable",
    "eta.no_worker": "unknown: no worker node in the cluster",
    "eta.never_fits": ("unknown: the cluster cannot hold this task even when empty (it waits for bigger or "
                       "more nodes to join)"),
    "eta.over_gpu_limit": "unknown: it needs more GPUs than the user's limit of {limit}",
    "eta.waits_on_running": ("unknown: it waits on tasks holding resources whose end is unknown (running without "
                             "{key} or a step yet, or not started by Ray yet)"),
    "eta.waits_on_queued": ("unknown: it waits on queued tasks that would start before it, whose run time is "
                            "unknown until they run"),
    "eta.waits_on_both": ("unknown: it waits on tasks holding resources whose end is unknown (running without "
                          "{key} or a step yet, or not started by Ray yet) and on queued tasks that would start "
                          "before it, whose run time is unknown until they run"),
    "eta.nothing_frees": "unknown: nothing the estimate knows of frees what it needs",
    # --- pieces of the reasons above (list items, nested messages, suffixes) -------------------------
    "part.gang": "{nnodes} node{s:nnodes} × {gpus} GPU{s:gpus}",
    "part.gpus": "{n} GPU{s:n}",
    "part.cpus": "{n} CPU{s:n}",
    "part.memory": "{size} memory",
    "part.task": "{task}",
    "part.task_of_class": "{task} of priority class {priority_class}",
    "part.node_lacks": "{node} {gpus} GPU{s:gpus} but {lacks}",
    "part.node_lacks_cpu_job": "{node} {lacks}",
    "part.node_free": "{node} {free}",
    "part.more_nodes": "(+{more} more node{s:more})",
    "part.never_fits": "(more than the cluster holds even empty: waiting for nodes to join)",
    "part.priority_class": "(priority class {priority_class})",
    # --- why a spec's field is refused (core/taskspec.py _field_error; FieldError.code) ----------------
    "spec.unknown_field": "unknown field; allowed fields: {allowed}",
    "spec.unknown_field_did_you_mean": "unknown field; did you mean '{close}'? allowed fields: {allowed}",
    "spec.missing": "required field is missing; add '{field}: {example}'",
    "spec.one_of": "must be one of {choices} or {last}",
    "spec.bound": "must be {op} {limit}",
    "spec.whole_number_range": "must be a whole number from {low} to {high}",
    "spec.whole_number_not_float": "must be a whole number, e.g. 4 (write 1000, not 1e3 or 1000.0)",
    "spec.whole_number": "must be a whole number, e.g. 4",
    "spec.number": "must be a number, e.g. 1e-6",
    "spec.too_long": "is too long (at most {max} characters)",
    "spec.empty": "must not be empty",
    "spec.string": "must be a string",
    "spec.overrides_list": "must be a list of 'key=value' strings",
    "spec.too_many_items": "has too many items (at most {max})",
    "spec.kind": "must be 'basic' (or omitted), 'advanced' or 'eval'",
    "spec.unsafe_string": "must not contain NUL bytes or unpaired surrogate escapes",
    # --- why a path is refused (core/pathrules.py, core/admission.py, verl/check.py, core/example_paths.py) ---
    "path.other_home": ("{at} is in another user's home; use your own files ($HOME/...) and the shared "
                        "$HOME/common/datasets and $HOME/common/hf"),
    "path.other_users_home": ("refers to another user's home ({owner}'s); you may only use your own files "
                              "($HOME/...) and the shared $HOME/common/datasets and $HOME/common/hf"),
    "path.train_outside": ("{at}: training data must be under your home ($HOME/datasets/...), a team folder of "
                           "yours ($HOME/teams/<team>/...) or the shared datasets ($HOME/common/datasets/...)"),
    "path.train_data_outside": ("training data must be under your home ($HOME/datasets/...), a team folder of yours "
                                "($HOME/teams/<team>/...) or the shared datasets ($HOME/common/datasets/...)"),
    "path.train_data_absolute": ("must be an absolute path such as $HOME/datasets/<file>.parquet or "
                                 "$HOME/common/datasets/<file>.parquet"),
    "path.reward_outside": ("{at}: the reward function file must be under $HOME/code/ (or a team's "
                            "$HOME/teams/<team>/code/)"),
    "path.reward_file_outside": ("the reward function file must be under $HOME/code/ (upload it there, e.g. "
                                 "$HOME/code/reward.py)"),
    "path.output_outside": ("{at}: verl writes there, and a task may only write inside your home or your teams' "
                            "folders; use $HOME/jobs/... or a relative path (relative to $HOME/jobs/<task>)"),
    "path.data_root": ("{at} is in the data root but outside your home and the shared folders; use your own files "
                       "($HOME/...) and the shared $HOME/common/datasets and $HOME/common/hf"),
    "path.file_missing": "{path}: file does not exist (upload it first, or check the path)",
    "path.example_files": ("the template's example files are not in your home yet ({paths}): upload your model and "
                           "data first (the Data page, {page}, or SFTP), then set {fields} to them"),
    # --- account, teams, admin: what the Account, Teams and Admin pages are refused (services/users.py, -----
    # logins.py, teams.py, usage.py; api/app.py for a request the API's schema refuses). A name the English
    # quotes ('bob') is passed quoted, as Python's repr wrote it, so the text stays what it always was.
    "name.rule": "must match ^[a-z][a-z0-9_-]{1,31}$ (lowercase letter first, 2–32 chars)",
    "user.name_invalid": "invalid user name",
    "user.not_found": "no user named {user}",
    "user.exists": "user {user} already exists",
    "user.self_disable": "you cannot disable your own account",
    "user.self_disable_field": "is your own account; another administrator must disable it",
    "user.limits_invalid": "invalid limits",
    "user.limit_unknown": "unknown limit; the limits are {limits}",
    "user.limit_range": "must be a whole number from 1 to {max}, or null for the platform default",
    "token.not_found": "user {user} has no token {token}",
    "password.current_required": "current password required",
    "password.current_required_field": ("send your current password (the one you sign in and use SFTP with); "
                                        "forgot it? ask an administrator to reset it"),
    "password.wrong_current": "wrong current password",
    "password.wrong_current_field": "is not your current password; forgot it? ask an administrator to reset it",
    "password.directory_user": "{user} signs in with the directory (LDAP): change the password there, not in Argus",
    "password.directory_user_field": ("is kept by your organisation's directory (LDAP); change it with your "
                                      "directory's own tools"),
    "password.too_short": "password too short",
    "password.too_short_field": "must be a string of at least {min} characters",
    "password.too_long": "password too long",
    "password.too_long_field": "must be at most {max} bytes (UTF-8); use a shorter passphrase or an SSH key",
    "password.throttled": "too many wrong passwords from your address; wait a minute and try again",
    "key.missing": "missing key",
    "key.missing_field": "paste one OpenSSH public key line",
    "key.invalid": "invalid public key",
    "key.invalid_field": "not an OpenSSH public key ({error}); paste e.g. the contents of ~/.ssh/id_ed25519.pub",
    "key.exists": "key already added",
    "key.not_found": "no key {key}",
    "team.name_invalid": "invalid team name",
    "team.role_invalid": "invalid team role",
    "team.role_rule": "must be one of: member, admin",
    "team.settings_invalid": "invalid team settings",
    "team.weight_rule": ("must be a number > 0 and ≤ {max} (1 is the default share; 2 gets twice the share under "
                         "contention)"),
    "team.limit_rule": "must be a whole number ≥ 0, or null for no limit",
    "team.budget_rule": "must be a number of GPU-hours ≥ 0, or null for no budget",
    "team.setting_unknown": "is not a team setting; use weight, {settings}",
    "team.not_found": "no team named {team}",
    "team.not_yours": "you are not in a team named {team}",
    "team.name_yours": "name one of your teams (argus team list)",
    "team.create_admins_only": "only administrators create teams",
    "team.change_admins_only": "only administrators change a team's weight, quotas and budget",
    "team.delete_admins_only": "only administrators delete teams",
    "team.exists": "team {team} already exists",
    "team.name_taken": "is taken; choose another name",
    "team.members_admins_only": "only the admins of team {team} manage its members",
    "team.last_admin": "team {team} would have no team admin",
    "team.last_admin_field": ("is the team's last admin; make another member an admin first (or ask a site "
                              "administrator)"),
    "team.enrol_refused": ("a team admin adds only people already in another team they administer: ask a site "
                           "administrator to add {user} to team {team}"),
    "team.enrol_refused_field": "not in a team you administer; a site administrator adds them",
    "team.already_member": "{user} is already in team {team}",
    "team.already_member_field": "is a member already; change their role instead",
    "team.not_member": "{user} is not in team {team}",
    "team.not_member_field": "is not a member of this team",
    # priority classes (services/priority_classes.py): a spec's class refused, and the Admin page's refusals
    "priority.refused": "priority class refused",
    "priority.not_a_class": "is not a priority class; classes you may use: {classes}",
    "priority.not_yours": "is a priority class you may not use (ask an administrator); classes you may use: {classes}",
    "part.class_name": "{name}",
    "priority.invalid": "invalid priority class",
    "priority.name_rule": "must match ^[a-z][a-z0-9_-]{1,31}$",
    "priority.value_required": "is required: a whole number from 1 to {max} (higher first)",
    "priority.value_rule": "must be a whole number from 1 to {max}; tasks of no class are 0, a higher class goes first",
    "priority.description_rule": "must be text of at most 256 characters",
    "priority.names_rule": "must be a list of {kind} names (empty: no restriction by {field})",
    "priority.field_unknown": "is not a priority class field; use {fields}",
    "priority.not_found": "no priority class named {name}",
    "priority.define_admins_only": "only administrators define priority classes",
    "priority.change_admins_only": "only administrators change priority classes",
    "priority.delete_admins_only": "only administrators delete priority classes",
    "priority.exists": "priority class {name} already exists",
    "priority.name_taken": "is taken; change it with PATCH instead",
    "usage.window_invalid": "bad usage window",
    "usage.when_rule": "must be a date (2026-11-01) or an ISO 8601 time (2026-11-01T08:00:00Z)",
    "usage.from_before_to": "must be before 'to' ({to})",
    "usage.grouping_invalid": "bad grouping",
    "usage.group_rule": "must be one of {groups}",
    "usage.others_admins_only": "only admins can see another user's usage",
    # a request the API's schema refuses (pydantic's own English, coded only where it renders to exactly that)
    "request.invalid": "request is invalid",
    "request.missing": "Field required",
    "request.extra_forbidden": "Extra inputs are not permitted",
    "request.int_parsing": "Input should be a valid integer, unable to parse string as an integer",
    "request.int_from_float": "Input should be a valid integer, got a number with a fractional part",
    "request.int_type": "Input should be a valid integer",
    "request.float_parsing": "Input should be a valid number, unable to parse string as a number",
    "request.float_type": "Input should be a valid number",
    "request.string_type": "Input should be a valid string",
    "request.bool_type": "Input should be a valid boolean",
    "request.bool_parsing": "Input should be a valid boolean, unable to interpret input",
    "request.greater_than_equal": "Input should be greater than or equal to {ge}",
    "request.less_than_equal": "Input should be less than or equal to {le}",
    "request.greater_than": "Input should be greater than {gt}",
    "request.less_than": "Input should be less than {lt}",
    "request.string_too_long": "String should have at most {max_length} character{s:max_length}",
    # the Account page's notification channels (services/notifications.py; a webhook URL's own problem stays English)
    "notify.channel_invalid": "invalid notification channel",
    "notify.kind_rule": "must be 'webhook' (a URL) or 'email' (an address)",
    "notify.email_disabled": ("e-mail notifications are off on this server: the operator has not set smtp_host "
                              "(ARGUS_SMTP_HOST); use a webhook, or ask the operator to configure SMTP"),
    "notify.target_missing": "give the webhook's URL or the e-mail address",
    "notify.email_invalid": "not an e-mail address: write it as name@example.com (no display name, no spaces)",
    "notify.events_list": "a non-empty list of events, or leave it out for all: {events}",
    "notify.event_unknown": "unknown event; one of {events}",
    "notify.too_many_channels": "too many notification channels",
    "notify.too_many_channels_field": "you have {count} channels, the most allowed; remove one first",
    "notify.channel_not_found": "no notification channel {channel}",
    "notify.too_many_tests": "too many test notifications: at most {limit} in {window} s; try again in {seconds} s",
    **_COMMAND, **_SPEC, **_EVAL, **_PATH, **_STATUS,  # above, by area
    **_ADVICE,  # admission's warnings, environments, the Nodes page (above)
    # a failed task's specific hints (core/failures.py HINTS_EN), behind the scheduler's where-prefix
    **{code: "{where}" + template for code, template in HINTS_EN.items()},
    # --- joining lists --------------------------------------------------------------------------------
    "none": "none",
    "sep": ", ",
    "sep.lacks": " and ",
    "sep.largest": " and ",
}

# Failure hints (core/failures.py): a kind's generic one is not templated here (its English is
# failures.hint_for(kind)); its code is failure.<kind> and the WebUI catalogs carry msg.failure.<kind> for every
# FailureKind. A specific one is hint.<name>, its template failures.HINTS_EN's behind {where} (in EN above).
FAILURE_PREFIX = "failure."
HINT_PREFIX = "hint."

_PLACEHOLDER = re.compile(r"\{(s:)?(\w+)\}")


def _scalar(v: Any) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def render(code: str, params: Mapping[str, Param], catalog: Mapping[str, str] = EN) -> str:
    """``code``'s template from ``catalog`` filled with ``params`` (the rules in the module's docstring)."""
    template = catalog[code]

    def one(m: re.Match[str]) -> str:
        plural, name = m.group(1), m.group(2)
        if name not in params:
            return m.group(0)
        v = params[name]
        if plural:
            return "" if isinstance(v, int | float) and v == 1 else "s"
        if isinstance(v, dict):
            return render(v["code"], v, catalog)
        if isinstance(v, list):
            if not v:
                return catalog["none"]
            return catalog.get(f"sep.{name}", catalog["sep"]).join(render(i["code"], i, catalog) for i in v)
        return _scalar(v)

    text = _PLACEHOLDER.sub(one, template)
    for tail in params.get("then") or ():
        text += " " + render(tail["code"], tail, catalog)
    return text


@dataclass(frozen=True)
class Message:
    """A server message: a stable ``code``, its ``params``, and its English ``text``."""

    code: str
    params: dict[str, Param] = field(default_factory=dict)
    text: str = ""

    def then(self, code: str, **params: Param) -> Message:
        """This message with a suffix appended (``then``), the text rendered again."""
        tails = [*self.params.get("then", []), part(code, **params)]
        return msg(self.code, **{**self.params, "then": tails})

    def as_dict(self) -> dict[str, Any]:
        return {"code": self.code, "params": self.params, "text": self.text}


def msg(code: str, **params: Param) -> Message:
    """The message ``code`` with ``params``, its English text rendered from :data:`EN`."""
    clean = {k: (int(v) if isinstance(v, float) and v.is_integer() else v) for k, v in params.items()}
    return Message(code, clean, render(code, clean))


def field_error(fld: str, value: Any, code: str, /, **params: Param) -> FieldError:
    """A :class:`FieldError` with ``code`` and ``params``, its ``message`` the code's English rendering: the text
    scripts read cannot drift from the template clients translate."""
    m = msg(code, **params)
    return FieldError(fld, value, m.text, code=m.code, params=m.params)


def refusal(kind: type[E], api_code: str, code: str, /, *, errors: list[FieldError] | None = None,
            **params: Param) -> E:
    """An :class:`~argus.errors.ArgusError` of ``kind`` whose ``message`` is ``code``'s English rendering, with
    ``message_code``/``message_params`` beside it (the API sends them next to ``code``, here ``api_code``: the
    kind of refusal scripts branch on, unchanged)."""
    m = msg(code, **params)
    return kind(m.text, code=api_code, errors=list(errors or ()), message_code=m.code, message_params=m.params)


class Invalid(ValueError):
    """A validator's refusal as a code and params (``raise Invalid("spec.cpus")`` in a pydantic validator or a parser
    it calls): its text is the code's English rendering, so whoever reads ``str(e)`` sees what it always did, and
    the spec parser makes it a coded :class:`FieldError` (``value_error``)."""

    def __init__(self, code: str, /, **params: Param) -> None:
        self.message = msg(code, **params)
        super().__init__(self.message.text)


def retext(e: FieldError, change: Callable[[str], str]) -> FieldError:
    """``e`` with ``change`` applied to its message (and to each text parameter, where a path shown in the
    message also is); it keeps its code only while the message is still the code's rendering."""
    text = change(e.message)
    if text == e.message:
        return e
    if e.code is None or e.code not in EN:
        return replace(e, message=text)
    params = {k: change(v) if isinstance(v, str) else v for k, v in e.params.items()}
    if render(e.code, params) != text:
        return replace(e, message=text, code=None, params={})
    return replace(e, message=text, params=params)


def part(code: str, **params: Param) -> dict[str, Param]:
    """A nested message or list item: a dict with its ``code`` beside its parameters."""
    if code not in EN:
        raise KeyError(code)
    return {"code": code, **{k: (int(v) if isinstance(v, float) and v.is_integer() else v) for k, v in params.items()}}


def from_stored(code: str | None, params: Any, text: str | None) -> Message | None:
    """The message stored beside a text column, or None when none was stored or it no longer renders to the
    text (a writer that knows no codes changed the text only: the code would be stale)."""
    if not code or text is None or code not in EN:
        return None
    params = params if isinstance(params, dict) else {}
    if _verified.get((code, text)) != params:  # a page of 500 queued rows repeats a few reasons: render each once
        try:
            ok = render(code, params) == text
        except (KeyError, TypeError, AttributeError):  # parameters of another version's shape
            ok = False
        if not ok:
            return None
        if len(_verified) >= 4096:
            _verified.clear()
        _verified[(code, text)] = params
    return Message(code, params, text)


_verified: dict[tuple[str, str], dict[str, Any]] = {}  # (code, text) → params last seen to render to it


def failure_hint(kind: str | None, hint: str | None) -> Message | None:
    """A failed task's hint as ``failure.<kind>`` with ``where`` (the English prefix naming the rank, worker or
    node, possibly empty), when the stored hint is the kind's generic one (``failures.hint_for``) after that
    prefix; else as the specific ``hint.<name>`` whose template (``failures.HINTS_EN``) makes the rest, with
    ``where`` beside its parameters; None for a hint no template makes (it stays English) or no failure kind."""
    if not kind or not hint or kind not in {k.value for k in FailureKind}:
        return None
    generic = hint_for(FailureKind(kind))
    if hint.endswith(generic):
        return Message(FAILURE_PREFIX + kind, {"where": hint[: len(hint) - len(generic)]}, hint)
    return specific_hint(hint)


def specific_hint(hint: str) -> Message | None:
    """``hint.<name>`` with ``where`` and its parameters for a stored specific hint: ``on <where>: <body>`` (the
    scheduler's prefix, scheduler/monitor.py) or the body alone, the body made by a template of
    ``failures.HINTS_EN``. The shortest prefix is tried first: a parameter (a path) must not swallow it."""
    cuts = [m.end() for m in re.finditer(": ", hint)] if hint.startswith("on ") else []
    for cut in [*cuts, 0]:
        body = hint[cut:]
        for code, pattern in _hint_patterns():
            m = pattern.fullmatch(body)
            if m is None:
                continue
            params = {"where": hint[:cut], **m.groupdict()}
            if render(code, params) == hint:
                return Message(code, params, hint)
    return None


def _hint_patterns() -> list[tuple[str, re.Pattern[str]]]:
    if not _HINT_PATTERNS:  # the bodies' templates (EN's put {where} before each)
        _HINT_PATTERNS.extend((code, _pattern(template)) for code, template in HINTS_EN.items())
    return _HINT_PATTERNS


_HINT_PATTERNS: list[tuple[str, re.Pattern[str]]] = []


# --- a task's status message (issue 37, item 7) ----------------------------------------------------------------


def nested(m: str | Message) -> Param:
    """``m`` as the parameter of a message that wraps it: a nested message where it has a code, else its text
    (written as is: it stays English)."""
    return {"code": m.code, **m.params} if isinstance(m, Message) else m


def text_of(m: str | Message | None) -> str | None:
    """The English of a status message, coded or not."""
    return m.text if isinstance(m, Message) else m


def exit_message(exit_code: int, cause: str | None) -> Message:
    """``exit code 1: <cause>`` (core.failures.failure_message's words): the cause is the program's text or a
    diagnosis and stays as written."""
    return msg("status.exit_code_cause", exit_code=exit_code, cause=cause) if cause else \
        msg("status.exit_code", exit_code=exit_code)


# --- texts kept as English, known again by their template (issue 37, item 7) -----------------------------------
WARNING_PREFIX = "warn."


def _pattern(template: str) -> re.Pattern[str]:
    """A template as a regex: each parameter's first place a group, its later places the same text again."""
    out, seen, at = [], set(), 0
    for m in _PLACEHOLDER.finditer(template):
        out.append(re.escape(template[at:m.start()]))
        name = m.group(2)
        out.append(f"(?P={name})" if name in seen else f"(?P<{name}>.+?)")
        seen.add(name)
        at = m.end()
    out.append(re.escape(template[at:]))
    return re.compile("".join(out), re.DOTALL)


_PATTERNS: dict[str, list[tuple[str, re.Pattern[str]]]] = {}  # prefix → its plain templates as regexes


def known_message(text: str, prefix: str = WARNING_PREFIX) -> Message | None:
    """The message whose English ``text`` is, among the templates of codes starting with ``prefix`` (``warn.``:
    admission's warnings; ``env.``: what an environment's probe notes): the template it matches whole, verified by
    rendering the params back to exactly ``text``; None for a text no template makes (it stays English).
    Parameters come back as the text wrote them (strings). For texts stored and served as English only — a
    task's warnings, a probe's notes —, so one stored before the codes existed is said in the reader's language
    too."""
    if prefix not in _PATTERNS:
        _PATTERNS[prefix] = [(code, _pattern(t)) for code, t in EN.items()
                             if code.startswith(prefix) and "{s:" not in t]  # plain parameters: the text holds them
    for code, pattern in _PATTERNS[prefix]:
        m = pattern.fullmatch(text)
        if m is not None and render(code, m.groupdict()) == text:
            return Message(code, m.groupdict(), text)
    return None


def known_messages(texts: list[str], prefix: str = WARNING_PREFIX) -> list[dict[str, Any] | None]:
    """``{code, params}`` of each text (:func:`known_message`), or None where it has none: the list an answer
    carries beside the texts (``warning_messages`` beside ``warnings``)."""
    out: list[dict[str, Any] | None] = []
    for text in texts:
        m = known_message(text, prefix) if isinstance(text, str) else None
        out.append({"code": m.code, "params": m.params} if m else None)
    return out

def text_fields(name: str, text: str | None, m: Message | None) -> dict[str, Any]:
    """``text`` as an answer's field ``name`` (as it always was), with ``m``'s code and params beside it where
    ``m`` is that text's message (else None and None)."""
    return {name: text, f"{name}_code": m.code if m else None, f"{name}_params": m.params if m else None}


def known_fields(name: str, text: str | None, prefix: str) -> dict[str, Any]:
    """:func:`text_fields` for a text stored as English only: its code and params known again from the text by the
    templates of codes starting with ``prefix`` (:func:`known_message`)."""
    return text_fields(name, text, known_message(text, prefix) if isinstance(text, str) and text else None)


def as_fields(name: str, m: Message | None) -> dict[str, Any]:
    """``m`` as an answer's fields: ``name`` its English text (what the field always held), ``name_code`` and
    ``name_params`` beside it (None, None and None for no message)."""
    return text_fields(name, m.text if m else None, m)
