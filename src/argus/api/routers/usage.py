"""GET /api/v2/usage: GPU-hours and CPU-hours per user, workload, day or team (accounting); ``format=csv``
for a spreadsheet (the WebUI's CSV links)."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Literal

from fastapi import APIRouter, Depends, Query, Response
from pydantic import BaseModel
from sqlalchemy.orm import Session

from argus.api.deps import current_principal, get_session
from argus.api.schemas import ErrorOut
from argus.services import usage as svc
from argus.services.principal import Principal

router = APIRouter(prefix="/api/v2", tags=["usage"])


class UsageRowOut(BaseModel):
    key: str
    gpu_seconds: float
    gpu_hours: float
    cpu_seconds: float
    cpu_hours: float
    attempts: int


class UsageOut(BaseModel):
    start: datetime
    end: datetime
    group_by: str
    rows: list[UsageRowOut]
    total: UsageRowOut


@router.get("/usage", response_model=UsageOut,
            responses={400: {"model": ErrorOut}, 403: {"model": ErrorOut}, 404: {"model": ErrorOut}})
def get_usage(
    start: str | None = Query(None, alias="from", description="start of the window: a date or ISO 8601 time "
                              "(UTC if no zone); default 30 days before `to`"),
    end: str | None = Query(None, alias="to", description="end of the window (exclusive); default now"),
    group_by: Literal["user", "workload", "day", "team"] = Query("user"),
    user: str | None = Query(None, description="admins: one user only; others may name only themselves"),
    team: str | None = Query(None, description="one team's tasks only (all its members'): its members and admins"),
    fmt: Literal["json", "csv"] = Query("json", alias="format", description="csv: the rows as a CSV file "
                                        "(key, gpu_hours, cpu_hours, attempts)"),
    principal: Principal = Depends(current_principal),
    session: Session = Depends(get_session, scope="function"),
) -> UsageOut | Response:
    """GPU-seconds (``nnodes × n_gpus_per_node`` × running time) and CPU-seconds of CPU jobs.

    Attempts that cross the window's edges are cut to it; running attempts count up to now.
    Admins see every user; anyone else only themselves — or, with ``team``, every member's use of a team
    they are in.
    """
    report = svc.usage_report(session, principal, start=svc.parse_when("from", start),
                              end=svc.parse_when("to", end), group_by=group_by, user=user, team=team)
    if fmt == "csv":
        label = re.sub(r"[^A-Za-z0-9_.-]", "_", f"-{team}"[:40]) if team else ""  # the header holds no quote
        name = f"argus-usage-{group_by}{label}-{report.start:%Y%m%d}-{report.end:%Y%m%d}.csv"
        return Response(svc.usage_csv(report), media_type="text/csv; charset=utf-8",
                        headers={"Content-Disposition": f'attachment; filename="{name}"'})
    return UsageOut(start=report.start, end=report.end, group_by=report.group_by,
                    rows=[UsageRowOut(**r.as_dict()) for r in report.rows], total=UsageRowOut(**report.total.as_dict()))
