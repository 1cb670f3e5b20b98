"""GPU, CPU and memory use per node for ``GET /api/v2/nodes``: the newest telemetry sample of each running task,
placed on the node that wrote it (core/node_gpu.py has the rules; the file paths are services/task_usage.py's),
and the last half hour of CPU and memory per node (:func:`cpu_mem_by_node`).

Which node wrote which file: a task's attempt records its planned nodes in order (``gpus.nodes``, the
scheduler's placement); the first runs the driver (``attempt-N.jsonl``), the K-th the gang's extra node
(``attempt-N.node-K.jsonl``, launcher/gang.py). A single-node task without a plan uses its driver's node.
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

from argus.core.node_gpu import STALE_S, node_summary, task_gpus, telemetry_file_suffix
from argus.core.paths import DataLayout
from argus.core.states import TaskStatus
from argus.db.models import TaskAttemptModel, TaskModel, UserModel
from argus.services.home_files import open_plain
from argus.services.task_usage import TAIL_BYTES, read_samples, usage_path

HISTORY_S = 30 * 60  # the Nodes page's sparkline: half an hour ...
BUCKET_S = 60  # ... a point a minute (a task samples every 15 s: its last sample in each minute counts)


def _running_attempts(session: Session) -> list[Any]:
    """(id, attempts, owner name, gpus, node_id) of each RUNNING task's current attempt."""
    return list(session.execute(
        select(TaskModel.id, TaskModel.attempts, UserModel.name, TaskAttemptModel.gpus, TaskAttemptModel.node_id)
        .join(UserModel, UserModel.id == TaskModel.user_id)
        .outerjoin(TaskAttemptModel, (TaskAttemptModel.task_id == TaskModel.id)
                   & (TaskAttemptModel.attempt == TaskModel.attempts))
        .where(TaskModel.status == TaskStatus.RUNNING.value)).all())


def _node_files(session: Session, root: Path) -> list[tuple[str, str, Path, Path]]:
    """(task id, owner, home, telemetry file) for each node of each RUNNING task, with the node id first."""
    layout = DataLayout.at(str(root))
    rows = _running_attempts(session)
    out = []
    for r in rows:
        planned = (r.gpus or {}).get("nodes") if isinstance(r.gpus, dict) else None
        nodes = [n for n in (planned or ([r.node_id] if r.node_id else [])) if isinstance(n, str)]
        home = Path(str(layout.home(r.name)))
        first = usage_path(layout, r.name, r.id, max(r.attempts, 1))
        for index, node_id in enumerate(nodes):
            out.append((node_id, r.id, home, first.with_name(f"attempt-{max(r.attempts, 1)}{telemetry_file_suffix(index)}.jsonl")))
    return out


def cpu_mem_by_node(session: Session, root: Path, now: float | None = None) -> dict[str, dict[str, Any]]:
    """``{node_id: {"cpu": cores busy, "rss": bytes, "history": [[t, cores, bytes], …]}}``: what Argus's running
    tasks use on each node (their drivers sample their own process trees, launcher/telemetry.py), summed over the
    tasks: now (samples at most ``STALE_S`` old; null when none is) and a point per minute for ``HISTORY_S``.
    It is the tasks' use, not the whole machine's: a node's other processes are not sampled by Argus."""
    now = time.time() if now is None else now
    last: dict[tuple[str, str, int], dict[str, Any]] = {}  # (node, task, minute) -> its last sample in it
    newest: dict[tuple[str, str], dict[str, Any]] = {}
    for node_id, task_id, home, path in _node_files(session, root):
        for s in read_samples(home, path, TAIL_BYTES):
            if not (now - HISTORY_S <= s["t"] <= now + BUCKET_S) or not isinstance(s.get("rss"), int):
                continue
            last[(node_id, task_id, s["t"] // BUCKET_S * BUCKET_S)] = s
            if now - s["t"] <= STALE_S:
                newest[(node_id, task_id)] = s
    per_node: dict[str, dict[int, list[float]]] = {}
    for (node_id, _task, minute), s in last.items():
        point = per_node.setdefault(node_id, {}).setdefault(minute, [0.0, 0])
        point[0] += float(s["cpu"])
        point[1] += int(s["rss"])
    out: dict[str, dict[str, Any]] = {}
    for node_id, points in per_node.items():
        fresh = [s for (n, _task), s in newest.items() if n == node_id]
        out[node_id] = {
            "cpu": round(sum(float(s["cpu"]) for s in fresh), 2) if fresh else None,
            "rss": sum(int(s["rss"]) for s in fresh) if fresh else None,
            "history": [[m, round(c, 2), r] for m, (c, r) in sorted(points.items())]}
    return out


def gpu_use_by_node(session: Session, root: Path, now: float | None = None) -> dict[str, dict[str, Any]]:
    """``{node_id: {"gpus": [{"util_pct", "mem_mib", "task_id", "user"}], "util_mean_pct"}}`` for nodes with a fresh
    sample of a running task; nodes absent here have none."""
    now = time.time() if now is None else now
    layout = DataLayout.at(str(root))
    rows = _running_attempts(session)
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
