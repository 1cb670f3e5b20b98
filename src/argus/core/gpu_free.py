"""Whether an ended attempt's GPUs are free again, and which GPUs the scheduler holds back (issue 36).

The node agent kills an attempt's whole cgroup and verifies it empty; on a GPU node it then asks the driver
(``nvidia-smi``, nodes/gpu_check.py) which compute processes are still on the attempt's GPUs, because a
process the cgroup no longer shows (a context the driver has not released yet, a process stuck in the driver,
one started outside the attempt) would still hold the GPU's memory when Ray hands that GPU to the next task.
This module is the pure half: nvidia-smi's CSV read, the attempt's GPUs named by ``CUDA_VISIBLE_DEVICES``
mapped to the node's GPUs, the outcome as a typed value (:class:`GpuCheck`, written with the attempt's end and
read back bounded, like :class:`argus.core.launch.AttemptStatus`), and the rule the scheduler applies to a
GPU reported busy (:class:`HeldGpu`, :func:`held_by_node`: one GPU fewer free on its node until a later
check says it is free).

Pure: the standard library only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from argus.core.messages import Message, msg, part

MAX_ITEMS = 64  # GPUs, processes, pids kept from one record (the files are the platform's; bounded anyway)
MAX_NAME = 255


@dataclass(frozen=True)
class Gpu:
    index: int
    uuid: str


@dataclass(frozen=True)
class GpuProcess:
    """One line of ``nvidia-smi --query-compute-apps=pid,gpu_uuid,used_memory``."""

    pid: int
    gpu_uuid: str
    used_mib: int | None  # None: the driver did not say ([N/A], [Not Supported])


@dataclass(frozen=True)
class BusyGpu:
    """A process still on one of the attempt's GPUs after the check's wait."""

    index: int | None
    uuid: str
    pid: int
    used_mib: int | None

    def describe(self) -> str:
        """``GPU 1 (GPU-…) still has pid 4242 using 2 GiB``."""
        return f"{gpu_name(self.index, self.uuid)} still has pid {self.pid} using {mib_text(self.used_mib)}"


@dataclass(frozen=True)
class GpuCheck:
    """The outcome of the check at an attempt's end. ``gpus_free``: True (no process left on its GPUs), False
    (``busy`` lists what is left), None (not checked: ``note`` says why — no GPU, no nvidia-smi, …)."""

    gpus_free: bool | None
    gpus: tuple[Gpu, ...] = ()
    busy: tuple[BusyGpu, ...] = ()
    killed: tuple[int, ...] = ()  # pids of the attempt (its cgroup, its session) killed because they held a GPU
    polls: int = 0
    note: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def parse(cls, data: object) -> GpuCheck | None:
        """A check from its decoded JSON; None if it is not one. Fields of the wrong type are dropped."""
        if not isinstance(data, Mapping) or not isinstance(data.get("gpus_free"), bool | None):
            return None
        gpus = tuple(Gpu(g["index"], g["uuid"][:MAX_NAME]) for g in _items(data.get("gpus"))
                     if _int(g.get("index")) is not None and _text(g.get("uuid")))
        busy = tuple(BusyGpu(_int(b.get("index")), b["uuid"][:MAX_NAME], b["pid"], _int(b.get("used_mib")))
                     for b in _items(data.get("busy")) if _text(b.get("uuid")) and _int(b.get("pid")) is not None)
        killed = tuple(p for p in data["killed"][:MAX_ITEMS] if _int(p) is not None) \
            if isinstance(data.get("killed"), list | tuple) else ()
        note = data.get("note")
        return cls(data["gpus_free"], gpus, busy, killed, _int(data.get("polls")) or 0,
                   note[:4000] if isinstance(note, str) else None)


@dataclass(frozen=True)
class HeldGpu:
    """A GPU of a node held back by the scheduler: the check at an attempt's end found a process still on it.

    Written by the node's agent when the check ends busy, removed by it when a later check finds none of
    ``pids`` on the GPU any more (nodes/gpu_check.py); read by the scheduler each pass."""

    node_id: str
    uuid: str
    index: int | None = None
    hostname: str = ""
    task_id: str = ""
    attempt: int = 0
    pids: tuple[int, ...] = ()
    used_mib: int | None = None
    since: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def parse(cls, data: object) -> HeldGpu | None:
        if not isinstance(data, Mapping) or not _text(data.get("node_id")) or not _text(data.get("uuid")):
            return None
        pids = data.get("pids")
        return cls(node_id=data["node_id"][:MAX_NAME], uuid=data["uuid"][:MAX_NAME], index=_int(data.get("index")),
                   hostname=(_text(data.get("hostname")) or "")[:MAX_NAME],
                   task_id=(_text(data.get("task_id")) or "")[:MAX_NAME], attempt=_int(data.get("attempt")) or 0,
                   pids=tuple(p for p in pids[:MAX_ITEMS] if _int(p) is not None) if isinstance(pids, list | tuple)
                   else (),
                   used_mib=_int(data.get("used_mib")), since=(_text(data.get("since")) or "")[:64])

    def event(self) -> str:
        """The task's timeline entry: which GPU, which processes, how much memory, and what it means."""
        return self.said().text

    def said(self) -> Message:
        """:meth:`event` as ``status.gpu_held[_on]`` (issue 37): the page says it in the reader's language."""
        pids = ", ".join(str(p) for p in self.pids) or "?"
        gpu = part("part.gpu_index", index=self.index, uuid=self.uuid) if self.index is not None else \
            part("part.gpu_uuid", uuid=self.uuid)
        memory = mib_text(self.used_mib) if self.used_mib is not None else part("part.memory_unknown")
        on = {"host": self.hostname} if self.hostname else {}
        return msg("status.gpu_held_on" if on else "status.gpu_held", gpu=gpu, **on, memory=memory,
                   pids=part("part.pids" if len(self.pids) > 1 else "part.pid", pids=pids))


def gpu_name(index: int | None, uuid: str) -> str:
    return f"GPU {index} ({uuid})" if index is not None else f"GPU {uuid}"


def mib_text(mib: int | None) -> str:
    if mib is None:
        return "an unknown amount of memory"
    return f"{mib / 1024:g} GiB" if mib >= 1024 and mib % 256 == 0 else f"{mib} MiB"


# --------------------------------------------------------------------------- nvidia-smi's answers


def parse_gpu_list(text: str) -> list[Gpu]:
    """``nvidia-smi --query-gpu=index,uuid --format=csv,noheader,nounits``: ``0, GPU-…`` per line."""
    out = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 2 and parts[0].isdigit() and parts[1]:
            out.append(Gpu(int(parts[0]), parts[1]))
    return out


def parse_compute_apps(text: str) -> list[GpuProcess]:
    """``nvidia-smi --query-compute-apps=pid,gpu_uuid,used_memory --format=csv,noheader,nounits``: one
    ``4242, GPU-…, 2048`` line per process (MiB; ``[N/A]`` where the driver does not say); nothing when none."""
    out = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 2 and parts[0].isdigit() and parts[1].startswith(("GPU-", "MIG-")):
            mib = parts[2] if len(parts) > 2 else ""
            out.append(GpuProcess(int(parts[0]), parts[1], int(mib) if mib.isdigit() else None))
    return out


def attempt_gpus(visible: str | None, node: Sequence[Gpu]) -> tuple[list[Gpu], list[str]]:
    """The node's GPUs that ``CUDA_VISIBLE_DEVICES`` names (host indices, or UUIDs / their prefixes, as Ray and
    CUDA accept them), and the names that match none."""
    found: list[Gpu] = []
    unknown: list[str] = []
    for name in (v.strip() for v in (visible or "").split(",")):
        if not name:
            continue
        if name.isdigit():
            match = [g for g in node if g.index == int(name)]
        else:
            match = [g for g in node if g.uuid == name] or [g for g in node if g.uuid.startswith(name)]
        if len(match) == 1 and match[0] not in found:
            found.append(match[0])
        elif not match:
            unknown.append(name)
    return found, unknown


def on_gpus(apps: Iterable[GpuProcess], gpus: Sequence[Gpu]) -> list[BusyGpu]:
    """The compute processes on ``gpus``, each named with its GPU's index."""
    index = {g.uuid: g.index for g in gpus}
    return [BusyGpu(index[a.gpu_uuid], a.gpu_uuid, a.pid, a.used_mib) for a in apps if a.gpu_uuid in index]


def still_held(held: HeldGpu, apps: Iterable[GpuProcess]) -> bool:
    """Whether a held GPU stays held: one of the processes found on it is still there. Another process on it is
    the task Ray placed there since, not the leftover, and does not keep it held."""
    return any(a.gpu_uuid == held.uuid and a.pid in held.pids for a in apps)


# --------------------------------------------------------------------------- the scheduler's rule


def held_by_node(held: Iterable[HeldGpu]) -> dict[str, int]:
    """How many GPUs each node has held back (each GPU once, however many attempts reported it)."""
    gpus: dict[str, set[str]] = {}
    for h in held:
        gpus.setdefault(h.node_id, set()).add(h.uuid)
    return {node: len(uuids) for node, uuids in gpus.items()}


@dataclass
class HeldEvents:
    """Which held GPUs still need their event on the task: each (task, attempt, GPU) once."""

    seen: set[tuple[str, int, str]] = field(default_factory=set)

    def new(self, held: Iterable[HeldGpu]) -> list[HeldGpu]:
        out = []
        for h in held:
            key = (h.task_id, h.attempt, h.uuid)
            if h.task_id and key not in self.seen:
                self.seen.add(key)
                out.append(h)
        return out


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _items(value: object) -> list[Mapping[str, Any]]:
    return [v for v in value[:MAX_ITEMS] if isinstance(v, Mapping)] if isinstance(value, list | tuple) else []
