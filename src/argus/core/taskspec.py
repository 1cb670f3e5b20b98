"""Task specs as users write them (seed 000 §2.2, §7.1) and their parser.

Two shapes: a *basic* spec (no ``kind`` or ``kind: basic``) fills a platform
template for ppo/grpo/sft; an *advanced* spec (``kind: advanced``) carries a
free verl ``command``. ``parse_taskspec`` never raises on user input: it returns
a spec or every problem at once, each naming the field, the value and the fix.
"""

from __future__ import annotations

import difflib
import json
import re
import unicodedata
from dataclasses import replace
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator

from argus.core import evaluate_every
from argus.core.command import infer_workload
from argus.core.evaluation import eval_basic_doc
from argus.core.messages import Invalid, field_error
from argus.core.resources import parse_cpus, parse_memory
from argus.core.stall import parse_duration
from argus.errors import FieldError

INT32_MAX = 2**31 - 1  # batch sizes and token lengths: verl and torch index with int32 in places
MAX_STEPS = 10**9  # steps, frequencies: more than any run will reach, small enough for every database
MAX_DEPTH = 32  # a spec is a flat mapping (overrides is a list): deeper nesting is an error, not recursion


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True, strict=True)

    name: str | None = Field(default=None, max_length=128)
    priority: int = Field(default=0, ge=-100, le=100)
    nnodes: int = Field(ge=1, le=100_000)
    n_gpus_per_node: int = Field(ge=0, le=1024)
    # What verl trains on (issue 34). "cpu": no GPU is reserved; n_gpus_per_node counts the task's CPU training
    # workers (verl's logical devices: its private Ray advertises that many GPUs), in an environment with Argus's
    # CPU platform (`argus env list`: cpu training). For laptops, CPU servers and tests on tiny models.
    device: Literal["gpu", "cpu"] = "gpu"
    # What one node needs beside GPUs (issue 15); unset: core.resources' documented defaults.
    cpus_per_node: float | None = None
    memory_per_node: int | None = None  # bytes; written as "64Gi", "512Mi", "16G" or a number of bytes
    # The training environment the task runs in and is validated with (issue 22): a cluster environment's
    # name (`argus env list`), "~/envs/<name>" for one of the user's own; unset: the cluster's default_env.
    env: str | None = Field(default=None, min_length=1, max_length=256)
    # Training health (issue 24, core.stall): how long a running task may print no new step and no output
    # before it is stalled ("30m", "2h", seconds; 0: never), the longer limit before its first step (model
    # loading, compilation), and what to do then. Unset: the cluster's stall_after_s / stall_first_step_s.
    stall_after: int | None = None
    stall_first_step: int | None = None
    on_stall: Literal["keep", "cancel", "requeue"] = "keep"
    # The team the task's GPU-hours are charged to (issue 26): one of the user's teams; unset: their default.
    team: str | None = Field(default=None, min_length=1, max_length=32)
    # An admin-defined priority class (issue 26, `argus priority-class list`): orders work across users.
    priority_class: str | None = Field(default=None, min_length=1, max_length=32)
    # Evaluate each complete checkpoint as it is written (issue 38, core.evaluate_every): true (verl's validation),
    # or a mapping of what POST /tasks/{id}/evaluate takes; stored as None (off), {} (true) or that mapping.
    evaluate_checkpoints: dict[str, Any] | None = None

    @field_validator("evaluate_checkpoints", mode="before")
    @classmethod
    def _evaluate_every(cls, value: Any) -> Any:
        problems = evaluate_every.option_problems(value)
        if problems:  # parse_taskspec reports each of them; this keeps a model built elsewhere honest
            raise ValueError(problems[0].message)
        return evaluate_every.option_of(value)

    @field_validator("stall_after", "stall_first_step", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> Any:
        return None if value is None else parse_duration(value)

    @field_validator("cpus_per_node", mode="before")
    @classmethod
    def _cpus(cls, value: Any) -> Any:
        return None if value is None else parse_cpus(value)

    @field_validator("memory_per_node", mode="before")
    @classmethod
    def _memory(cls, value: Any) -> Any:
        return None if value is None else parse_memory(value)

    @field_validator("name", mode="before")
    @classmethod
    def _printable_name(cls, value: Any) -> Any:
        """A label shown in tables and stored in the database: no NUL (PostgreSQL refuses it), no newline
        (checked before whitespace is stripped, so a trailing ``\\n`` is refused too)."""
        if isinstance(value, str) and any(unicodedata.category(c) in ("Cc", "Cs") for c in value):
            raise Invalid("spec.control_characters")
        return value


class BasicTaskSpec(_Spec):
    """A templated ppo/grpo/sft run; every field becomes one verl override."""

    kind: Literal["basic"] = "basic"
    workload: Literal["ppo", "grpo", "sft"]
    model_id: str = Field(min_length=1, max_length=1024)
    train_file: str = Field(min_length=1, max_length=4096)
    val_file: str | None = Field(default=None, max_length=4096)
    total_epochs: int = Field(default=1, ge=1, le=100_000)
    total_training_steps: int | None = Field(default=None, ge=1, le=MAX_STEPS)
    save_freq: int = Field(default=-1, ge=-1, le=MAX_STEPS)
    test_freq: int = Field(default=-1, ge=-1, le=MAX_STEPS)
    lr: float | None = Field(default=None, gt=0, lt=1)
    train_batch_size: int | None = Field(default=None, ge=1, le=INT32_MAX)
    max_prompt_length: int = Field(default=512, ge=1, le=INT32_MAX)
    max_response_length: int = Field(default=512, ge=1, le=INT32_MAX)
    rollout_n: int | None = Field(default=None, ge=1, le=1024)
    rollout_name: Literal["vllm", "sglang", "trtllm"] = "vllm"  # verl 0.9.1's rollout registry
    reward_path: str | None = Field(default=None, max_length=4096)
    reward_name: str | None = Field(default=None, max_length=256)
    overrides: list[str] = Field(default_factory=list, max_length=512)


class AdvancedTaskSpec(_Spec):
    """A free verl command; ``$HOME`` is expanded, then checked (seed 000 §2.4)."""

    kind: Literal["advanced"]
    # "job": a utility job such as argus.jobs.doctor, which may ask for no GPU. Optional, as in the founding
    # design's spec: parse_taskspec infers it from the command (core.command.infer_workload).
    workload: Literal["ppo", "grpo", "sft", "job"] = None  # type: ignore[assignment]
    command: str = Field(min_length=1, max_length=64 * 1024)

    _workload_inferred: bool = PrivateAttr(default=False)

    @property
    def workload_inferred(self) -> bool:
        """The spec named no workload and parse_taskspec inferred it (admission says so)."""
        return self._workload_inferred


TaskSpec = BasicTaskSpec | AdvancedTaskSpec


_TOO_DEEP = (f"nested deeper than {MAX_DEPTH} levels; a task spec is a flat mapping of fields "
             "(only 'overrides' is a list of strings)")  # spec.too_deep's English (inside a YAML error too)


class _SpecLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """PyYAML's SafeLoader (libyaml's C parser where the wheel has it: a spec loads in ~40 µs, the
    Python one took ~310 µs of every submit's CPU) with YAML 1.2 floats: PyYAML implements YAML 1.1,
    where ``1e-4`` (no dot) and ``1.5e3`` (unsigned exponent) are *strings*, so ``lr: 1e-4`` would be
    refused as "must be a number". Aliases and nesting are checked before it runs (``_refuse_shapes``).
    """


# YAML 1.2 core-schema floats that YAML 1.1 leaves as strings: an exponent without a dot or without a
# sign (1e-4, 1E+3, 5e7, -1.5e3). Implicit resolvers are tried in order, so ints ("10") stay ints and
# only plain (unquoted) scalars are affected: "1e-4" in quotes is still a string.
_SpecLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$"),
    list("-+0123456789."),
)


def _refuse_shapes(text: str) -> None:
    """Raise a YAMLError (with its mark) for an alias or for nesting deeper than MAX_DEPTH.

    Aliases: anchors allow recursive and exponentially large documents. Depth: the composer recurses
    per level (~5000 ``[`` would raise RecursionError). The event stream is flat, so this scan is
    safe on any input, and it raises the parser's own syntax errors first."""
    depth = 0
    for event in yaml.parse(text, Loader=_SpecLoader):
        if isinstance(event, yaml.AliasEvent):
            raise yaml.constructor.ConstructorError(
                None, None, "YAML aliases (*name) are not supported in task specs; write the value out",
                event.start_mark,
            )
        if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            depth += 1
            if depth > MAX_DEPTH:
                raise yaml.composer.ComposerError(None, None, _TOO_DEEP, event.start_mark)
        elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            depth -= 1


def compose_spec_yaml(text: str) -> yaml.Node | None:
    """The YAML node tree of a spec text, for line lookups (the same loader and refusals as loading)."""
    _refuse_shapes(text)
    return yaml.compose(text, Loader=_SpecLoader)  # noqa: S506 - a (C)SafeLoader subclass


_JSON_TOKEN = re.compile(r'[\[\]{}"]')
_JSON_STRING_REST = re.compile(r'[^"\\]*+(?:\\.[^"\\]*+)*+"')  # after the opening quote; possessive: linear


def _json_depth_ok(text: str) -> bool:
    """True when no JSON array/object nests deeper than MAX_DEPTH (strings skipped; linear, no recursion).

    ``json.loads`` recurses per level and raises RecursionError on ~50 000 ``[``: check first.
    """
    depth, pos = 0, 0
    while (m := _JSON_TOKEN.search(text, pos)) is not None:
        tok, pos = m.group(), m.end()
        if tok == '"':
            end = _JSON_STRING_REST.match(text, pos)
            if end is None:
                return True  # an unterminated string: json.loads reports it
            pos = end.end()
        elif tok in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return False
        else:
            depth -= 1
    return True


def load_spec_document(text: str, content_type: str | None = None) -> dict[str, Any] | list[FieldError]:
    """Read a YAML or JSON body into a mapping, or say precisely why not."""
    try:
        if content_type and "json" in content_type:
            if not _json_depth_ok(text):
                return [field_error("(body)", None, "spec.too_deep", max=MAX_DEPTH)]
            doc = json.loads(text)
        else:
            _refuse_shapes(text)
            doc = yaml.load(text, Loader=_SpecLoader)  # noqa: S506 - a (C)SafeLoader subclass
    except json.JSONDecodeError as exc:
        return [field_error("(body)", None, "spec.json", line=exc.lineno, column=exc.colno, problem=exc.msg)]
    except yaml.YAMLError as exc:  # the parser's own words stay English: a parameter of the code
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        if mark is None:
            return [field_error("(body)", None, "spec.yaml_nowhere", problem=problem)]
        return [replace(field_error("(body)", None, "spec.yaml", line=mark.line + 1, column=mark.column + 1,
                                    problem=problem), line=mark.line + 1)]
    except (RecursionError, MemoryError):  # a last resort: the depth checks above should come first
        return [field_error("(body)", None, "spec.too_deep", max=MAX_DEPTH)]
    if not isinstance(doc, dict):
        if doc is None:
            return [field_error("(body)", None, "spec.empty_document")]
        return [field_error("(body)", None, "spec.not_a_mapping", type=type(doc).__name__)]
    bad_keys = [k for k in doc if not isinstance(k, str)]
    if bad_keys:
        return [field_error(str(k), k, "spec.field_name") for k in bad_keys]
    return doc


def parse_taskspec(doc: dict[str, Any]) -> TaskSpec | list[FieldError]:
    """Pick the spec shape from ``kind`` and validate it, collecting every error."""
    kind = doc.get("kind", "basic")
    if kind == "eval":  # issue 38: a model's evaluation, written as the basic spec it stands for
        doc = eval_basic_doc(doc)  # type: ignore[assignment]
        if isinstance(doc, list):
            return doc
        kind = doc["kind"]  # basic (verl's validation) or advanced (the lm-eval program)
    if kind in ("sweep", "pipeline"):
        return [field_error("kind", kind, "spec.submit_elsewhere", kind=kind)]
    if kind not in ("basic", "advanced"):
        return [field_error("kind", kind, "spec.kind")]
    model: type[_Spec] = AdvancedTaskSpec if kind == "advanced" else BasicTaskSpec
    unsafe = _unsafe_strings(doc)
    try:
        spec = model.model_validate(doc)
    except ValidationError as exc:
        errors = [_field_error(model, err) for err in exc.errors()]
        if evaluate_every.FIELD in doc:  # each of the option's problems under its own name (one ValueError above)
            errors = [e for e in errors if e.field != evaluate_every.FIELD]
            errors += evaluate_every.option_problems(doc[evaluate_every.FIELD])
        seen = {e.field for e in errors}
        return [*errors, *(e for e in unsafe if e.field not in seen)]
    if isinstance(spec, AdvancedTaskSpec) and spec.workload is None:
        spec.workload = infer_workload(spec.command)[0]
        spec._workload_inferred = True
    return unsafe or spec  # type: ignore[return-value]


def _unsafe_strings(doc: dict[str, Any]) -> list[FieldError]:
    """NUL (PostgreSQL cannot store it, C argv cannot carry it) and lone surrogates (from JSON/YAML
    ``\\ud800`` escapes: not encodable as UTF-8) are refused in every string of the spec."""
    errors = []
    for key, value in doc.items():
        items = [(str(key), value)] if not isinstance(value, list) else [
            (f"{key}.{i}", v) for i, v in enumerate(value)]
        for loc, v in items:
            if isinstance(v, str) and ("\x00" in v or any(0xD800 <= ord(c) <= 0xDFFF for c in v)):
                errors.append(field_error(loc, _short(v), "spec.unsafe_string"))
    return errors


def _field_error(model: type[_Spec], err: Any) -> FieldError:
    """One pydantic error as a FieldError; the common ones with a code (core.messages ``spec.*``) a client says
    in its own language, the validators' own messages (``value_error``) and the rare rest in English."""
    loc = ".".join(str(p) for p in err["loc"]) or "(body)"
    value = err.get("input")
    etype = err["type"]
    ctx = err.get("ctx") or {}
    allowed = sorted(model.model_fields)
    if etype == "extra_forbidden":
        close = difflib.get_close_matches(loc, allowed, n=1)
        if close:
            return field_error(loc, value, "spec.unknown_field_did_you_mean", close=close[0], allowed=", ".join(allowed))
        return field_error(loc, value, "spec.unknown_field", allowed=", ".join(allowed))
    if etype == "missing":
        return field_error(loc, None, "spec.missing", field=loc, example=_EXAMPLES.get(loc, "..."))
    if etype == "literal_error":
        expected = str(ctx.get("expected"))
        choices, _, last = expected.rpartition(" or ")
        if choices and " or " not in choices:
            return field_error(loc, value, "spec.one_of", choices=choices, last=last)
        return FieldError(loc, value, f"must be one of {expected}")
    if etype in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        op = {"greater_than_equal": "≥", "greater_than": ">", "less_than_equal": "≤", "less_than": "<"}[etype]
        limit = next(iter(ctx.values()), "?")
        if isinstance(limit, int | str):  # a float limit: f-string and template could write it differently
            return field_error(loc, value, "spec.bound", op=op, limit=limit)
        return FieldError(loc, value, f"must be {op} {limit}")
    if etype == "value_error":
        error = ctx.get("error")
        if isinstance(error, Invalid):  # a validator's coded refusal (core.resources, core.stall, the name's)
            return field_error(loc, _short(value), error.message.code, **error.message.params)
        return FieldError(loc, _short(value), str(error or err.get("msg", "invalid value")))
    if etype.startswith("int_") or etype == "bool_type":
        low, high = _bounds(model, loc)
        if isinstance(value, float) and not isinstance(value, bool) and high is not None and not low <= value <= high:
            if isinstance(low, int) and isinstance(high, int):
                return field_error(loc, value, "spec.whole_number_range", low=low, high=high)
            return FieldError(loc, value, f"must be a whole number from {low} to {high}")
        return field_error(loc, value, "spec.whole_number_not_float" if isinstance(value, float)
                           else "spec.whole_number")
    if etype.startswith("float_"):
        return field_error(loc, value, "spec.number")
    if etype.startswith("string_") and "too_long" in etype:
        return field_error(loc, _short(value), "spec.too_long", max=ctx.get("max_length"))
    if etype.startswith("string_") and "too_short" in etype:
        return field_error(loc, value, "spec.empty")
    if etype == "string_type":
        return field_error(loc, value, "spec.string")
    if etype == "list_type":
        return field_error(loc, value, "spec.overrides_list")
    if etype == "too_long":
        return field_error(loc, _short(value), "spec.too_many_items", max=ctx.get("max_length"))
    return FieldError(loc, _short(value), err.get("msg", "invalid value"))


def _bounds(model: type[_Spec], loc: str) -> tuple[float, float | None]:
    """The (ge, le) bounds declared on an integer field, for messages that name them."""
    info = model.model_fields.get(loc)
    low: float = float("-inf")
    high: float | None = None
    for m in info.metadata if info is not None else ():
        low = getattr(m, "ge", None) if getattr(m, "ge", None) is not None else low
        high = getattr(m, "le", None) if getattr(m, "le", None) is not None else high
    return low, high


def _short(value: Any) -> Any:
    if isinstance(value, str):  # echoed in a JSON error: make it encodable and one line
        value = "".join(c if c.isprintable() or c == " " else c.encode("unicode_escape", "backslashreplace")
                        .decode("ascii") for c in value)
    if isinstance(value, str) and len(value) > 200:
        return value[:200] + "…"
    if isinstance(value, list | dict):
        return _short(json.dumps(value, default=str))
    return value


_EXAMPLES = {
    "workload": "grpo",
    "nnodes": 1,
    "n_gpus_per_node": 8,
    "model_id": "Qwen/Qwen2.5-0.5B-Instruct",
    "train_file": "$HOME/common/datasets/gsm8k/train.parquet",
    "command": "python3 -m verl.trainer.main_ppo ...",
    "cpus_per_node": 12,
    "memory_per_node": "64Gi",
}
