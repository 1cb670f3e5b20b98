"""What the database knows about training environments: which tasks still need one (issue 22)."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from argus.core.states import TERMINAL
from argus.db.models import TaskModel


def tasks_using(session: Session, env: str, limit: int = 20) -> list[str]:
    """Ids of the tasks not yet ended that run (or will run) in cluster environment ``env``."""
    ended = [s.value for s in TERMINAL]
    rows = session.scalars(
        select(TaskModel.id).where(TaskModel.spec_resolved["env"].as_string() == env, TaskModel.status.not_in(ended))
        .order_by(TaskModel.id).limit(limit))
    return list(rows)
