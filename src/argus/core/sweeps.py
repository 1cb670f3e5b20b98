"""Sweeps (issue 38), as pure functions: a base spec and a search space become trials; trials are judged.

A sweep spec (``POST /api/v2/sweeps``)::

    kind: sweep
    name: lr sweep
    base: {workload: grpo, model_id: …, test_freq: 2, …}   # any task spec (basic, advanced, eval)
    parameters:                      # what varies: a spec field or a verl (Hydra) override key
      lr: [1.0e-6, 1.0e-5]
      actor_rollout_ref.rollout.n: [4, 8]
      actor_rollout_ref.actor.clip_ratio: {min: 0.1, max: 0.3}       # random only; log: true, integer: true
    method: grid                     # or random (seeded)
    max_trials: 4
    max_concurrent: 2                # trials running at once (the rest wait in the queue)
    budget_gpu_hours: 8              # no more trials once they used it; running ones are stopped
    metric: val-core/openai/gsm8k/acc/mean@1    # a *validation* metric: the best trial, early stopping
    mode: max
    early_stop: {rungs: [2, 4], keep: 0.5}      # successive halving at those steps

Every trial is an ordinary task made from ``base`` with its parameters applied (``trial_doc``): the
sweep is admitted only if every trial's spec is (the service checks each). Early stopping follows
ASHA's rule without pausing: at each rung (a step where verl validates, a multiple of ``test_freq``) a
running trial that is not among the best ``keep`` fraction of the trials that reported there is
stopped, once at least ``min_trials`` did (``stops``). Only a validation metric is accepted: the
training reward of DAPO-style filtered rollouts is not comparable across trials.
"""

from __future__ import annotations

import itertools
import math
import random
import re
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from argus.core import checkpoints as ck
from argus.core.messages import Message, msg
from argus.core.metrics import VALIDATION_PREFIXES
from argus.errors import FieldError

MAX_TRIALS = 256
_HYDRA_KEY = re.compile(r"[+~]{0,2}[A-Za-z_][\w.@/-]*")
Scalar = str | int | float | bool


class Range(BaseModel):
    """A continuous (or integer) interval to sample from (``method: random``)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    min: float
    max: float
    log: bool = False  # sample the exponent uniformly: learning rates
    integer: bool = False

    @model_validator(mode="after")
    def _ordered(self) -> Range:
        if not self.min < self.max:
            raise ValueError(f"min ({self.min}) must be below max ({self.max})")
        if self.log and self.min <= 0:
            raise ValueError("log: true needs min > 0")
        return self


class EarlyStop(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    rungs: list[int] = Field(min_length=1, max_length=32)
    keep: float = Field(0.5, gt=0, lt=1)  # ASHA's 1/eta: the fraction of trials that go on at each rung
    min_trials: int = Field(2, ge=2, le=MAX_TRIALS)  # how many must have reported at a rung before it cuts

    @field_validator("rungs")
    @classmethod
    def _ascending(cls, rungs: list[int]) -> list[int]:
        if any(r < 1 for r in rungs) or rungs != sorted(set(rungs)):
            raise ValueError("must be ascending steps ≥ 1, e.g. [2, 4]")
        return rungs


class SweepSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, str_strip_whitespace=True)

    kind: Literal["sweep"] = "sweep"
    name: str | None = Field(None, max_length=96)
    base: dict[str, Any]
    parameters: dict[str, list[Scalar] | Range] = Field(min_length=1, max_length=16)
    method: Literal["grid", "random"] = "grid"
    max_trials: int | None = Field(None, ge=1, le=MAX_TRIALS)
    max_concurrent: int = Field(2, ge=1, le=MAX_TRIALS)
    budget_gpu_hours: float | None = Field(None, gt=0, le=10**7)
    seed: int = 0
    metric: str | None = Field(None, min_length=1, max_length=256)
    mode: Literal["max", "min"] = "max"
    early_stop: EarlyStop | None = None

    @field_validator("metric")
    @classmethod
    def _validation_metric(cls, metric: str | None) -> str | None:
        if metric is not None and not metric.startswith(VALIDATION_PREFIXES):
            raise ValueError("must be a validation metric (val-core/…, val-aux/…, as verl logs at each test_freq): "
                             "a training reward such as critic/score/mean is not comparable across trials "
                             "(DAPO-style filtered rollouts keep only some groups)")
        return metric

    @field_validator("parameters")
    @classmethod
    def _values(cls, params: dict[str, Any]) -> dict[str, Any]:
        for key, values in params.items():
            if not _HYDRA_KEY.fullmatch(key):
                raise ValueError(f"{key!r} is not a spec field or a verl override key such as "
                                 "actor_rollout_ref.actor.optim.lr")
            if isinstance(values, list) and not values:
                raise ValueError(f"{key}: give at least one value")
        return params

    @model_validator(mode="after")
    def _consistent(self) -> SweepSpec:
        if self.early_stop is not None and self.metric is None:
            raise ValueError("early_stop needs a metric to compare the trials by (metric: val-core/…)")
        if self.method == "grid" and any(isinstance(v, Range) for v in self.parameters.values()):
            raise ValueError("a grid needs a list of values for every parameter; a {min, max} range is for "
                             "method: random")
        return self


def parse_sweep(doc: dict[str, Any]) -> SweepSpec | list[FieldError]:
    """The sweep spec, or every problem in its own fields (the trials' specs are checked by the service)."""
    try:
        return SweepSpec.model_validate(doc)
    except ValidationError as exc:
        out = []
        for err in exc.errors():
            loc = ".".join(str(p) for p in err["loc"] if not str(p).startswith(("list[", "Range", "function-")))
            message = str((err.get("ctx") or {}).get("error") or err["msg"])
            if err["type"] == "extra_forbidden":
                message = f"unknown field; allowed: {', '.join(sorted(SweepSpec.model_fields))}"
            out.append(FieldError(loc or "(body)", _short(err.get("input")), message))
        return out


def _short(value: Any) -> Any:
    return value if isinstance(value, (int, float, bool)) or value is None else str(value)[:200]


def grid_size(spec: SweepSpec) -> int:
    return math.prod(len(v) for v in spec.parameters.values() if isinstance(v, list))


def trial_params(spec: SweepSpec) -> list[dict[str, Scalar]] | list[FieldError]:
    """Each trial's parameter values, in order: the grid (every combination, first key slowest) or
    ``max_trials`` seeded random draws."""
    keys = list(spec.parameters)
    if spec.method == "grid":
        size = grid_size(spec)
        limit = spec.max_trials or size
        if size > limit:
            return [FieldError("max_trials", spec.max_trials, f"the grid has {size} points: raise max_trials to "
                               f"{size}, drop values, or use method: random to draw {limit}")]
        combos = itertools.product(*(spec.parameters[k] for k in keys))  # type: ignore[misc]
        return [dict(zip(keys, c, strict=True)) for c in combos]
    if spec.max_trials is None:
        return [FieldError("max_trials", None, "method: random needs max_trials: how many draws to run")]
    rng = random.Random(spec.seed)
    return [{k: _draw(rng, spec.parameters[k]) for k in keys} for _ in range(spec.max_trials)]


def _draw(rng: random.Random, values: list[Scalar] | Range) -> Scalar:
    if isinstance(values, list):
        return rng.choice(values)
    if values.log:
        x = math.exp(rng.uniform(math.log(values.min), math.log(values.max)))
    else:
        x = rng.uniform(values.min, values.max)
    return round(x) if values.integer else float(f"{x:.6g}")


def trial_doc(base: dict[str, Any], params: dict[str, Scalar], *, name: str, spec_fields: frozenset[str]) -> dict:
    """``base`` with the trial's values: a field of its kind of spec (``lr``, ``rollout_n``, ``nnodes``) set,
    anything else appended as a Hydra override (to ``overrides`` of a basic/eval spec, to the end of an
    advanced ``command``)."""
    out = dict(base)
    out["name"] = name
    extra = []
    advanced = out.get("kind") == "advanced"
    for key, value in params.items():
        if key in spec_fields and key not in ("kind", "command", "overrides", "name"):
            out[key] = value
        else:
            extra.append(f"{key}={_hydra_value(value)}")
    if extra and advanced:
        out["command"] = f"{str(out.get('command') or '').rstrip()} {' '.join(map(ck.shell_word, extra))}"
    elif extra:
        overrides = out.get("overrides") or []
        out["overrides"] = [*(overrides if isinstance(overrides, list) else [overrides]), *extra]
    return out


def _hydra_value(value: Scalar) -> str:
    if isinstance(value, bool):
        return "True" if value else "False"
    return str(value)


def trial_name(sweep_name: str, index: int, params: dict[str, Scalar]) -> str:
    shown = ", ".join(f"{k.rpartition('.')[2]}={v}" for k, v in params.items())
    return f"{sweep_name} #{index}: {shown}"[:128]


# ---------------------------------------------------------------- judging trials


@dataclass(frozen=True)
class TrialState:
    task_id: str
    index: int
    active: bool  # still queued or running: may be stopped
    values: dict[int, float]  # the metric's value per step it was validated at


@dataclass(frozen=True)
class Stop:
    task_id: str
    rung: int
    value: float
    rank: int  # 1 = best
    reported: int  # trials that reported at this rung
    kept: int  # how many go on from it

    def message(self, metric: str) -> str:
        return self.said(metric).text

    def said(self, metric: str) -> Message:
        """The stopped trial's status message as ``status.early_stopped`` (issue 37)."""
        return msg("status.early_stopped", rung=self.rung, metric=metric, value=f"{self.value:.4g}", rank=self.rank,
                   reported=self.reported, kept=self.kept)


def _better(mode: Literal["max", "min"], value: float) -> float:
    return -value if mode == "max" else value


def stops(trials: list[TrialState], early: EarlyStop, mode: Literal["max", "min"]) -> list[Stop]:
    """Which active trials to stop now: each judged at the highest rung it has a value for."""
    out = []
    for t in trials:
        if not t.active:
            continue
        reached = [r for r in early.rungs if r in t.values and math.isfinite(t.values[r])]
        if not reached:
            continue
        rung = reached[-1]
        peers = sorted((_better(mode, p.values[rung]), p.index, p.task_id) for p in trials
                        if rung in p.values and math.isfinite(p.values[rung]))
        if len(peers) < early.min_trials:
            continue
        kept = max(1, int(len(peers) * early.keep))
        rank = next(i for i, (_, _, tid) in enumerate(peers, 1) if tid == t.task_id)
        if rank > kept:
            out.append(Stop(t.task_id, rung, t.values[rung], rank, len(peers), kept))
    return out


def best(trials: list[TrialState], mode: Literal["max", "min"]) -> TrialState | None:
    """The trial whose last validated value is best (a tie: the earlier trial)."""
    scored = [(_better(mode, t.values[max(t.values)]), t.index, t) for t in trials
              if t.values and math.isfinite(t.values[max(t.values)])]
    return min(scored, key=lambda s: (s[0], s[1]))[2] if scored else None
