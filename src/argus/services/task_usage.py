"""A task's resource use as its drivers sampled it (launcher/telemetry.py): series for charts and a summary.

Read from ``<job>/telemetry/attempt-N.jsonl`` in the owner's home, never through a link
(services/home_files.open_plain), at most ``READ_CAP`` bytes from the end (a month of samples is
~20 MB; the newest part is what a chart and the idle flag need). Lines a task could have tampered
with (the file is in its job folder) are skipped unless they have the sample's shape.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from argus.core.paths import DataLayout
from argus.core.resource_use import Summary, downsample, idle_since, merge_nodes, summarize
from argus.core.states import TaskStatus
from argus.db.models import TaskModel, UserModel
from argus.services.home_files import open_plain
from argus.services.principal import Principal
from argus.services.tasks import get_task, user_name_of

READ_CAP = 8 << 20


def usage_path(layout: DataLayout, user: str, task_id: str, attempt: int) -> Path:
    return Path(str(layout.job_dir(user, task_id))) / "telemetry" / f"attempt-{attempt}.jsonl"


def read_samples(home: Path, path: Path, cap: int = READ_CAP) -> list[dict[str, Any]]:
    """The samples in the last ``cap`` bytes of one attempt's file (well-formed lines only)."""
    fh = open_plain(home, path)
    if fh is None:
        return []
    with fh:
        size = os.fstat(fh.fileno()).st_size
        fh.seek(max(0, size - cap))
        data = fh.read(cap)
    lines = data.split(b"\n")
    if size > cap:
        lines = lines[1:]  # the first one is cut
    out = []
    for raw in lines:
        try:
            s = json.loads(raw)
        except ValueError:
            continue
        if isinstance(s, dict) and isinstance(s.get("t"), int) and isinstance(s.get("cpu"), int | float):
            gpu = s.get("gpu")
            if gpu is not None and not (isinstance(gpu, list) and all(isinstance(g, list) and len(g) == 3
                                                                       for g in gpu)):
                continue
            out.append(s)
    return out


def attempt_samples(layout: DataLayout, user: str, task_id: str, attempt: int, nnodes: int,
                    cap: int = READ_CAP) -> list[dict[str, Any]]:
    """One attempt's samples: the first node's, plus nodes 2..N of a multi-node task (launcher/gang.py) merged in."""
    home = Path(str(layout.home(user)))
    first = usage_path(layout, user, task_id, attempt)
    nodes = [read_samples(home, first, cap)]
    nodes += [read_samples(home, first.with_name(f"attempt-{attempt}.node-{k}.jsonl"), cap) for k in range(2, nnodes + 1)]
    return merge_nodes(nodes)


def task_usage(session: Session, principal: Principal, task_id: str, root: Path, attempt: int | None = None
               ) -> tuple[int, list[dict[str, Any]], Summary]:
    """(the attempt, its samples downsampled for a chart, the summary of all of them) for a task the principal
    may read (404 otherwise); the latest attempt unless ``attempt`` is given."""
    task = get_task(session, principal, task_id, team_read=True)
    layout = DataLayout.at(str(root))
    user = user_name_of(session, task)
    n = attempt or max(task.attempts, 1)
    samples = attempt_samples(layout, user, task.id, n, task.nnodes)
    return n, downsample(samples), summarize(samples)


# The newest samples of a running task, enough for the idle flag (10 min at 15 s is 40 lines of ≤ 200 bytes).
TAIL_BYTES = 16 << 10


def running_usage(session: Session, root: Path) -> list[tuple[str, str, str, dict[str, Any], int | None]]:
    """(task id, owner, team or "", newest sample, idle since) for every RUNNING task with samples: what
    /metrics exports."""
    layout = DataLayout.at(str(root))
    rows = session.execute(select(TaskModel.id, TaskModel.attempts, TaskModel.nnodes, UserModel.name, TaskModel.team)
                           .join(UserModel, UserModel.id == TaskModel.user_id)
                           .where(TaskModel.status == TaskStatus.RUNNING.value)).all()
    out = []
    for r in rows:
        samples = attempt_samples(layout, r.name, r.id, max(r.attempts, 1), r.nnodes, TAIL_BYTES)
        if samples:
            out.append((r.id, r.name, r.team or "", samples[-1], idle_since(samples)))
    return out
