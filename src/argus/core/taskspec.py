"""Task specs as users write them (seed 000 §2.2, §7.1) and their parser.

Two shapes: a *basic* spec (no ``kind`` or ``kind: basic``) fills a platform
template for ppo/grpo/sft; an *advanced* spec (``kind: advanced``) carries a
free verl ``command``. ``parse_taskspec`` never raises on user input: it returns
a spec or every problem at once, each naming the field, the value and the fix.
"""

from __future__ import annotations

import difflib
import json
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from argus.errors import FieldError


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True, strict=True)

    name: str | None = Field(default=None, max_length=128)
    priority: int = Field(default=0, ge=-100, le=100)
    nnodes: int = Field(ge=1, le=100_000)
    n_gpus_per_node: int = Field(ge=0, le=1024)


class BasicTaskSpec(_Spec):
    """A templated ppo/grpo/sft run; every field becomes one verl override."""

    kind: Literal["basic"] = "basic"
    workload: Literal["ppo", "grpo", "sft"]
    model_id: str = Field(min_length=1, max_length=1024)
    train_file: str = Field(min_length=1, max_length=4096)
    val_file: str | None = Field(default=None, max_length=4096)
    total_epochs: int = Field(default=1, ge=1, le=100_000)
    total_training_steps: int | None = Field(default=None, ge=1)
    save_freq: int = Field(default=-1, ge=-1)
    test_freq: int = Field(default=-1, ge=-1)
    lr: float | None = Field(default=None, gt=0, lt=1)
    train_batch_size: int | None = Field(default=None, ge=1)
    max_prompt_length: int = Field(default=512, ge=1)
    max_response_length: int = Field(default=512, ge=1)
    rollout_n: int | None = Field(default=None, ge=1, le=1024)
    rollout_name: Literal["vllm", "sglang", "hf"] = "vllm"
    reward_path: str | None = Field(default=None, max_length=4096)
    reward_name: str | None = Field(default=None, max_length=256)
    overrides: list[str] = Field(default_factory=list, max_length=512)


class AdvancedTaskSpec(_Spec):
    """A free verl command; ``$HOME`` is expanded, then checked (seed 000 §2.4)."""

    kind: Literal["advanced"]
    # "job": a utility job such as argus.jobs.doctor, which may ask for no GPU
    workload: Literal["ppo", "grpo", "sft", "job"]
    command: str = Field(min_length=1, max_length=64 * 1024)


TaskSpec = BasicTaskSpec | AdvancedTaskSpec


class _NoAliasLoader(yaml.SafeLoader):
    """SafeLoader without aliases: anchors allow recursive and exponentially large documents."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.constructor.ConstructorError(
                None, None, "YAML aliases (*name) are not supported in task specs; write the value out",
                event.start_mark,
            )
        return super().compose_node(parent, index)


def load_spec_document(text: str, content_type: str | None = None) -> dict[str, Any] | list[FieldError]:
    """Read a YAML or JSON body into a mapping, or say precisely why not."""
    try:
        if content_type and "json" in content_type:
            doc = json.loads(text)
        else:
            doc = yaml.load(text, Loader=_NoAliasLoader)  # noqa: S506 - a SafeLoader subclass
    except json.JSONDecodeError as exc:
        return [FieldError("(body)", None, f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}")]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        return [FieldError("(body)", None, f"invalid YAML{where}: {problem}")]
    if not isinstance(doc, dict):
        kind = "empty" if doc is None else type(doc).__name__
        return [FieldError("(body)", None, f"a task spec must be a mapping of fields, got {kind}")]
    bad_keys = [k for k in doc if not isinstance(k, str)]
    if bad_keys:
        return [FieldError(str(k), k, "field names must be strings") for k in bad_keys]
    return doc


def parse_taskspec(doc: dict[str, Any]) -> TaskSpec | list[FieldError]:
    """Pick the spec shape from ``kind`` and validate it, collecting every error."""
    kind = doc.get("kind", "basic")
    if kind not in ("basic", "advanced"):
        return [FieldError("kind", kind, "must be 'basic' (or omitted) or 'advanced'")]
    model: type[_Spec] = AdvancedTaskSpec if kind == "advanced" else BasicTaskSpec
    try:
        return model.model_validate(doc)  # type: ignore[return-value]
    except ValidationError as exc:
        return [_field_error(model, err) for err in exc.errors()]


def _field_error(model: type[_Spec], err: Any) -> FieldError:
    loc = ".".join(str(p) for p in err["loc"]) or "(body)"
    value = err.get("input")
    etype = err["type"]
    ctx = err.get("ctx") or {}
    allowed = sorted(model.model_fields)
    if etype == "extra_forbidden":
        close = difflib.get_close_matches(loc, allowed, n=1)
        hint = f"did you mean '{close[0]}'? " if close else ""
        return FieldError(loc, value, f"unknown field; {hint}allowed fields: {', '.join(allowed)}")
    if etype == "missing":
        return FieldError(loc, None, f"required field is missing; add '{loc}: {_EXAMPLES.get(loc, '...')}'")
    if etype == "literal_error":
        return FieldError(loc, value, f"must be one of {ctx.get('expected')}")
    if etype in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        op = {"greater_than_equal": "≥", "greater_than": ">", "less_than_equal": "≤", "less_than": "<"}[etype]
        limit = next(iter(ctx.values()), "?")
        return FieldError(loc, value, f"must be {op} {limit}")
    if etype.startswith("int_") or etype == "bool_type":
        return FieldError(loc, value, "must be a whole number, e.g. 4")
    if etype.startswith("float_"):
        return FieldError(loc, value, "must be a number, e.g. 1e-6")
    if etype.startswith("string_") and "too_long" in etype:
        return FieldError(loc, _short(value), f"is too long (at most {ctx.get('max_length')} characters)")
    if etype.startswith("string_") and "too_short" in etype:
        return FieldError(loc, value, "must not be empty")
    if etype == "string_type":
        return FieldError(loc, value, "must be a string")
    if etype == "list_type":
        return FieldError(loc, value, "must be a list of 'key=value' strings")
    if etype == "too_long":
        return FieldError(loc, _short(value), f"has too many items (at most {ctx.get('max_length')})")
    return FieldError(loc, _short(value), err.get("msg", "invalid value"))


def _short(value: Any) -> Any:
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
}
