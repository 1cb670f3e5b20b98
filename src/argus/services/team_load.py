"""What each team uses now and this month (issue 26), for the Teams page (GET /api/v2/teams).

Apart from services/teams.py (membership and settings) because it reads tasks and attempts, as
/metrics' ``team_figures`` does, but only for the teams one caller may see.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from argus.core.states import ACTIVE
from argus.core.teams import month_window
from argus.db.models import TaskModel
from argus.services.teams import team_gpu_seconds


@dataclass(frozen=True)
class TeamLoad:
    """Tasks starting, running or being canceled; the GPUs they hold; GPU-hours charged this calendar month."""

    running_tasks: int = 0
    gpus_held: int = 0
    gpu_hours_month: float = 0.0


def team_load(session: Session, names: list[str], now: datetime | None = None) -> dict[str, TeamLoad]:
    """:class:`TeamLoad` of each team named; one query for the tasks, one per team for the month (teams are few)."""
    if not names:
        return {}
    now = now or datetime.now(UTC)
    active = {team: (int(n), int(g or 0)) for team, n, g in session.execute(
        select(TaskModel.team, func.count(), func.sum(TaskModel.nnodes * TaskModel.n_gpus_per_node))
        .where(TaskModel.team.in_(names), TaskModel.status.in_([s.value for s in ACTIVE]))
        .group_by(TaskModel.team))}
    start, end = month_window(now)
    return {name: TeamLoad(*active.get(name, (0, 0)), team_gpu_seconds(session, name, start, end, now) / 3600.0)
            for name in names}
