"""Accounting: GPU- and CPU-seconds per user, workload or day, read from the attempt rows.

Every attempt stores what it cost when it ends (``resource_seconds``, ``resource_kind``,
see ``scheduler.common.close_attempt``); a running attempt counts up to now. A report
covers a window ``[from, to)``: an attempt that crosses an edge is cut to the window
(``core.accounting.clipped``), and ``group_by=day`` splits an attempt across the UTC days
it ran on, so the days of a window always add up to the window's total.

Who may see what: an admin sees every user (or one, ``user=``); anyone else sees only
their own use and is refused (403) when asking for another user's — except a team's use
(``team=``, issue 26), which every member of the team may see, all members together.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from argus.core import accounting
from argus.core.messages import field_error, refusal
from argus.core.states import LIVE_ATTEMPT
from argus.db.models import TaskAttemptModel, TaskModel, UserModel
from argus.errors import ClientError, Forbidden, NotFound
from argus.services.principal import Principal
from argus.services.teams import teams_of

GROUPS = ("user", "workload", "day", "team")
NO_TEAM_KEY = "(no team)"
DEFAULT_WINDOW = timedelta(days=30)


@dataclass
class UsageRow:
    key: str
    gpu_seconds: float = 0.0
    cpu_seconds: float = 0.0
    attempts: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {"key": self.key, "gpu_seconds": round(self.gpu_seconds, 3), "gpu_hours": round(self.gpu_seconds / 3600, 4),
                "cpu_seconds": round(self.cpu_seconds, 3), "cpu_hours": round(self.cpu_seconds / 3600, 4),
                "attempts": self.attempts}


@dataclass
class UsageReport:
    start: datetime
    end: datetime
    group_by: str
    rows: list[UsageRow]
    total: UsageRow


def parse_when(field: str, value: str | None) -> datetime | None:
    """``2026-11-01`` (midnight UTC) or an ISO 8601 time (no zone: UTC); None when absent."""
    if value is None or value == "":
        return None
    try:
        t = datetime.fromisoformat(value.strip())
    except ValueError:
        raise refusal(ClientError, "invalid_filter", "usage.window_invalid",
                      errors=[field_error(field, value, "usage.when_rule")]) from None
    return t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)


def window(start: datetime | None, end: datetime | None, now: datetime) -> tuple[datetime, datetime]:
    """The report's ``[from, to)``: ``to`` defaults to now, ``from`` to 30 days before ``to``."""
    end = end or now
    start = start or end - DEFAULT_WINDOW
    if start >= end:
        raise refusal(ClientError, "invalid_filter", "usage.window_invalid",
                      errors=[field_error("from", start.isoformat(), "usage.from_before_to", to=end.isoformat())])
    return start, end


def usage_report(session: Session, principal: Principal, *, start: datetime | None = None,
                 end: datetime | None = None, group_by: str = "user", user: str | None = None,
                 team: str | None = None, now: datetime | None = None) -> UsageReport:
    if group_by not in GROUPS:
        raise refusal(ClientError, "invalid_filter", "usage.grouping_invalid",
                      errors=[field_error("group_by", group_by, "usage.group_rule", groups=", ".join(GROUPS))])
    now = now or datetime.now(UTC)
    start, end = window(start, end, now)
    q = (select(TaskAttemptModel.started_at, TaskAttemptModel.finished_at, TaskAttemptModel.status,
                TaskAttemptModel.resource_seconds, TaskModel.nnodes, TaskModel.n_gpus_per_node,
                TaskModel.workload, UserModel.name, TaskModel.team)
         .join(TaskModel, TaskModel.id == TaskAttemptModel.task_id)
         .join(UserModel, UserModel.id == TaskModel.user_id)
         .where(TaskAttemptModel.started_at.is_not(None), TaskAttemptModel.started_at < end,
                or_(TaskAttemptModel.finished_at.is_(None), TaskAttemptModel.finished_at > start)))
    if team is not None:
        if not principal.is_admin and team not in {n for n, _, _ in teams_of(session, principal.id)}:
            raise refusal(NotFound, "team_not_found", "team.not_found", team=repr(team),
                          errors=[field_error("team", team, "team.name_yours")])
        q = q.where(TaskModel.team == team)
    if user is not None:
        if not principal.is_admin and team is None and user != principal.name:
            raise refusal(Forbidden, "forbidden", "usage.others_admins_only")
        uid = session.scalar(select(UserModel.id).where(UserModel.name == user))
        if uid is None:
            raise refusal(NotFound, "user_not_found", "user.not_found", user=repr(user))
        q = q.where(TaskModel.user_id == uid)
    elif not principal.is_admin and team is None:
        q = q.where(TaskModel.user_id == principal.id)
    rows: dict[str, UsageRow] = {}
    total = UsageRow("total")
    for r in session.execute(q):
        if r.finished_at is None and r.status not in LIVE_ATTEMPT:
            continue  # ended without an end time (not expected): counts nothing rather than forever
        counted = False
        for key, lo, hi in _pieces(r, group_by, start, end, r.finished_at or now):
            # an attempt wholly inside the window counts its stored figure; a cut one, its part
            whole = r.resource_seconds is not None and lo == r.started_at and hi == r.finished_at
            amount = r.resource_seconds if whole else accounting.seconds(r.nnodes, r.n_gpus_per_node, lo, hi)
            row = rows.setdefault(key, UsageRow(key))
            _add(row, r.n_gpus_per_node, amount)
            _add(total, r.n_gpus_per_node, amount, count=not counted)  # an attempt split over days is one
            counted = True
    return UsageReport(start, end, group_by, sorted(rows.values(), key=_order(group_by)), total)


def _add(row: UsageRow, gpus_per_node: int, amount: float, *, count: bool = True) -> None:
    if gpus_per_node > 0:
        row.gpu_seconds += amount
    else:
        row.cpu_seconds += amount
    row.attempts += count


def _pieces(r: Any, group_by: str, start: datetime, end: datetime,
            finished: datetime) -> Iterator[tuple[str, datetime, datetime]]:
    """The parts of one attempt inside the window, each with the group it counts to."""
    lo, hi = accounting.clipped(r.started_at, finished, start, end)
    if hi <= lo:
        return
    if group_by == "user":
        yield r.name, lo, hi
    elif group_by == "team":
        yield r.team or NO_TEAM_KEY, lo, hi
    elif group_by == "workload":
        yield r.workload, lo, hi
    else:
        day = lo.date()
        while True:
            next_midnight = datetime.combine(day + timedelta(days=1), time(), UTC)
            yield day.isoformat(), max(lo, datetime.combine(day, time(), UTC)), min(hi, next_midnight)
            if hi <= next_midnight:
                return
            day = day + timedelta(days=1)


def _order(group_by: str) -> Any:
    if group_by == "day":
        return lambda row: date.fromisoformat(row.key)
    return lambda row: (-row.gpu_seconds, -row.cpu_seconds, row.key)


def usage_csv(report: UsageReport) -> str:
    """The report's rows as CSV (the same columns as ``argus usage --csv``), for a spreadsheet."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([report.group_by, "gpu_hours", "cpu_hours", "attempts"])
    for r in report.rows:
        writer.writerow([r.key, f"{r.gpu_seconds / 3600:.4f}", f"{r.cpu_seconds / 3600:.4f}", r.attempts])
    return out.getvalue()
