"""Each user's decayed usage, read from the attempt rows — so fair share survives a restart.

The database already holds everything fair share needs: every attempt's ``started_at`` and
``finished_at`` and its task's ``nnodes × n_gpus_per_node``. No table of its own, no
migration: this ledger is a cache in memory, rebuilt from those rows.

Cost stays flat with history. A rebuild (at start, then every ``rebuild_s``) reads the
attempts of the last :data:`HORIZON_HALF_LIVES` half-lives once and folds the finished ones
into one number per user and pool. Between rebuilds a pass reads only attempts by primary
key: the ones still open (not finished at the last look) and the ones created since —
about as many as there are running tasks, whatever the size of the history or the queue.

Folded usage is kept as its value at the rebuild's moment (``epoch``) and decayed from
there at each read: decay is a multiplication, so the sum of decayed parts is the decayed
sum.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from argus.core.states import LIVE_ATTEMPT
from argus.db.models import TaskAttemptModel, TaskModel
from argus.scheduler.fairshare import Usage, decay, decayed, rate

HORIZON_HALF_LIVES = 12  # older use weighs < 1/4096 of fresh use: not read at all
REBUILD_S = 3600.0  # re-anchors the folded sums (bounded exponents); not needed for correctness
CHUNK = 500  # ids per IN (...) list


@dataclass(frozen=True)
class _Row:
    id: int
    user: str
    rate: float
    gpu: bool
    started: float | None  # seconds since the epoch of datetime (UTC)
    finished: float | None
    live: bool
    team: str | None = None  # the team the task is charged to (issue 26)


def _columns() -> tuple[Any, ...]:
    return (TaskAttemptModel.id, TaskModel.user_id, TaskModel.nnodes, TaskModel.n_gpus_per_node,
            TaskAttemptModel.started_at, TaskAttemptModel.finished_at, TaskAttemptModel.status, TaskModel.team)


def _rows(result: Iterable[Any]) -> list[_Row]:
    out = []
    for r in result:
        out.append(_Row(r.id, str(r.user_id), rate(r.nnodes, r.n_gpus_per_node), r.n_gpus_per_node > 0,
                        r.started_at.timestamp() if r.started_at else None,
                        r.finished_at.timestamp() if r.finished_at else None,
                        r.status in LIVE_ATTEMPT, r.team))
    return out


class UsageLedger:
    """Decayed usage per user, and per team (issue 26); call :meth:`read` once per scheduler pass, then
    :attr:`teams` holds the teams' usage of the same moment."""

    def __init__(self, half_life_s: float, *, rebuild_s: float = REBUILD_S) -> None:
        if half_life_s <= 0:
            raise ValueError("fair-share half-life must be positive")
        self.half_life_s = half_life_s
        self.rebuild_s = rebuild_s
        self._epoch: float | None = None  # when the folded part was computed
        self._folded: dict[tuple[str, bool], float] = defaultdict(float)  # (user, gpu pool) → usage at epoch
        self._team_folded: dict[tuple[str, bool], float] = defaultdict(float)  # (team, gpu pool) → usage at epoch
        self.teams: dict[str, Usage] = {}  # the teams' usage at the last read
        self._open: dict[int, _Row] = {}  # attempts not finished at the last look
        self._max_id = 0
        self.rebuilds = 0

    def read(self, session: Session, now: datetime) -> dict[str, Usage]:
        now_s = now.timestamp()
        if self._epoch is None or now_s - self._epoch >= self.rebuild_s or now_s < self._epoch:
            self._rebuild(session, now, now_s)
        else:
            self._refresh(session)
        return self._usage(now_s)

    def _rebuild(self, session: Session, now: datetime, now_s: float) -> None:
        horizon = now - timedelta(seconds=self.half_life_s * HORIZON_HALF_LIVES)
        rows = _rows(session.execute(
            select(*_columns()).join(TaskModel, TaskModel.id == TaskAttemptModel.task_id)
            .where(or_(TaskAttemptModel.finished_at.is_(None), TaskAttemptModel.finished_at >= horizon))
        ))
        self._epoch, self._folded, self._open = now_s, defaultdict(float), {}
        self._team_folded = defaultdict(float)
        self._max_id = session.scalar(select(TaskAttemptModel.id).order_by(TaskAttemptModel.id.desc()).limit(1)) or 0
        self._absorb(rows)
        self.rebuilds += 1

    def _refresh(self, session: Session) -> None:
        ids = sorted(self._open)
        found: list[_Row] = []
        for i in range(0, len(ids), CHUNK):
            found += _rows(session.execute(
                select(*_columns()).join(TaskModel, TaskModel.id == TaskAttemptModel.task_id)
                .where(TaskAttemptModel.id.in_(ids[i:i + CHUNK]))))
        found += _rows(session.execute(
            select(*_columns()).join(TaskModel, TaskModel.id == TaskAttemptModel.task_id)
            .where(TaskAttemptModel.id > self._max_id)))
        gone = set(ids) - {r.id for r in found}  # deleted with their task: their use is forgotten
        for rid in gone:
            del self._open[rid]
        self._absorb(found)

    def _absorb(self, rows: list[_Row]) -> None:
        """Fold ended attempts into the per-user sums; keep the others open."""
        assert self._epoch is not None
        for r in rows:
            self._max_id = max(self._max_id, r.id)
            if r.finished is None and r.live:
                self._open[r.id] = r
                continue
            self._open.pop(r.id, None)
            if r.started is not None:
                # an ended attempt without finish time (not expected) counts nothing rather than forever
                end = r.finished if r.finished is not None else r.started
                amount = decayed(r.rate, r.started, end, self._epoch, self.half_life_s)
                self._folded[(r.user, r.gpu)] += amount
                if r.team:
                    self._team_folded[(r.team, r.gpu)] += amount

    def _usage(self, now_s: float) -> dict[str, Usage]:
        self.teams = self._sum(self._team_folded, now_s, lambda r: r.team)
        return self._sum(self._folded, now_s, lambda r: r.user)

    def _sum(self, folded: dict[tuple[str, bool], float], now_s: float, key: Any) -> dict[str, Usage]:
        assert self._epoch is not None
        gpu: dict[str, float] = defaultdict(float)
        cpu: dict[str, float] = defaultdict(float)
        for (who, is_gpu), amount in folded.items():
            (gpu if is_gpu else cpu)[who] += decay(amount, now_s - self._epoch, self.half_life_s)
        for r in self._open.values():
            if r.started is not None and key(r):
                (gpu if r.gpu else cpu)[key(r)] += decayed(r.rate, r.started, now_s, now_s, self.half_life_s)
        return {u: Usage(gpu.get(u, 0.0), cpu.get(u, 0.0)) for u in set(gpu) | set(cpu)}
