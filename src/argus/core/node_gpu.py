"""GPU use per node from the tasks' telemetry samples (pure): what the Nodes page draws as bars.

Nodes report no GPU use of their own to Argus; the tasks' drivers do (launcher/telemetry.py samples
NVML every 15 s into ``<job>/telemetry/attempt-N[.node-K].jsonl``, ``[util %, MiB used, W]`` per GPU
the task sees). A node's GPU use is therefore the newest sample of every running task placed on it,
its GPUs side by side. A sample older than ``STALE_S`` is not shown: a driver that stopped sampling
(lost node, stuck process) must not leave a bar frozen at its last value. GPUs no task holds have
no sample: the page shows them as free, not as 0 %.
"""

from __future__ import annotations

from typing import Any

STALE_S = 120  # eight missed 15 s samples


def task_gpus(sample: dict[str, Any] | None, now: float, task_id: str | None = None) -> list[dict[str, Any]]:
    """One task's GPUs from its newest sample on a node: ``[{"util_pct", "mem_mib", "task_id"}]``; [] when
    there is no fresh sample or it has no GPUs (a CPU-only task)."""
    if not sample or now - float(sample.get("t", 0)) > STALE_S:
        return []
    out = []
    for g in sample.get("gpu") or []:
        util, mem = (g[0], g[1]) if isinstance(g, list) and len(g) >= 2 else (None, None)
        out.append({"util_pct": _num(util, 0, 100), "mem_mib": _num(mem, 0, None), "task_id": task_id})
    return out


def node_summary(gpus: list[dict[str, Any]]) -> dict[str, Any]:
    """The node's sampled GPUs and their mean utilisation (None when none was sampled)."""
    utils = [g["util_pct"] for g in gpus if g["util_pct"] is not None]
    return {"gpus": gpus, "util_mean_pct": round(sum(utils) / len(utils), 1) if utils else None}


def telemetry_file_suffix(node_index: int) -> str:
    """Which telemetry file the task's ``node_index``-th planned node (0-based) writes: the first node is the
    driver's ``attempt-N.jsonl``, the others the gang's ``attempt-N.node-K.jsonl`` with K = index + 1."""
    return "" if node_index == 0 else f".node-{node_index + 1}"


def _num(value: object, low: float, high: float | None) -> float | None:
    """A sampled number clamped to its range (a task's own file could hold anything); None if not one."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        return None
    value = max(low, float(value))
    return min(high, value) if high is not None else value
