"""Evaluating a checkpoint with verl's own validation (issue 38), as pure functions (no I/O).

verl users are told to evaluate a checkpoint with ``trainer.val_only=True`` (verl issue 298 is still open):
verl 0.9.1's ``RayPPOTrainer.fit`` loads the checkpoint first (``trainer.resume_mode=resume_path``), runs
``_validate()`` when ``trainer.val_before_train`` is on, logs it, and returns at once when
``trainer.val_only`` is on — no training step, no new checkpoint. The validation is one console metric
line ``step:N - val-core/<data source>/<reward key>/mean@1:… - val-aux/…``, where N is the step of the
loaded checkpoint (``global_steps`` is read from ``global_step_N``).

So an evaluation is an ordinary task: the source task's own spec (same model, environment, rollout and
sizes), resuming from the chosen step, with validation only — on a validation file and a reward the user
may replace. It goes through admission, the queue and fair share like any submit. Its scores are the
validation metrics it logged.

A ``kind: eval`` spec evaluates a model the user names — a Hugging Face folder (an export, a base model)
and, optionally, a verl checkpoint of a run of it — without a source task: ``eval_basic_doc`` turns it
into a basic GRPO document with validation only (no critic, no reference model: nothing is trained),
which admission then checks like any basic spec, under the same field names.

With an ``lm_eval:`` block instead of ``val_file``, a ``kind: eval`` spec runs EleutherAI's lm-eval harness
(``argus.jobs.lm_eval``, the ``lm_eval`` package of the training environment) on the model folder or on a
checkpoint it merges first: ``eval_lm_doc`` turns it into the advanced spec of that program, whose command
admission checks like any other (its paths in the user's home or ``common/``). The program prints its scores
as a verl console metric line (``lm-eval/<task>/<metric>``), so they are the task's scores like verl's.
"""

from __future__ import annotations

import difflib
import math
import re
import shlex
from typing import Any, Literal

from argus.core import checkpoints as ck
from argus.core.messages import field_error, part
from argus.core.metrics import VALIDATION_PREFIXES, MetricSeries
from argus.errors import FieldError

VAL_ONLY = ("trainer.val_only=True", "trainer.val_before_train=True")
VAL_KEYS = frozenset(o.partition("=")[0] for o in VAL_ONLY)
VAL_FILES_KEY = "data.val_files"
REWARD_PATH_KEY = "reward.custom_reward_function.path"
REWARD_NAME_KEY = "reward.custom_reward_function.name"
EVALUABLE_WORKLOADS = ("ppo", "grpo")  # verl's PPO trainer has val_only; its SFT trainer has no such switch


def eval_name(task_id: str, step: int) -> str:
    return f"eval {task_id} step {step}"


def _key(word: str) -> str:
    return word.lstrip("+~").partition("=")[0]


def eval_spec(doc: dict[str, Any], step_folder: str, *, name: str, val_file: str | None = None,
              reward_path: str | None = None, reward_name: str | None = None) -> dict[str, Any]:
    """The spec document of a task that evaluates ``step_folder`` (as the user writes it, ``$HOME/…``).

    A basic spec keeps its fields, takes the new ``val_file`` / ``reward_path`` / ``reward_name`` where
    given, and gets the resume and val-only overrides last (earlier ones with the same keys dropped). An
    advanced spec's command gets the same as Hydra overrides appended (the last one wins in Hydra)."""
    out = ck.resume_spec(doc, step_folder)
    out.pop("evaluate_checkpoints", None)  # an evaluation does not evaluate its own checkpoints (core.evaluate_every)
    out["name"] = name
    if out.get("kind") == "advanced":
        extra = [*VAL_ONLY]
        if val_file:
            extra.append(f"{VAL_FILES_KEY}={val_file}")
        if reward_path:
            extra.append(f"{REWARD_PATH_KEY}={reward_path}")
        if reward_name:
            extra.append(f"{REWARD_NAME_KEY}={reward_name}")
        out["command"] = f"{str(out['command']).rstrip()} {' '.join(map(ck.shell_word, extra))}"
        return out
    if val_file:
        out["val_file"] = val_file
    if reward_path:
        out["reward_path"] = reward_path
    if reward_name:
        out["reward_name"] = reward_name
    overrides = [o for o in out.get("overrides") or [] if not (isinstance(o, str) and _key(o) in VAL_KEYS)]
    out["overrides"] = [*overrides, *VAL_ONLY]
    return out


LM_EVAL_MODULE = "argus.jobs.lm_eval"


def is_evaluation(argv: list[str]) -> bool:
    """Does this command only evaluate? Then what it logs are scores: ``trainer.val_only`` true (the last
    value Hydra takes: an evaluation made by Argus, a ``kind: eval`` spec or a command written that way), or
    the lm-eval program."""
    words = ck.command_words(argv)
    if any(w == LM_EVAL_MODULE for w in words):
        return True
    return (ck.last_value(words, "trainer.val_only") or "").lower() == "true"


def is_validation_key(key: str) -> bool:
    return key.startswith(VALIDATION_PREFIXES)


def scores_of(series: MetricSeries) -> dict[str, float] | None:
    """The validation metrics an evaluation logged (its last step with any), or None when it logged none.

    NaN and ±inf are dropped: a score is a number to compare and JSON has no NaN."""
    steps = {s for key, pts in series.points.items() if is_validation_key(key) for s in pts}
    if not steps:
        return None
    last = max(steps)
    return {key: pts[last] for key, pts in sorted(series.points.items())
            if is_validation_key(key) and last in pts and math.isfinite(pts[last])}


Mode = Literal["max", "min"]


def best_step(scored: list[tuple[int, dict[str, float]]], metric: str, mode: Mode = "max") -> int | None:
    """The step whose evaluation scored best on ``metric`` (``max``: highest; ``min``: lowest, for a loss);
    a tie goes to the later step. None when no evaluation has that metric."""
    have = [(score[metric], step) for step, score in scored if metric in score]
    if not have:
        return None
    pick = max(have) if mode == "max" else min(have, key=lambda vs: (vs[0], -vs[1]))
    return pick[1]


# What a ``kind: eval`` spec may say: the fields every spec has, the model and data, and the rollout's sizes.
EVAL_FIELDS = frozenset({
    "kind", "name", "priority", "nnodes", "n_gpus_per_node", "device", "cpus_per_node", "memory_per_node", "env",
    "stall_after", "stall_first_step", "on_stall", "team", "priority_class",
    "model_id", "checkpoint", "val_file", "reward_path", "reward_name", "max_prompt_length", "max_response_length",
    "rollout_name", "overrides", "lm_eval",
})
# What only verl's validation reads: an ``lm_eval`` spec refuses them rather than ignoring them.
_VERL_ONLY = ("val_file", "reward_path", "reward_name", "max_prompt_length", "max_response_length",
              "rollout_name", "overrides")
LM_EVAL_FIELDS = frozenset({"tasks", "include_path", "num_fewshot", "limit", "batch_size"})
_TASK_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,127}$")
# Nothing is trained: no reference model (GRPO's KL loss) and no checkpoint written; one sample per prompt.
_EVAL_ONLY = ("actor_rollout_ref.actor.use_kl_loss=False", "algorithm.use_kl_in_reward=False")


def eval_basic_doc(doc: dict[str, Any]) -> dict[str, Any] | list[FieldError]:
    """The basic document a ``kind: eval`` spec stands for, or every error in the fields only it has.

    ``checkpoint`` is a verl step folder (``…/global_step_N``) of a run of ``model_id``: verl builds the model
    from ``model_id`` and loads the step's weights into it (``trainer.resume_mode=resume_path``). The
    validation file doubles as the training file verl's trainer insists on building (it is never trained on),
    and the batch is one prompt per worker so a small validation set is enough."""
    errors = _unknown(doc, EVAL_FIELDS, "", "part.eval_spec")
    if "lm_eval" in doc:
        return eval_lm_doc(doc, errors)
    for key, example in (("model_id", "$HOME/models/tiny"), ("val_file", "$HOME/datasets/gsm8k/test.parquet")):
        if key not in doc:
            errors.append(field_error(key, None, "spec.missing", field=key, example=example))
    checkpoint = doc.get("checkpoint")
    errors += _checkpoint_errors(checkpoint)
    overrides = doc.get("overrides", [])
    if errors:
        return errors
    out = {k: v for k, v in doc.items() if k not in ("kind", "checkpoint")}
    world = doc.get("nnodes", 1) * doc.get("n_gpus_per_node", 1) if all(
        isinstance(doc.get(k, 1), int) for k in ("nnodes", "n_gpus_per_node")) else 1
    out.update(kind="basic", workload="grpo", train_file=doc["val_file"], total_training_steps=1,
               train_batch_size=max(world, 1), rollout_n=1, save_freq=-1, test_freq=-1)
    out.setdefault("name", f"eval {str(doc['model_id'])[-100:]}")
    resume = ck.resume_overrides(checkpoint.rstrip("/")) if checkpoint else []
    out["overrides"] = [*(overrides if isinstance(overrides, list) else [overrides]), *_EVAL_ONLY, *resume, *VAL_ONLY]
    return out


def _unknown(doc: dict[str, Any], allowed: frozenset[str], where: str, what: str) -> list[FieldError]:
    errors = []
    for key in doc:
        if key not in allowed:
            close = difflib.get_close_matches(str(key), sorted(allowed), n=1)
            said = {"what": part(what), "allowed": ", ".join(sorted(allowed))}
            errors.append(field_error(f"{where}{key}", doc[key], "eval.unknown_field_did_you_mean", close=close[0],
                                      **said) if close else
                          field_error(f"{where}{key}", doc[key], "eval.unknown_field", **said))
    return errors


def _checkpoint_errors(checkpoint: Any) -> list[FieldError]:
    if checkpoint is None or isinstance(checkpoint, str) and \
            ck.step_of(checkpoint.rstrip("/").rpartition("/")[2]) is not None:
        return []
    return [field_error("checkpoint", checkpoint, "eval.checkpoint")]


def _strings(value: Any) -> list[str] | None:
    """A string or a list of strings as a list; None for anything else."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    return None


def _lm_eval_args(block: Any) -> list[str] | list[FieldError]:
    """The program's arguments from an ``lm_eval:`` block, or every error in it."""
    if not isinstance(block, dict):
        return [field_error("lm_eval", block, "eval.lm_eval_mapping")]
    errors = _unknown(block, LM_EVAL_FIELDS, "lm_eval.", "part.lm_eval_block")
    args: list[str] = []
    tasks = _strings(block.get("tasks"))
    if not tasks or not all(_TASK_NAME.match(t) for t in tasks):
        errors.append(field_error("lm_eval.tasks", block.get("tasks"), "eval.lm_eval_tasks"))
    else:
        args += ["--tasks", ",".join(tasks)]
    include = _strings(block.get("include_path", []))
    if include is None or not all(p.strip() for p in include):
        errors.append(field_error("lm_eval.include_path", block.get("include_path"), "eval.lm_eval_include_path"))
    else:
        for folder in include:
            args += ["--include-path", folder.strip()]
    for key, flag, low in (("num_fewshot", "--num-fewshot", 0), ("batch_size", "--batch-size", 1)):
        value = block.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= 4096:
            errors.append(field_error(f"lm_eval.{key}", value, "spec.whole_number_range", low=low, high=4096))
        else:
            args += [flag, str(value)]
    limit = block.get("limit")
    if limit is not None:
        ok = not isinstance(limit, bool) and (isinstance(limit, int) and 1 <= limit <= 10**9 or
                                              isinstance(limit, float) and 0 < limit < 1)
        if not ok:
            errors.append(field_error("lm_eval.limit", limit, "eval.lm_eval_limit"))
        else:
            args += ["--limit", str(limit)]
    return errors or args


def eval_lm_doc(doc: dict[str, Any], errors: list[FieldError]) -> dict[str, Any] | list[FieldError]:
    """The advanced document of a ``kind: eval`` spec with ``lm_eval``: the lm-eval program (``LM_EVAL_MODULE``)
    on ``model_id`` (a Hugging Face folder) or on ``checkpoint`` (a verl step folder, merged first), on one
    worker: a GPU, or with ``device: cpu`` the node's cores."""
    for key in _VERL_ONLY:
        if key in doc:
            errors.append(field_error(key, doc[key], "eval.lm_eval_verl_only"))
    model, checkpoint = doc.get("model_id"), doc.get("checkpoint")
    if (model is None) == (checkpoint is None):
        errors.append(field_error("model_id" if model is not None else "checkpoint", model or checkpoint,
                                  "eval.lm_eval_both_models" if model is not None else "eval.lm_eval_no_model"))
    if model is not None and not (isinstance(model, str) and model.strip()):
        errors.append(field_error("model_id", model, "eval.lm_eval_model_folder"))
    errors += _checkpoint_errors(checkpoint)
    for key in ("nnodes", "n_gpus_per_node"):
        if doc.get(key, 1) != 1:
            errors.append(field_error(key, doc[key], "eval.lm_eval_one_worker"))
    args = _lm_eval_args(doc["lm_eval"])
    if errors or args and isinstance(args[0], FieldError):
        return errors + [a for a in args if isinstance(a, FieldError)]
    source = ["--checkpoint", str(checkpoint).strip().rstrip("/")] if checkpoint else ["--model", str(model).strip()]
    device = "cpu" if doc.get("device") == "cpu" else "cuda"
    argv = ["python3", "-m", LM_EVAL_MODULE, *source, *args, "--device", device]
    out = {k: v for k, v in doc.items() if k not in ("kind", "model_id", "checkpoint", "lm_eval")}
    out.update(kind="advanced", workload="job", nnodes=1, n_gpus_per_node=1, command=shlex.join(argv))
    out.setdefault("cpus_per_node", 1)  # a utility job (argus.jobs.*) counts no CPU by default; this one computes
    out.setdefault("name", f"lm-eval {str(model or checkpoint)[-100:]}")
    return out
