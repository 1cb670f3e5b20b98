"""What a node needs to start one task attempt, and what it says back, typed, for both sides (issue 36).

The scheduler decides a task's limits from its spec and the cluster's settings; the launcher on the
node applies them to the task's cgroup (:mod:`argus.nodes.cgroups`) and its private ``/tmp``. One
dataclass travels between them (as launcher flags, and in the agent's records), so a limit is named
once, with its unit, instead of being a loose number in seven places.

:class:`LaunchSpec` is the whole request: the scheduler builds one per attempt and turns it into the launcher's
command line (:meth:`LaunchSpec.flags`: a Ray job's entry point carries nothing else); the launcher turns the
command line back into the same value (:meth:`LaunchSpec.parse`), so each flag is spelled in one place.

Back the other way, the launcher writes :class:`AttemptStatus` as the attempt's ``status.json``, and the
server reads it with :meth:`AttemptStatus.parse`. That file is in the owner's home and the task can
rewrite it, so the server never reads it by string key: ``parse`` keeps each field only if it has its type
and a sane size (a forged ``node_id`` list or a megabyte ``hostname`` is dropped, never stored), once, here.

Pure: the standard library only.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
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


LAUNCHER_MODULE = "argus.launcher.driver"


@dataclass(frozen=True)
class LaunchSpec:
    """One attempt as its launcher is asked to run it (``python -I -m argus.launcher.driver <flags> -- argv``)."""

    job_dir: Path  # <root>/users/<user>/jobs/<task_id> (the launcher makes it)
    attempt: int  # logs/attempt-<n>.log
    argv: tuple[str, ...]  # the task's command
    python: str | None = None  # the training interpreter that `python3` means inside the task
    env: str = ""  # that training environment's name (for messages)
    attention: str | None = None  # "auto": choose verl's attention kernel from what the worker has
    user: str | None = None  # the owner: the sandbox shows this home
    teams: tuple[str, ...] = ()  # the owner's teams: their folders are shown too
    sandbox: bool = False  # run the command in the owner's sandbox (refuse without one)
    private_ray: bool = False  # start the task's own Ray in the sandbox
    ray_dashboard: bool = False  # with private_ray: with its dashboard (for its owner)
    cpus: float = 1  # the task's CPUs on this node (its private Ray's)
    gpus: int = 0  # the task's GPUs on this node (device cpu: logical ones)
    device: str = "gpu"  # cpu: CPU training, gpus counts its workers (Ray's logical GPUs, no device file)
    nnodes: int = 1  # the task's nodes (a Ray program spans them all)
    memory: int = 0  # bytes on this node (0: not set: the node's default share, default_memory)
    pids_max: int = 0  # processes and threads at most (0: not set)
    tmp_size: int = 0  # the private /tmp: a tmpfs of this many bytes (0: a folder on the node's disk)
    cpu_quota: bool = False  # cap the task at ``cpus``, not only weigh it
    setenv: tuple[str, ...] = ()  # NAME=VALUE of the task's environment; the rest is the node's allowlist

    def flags(self) -> list[str]:
        """The launcher's command line after ``-m argus.launcher.driver``: what :meth:`parse` reads back."""
        return [
            "--job-dir", str(self.job_dir), "--attempt", str(self.attempt),
            # an empty --python is a message (the task's environment was removed: launcher's environment_problem)
            *(["--python", self.python] if self.python is not None else []), *(["--env", self.env] if self.env else []),
            *(["--attention", self.attention] if self.attention else []),
            *(["--user", self.user] if self.user else []),
            *(arg for team in self.teams for arg in ("--team", team)),
            *(["--sandbox"] if self.sandbox else []),
            *(["--private-ray"] if self.private_ray else []),
            *(["--ray-dashboard"] if self.ray_dashboard else []),
            *(["--device", self.device] if self.device != "gpu" else []),
            "--cpus", f"{self.cpus:g}", "--gpus", str(self.gpus), "--nnodes", str(self.nnodes),
            *(["--memory", str(self.memory)] if self.memory else []),
            *(["--pids-max", str(self.pids_max)] if self.pids_max else []),
            *(["--tmp-size", str(self.tmp_size)] if self.tmp_size else []),
            *(["--cpu-quota"] if self.cpu_quota else []),
            *(f"--setenv={pair}" for pair in self.setenv),
            "--", *self.argv,
        ]

    @classmethod
    def parse(cls, args: Sequence[str], *, doc: str = "") -> LaunchSpec:
        """The spec :meth:`flags` wrote (argparse's usage error and exit 2 on anything else)."""
        p = argparse.ArgumentParser(prog=f"python -m {LAUNCHER_MODULE}", description=doc)
        p.add_argument("--job-dir", required=True, type=Path)
        p.add_argument("--attempt", required=True, type=int)
        p.add_argument("--python")
        p.add_argument("--env", default="")
        p.add_argument("--attention", choices=["auto"])
        p.add_argument("--user")
        p.add_argument("--team", action="append", default=[])
        p.add_argument("--sandbox", action="store_true")
        p.add_argument("--private-ray", action="store_true")
        p.add_argument("--ray-dashboard", action="store_true")
        p.add_argument("--cpus", type=float, default=1)
        p.add_argument("--gpus", type=int, default=0)
        p.add_argument("--device", choices=["gpu", "cpu"], default="gpu")
        p.add_argument("--nnodes", type=int, default=1)
        p.add_argument("--memory", type=int, default=0)
        p.add_argument("--pids-max", type=int, default=0)
        p.add_argument("--tmp-size", type=int, default=0)
        p.add_argument("--cpu-quota", action="store_true")
        p.add_argument("--setenv", action="append", default=[], metavar="NAME=VALUE")
        p.add_argument("argv", nargs=argparse.REMAINDER, help="-- then the command to run")
        ns = p.parse_args(list(args))
        argv = ns.argv[1:] if ns.argv[:1] == ["--"] else ns.argv
        if not argv:
            p.error("no command given after --")
        return cls(job_dir=ns.job_dir, attempt=ns.attempt, argv=tuple(argv), python=ns.python, env=ns.env,
                   attention=ns.attention, user=ns.user, teams=tuple(ns.team), sandbox=ns.sandbox,
                   private_ray=ns.private_ray, ray_dashboard=ns.ray_dashboard, cpus=ns.cpus, gpus=ns.gpus,
                   device=ns.device, nnodes=ns.nnodes, memory=ns.memory, pids_max=ns.pids_max,
                   tmp_size=ns.tmp_size, cpu_quota=ns.cpu_quota, setenv=tuple(ns.setenv))


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


# the longest text kept from each status.json field (the task can write that file: bounded, like every input)
MAX_NAME = 255  # hostname, node id, signal name, CUDA_VISIBLE_DEVICES
MAX_TIME = 64  # an ISO 8601 time
MAX_TEXT = 4000  # a launcher's refusal, a log failure, a limit's message


@dataclass(frozen=True)
class LimitHit:
    """The bound that ended an attempt (launcher/task_bounds.py): ``memory``, ``pids`` or ``disk``."""

    kind: str
    limit: int | None
    message: str


@dataclass(slots=True)
class AttemptStatus:
    """``status.json``: the launcher's account of one attempt (node, GPUs, times, end, limits, newest usage).

    Mutable on the launcher's side (its signal handlers set ``signal`` without a lock; ``StatusFile.save``
    rewrites the file); on the server's side only ever the result of :meth:`parse`. It describes, it never
    decides: what the server decides on is the attempt's record out of the owner's reach
    (launcher/attempt_record.py)."""

    attempt: int
    hostname: str | None = None
    node_id: str | None = None
    cuda_visible_devices: str | None = None
    driver_pid: int | None = None
    argv: list[str] = field(default_factory=list)
    python: str | None = None
    env: str | None = None  # the training environment's name (envs/)
    started_at: str | None = None
    finished_at: str | None = None
    alive_at: str | None = None
    heartbeat_s: float | None = None  # None: a launcher from before the heartbeat (never judged silent)
    exit_code: int | None = None
    signal: str | None = None
    notes: list[str] = field(default_factory=list)
    error: str | None = None  # the launcher refused to start the task: why
    log_error: str | None = None
    log_dropped_bytes: int = 0
    log_dropped_lines: int = 0
    oom_kills: int = 0
    memory_limit: int | None = None
    limit_hit: LimitHit | None = None
    usage: dict[str, Any] | None = None  # the newest resource sample (launcher/telemetry.py)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def parse(cls, data: object, attempt: int) -> AttemptStatus | None:
        """The status of ``attempt`` from a decoded ``status.json``; None if it is not one (another attempt's,
        torn, or not an object). Each field of the wrong type or size is left at its default."""
        if not isinstance(data, Mapping) or _int(data.get("attempt")) != attempt:
            return None
        hit = data.get("limit_hit")
        limit_hit = None
        if isinstance(hit, Mapping) and _text(hit.get("kind"), MAX_NAME):
            limit_hit = LimitHit(str(hit["kind"]), _int(hit.get("limit")), _text(hit.get("message"), MAX_TEXT) or "")
        return cls(
            attempt=attempt,
            hostname=_text(data.get("hostname"), MAX_NAME),
            node_id=_text(data.get("node_id"), MAX_NAME),
            cuda_visible_devices=_text(data.get("cuda_visible_devices"), MAX_NAME, empty=True),
            driver_pid=_int(data.get("driver_pid")),
            argv=_texts(data.get("argv")),
            python=_text(data.get("python"), MAX_TEXT),
            env=_text(data.get("env"), MAX_NAME),
            started_at=_text(data.get("started_at"), MAX_TIME),
            finished_at=_text(data.get("finished_at"), MAX_TIME),
            alive_at=_text(data.get("alive_at"), MAX_TIME),
            heartbeat_s=_number(data.get("heartbeat_s")),
            exit_code=_int(data.get("exit_code")),
            signal=_text(data.get("signal"), MAX_NAME),
            notes=_texts(data.get("notes")),
            error=_text(data.get("error"), MAX_TEXT),
            log_error=_text(data.get("log_error"), MAX_TEXT),
            log_dropped_bytes=max(_int(data.get("log_dropped_bytes")) or 0, 0),
            log_dropped_lines=max(_int(data.get("log_dropped_lines")) or 0, 0),
            oom_kills=max(_int(data.get("oom_kills")) or 0, 0),
            memory_limit=_int(data.get("memory_limit")),
            limit_hit=limit_hit,
            usage=dict(data["usage"]) if isinstance(data.get("usage"), Mapping) else None,
        )


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _text(value: object, limit: int, *, empty: bool = False) -> str | None:
    """A string field: kept cut to ``limit`` characters; an empty one only where it means something
    (``CUDA_VISIBLE_DEVICES=""``: no GPU)."""
    if not isinstance(value, str) or (not value and not empty):
        return None
    return value[:limit]


def _texts(value: object) -> list[str]:
    return [v[:MAX_TEXT] for v in value[:1000] if isinstance(v, str)] if isinstance(value, list) else []
