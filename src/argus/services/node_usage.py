"""GPU use per node for ``GET /api/v2/nodes``: the newest telemetry sample of each running task, placed on
the node that wrote it (core/node_gpu.py has the rules; the file paths are services/task_usage.py's).

Which node wrote which file: a task's attempt records its planned nodes in order (``gpus.nodes``, the
scheduler's placement); the first runs the driver (``attempt-N.jsonl``), the K-th the gang's extra node
(``attempt-N.node-K.jsonl``, runtime/gang.py). A single-node task without a plan uses its driver's node.
Reads at most ``TAIL_BYTES`` per file and parses it from the end until the first sample with GPUs: 50
running tasks cost ~24 ms a poll on a loaded 2-core box (the idle scan beside it, which parses whole tails,
~126 ms).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from argus.core.node_gpu import node_summary, task_gpus, telemetry_file_suffix
from argus.core.paths import DataLayout
from argus.core.states import TaskStatus
from argus.db.models import TaskAttemptModel, TaskModel, UserModel
from argus.services.home_files import open_plain
from argus.services.task_usage import TAIL_BYTES, usage_path


def gpu_use_by_node(session: Session, root: Path, now: float | None = None) -> dict[str, dict[str, Any]]:
    """``{node_id: {"gpus": [{"util_pct", "mem_mib", "task_id", "user"}], "util_mean_pct"}}`` for nodes with a fresh
    sample of a running task; nodes absent here have none."""
    now = time.time() if now is None else now
    layout = DataLayout.at(str(root))
    rows = session.execute(
        select(TaskModel.id, TaskModel.attempts, UserModel.name, TaskAttemptModel.gpus, TaskAttemptModel.node_id)
        .join(UserModel, UserModel.id == TaskModel.user_id)
        .outerjoin(TaskAttemptModel, (TaskAttemptModel.task_id == TaskModel.id)
                   & (TaskAttemptModel.attempt == TaskModel.attempts))
        .where(TaskModel.status == TaskStatus.RUNNING.value)).all()
    per_node: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        planned = (r.gpus or {}).get("nodes") if isinstance(r.gpus, dict) else None
        nodes = [n for n in (planned or ([r.node_id] if r.node_id else [])) if isinstance(n, str)]
        if not nodes:
            continue
        home = Path(str(layout.home(r.name)))
        first = usage_path(layout, r.name, r.id, max(r.attempts, 1))
        for index, node_id in enumerate(nodes):
            path = first.with_name(f"attempt-{max(r.attempts, 1)}{telemetry_file_suffix(index)}.jsonl")
            newest = newest_gpu_sample(home, path)
            gpus = [{**g, "user": r.name} for g in task_gpus(newest, now, r.id)]  # the API hides others' ids
            if gpus:
                per_node.setdefault(node_id, []).extend(gpus)
    return {node_id: node_summary(gpus) for node_id, gpus in per_node.items()}


def newest_gpu_sample(home: Path, path: Path, cap: int = TAIL_BYTES) -> dict[str, Any] | None:
    """The newest well-formed sample that read the GPUs, parsed from the file's end backwards: a poll of
    the Nodes page parses one or two lines per task, not the whole tail. A sample whose NVML read failed
    does not blank the bars (the age check in ``task_gpus`` still drops them once nothing fresh came)."""
    fh = open_plain(home, path)
    if fh is None:
        return None
    with fh:
        size = os.fstat(fh.fileno()).st_size
        fh.seek(max(0, size - cap))
        lines = fh.read(cap).split(b"\n")
    if size > cap:
        lines = lines[1:]  # the first one is cut
    for raw in reversed(lines):
        if b'"gpu"' not in raw:
            continue
        try:
            s = json.loads(raw)
        except ValueError:
            continue
        if isinstance(s, dict) and _is_gpu_sample(s):
            return s
    return None


def _is_gpu_sample(s: object) -> bool:
    """The shape task_usage.read_samples accepts, with GPUs read (the file is in the task's folder: a task
    could write anything there)."""
    if not (isinstance(s, dict) and isinstance(s.get("t"), int) and isinstance(s.get("cpu"), int | float)):
        return False
    gpu = s.get("gpu")
    return isinstance(gpu, list) and bool(gpu) and all(isinstance(g, list) and len(g) == 3 for g in gpu)
