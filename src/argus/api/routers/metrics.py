"""/api/v2/tasks/{id}/metrics: verl's per-step console metrics as a time series for charts."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, Field
from sqlalchemy.orm import Session

from argus.api.context import AppContext
from argus.api.deps import current_principal, get_ctx, get_session
from argus.api.schemas import ErrorOut
from argus.services.metrics import get_task_metrics
from argus.services.principal import Principal

router = APIRouter(prefix="/api/v2/tasks", tags=["tasks"])


class MetricsOut(BaseModel):
    task_id: str
    keys: list[str]
    last_step: int | None
    points: dict[str, list[tuple[int, float | str]]] = Field(
        description='[step, value] per key; JSON has no NaN/Infinity, so those values are the strings '
        '"nan", "inf" and "-inf"')


@router.get("/{task_id}/metrics", response_model=MetricsOut, responses={404: {"model": ErrorOut}})
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
    return MetricsOut(task_id=task_id, keys=series.keys, last_step=series.last_step, points=series.as_lists(wanted))
