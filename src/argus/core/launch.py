"""What a node needs to start one task attempt, typed, for both sides of the node agent (issue 36).

The scheduler decides a task's limits from its spec and the cluster's settings; the launcher on the
node applies them to the task's cgroup (:mod:`argus.nodes.cgroups`) and its private ``/tmp``. One
dataclass travels between them (as launcher flags, and in the agent's records), so a limit is named
once, with its unit, instead of being a loose number in seven places.

Pure: the standard library only.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

MIB = 1 << 20
DEFAULT_MEMORY_SHARE = 0.9  # without memory_per_node: this much of the node's RAM times the task's share of it


@dataclass(frozen=True)
class Limits:
    """One attempt's bounds on one node; 0 means "not limited"."""

    memory_bytes: int = 0  # memory.max: memory_per_node, else the node's default share (default_memory)
    pids_max: int = 0  # pids.max: processes and threads together
    cpus: float = 0  # CPU weight in proportion to the task's CPUs (never a hard cap unless cpu_quota)
    cpu_quota: bool = False  # also cap the task at ``cpus`` CPUs (cpu.max / cfs_quota_us)
    tmp_bytes: int = 0  # the size of the private /tmp (a tmpfs; its pages count in memory_bytes too)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Limits:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


def default_memory(node_bytes: int, *, cpus: float, node_cpus: int, gpus: int, node_gpus: int) -> int:
    """A task without ``memory_per_node`` gets its share of the node: the larger of its CPU and GPU shares
    of ``DEFAULT_MEMORY_SHARE`` of the RAM, so one runaway task never takes the memory the node's Ray, its
    agent and the other tasks' processes need, while a task alone on a GPU node still gets most of it."""
    share = max(cpus / node_cpus if node_cpus else 0.0, gpus / node_gpus if node_gpus else 0.0)
    share = min(max(share, 0.0), 1.0) or 1.0
    return int(node_bytes * DEFAULT_MEMORY_SHARE * share)


def describe_bytes(limit: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if limit >= size:
            return f"{limit / size:g} {unit}"
    return f"{limit} bytes"
