"""The CPU and memory half of the fit (issue 15): a node takes a gang member only if it has the
member's GPUs *and* CPUs *and* memory free.

Pure, like :mod:`argus.core.scheduling.policy`, which keeps the GPU ledger and calls this module
for the rest. Free CPUs (and memory) per alive node are, like free GPUs, the *smaller* of
Argus's ledger — the node's total minus the per-node need of every task Argus handed to Ray
and that still holds it, on the nodes it was placed on — and what Ray reports free (its
total minus what jobs, actors and placement groups reserved). The ledger covers a job Ray
accepted but has not started yet; Ray covers reservations whose real place differs from
the plan, and CPUs held by anything else. A held task whose nodes are unknown (a CPU job
before its driver started, an attempt stored before a crash) is charged on the nodes with
the most room left: over-counting only delays a task, under-counting would let Ray leave
one PENDING.

A node whose CPUs or memory Ray did not report (and which no ledger entry limits) counts
as unlimited, which keeps the fit exactly GPU-only for callers that know nothing else.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from argus.core.messages import Message, msg, part
from argus.core.resources import format_memory

EPS = 1e-9  # fractional CPUs (0.5) add up with rounding errors


class NodeLike(Protocol):
    node_id: str
    alive: bool
    cpus_total: float | None
    cpus_free: float | None
    memory_total: int | None
    memory_free: int | None


class TaskLike(Protocol):
    nnodes: int
    gpus_per_node: int
    cpus_per_node: float
    memory_per_node: int


class HeldLike(TaskLike, Protocol):
    nodes: tuple[str, ...] | None


def _known(value: float | None) -> float:
    return math.inf if value is None else float(value)


def _members(room: float, need: float) -> float:
    """How many gang members ``room`` holds (unlimited when the member needs none)."""
    if need <= 0 or math.isinf(room):
        return math.inf
    return math.floor(room / need + EPS)


@dataclass
class Room:
    """Free CPUs and memory (bytes) per alive node; ``math.inf`` where nothing limits them."""

    cpus: dict[str, float] = field(default_factory=dict)
    memory: dict[str, float] = field(default_factory=dict)
    cpus_total: dict[str, float] = field(default_factory=dict)
    memory_total: dict[str, float] = field(default_factory=dict)

    # ------------------------------------------------------------ building the ledger

    @classmethod
    def of(cls, nodes: Sequence[NodeLike], held: Iterable[HeldLike]) -> Room:
        alive = [n for n in nodes if n.alive]
        room = cls(cpus={n.node_id: _known(n.cpus_total) for n in alive},
                   memory={n.node_id: _known(n.memory_total) for n in alive},
                   cpus_total={n.node_id: _known(n.cpus_total) for n in alive},
                   memory_total={n.node_id: _known(n.memory_total) for n in alive})
        unknown: list[HeldLike] = []
        for t in held:
            if t.cpus_per_node <= 0 and t.memory_per_node <= 0:
                continue
            if t.nodes:
                for node in t.nodes:
                    room.charge(node, t.cpus_per_node, t.memory_per_node)
            else:  # None (not stored) or () (a CPU job: Ray picks the driver's node)
                unknown.append(t)
        for t in sorted(unknown, key=lambda t: -t.cpus_per_node):
            for _ in range(max(t.nnodes, 1)):
                node = room._most_room(t.cpus_per_node, t.memory_per_node)
                if node is not None:
                    room.charge(node, t.cpus_per_node, t.memory_per_node)
        for n in alive:  # min(ledger, Ray's report)
            if n.cpus_free is not None:
                room.cpus[n.node_id] = min(room.cpus[n.node_id], float(n.cpus_free))
            if n.memory_free is not None:
                room.memory[n.node_id] = min(room.memory[n.node_id], float(n.memory_free))
        return room

    def charge(self, node: str, cpus: float, memory: float) -> None:
        if node in self.cpus:
            self.cpus[node] -= cpus
            self.memory[node] -= memory

    def _most_room(self, cpus: float, memory: float) -> str | None:
        """The node with the most CPUs left (then memory) that still takes one member, else the fullest-room one."""
        if not self.cpus:
            return None
        fitting = [n for n in self.cpus if self.takes(n, cpus, memory)]
        return max(fitting or self.cpus, key=lambda n: (self.cpus[n], self.memory[n], n))

    # ------------------------------------------------------------ fitting one task

    def takes(self, node: str, cpus: float, memory: float) -> bool:
        return self.cpus[node] + EPS >= cpus and self.memory[node] >= memory

    def cap(self, free_gpus: dict[str, int], t: TaskLike) -> dict[str, int]:
        """``free_gpus`` limited, node by node, to the gang members the node's CPUs and memory hold.

        The GPU best-fit (``policy.take``) run on the result only picks nodes where every
        member it puts there has its CPUs and memory too.
        """
        if t.cpus_per_node <= 0 and t.memory_per_node <= 0:
            return dict(free_gpus)
        out = {}
        for node, gpus in free_gpus.items():
            members = min(gpus // t.gpus_per_node, _members(self.cpus.get(node, math.inf), t.cpus_per_node),
                          _members(self.memory.get(node, math.inf), t.memory_per_node))
            out[node] = int(members) * t.gpus_per_node
        return out

    def take(self, nodes: Iterable[str], t: TaskLike) -> None:
        """Charge a placed gang (one entry per member)."""
        for node in nodes:
            self.charge(node, t.cpus_per_node, t.memory_per_node)

    def take_driver(self, t: TaskLike) -> Message | None:
        """Charge a CPU job (its driver goes where Ray puts it) on the node with the most room.

        Returns None when it fits, else why it waits.
        """
        if t.cpus_per_node <= 0 and t.memory_per_node <= 0:
            return None
        node = self._most_room(t.cpus_per_node, t.memory_per_node)
        if node is not None and self.takes(node, t.cpus_per_node, t.memory_per_node):
            self.charge(node, t.cpus_per_node, t.memory_per_node)
            return None
        return self.why_short(t, dict.fromkeys(self.cpus, 0), dict.fromkeys(self.cpus, 0))

    # ------------------------------------------------------------ saying why not

    def fits_when_empty(self, t: TaskLike, gpus_total: dict[str, int]) -> bool:
        """Could the gang fit this cluster with no other task (by CPUs and memory as well as GPUs)?"""
        members = 0.0
        for node, gpus in gpus_total.items():
            per_gpu = gpus // t.gpus_per_node if t.gpus_per_node > 0 else math.inf
            members += min(per_gpu, _members(self.cpus_total.get(node, math.inf), t.cpus_per_node),
                           _members(self.memory_total.get(node, math.inf), t.memory_per_node))
            if members >= max(t.nnodes, 1):
                return True
        return False

    def why_short(self, t: TaskLike, free_gpus: dict[str, int], gpus_total: dict[str, int]) -> Message:
        """``needs 1 node × 8 GPUs, 12 CPUs; free: node-a 8 GPUs but 4 CPUs`` (``queue.resources_short``).

        Names, for the nodes whose GPUs would take a member, the resource they lack; when
        the cluster could not hold the gang even empty, says what the largest worker has
        (the spec must change, or bigger nodes join: ``queue.resources_never``).
        """
        need = {"nnodes": t.nnodes, "need": _need(t)}
        never = not self.fits_when_empty(t, gpus_total)
        if never:
            largest = []
            if t.cpus_per_node > max(self.cpus_total.values(), default=0.0) + EPS:
                largest.append(_cpus(max(self.cpus_total.values(), default=0.0)))
            if t.memory_per_node > max(self.memory_total.values(), default=0.0):
                largest.append(_memory(max(self.memory_total.values(), default=0.0)))
            if largest:
                return msg("queue.resources_never", **need, largest=largest)
        nodes = [n for n in free_gpus if free_gpus[n] >= t.gpus_per_node]
        parts = []
        for node in sorted(nodes, key=lambda n: (-self.cpus[n], n))[:3]:
            lacks = []
            if self.cpus[node] + EPS < t.cpus_per_node:
                lacks.append(_cpus(max(self.cpus[node], 0.0)))
            if self.memory[node] < t.memory_per_node:
                lacks.append(_memory(max(self.memory[node], 0.0)))
            if lacks:
                parts.append(part("part.node_lacks", node=_short(node), gpus=free_gpus[node], lacks=lacks)
                             if t.gpus_per_node > 0 else part("part.node_lacks_cpu_job", node=_short(node), lacks=lacks))
        if not parts:  # each node holds a member, the gang needs more members than the nodes hold together
            parts = [part("part.node_free", node=_short(n), free=self._free(t, free_gpus[n], n)) for n in sorted(nodes)[:3]]
        more = len(nodes) - len(parts)
        out = msg("queue.resources_short", **need, free=parts)
        if more > 0:
            out = out.then("part.more_nodes", more=more)
        return out.then("part.never_fits") if never else out

    def _free(self, t: TaskLike, gpus: int, node: str) -> list[dict[str, Any]]:
        items = [part("part.gpus", n=gpus)] if t.gpus_per_node > 0 else []
        if t.cpus_per_node > 0:
            items.append(_cpus(self.cpus[node]))
        if t.memory_per_node > 0:
            items.append(_memory(self.memory[node]))
        return items


def _cpus(n: float) -> dict[str, Any]:
    return part("part.cpus", n=int(n) if float(n).is_integer() else round(n, 2))


def _memory(amount: float) -> dict[str, Any]:
    return part("part.memory", size=format_memory(amount))


def _short(node_id: str) -> str:
    """Ray's 56-hex node ids by their first 12 characters (``GET /api/v2/nodes`` lists them whole)."""
    return node_id[:12] if len(node_id) > 16 else node_id


def _need(t: TaskLike) -> list[dict[str, Any]]:
    """What one gang member needs, as message list items (GPUs, CPUs, memory)."""
    items = [part("part.gpus", n=t.gpus_per_node)] if t.gpus_per_node > 0 else []
    if t.cpus_per_node > 0:
        items.append(_cpus(t.cpus_per_node))
    if t.memory_per_node > 0:
        items.append(_memory(t.memory_per_node))
    return items
