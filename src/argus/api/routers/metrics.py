"""/api/v2/tasks/{id}/metrics: verl's per-step console metrics as a time series for charts;
/api/v2/compare: several tasks' specs aligned key by key for the Compare page."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, Field
from sqlalchemy.orm import Session

from argus.api.context import AppContext
from argus.api.deps import current_principal, get_ctx, get_session
from argus.api.schemas import ErrorOut
from argus.core.metric_units import units_of
from argus.services.compare import MISSING_CODE, compare_tasks, parse_task_ids
from argus.services.metrics import get_task_metrics
from argus.services.principal import Principal

router = APIRouter(prefix="/api/v2", tags=["tasks"])


class MetricsOut(BaseModel):
    task_id: str
    keys: list[str]
    last_step: int | None
    points: dict[str, list[tuple[int, float | str]]] = Field(
        description='[step, value] per key; JSON has no NaN/Infinity, so those values are the strings '
        '"nan", "inf" and "-inf"')
    times: dict[int, float] = Field(
        default_factory=dict,
        description="unix seconds at which each step's metrics line was written to the log (the driver's clock "
        "beside the log); steps logged without a clock are absent")
    units: dict[str, str] = Field(
        default_factory=dict,
        description="the unit of each key that has one, by verl's naming (core/metric_units.py): s, ms, tokens, "
        "tokens_per_s, gib; a key left out is a plain number. A chart of several keys gives each unit its own axis")


@router.get("/tasks/{task_id}/metrics", response_model=MetricsOut, responses={404: {"model": ErrorOut}})
def get_metrics(
    task_id: str,
    key: list[str] | None = Query(None, description="only these keys (repeat or comma-separate); default all"),
    principal: Principal = Depends(current_principal),
    session: Session = Depends(get_session, scope="function"),
    ctx: AppContext = Depends(get_ctx),
) -> MetricsOut:
    """Keys seen so far and ``[step, value]`` points per key, parsed from the task's logs (all attempts)."""
    series = get_task_metrics(session, principal, task_id, ctx.settings.root)
    wanted = [k.strip() for item in key or [] for k in item.split(",") if k.strip()] or None
    keys = series.keys
    return MetricsOut(task_id=task_id, keys=keys, last_step=series.last_step, points=series.as_lists(wanted),
                      times=dict(sorted(series.times.items())), units=units_of(keys))


class CompareTaskOut(BaseModel):
    task_id: str
    name: str | None
    status: str


class DiffRowOut(BaseModel):
    section: str = Field(description="override (Hydra key=value from argv), spec (resolved spec, dotted keys) "
                         "or command (the other argv words)")
    key: str
    values: list[str | None] = Field(description="one per task, in the order of `tasks`; null: not set there")
    differs: bool


class MissingTaskOut(BaseModel):
    task_id: str = Field(description="an id asked for that is not shown")
    code: str = Field(description=f"why, stable: {MISSING_CODE} (no such task, or not yours to see: the same answer)")
    message: str = Field(description="the same in English, with the fix")


class CompareOut(BaseModel):
    tasks: list[CompareTaskOut]
    rows: list[DiffRowOut]
    missing: list[MissingTaskOut] = Field(
        default_factory=list, description="ids that cannot be shown, each with why; the other tasks are compared")


@router.get("/compare", response_model=CompareOut, responses={400: {"model": ErrorOut}, 404: {"model": ErrorOut}})
def get_compare(
    tasks: list[str] | None = Query(None, description="task ids, comma-separated (or repeated), 1–8"),
    principal: Principal = Depends(current_principal),
    session: Session = Depends(get_session, scope="function"),
) -> CompareOut:
    """The tasks' resolved specs and Hydra overrides aligned by key; ``differs`` marks rows that are not all equal.

    An id the caller cannot see is listed in ``missing`` (the others are still compared); when no id
    can be shown the answer is a 404 whose ``errors`` name each of them.
    """
    result = compare_tasks(session, principal, parse_task_ids(tasks))
    return CompareOut(
        tasks=[CompareTaskOut(task_id=t.id, name=t.name, status=t.status) for t in result.tasks],
        rows=[DiffRowOut(section=r.section, key=r.key, values=list(r.values), differs=r.differs) for r in result.rows],
        missing=[MissingTaskOut(task_id=str(e.value), code=MISSING_CODE, message=e.message) for e in result.missing])
