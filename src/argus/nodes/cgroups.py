"""A task attempt's own cgroup on its node: where its processes live, what bounds them, how they all die.

The node agent (:mod:`argus.nodes.agent`) makes one group per attempt, ``<base>/<attempt>``, and puts the
launcher in ``<attempt>/launcher``; the launcher puts the sandbox in ``<attempt>/task``, the only part
with limits (memory, pids, CPU weight: :class:`argus.core.launch.Limits`). So:

* the attempt's processes are found by the cgroup, not by a process tree a daemonising process leaves
  (private Ray's raylet and GCS start their own sessions), and a stop kills the whole group and waits
  until it is empty (``cgroup.kill`` where the kernel has it, else SIGKILL to every member until none is
  left) — nothing of an attempt is left to hold a GPU or race the next attempt;
* a limit hit is read from the kernel's own counters (``oom_kill``, ``pids.events``' ``max``), never
  guessed from an exit code;
* the launcher stays outside the limits, so the kernel's OOM killer never picks the process that writes
  the task's record and its last words.

Two layouts exist in the field and both are handled: **cgroup v2** (one tree; the controllers are enabled
down the path through each parent's ``cgroup.subtree_control``; v2 forbids processes in a group whose
children have controllers, hence ``launcher`` and ``task`` as siblings), and **v1 / hybrid** (one
hierarchy per controller under ``/sys/fs/cgroup/<controller>``, plus, on hybrid hosts, a v2 tree without
controllers at ``/sys/fs/cgroup/unified`` that still tracks membership and offers ``cgroup.kill``).
A process joins every hierarchy. Where no writable hierarchy exists (no root, a read-only mount),
:func:`detect` answers None and the caller says the task is not bounded.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from argus.core.launch import Limits

ROOT = Path("/sys/fs/cgroup")
CONTROLLERS = ("memory", "pids", "cpu")
V1_CPU_PERIOD_US = 100_000


@dataclass(frozen=True)
class Layout:
    """Where this node's cgroup hierarchies are mounted."""

    version: str  # "v2" | "v1"
    dirs: dict[str, Path]  # controller -> the hierarchy's mount (v2: the one tree)
    unified: Path | None  # a v2 tree for membership and cgroup.kill (v2: the tree; hybrid: .../unified)

    def folders(self, rel: str) -> list[Path]:
        """Every folder the group ``rel`` has: one per distinct hierarchy."""
        out: list[Path] = []
        for mount in [*self.dirs.values(), *([self.unified] if self.unified else [])]:
            path = mount / rel
            if path not in out:
                out.append(path)
        return out


@dataclass(frozen=True)
class Counters:
    """What the kernel counted against a group's limits."""

    oom_kills: int = 0  # processes its OOM killer killed inside the memory limit
    pids_refused: int = 0  # forks refused at pids.max


def detect(root: Path = ROOT) -> Layout | None:
    """The writable cgroup layout here, or None (then tasks run unbounded and the launcher says so)."""
    if not os.access(root, os.W_OK) and not any(os.access(root / c, os.W_OK) for c in CONTROLLERS):
        return None
    controllers = root / "cgroup.controllers"
    if controllers.is_file():
        try:
            have = set(controllers.read_text().split())
        except OSError:
            return None
        found = {c: root for c in CONTROLLERS if c in have}
        return Layout("v2", found, root) if found else None
    found = {c: root / c for c in CONTROLLERS if (root / c / "cgroup.procs").is_file() and os.access(root / c, os.W_OK)}
    unified = root / "unified"
    uni = unified if (unified / "cgroup.procs").is_file() and os.access(unified, os.W_OK) else None
    if not found and uni is None:
        return None
    return Layout("v1", found, uni)


def own_path(layout: Layout, pid: int | str = "self") -> str:
    """This process's group, relative to the hierarchies (``/proc/<pid>/cgroup``): the v2 line, else memory's."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return ""
    by_ctrl: dict[str, str] = {}
    for line in lines:
        _id, ctrls, path = line.split(":", 2)
        for c in ctrls.split(",") if ctrls else [""]:
            by_ctrl[c] = path.strip("/")
    if layout.version == "v2":
        return by_ctrl.get("", "")
    return by_ctrl.get("memory", by_ctrl.get("pids", ""))


class Group:
    """One cgroup (the same relative path in every hierarchy of the layout)."""

    def __init__(self, layout: Layout, rel: str) -> None:
        self.layout, self.rel = layout, rel.strip("/")

    def child(self, name: str) -> Group:
        return Group(self.layout, f"{self.rel}/{name}")

    def folders(self) -> list[Path]:
        return self.layout.folders(self.rel)

    def _file(self, controller: str, name: str) -> Path | None:
        mount = self.layout.dirs.get(controller)
        return mount / self.rel / name if mount is not None else None

    def create(self) -> None:
        """Make the group in every hierarchy; on v2, enable the controllers on the path down to it."""
        for folder in self.folders():
            folder.mkdir(parents=True, exist_ok=True)
        if self.layout.version == "v2" and self.layout.unified is not None:
            wanted = " ".join(f"+{c}" for c in self.layout.dirs)
            parts = self.rel.split("/")
            for depth in range(len(parts)):  # the root and every ancestor, not the group itself
                parent = self.layout.unified.joinpath(*parts[:depth])
                try:
                    (parent / "cgroup.subtree_control").write_text(wanted)
                except OSError:
                    pass  # already on, or refused: limits() says which limit is missing

    def join(self, pid: int = 0) -> None:
        """Move ``pid`` (0: the caller — between fork and exec in a child) into the group, in every hierarchy."""
        for folder in self.folders():
            with open(folder / "cgroup.procs", "w") as f:  # noqa: PTH123 - may run between fork and exec
                f.write(str(pid))

    def limit(self, limits: Limits) -> list[str]:
        """Apply ``limits``; the ones that could not be set, in words (the launcher logs them)."""
        v2 = self.layout.version == "v2"
        wanted: list[tuple[str, str, str, str]] = []  # controller, file, value, what
        if limits.memory_bytes:
            wanted.append(("memory", "memory.max" if v2 else "memory.limit_in_bytes", str(limits.memory_bytes),
                           "memory"))
        if limits.pids_max:
            wanted.append(("pids", "pids.max", str(limits.pids_max), "processes"))
        if limits.cpus:
            weight = max(1, min(10_000, round(100 * limits.cpus))) if v2 else max(2, round(1024 * limits.cpus))
            wanted.append(("cpu", "cpu.weight" if v2 else "cpu.shares", str(weight), "CPU weight"))
            if limits.cpu_quota:
                quota = max(1000, round(V1_CPU_PERIOD_US * limits.cpus))
                if v2:
                    wanted.append(("cpu", "cpu.max", f"{quota} {V1_CPU_PERIOD_US}", "CPU quota"))
                else:
                    wanted.append(("cpu", "cpu.cfs_quota_us", str(quota), "CPU quota"))
        missing = []
        for controller, name, value, what in wanted:
            path = self._file(controller, name)
            try:
                if path is None:
                    raise FileNotFoundError(f"no {controller} controller")
                path.write_text(value)
            except OSError as exc:
                missing.append(f"{what} ({exc.strerror or exc})")
        if limits.memory_bytes:  # swap would hide the overrun: count it in the limit where the kernel can
            swap = self._file("memory", "memory.swap.max" if v2 else "memory.memsw.limit_in_bytes")
            if swap is not None and swap.exists():
                try:
                    swap.write_text("0" if v2 else str(limits.memory_bytes))
                except OSError:
                    pass
        return missing

    def counters(self) -> Counters:
        v2 = self.layout.version == "v2"
        oom = _key_value(self._file("memory", "memory.events" if v2 else "memory.oom_control"), "oom_kill")
        refused = _key_value(self._file("pids", "pids.events"), "max")
        return Counters(oom_kills=oom, pids_refused=refused)

    def pids(self) -> set[int]:
        """Every process in the group and below it."""
        found: set[int] = set()
        for folder in self.folders():
            for procs in _walk(folder, "cgroup.procs"):
                try:
                    found.update(int(p) for p in procs.read_text().split())
                except (OSError, ValueError):
                    pass
        return found

    def exists(self) -> bool:
        return any(folder.is_dir() for folder in self.folders())

    def kill(self, timeout_s: float = 10.0) -> bool:
        """SIGKILL every process of the group (and below) and wait until none is left; whether it emptied."""
        deadline = time.monotonic() + timeout_s
        unified = self.layout.unified / self.rel if self.layout.unified else None
        while True:
            members = self.pids()
            if not members:
                return True
            if unified is not None and (unified / "cgroup.kill").exists():
                try:
                    (unified / "cgroup.kill").write_text("1")
                except OSError:
                    pass
            for pid in members:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            if time.monotonic() > deadline:
                return not self.pids()
            time.sleep(0.05)

    def remove(self) -> bool:
        """Remove the group and its children (each must be empty); whether it is gone everywhere."""
        gone = True
        for folder in self.folders():
            if not folder.is_dir():
                continue
            for sub in sorted((p for p in folder.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
                try:
                    sub.rmdir()
                except OSError:
                    gone = False
            try:
                folder.rmdir()
            except OSError:
                gone = False
        return gone


def _walk(folder: Path, name: str) -> list[Path]:
    if not folder.is_dir():
        return []
    return [folder / name, *(p / name for p in folder.rglob("*") if p.is_dir())]


def _key_value(path: Path | None, key: str) -> int:
    if path is None:
        return 0
    try:
        text = path.read_text()
    except OSError:
        return 0
    for line in text.splitlines():
        k, _, value = line.partition(" ")
        if k == key and value.strip().isdigit():
            return int(value)
    return 0
