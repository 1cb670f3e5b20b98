"""The GPUs the nodes' agents hold back, as the scheduler sees them (issue 36).

A node's agent checks an ended attempt's GPUs with the driver (nodes/gpu_check.py); a GPU with a process still
on it gets a file in ``<data root>/.argus/gpus-held/`` (``core.gpu_free.HeldGpu``), removed by the agent once a
later look finds it free. Every submit pass lists that folder (empty, one ``scandir``, while nothing is held):
each held GPU is one GPU fewer free on its node (``NodeState.gpus_held_back``, the pure rule in
core/scheduling/policy.free_gpus), and the task whose attempt left it gets one event naming the GPU, the pids
and their memory — once per GPU and attempt, also across a server restart (the timeline is looked at first).
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from argus.core.gpu_free import HeldEvents, HeldGpu, held_by_node
from argus.db.models import TaskEventModel, TaskModel, utcnow
from argus.launcher import attempt_record
from argus.scheduler.common import ACTOR


def read_holds(data_root: Path) -> list[HeldGpu]:
    return [h for h in (HeldGpu.parse(d) for d in attempt_record.read_held(data_root)) if h is not None]


class GpuHolds:
    """What one scheduler knows of the held GPUs: read each pass, each new one said on its task once."""

    def __init__(self, data_root: Path) -> None:
        self.data_root = data_root
        self.events = HeldEvents()

    def look(self, session: Session) -> dict[str, int]:
        """GPUs held back per node now; the events of newly held ones added to ``session``."""
        holds = read_holds(self.data_root)
        for h in self.events.new(holds):
            note_on_task(session, h)
        return held_by_node(holds)


def note_on_task(session: Session, held: HeldGpu) -> bool:
    """The held GPU's event on the task that left it (unless its timeline already says so); whether added."""
    task = session.get(TaskModel, held.task_id)
    said = held.said()
    if task is None or session.scalar(select(TaskEventModel.id).where(
            TaskEventModel.task_id == task.id, TaskEventModel.message == said.text).limit(1)) is not None:
        return False
    session.add(TaskEventModel(task_id=task.id, at=utcnow(), from_status=task.status, to_status=task.status,
                               reason=None, message=said.text, message_code=said.code, message_params=said.params,
                               actor=ACTOR))
    return True

