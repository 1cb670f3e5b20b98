"""Evaluate every checkpoint (issue 38): a training spec's ``evaluate_checkpoints`` option, as pure rules.

A run that saves a checkpoint every ``save_freq`` steps is usually judged step by step: which checkpoint is the
best one to keep, export or resume. Rather than a user (or a pipeline) asking ``POST /tasks/{id}/evaluate`` for
each step, the spec says so once::

    evaluate_checkpoints: true                  # verl's validation of each complete checkpoint (ppo/grpo)
    evaluate_checkpoints: {val_file: …, reward_path: …, reward_name: …}   # the same, on other data or reward
    evaluate_checkpoints: {lm_eval: {tasks: [my_task], include_path: $HOME/code/lm_tasks}}   # lm-eval instead

and the scheduler's look (``scheduler/evaluations.py``, ``services/evaluate_every.py``) queues one evaluation
per complete step through that endpoint's own service, as the task's owner. This module holds what needs no
I/O: the option's shape and its checks (at submit, like every field: name, value, fix), the checks against the
rest of the spec (which workloads verl can validate, whether the run writes checkpoints at all), where a resumed
run's own steps begin, and which steps a look has left to queue. An evaluation of such a run is a copy of its
spec (``core.evaluation.eval_spec``) and must not evaluate in turn: it is never watched (services.tasks).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

from argus.core import checkpoints as ck
from argus.core.evaluation import EVALUABLE_WORKLOADS, eval_basic_doc
from argus.core.messages import field_error, msg, part
from argus.errors import FieldError

FIELD = "evaluate_checkpoints"
VERL_KEYS = ("val_file", "reward_path", "reward_name")  # what verl's validation reads (POST …/evaluate's names)
KEYS = (*VERL_KEYS, "lm_eval")
_LENGTHS = {"val_file": 4096, "reward_path": 4096, "reward_name": 256}  # as the basic spec's fields of those names
_EXAMPLE = "evaluate_checkpoints: {val_file: $HOME/datasets/math/test.parquet}"
_LM_EXAMPLE = "evaluate_checkpoints: {lm_eval: {tasks: [my_task], include_path: $HOME/code/lm_tasks}}"
# An lm_eval block is checked as the block of a ``kind: eval`` spec of some checkpoint: the same rules, one place.
_SOME_STEP = "$HOME/jobs/task/checkpoints/global_step_1"
SAVE_FREQ_KEY = "trainer.save_freq"


def option_problems(value: Any) -> list[FieldError]:
    """Every problem of the option as written (no other field needed): ``true``/``false``, or a mapping of
    ``val_file``, ``reward_path``, ``reward_name`` (strings) or ``lm_eval`` (an lm-eval block), not both kinds."""
    if value is None or isinstance(value, bool):
        return []
    if not isinstance(value, dict):
        return [field_error(FIELD, value, "eval.option", keys=", ".join(KEYS), example=_EXAMPLE)]
    errors = []
    for key in value:
        if key not in KEYS:
            close = difflib.get_close_matches(str(key), KEYS, n=1)
            what, allowed = part("part.evaluate_option"), ", ".join(KEYS)
            errors.append(field_error(f"{FIELD}.{key}", value[key], "eval.unknown_field_did_you_mean", what=what,
                                      close=close[0], allowed=allowed) if close else
                          field_error(f"{FIELD}.{key}", value[key], "eval.unknown_field", what=what, allowed=allowed))
    for key in VERL_KEYS:
        v = value.get(key)
        if v is None:
            continue
        if not isinstance(v, str) or not v.strip() or len(v) > _LENGTHS[key] or "\x00" in v:
            errors.append(field_error(f"{FIELD}.{key}", v, "eval.option_string", max=_LENGTHS[key], example=_EXAMPLE))
        elif value.get("lm_eval") is not None:
            errors.append(field_error(f"{FIELD}.{key}", v, "eval.option_verl_only"))
    block = value.get("lm_eval")
    if block is not None:
        found = eval_basic_doc({"kind": "eval", "checkpoint": _SOME_STEP, "lm_eval": block})
        if isinstance(found, list):
            errors += [FieldError(f"{FIELD}.{e.field}", e.value, e.message, code=e.code, params=e.params)
                       for e in found]
    return errors


def option_of(value: Any) -> dict[str, Any] | None:
    """The option as stored: None when off (absent, ``false``), ``{}`` for ``true`` (verl's validation with the
    run's own data and reward), else the mapping without its empty keys. Call on a value without problems."""
    if value is None or value is False:
        return None
    if value is True:
        return {}
    return {k: v for k, v in value.items() if v is not None}


def uses_lm_eval(option: dict[str, Any]) -> bool:
    return option.get("lm_eval") is not None


def spec_problems(option: dict[str, Any], *, workload: str, save_freq: str | None,
                  save_freq_field: str) -> tuple[list[FieldError], list[str]]:
    """(errors, warnings) of the option against the rest of an accepted spec.

    * verl's validation loads a checkpoint into verl's PPO trainer (``trainer.val_only``): a ppo or grpo run's
      only. Any other run's checkpoints (SFT's) are evaluated with lm-eval, which merges them first.
    * ``save_freq``: the value verl will read (the last ``trainer.save_freq`` override, else the basic field), or
      None when the command sets none. A value ≤ 0 saves no checkpoint — nothing would ever be evaluated — and is
      refused naming it (``save_freq_field``); none set is a warning only: verl's default (-1) saves nothing, but
      a config file the command names (``--config-name``) may set it, which Argus does not read here."""
    errors: list[FieldError] = []
    warnings: list[str] = []
    if not uses_lm_eval(option) and workload not in EVALUABLE_WORKLOADS:
        errors.append(field_error(FIELD, option or True, "eval.verl_workload", workload=workload, example=_LM_EXAMPLE,
                                  workloads=[part("part.workload", workload=w) for w in EVALUABLE_WORKLOADS]))
    if save_freq is None:
        warnings.append(msg("warn.save_freq_unset", field=FIELD, key=SAVE_FREQ_KEY).text)
        return errors, warnings
    try:
        every = int(save_freq.strip())
    except ValueError:
        return errors, warnings  # an interpolation (${…}): verl resolves it, Argus cannot judge it here
    if every <= 0:
        basic = save_freq_field == "save_freq"
        errors.append(field_error(save_freq_field, every if basic else f"{SAVE_FREQ_KEY}={save_freq}",
                                  "eval.no_checkpoint_default" if basic and every == -1 else "eval.no_checkpoint",
                                  key="save_freq" if basic else SAVE_FREQ_KEY, every=every,
                                  fix="save_freq: N" if basic else SAVE_FREQ_KEY + "=N"))
    return errors, warnings


def first_step_after(argv: list[str]) -> int | None:
    """The step a run starts after, as far as its own evaluations go: a run that resumes from ``global_step_N``
    (``trainer.resume_from_path``, e.g. ``argus resume``) goes on from N+1, and a folder it shares with the run it
    resumes (an advanced command's own ``trainer.default_local_dir``) holds that run's steps up to N: theirs, not
    its own to evaluate. None: it starts from scratch."""
    path = ck.last_value(ck.command_words(argv), ck.PATH_KEY)
    return ck.step_of(path.rstrip("/").rpartition("/")[2]) if path else None


@dataclass(frozen=True)
class Plan:
    """What one look at a task does: queue an evaluation of each step of ``steps`` (oldest first) and move its
    mark to ``through`` — the highest step settled, evaluated or refused — so no later look queues one again."""

    steps: tuple[int, ...]
    through: int | None


def plan(complete: list[int], latest: int | None, through: int | None, evaluated: set[int]) -> Plan:
    """Which complete steps a look queues: those past the mark ``through`` that no evaluation has yet (one the
    user asked for counts: the evaluation rows are the truth). The mark goes to the highest complete step it saw,
    or verl's tracker ``latest`` when that is higher (a step folder removed since), so a look whose tracker has
    not moved past the mark reads no folder."""
    new = sorted(n for n in complete if through is None or n > through)
    top = max([n for n in (through, latest, *new) if n is not None], default=None)
    return Plan(tuple(n for n in new if n not in evaluated), top)

