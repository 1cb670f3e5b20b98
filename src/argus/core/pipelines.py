"""Pipelines (issue 38), as pure functions: a small DAG of steps whose inputs name earlier steps' artifacts.

A pipeline spec (``POST /api/v2/pipelines``, ``argus submit`` of a ``kind: pipeline`` file)::

    kind: pipeline
    name: sft then grpo
    steps:
      sft:                                   # a step runs a task spec …
        spec: {workload: sft, …}
      export:                                # … or exports, evaluates or registers another step's checkpoint
        needs: [sft]
        export: {from: sft}
      grpo:
        needs: [export]
        spec: {workload: grpo, model_id: "{{ steps.export.hf_path }}", …}
        retries: 1                           # a failed run is submitted again, at most once
      eval:
        needs: [grpo]
        evaluate: {from: grpo, val_file: $HOME/datasets/gsm8k/test.parquet}
      register:
        needs: [eval]
        register: {from: grpo, name: gsm8k-grpo, alias: candidate}
        when: {step: eval, metric: val-core/openai/gsm8k/acc/mean@1, op: ">=", value: 0.4}

Steps are named (letters, digits, ``_``, ``-``) and listed in an order where each step's ``needs`` come
before it, so the graph has no cycle by construction. A string anywhere in a step may name an artifact of a
step it needs (directly or through others) as ``{{ steps.<name>.<artifact> }}``: ``task_id``, ``job_dir``,
``checkpoint`` (the latest complete ``global_step_N`` folder), ``hf_path`` (what an export wrote). A gate
(``when``) compares a metric of a needed step — an evaluation's score, else the last value the step's task
logged — with a number; a step whose gate fails is skipped, and so is everything that needs it.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from argus.core.messages import msg
from argus.errors import FieldError

NAME_RE = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,31}")
ARTIFACTS = ("task_id", "job_dir", "checkpoint", "hf_path")
REF_RE = re.compile(r"\{\{\s*steps\.([A-Za-z][A-Za-z0-9_-]*)\.([a-z_]+)\s*\}\}")
MAX_STEPS = 32
ACTIONS = ("spec", "export", "evaluate", "register")
_ATTR = {"register": "register_"}
OPS: dict[str, Callable[[float, float], bool]] = {">=": operator.ge, ">": operator.gt, "<=": operator.le,
                                                  "<": operator.lt, "==": operator.eq}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, str_strip_whitespace=True)


class FromStep(_Strict):
    from_: str = Field(alias="from", min_length=1, max_length=32)
    step: int | None = Field(None, ge=0, description="a checkpoint step; default: the latest complete one")


class ExportAction(FromStep):
    to: str | None = Field(None, max_length=1024)


class EvaluateAction(FromStep):
    val_file: str | None = Field(None, max_length=4096)
    reward_path: str | None = Field(None, max_length=4096)
    reward_name: str | None = Field(None, max_length=256)


class RegisterAction(FromStep):
    name: str = Field(min_length=1, max_length=64)
    alias: str | None = Field(None, min_length=1, max_length=32)


class Gate(_Strict):
    step: str = Field(min_length=1, max_length=32)
    metric: str = Field(min_length=1, max_length=256)
    op: Literal[">=", ">", "<=", "<", "=="] = ">="
    value: float

    def passes(self, value: float | None) -> tuple[bool, str]:
        if value is None or not math.isfinite(value):
            return False, msg("pipeline.gate_no_metric", step=self.step, metric=self.metric).text
        ok = OPS[self.op](value, self.value)
        return ok, msg("pipeline.gate_passed" if ok else "pipeline.gate_not_passed", step=self.step,
                       metric=self.metric, value=f"{value:.4g}", op=self.op, limit=f"{self.value:g}").text


class Step(_Strict):
    needs: list[str] = Field(default_factory=list, max_length=MAX_STEPS)
    spec: dict[str, Any] | None = None
    export: ExportAction | None = None
    evaluate: EvaluateAction | None = None
    register_: RegisterAction | None = Field(None, alias="register")  # `register` would shadow ABCMeta's
    retries: int = Field(0, ge=0, le=5)
    when: Gate | None = None

    @model_validator(mode="after")
    def _one_action(self) -> Step:
        given = [k for k in ACTIONS if getattr(self, _ATTR.get(k, k)) is not None]
        if len(given) != 1:
            raise ValueError(f"a step does one thing: give exactly one of spec, export, evaluate, register "
                             f"(got {', '.join(given) or 'none'})")
        if self.register_ is not None and self.retries:
            raise ValueError("a register step is not retried (it runs no task): remove retries")
        return self

    @property
    def action(self) -> str:
        return next(k for k in ACTIONS if getattr(self, _ATTR.get(k, k)) is not None)

    @property
    def source(self) -> str | None:
        """The step whose checkpoint an export, evaluate or register step works on."""
        act = self.export or self.evaluate or self.register_
        return act.from_ if act is not None else None


class PipelineSpec(_Strict):
    kind: Literal["pipeline"] = "pipeline"
    name: str | None = Field(None, max_length=96)
    steps: dict[str, Step] = Field(min_length=1, max_length=MAX_STEPS)


def parse_pipeline(doc: dict[str, Any]) -> PipelineSpec | list[FieldError]:
    """The pipeline, or every problem: its fields, step names, needs, sources, gates and ``{{ }}`` references."""
    try:
        spec = PipelineSpec.model_validate(doc)
    except ValidationError as exc:
        return [FieldError(".".join(str(p) for p in e["loc"]) or "(body)", _short(e.get("input")),
                           str((e.get("ctx") or {}).get("error") or e["msg"])) for e in exc.errors()]
    errors: list[FieldError] = []
    seen: list[str] = []
    for name, step in spec.steps.items():
        where = f"steps.{name}"
        if not NAME_RE.fullmatch(name):
            errors.append(FieldError(where, name, "a step name is a letter then letters, digits, '_' or '-'"))
        for need in step.needs:
            if need not in seen:
                errors.append(FieldError(f"{where}.needs", need, "must name a step listed before this one "
                                         f"(steps so far: {', '.join(seen) or 'none'})"))
        before = upstream(spec, name)
        if step.source is not None and step.source not in before:
            errors.append(FieldError(f"{where}.{step.action}.from", step.source,
                                     "must be a step this one needs (add it to needs)"))
        if step.when is not None and step.when.step not in before:
            errors.append(FieldError(f"{where}.when.step", step.when.step, "must be a step this one needs"))
        for ref, attr in references(step.model_dump(by_alias=True, exclude_none=True)):
            if ref not in before:
                errors.append(FieldError(where, f"{{{{ steps.{ref}.{attr} }}}}", f"names step {ref!r}, which this "
                                         "step does not need (add it to needs)"))
            elif attr not in ARTIFACTS:
                errors.append(FieldError(where, f"{{{{ steps.{ref}.{attr} }}}}",
                                         f"unknown artifact; one of {', '.join(ARTIFACTS)}"))
        seen.append(name)
    return errors or spec


def _short(value: Any) -> Any:
    return value if isinstance(value, (int, float, bool)) or value is None else str(value)[:200]


def upstream(spec: PipelineSpec, name: str) -> set[str]:
    """Every step ``name`` needs, directly or through others."""
    out: set[str] = set()
    todo = list(spec.steps[name].needs)
    while todo:
        n = todo.pop()
        if n in out or n not in spec.steps:
            continue
        out.add(n)
        todo += spec.steps[n].needs
    return out


def references(obj: Any) -> list[tuple[str, str]]:
    """Every ``{{ steps.X.attr }}`` in the strings of ``obj`` (nested mappings and lists)."""
    if isinstance(obj, str):
        return REF_RE.findall(obj)
    if isinstance(obj, dict):
        return [r for v in obj.values() for r in references(v)]
    if isinstance(obj, list):
        return [r for v in obj for r in references(v)]
    return []


def render(obj: Any, artifacts: dict[str, dict[str, Any]]) -> Any:
    """``obj`` with every reference replaced by the artifact's value (a missing one raises KeyError)."""
    if isinstance(obj, str):
        return REF_RE.sub(lambda m: str(artifacts[m.group(1)][m.group(2)]), obj)
    if isinstance(obj, dict):
        return {k: render(v, artifacts) for k, v in obj.items()}
    if isinstance(obj, list):
        return [render(v, artifacts) for v in obj]
    return obj


def placeholders(spec: PipelineSpec) -> dict[str, dict[str, str]]:
    """Artifacts as they look before the steps ran, to check each step's spec at submit: paths of the right
    shape in the owner's home (``$HOME/jobs/<pipeline>-<step>/…``)."""
    out = {}
    for name in spec.steps:
        job = f"$HOME/jobs/pipeline-{name}"
        out[name] = {"task_id": f"job-pipeline-{name}", "job_dir": job,
                     "checkpoint": f"{job}/checkpoints/global_step_1", "hf_path": f"$HOME/models/pipeline-{name}"}
    return out
