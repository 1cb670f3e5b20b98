"""What bounds a task on its node, as the launcher applies and watches it (issue 36).

The task's processes (the sandbox and all below it) live in a cgroup with limits
(:class:`argus.core.launch.Limits`): memory (``memory_per_node``, else the node's default share), processes
(``pids.max``), CPU weight from ``cpus_per_node``, and a sized tmpfs as its private ``/tmp``. Under the node
agent that group is ``<attempt>/task``, named by ``ARGUS_TASK_CGROUP``; a launcher run by hand makes it
below its own group. The launcher stays outside it, so it is never the OOM killer's pick.

A limit hit ends the task, with its class, instead of leaving it to limp on: a refused fork, a process the
OOM killer took, or a full ``/tmp`` leave a trainer whose Ray workers died or whose checkpoint is half
written. :meth:`TaskBounds.breach` reads the kernel's own counters (and the tmpfs's free space) each poll;
the launcher stops the task and records ``limit_hit`` (``status.json``), which the monitor turns into the
failure's kind and hint.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import psutil

from argus.core.failures import memory_limit_cause
from argus.core.launch import LaunchSpec, Limits, default_memory, describe_bytes
from argus.nodes import cgroups
from argus.nodes.agent import TASK_CGROUP_ENV

NVIDIA_GPUS = Path("/proc/driver/nvidia/gpus")


@dataclass(frozen=True)
class Breach:
    kind: str  # "memory" | "pids" | "disk": status.json's limit_hit.kind
    limit: int
    message: str  # one line for the task's log and the failure's cause


def limits_for(spec: LaunchSpec) -> Limits:
    """The attempt's limits from the launcher's flags; memory defaults to the node's share for the task."""
    memory = spec.memory or default_memory(psutil.virtual_memory().total, cpus=spec.cpus, node_cpus=os.cpu_count() or 1,
                                         gpus=spec.gpus if spec.device == "gpu" else 0, node_gpus=_node_gpus())
    return Limits(memory_bytes=memory, pids_max=spec.pids_max, cpus=spec.cpus, cpu_quota=spec.cpu_quota,
                  tmp_bytes=spec.tmp_size)


class TaskBounds:
    """One attempt's task cgroup on this node; ``group`` is None where the node has none (``why_not`` says)."""

    def __init__(self, limits: Limits, group: cgroups.Group | None, why_not: str = "",
                 unset: list[str] | None = None) -> None:
        self.limits, self.group, self.why_not, self.unset = limits, group, why_not, unset or []
        self.memory_from_spec = False

    @classmethod
    def create(cls, name: str, limits: Limits) -> TaskBounds:
        layout = cgroups.detect()
        if layout is None:
            return cls(limits, None, "no writable cgroup hierarchy on this node (is the launcher root?)")
        rel = os.environ.get(TASK_CGROUP_ENV) or f"{cgroups.own_path(layout)}/{name}"
        group = cgroups.Group(layout, rel)
        try:
            group.create()
        except OSError as exc:
            return cls(limits, None, f"cannot make the task's cgroup {rel} ({exc.strerror or exc})")
        return cls(limits, group, unset=group.limit(limits))

    def join(self) -> None:
        """In the child, before it executes the sandbox: nothing it starts escapes the group."""
        if self.group is not None:
            self.group.join()

    def notes(self) -> list[str]:
        """The task log's line on its bounds (and on what is not bounded, and why)."""
        lim = self.limits
        if self.group is None:
            return [f"this task is not bounded on this node: {self.why_not}"]
        parts = [f"memory {describe_bytes(lim.memory_bytes)}" if lim.memory_bytes else "",
                 f"{lim.pids_max} processes" if lim.pids_max else "",
                 f"CPU weight of {lim.cpus:g} CPUs{' (a cap)' if lim.cpu_quota else ''}" if lim.cpus else "",
                 f"/tmp {describe_bytes(lim.tmp_bytes)}" if lim.tmp_bytes else ""]
        out = [f"bounds: {', '.join(p for p in parts if p)} (cgroup {self.group.rel})"]
        if self.unset:
            out.append(f"not enforced on this node: {', '.join(self.unset)}")
        return out

    def counters(self) -> cgroups.Counters:
        return self.group.counters() if self.group is not None else cgroups.Counters()

    def breach(self, child_pid: int) -> Breach | None:
        """A limit the task hit since it started, or None."""
        lim = self.limits
        seen = self.counters()
        if seen.pids_refused and lim.pids_max:
            return Breach("pids", lim.pids_max, f"the task reached its limit of {lim.pids_max} processes and threads "
                          f"(pids.max): the kernel refused {seen.pids_refused} fork(s)")
        if seen.oom_kills and lim.memory_bytes:
            return Breach("memory", lim.memory_bytes, memory_limit_cause(seen.oom_kills, lim.memory_bytes))
        if lim.tmp_bytes and tmp_full(child_pid):
            return Breach("disk", lim.tmp_bytes, f"the task filled its private /tmp ({describe_bytes(lim.tmp_bytes)})")
        return None

    def remove(self) -> None:
        if self.group is not None:
            self.group.kill(timeout_s=5)
            self.group.remove()


def tmp_full(child_pid: int) -> bool:
    """Whether the sandbox's /tmp tmpfs has no room left, seen from outside through a process inside it."""
    try:
        inside = [p.pid for p in psutil.Process(child_pid).children(recursive=True)][:1] or [child_pid]
        st = os.statvfs(f"/proc/{inside[0]}/root/tmp")
    except (OSError, psutil.Error):
        return False
    return st.f_blocks > 0 and st.f_bavail * st.f_frsize < 64 * 1024


def _node_gpus() -> int:
    try:
        return sum(1 for _ in NVIDIA_GPUS.iterdir())
    except OSError:
        return 0
