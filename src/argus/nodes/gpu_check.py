"""The node agent's check that an ended attempt left its GPUs free, and the node's GPUs held back (issue 36).

When an attempt ends (stopped, canceled, exited, its launcher lost) the agent kills its cgroup and verifies it
empty (:mod:`argus.nodes.agent`). On a GPU node that is not the whole answer: the driver releases a context a
moment after its process exits, and a process stuck in the driver, or one the cgroup never held, keeps a GPU's
memory when Ray hands the GPU to the next task. So the agent then asks the driver itself (``nvidia-smi``, run
with a timeout; no Python binding needed) which compute processes are on the attempt's GPUs — the ones its
``CUDA_VISIBLE_DEVICES`` named when it started — and polls a few times over a bounded wait (:data:`WAITS_S`).
A process still there after the wait that is the attempt's own (in its cgroup, or in the launcher's session:
:func:`attempt_member`) is killed and the GPUs polled again; whatever is left is reported.

The outcome (:class:`argus.core.gpu_free.GpuCheck`) goes with the attempt's end into the agent's record and
into ``<data root>/.argus/attempts/<key>.gpus.json``; each GPU left busy gets a :class:`~argus.core.gpu_free.
HeldGpu` file in ``<data root>/.argus/gpus-held/``, which the scheduler reads every pass (one GPU fewer free on
that node, an event on the task). The agent looks again every :data:`RECHECK_S` and before each start
(:class:`Holds`), and removes the file once none of the reported processes is on the GPU any more.

A node without ``nvidia-smi`` or without GPUs is not checked (``gpus_free: null``); the agent says so once.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import psutil

from argus.core.gpu_free import (
    BusyGpu,
    Gpu,
    GpuCheck,
    GpuProcess,
    HeldGpu,
    attempt_gpus,
    on_gpus,
    parse_compute_apps,
    parse_gpu_list,
    still_held,
)
from argus.core.launch import LaunchSpec
from argus.launcher import attempt_record

log = logging.getLogger("argus.agent")

QUERY_TIMEOUT_S = 10.0  # one nvidia-smi call (a wedged driver makes it hang)
WAITS_S = (0.5, 1.0, 1.0, 2.0, 2.0)  # between polls: the driver frees a context a moment after its process exits
RECHECK_S = 30.0  # a held GPU is looked at again this often (and before every start)
GPUS_ENV = "CUDA_VISIBLE_DEVICES"
CONFIG_ENV = "ARGUS_JAIL_CONFIG"  # launcher/jail.py: the node's sandbox config, which names the data root
KEY_RE = re.compile(r"^(?P<task>.+)\.(?P<attempt>\d+)(?:\.node-\d+)?$")


class SmiError(RuntimeError):
    """nvidia-smi failed or timed out (the message says how)."""


class Smi:
    """``nvidia-smi`` on this node's PATH (None: there is none), asked for CSV with a timeout."""

    def __init__(self, binary: str | None = None, timeout_s: float = QUERY_TIMEOUT_S) -> None:
        self.binary = binary if binary is not None else shutil.which("nvidia-smi")
        self.timeout_s = timeout_s

    def gpus(self) -> list[Gpu]:
        return parse_gpu_list(self._run("--query-gpu=index,uuid"))

    def apps(self) -> list[GpuProcess]:
        return parse_compute_apps(self._run("--query-compute-apps=pid,gpu_uuid,used_memory"))

    def _run(self, query: str) -> str:
        if not self.binary:
            raise SmiError("no nvidia-smi on this node")
        try:
            done = subprocess.run([self.binary, query, "--format=csv,noheader,nounits"], capture_output=True,
                                  text=True, timeout=self.timeout_s, check=False, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired as exc:
            raise SmiError(f"nvidia-smi {query} did not answer within {self.timeout_s:g} s") from exc
        except OSError as exc:
            raise SmiError(f"nvidia-smi could not run: {exc}") from exc
        if done.returncode != 0:
            why = (done.stderr or done.stdout).strip().splitlines()
            raise SmiError(f"nvidia-smi {query} exited {done.returncode}: {why[0] if why else 'no output'}")
        return done.stdout


def check(visible: str | None, smi: Smi, ours: Callable[[int], bool], *, waits: Sequence[float] = WAITS_S,
          sleep: Callable[[float], None] = time.sleep) -> GpuCheck:
    """Whether the GPUs ``visible`` names are free of compute processes, polling over ``waits``; a process there
    after the wait that ``ours`` claims is SIGKILLed and the GPUs polled again over the same waits."""
    if visible is None:
        return GpuCheck(None, note=f"the attempt's GPUs are not known ({GPUS_ENV} unset)")
    if not visible.strip():
        return GpuCheck(None, note="the attempt held no GPU")
    if not smi.binary:
        return GpuCheck(None, note="no nvidia-smi on this node")
    try:
        node = smi.gpus()
    except SmiError as exc:
        return GpuCheck(None, note=str(exc))
    if not node:
        return GpuCheck(None, note="nvidia-smi lists no GPU on this node")
    gpus, unknown = attempt_gpus(visible, node)
    note = f"{GPUS_ENV} names {', '.join(unknown)}, which nvidia-smi does not list" if unknown else None
    if not gpus:
        return GpuCheck(None, note=note)
    polls, killed = 0, []
    busy: list[BusyGpu] = []
    for second in (False, True):
        for wait in (0.0, *waits):
            if wait:
                sleep(wait)
            try:
                busy = on_gpus(smi.apps(), gpus)
            except SmiError as exc:
                return GpuCheck(None, tuple(gpus), killed=tuple(killed), polls=polls, note=str(exc))
            polls += 1
            if not busy:
                return GpuCheck(True, tuple(gpus), killed=tuple(killed), polls=polls, note=note)
        mine = sorted({b.pid for b in busy if b.pid not in killed and ours(b.pid)})
        if second or not mine:
            break
        for pid in mine:
            log.warning("pid %d of the ended attempt still uses a GPU: killing it", pid)
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            killed.append(pid)
    return GpuCheck(False, tuple(gpus), tuple(busy), tuple(killed), polls, note)


def attempt_member(group_pids: Callable[[], set[int]], launcher_pid: int, started: float) -> Callable[[int], bool]:
    """Whether a pid is the attempt's: in its cgroup (and below), or — on a node without cgroups, or for a
    process that left the group — in the launcher's session and started after it (a reused pid is not)."""
    def ours(pid: int) -> bool:
        if pid in group_pids():
            return True
        try:
            proc = psutil.Process(pid)
            return launcher_pid > 0 and os.getsid(pid) == launcher_pid and proc.create_time() >= started - 1
        except (psutil.Error, OSError):
            return False
    return ours


def data_root(argv: Sequence[str], env: dict[str, str]) -> Path | None:
    """The data root an attempt's records go to: the node's sandbox config's, else the launcher's job folder's
    (``<root>/users/<user>/jobs/<task>``); None for an argv that is no launcher's (a test's script)."""
    config = env.get(CONFIG_ENV)
    if config:
        try:
            root = json.loads(Path(config).read_text()).get("data_root")
            if isinstance(root, str) and root:
                return Path(root)
        except (OSError, ValueError, AttributeError):
            pass
    if "-m" not in argv:
        return None
    flags = list(argv[list(argv).index("-m") + 2:])
    try:
        job_dir = Path(LaunchSpec.parse(flags).job_dir)
    except (SystemExit, Exception):  # noqa: BLE001 - argparse's exit on an argv that is no launcher's
        return None
    return job_dir.parents[3] if len(job_dir.parents) >= 4 and job_dir.parent.name == "jobs" else None


def held_gpus(result: GpuCheck, key: str, node_id: str, hostname: str, since: str) -> list[HeldGpu]:
    """The GPUs a busy check holds back: one each, with every process found on it and their memory."""
    m = KEY_RE.match(key)
    task, attempt = (m["task"], int(m["attempt"])) if m else ("", 0)
    out: dict[str, HeldGpu] = {}
    for b in result.busy:
        h = out.get(b.uuid) or HeldGpu(node_id, b.uuid, b.index, hostname, task, attempt, (), None, since)
        used = None if h.used_mib is None and b.used_mib is None else (h.used_mib or 0) + (b.used_mib or 0)
        out[b.uuid] = replace(h, pids=(*h.pids, b.pid), used_mib=used)
    return list(out.values())


class Holds:
    """The GPUs this node's agent reported busy, until a later check finds the reported processes gone.

    Kept in ``<state>/agent/gpus-held.json`` (a restarted agent goes on looking) beside the shared file the
    scheduler reads (``attempt_record.held_path``), which is removed on release."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock = threading.Lock()
        self.items: list[dict[str, Any]] = []  # {"root": data root or "", **HeldGpu.as_dict()}
        try:
            data = json.loads(path.read_text())
            self.items = [d for d in data if isinstance(d, dict) and HeldGpu.parse(d)] if isinstance(data, list) else []
        except (OSError, ValueError):
            pass

    def __bool__(self) -> bool:
        return bool(self.items)

    def add(self, root: Path | None, held: list[HeldGpu]) -> None:
        with self.lock:
            for h in held:
                if root is not None:
                    failed = attempt_record.write_json(attempt_record.held_path(root, h.node_id, h.uuid), h.as_dict())
                    if failed is not None:
                        log.warning("could not record GPU %s as held back: %s", h.uuid, failed)
                self.items = [i for i in self.items if (i["node_id"], i["uuid"]) != (h.node_id, h.uuid)]
                self.items.append({"root": str(root or ""), **h.as_dict()})
            self._save()

    def recheck(self, smi: Smi) -> list[HeldGpu]:
        """Release every held GPU none of whose reported processes is on it any more; the ones released."""
        with self.lock:
            if not self.items:
                return []
            try:
                apps = smi.apps()
            except SmiError as exc:
                log.warning("cannot look at the held-back GPUs again: %s", exc)
                return []
            released, kept = [], []
            for item in self.items:
                h = HeldGpu.parse(item)
                if h is None:
                    continue
                if still_held(h, apps):
                    kept.append(item)
                    continue
                if item.get("root"):
                    attempt_record.held_path(Path(item["root"]), h.node_id, h.uuid).unlink(missing_ok=True)
                log.info("GPU %s (%s) is free again (pids %s gone): no longer held back", h.index, h.uuid,
                         ", ".join(map(str, h.pids)))
                released.append(h)
            self.items = kept
            if released:
                self._save()
            return released

    def _save(self) -> None:
        tmp = self.path.with_name(f".{self.path.name}.tmp")
        try:
            tmp.write_text(json.dumps(self.items) + "\n")
            os.replace(tmp, self.path)
        except OSError as exc:
            log.warning("could not save the held-back GPUs in %s: %s", self.path, exc)
