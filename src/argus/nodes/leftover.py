"""The Ray an earlier ``argus up`` left running: written down while it runs, adopted or stopped on the next start.

Each node of the embedded cluster is a ``ray start --block`` in its own session, so a ``kill -9`` of
``argus up`` leaves the whole cluster (and the tasks on it) running. ``LocalCluster`` therefore keeps
``<state_dir>/embedded-ray.json`` up to date: the owner's pid, the ports, the Ray temp and session
dirs, a digest of the node setup (token auth, sandbox config), and per node the pid, its start time and its exact command line.
The next start in the same state dir (the state lock proves the owner is gone) reads it and:

* **adopts** the cluster when everything still matches — same state dir, mode, ports asked for, GPUs,
  Ray version, the same jail (the digest, and the live processes' environment), every recorded node
  process alive with the recorded start time and command line (a reused pid is never ours), Ray
  reporting every recorded node ALIVE, and ``session_latest`` naming
  the recorded session. The adopter owns it from then on and stops it on a clean exit.
* otherwise **stops** what is left of it — only processes proven to be the recorded ones, plus the
  processes running in the recorded Ray session dir (drivers and workers leave the node's process
  group) — and starts a fresh cluster.

Either way one log line says which and why. Tasks then follow the scheduler's recovery rules: on an
adopted cluster their Ray jobs are still there; after a fresh start Ray has forgotten them.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import signal
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import psutil

log = logging.getLogger(__name__)

RECORD_NAME = "embedded-ray.json"


@dataclass
class NodeRecord:
    name: str
    pid: int
    created: float  # psutil create_time: with the pid, the identity of the process
    argv: list[str]  # what was started
    node_id: str | None = None
    cmdline: list[str] = field(default_factory=list)  # what the kernel shows for it (a script: its interpreter first)


@dataclass
class RayRecord:
    owner_pid: int
    state_dir: str
    mode: str
    host: str
    ports: dict[str, int]
    temp_dir: str
    session_dir: str | None
    jail_digest: str
    jail_env: dict[str, str]
    worker_gpus: int | None
    ray_version: str
    nodes: list[NodeRecord] = field(default_factory=list)

    def node(self, name: str) -> NodeRecord | None:
        return next((n for n in self.nodes if n.name == name), None)


def record_path(state_dir: Path) -> Path:
    return state_dir / RECORD_NAME


def save(path: Path, record: RayRecord) -> None:
    """Write atomically: a kill -9 in the middle leaves the previous record, never half of one."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(asdict(record), indent=1))
    tmp.replace(path)


def load(path: Path) -> RayRecord | None:
    """The record, or None when there is none; an unreadable one is reported and treated as none."""
    try:
        data = json.loads(path.read_text())
        nodes = [NodeRecord(**n) for n in data.pop("nodes", [])]
        return RayRecord(**data, nodes=nodes)
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TypeError) as exc:
        log.warning("ignoring %s: unreadable (%s)", path, exc)
        return None


def jail_digest(env: dict[str, str]) -> str:
    """The jail setup of a node: its ``ray start`` environment plus the jail config file it names."""
    h = hashlib.sha256(json.dumps(env, sort_keys=True).encode())
    for value in sorted(env.values()):
        if value.endswith(".json") and os.path.isfile(value):
            h.update(Path(value).read_bytes())
    return h.hexdigest()


def session_dir(temp_dir: Path) -> str | None:
    """The session Ray runs now under ``temp_dir`` (its ``session_latest`` link), resolved."""
    link = temp_dir / "session_latest"
    try:
        return str(link.resolve(strict=True))
    except OSError:
        return None


def process_of(node: NodeRecord) -> psutil.Process | None:
    """The live process the record names, or None: a pid now used by another process is not it."""
    try:
        proc = psutil.Process(node.pid)
        if proc.create_time() != node.created or proc.status() == psutil.STATUS_ZOMBIE:
            return None
        if proc.cmdline() != (node.cmdline or node.argv):
            return None
        return proc
    except psutil.Error:
        return None


def env_matches(proc: psutil.Process, wanted: dict[str, str]) -> bool:
    try:
        env = proc.environ()
    except psutil.Error:
        return False
    return all(env.get(k) == v for k, v in wanted.items())


def stop_leftover(record: RayRecord, grace_s: float = 15.0) -> int:
    """Stop what is left of a recorded cluster; returns how many processes were signalled.

    Only processes proven to be the recorded nodes (pid + start time + command line) and their
    descendants, and processes whose command line names the recorded session dir, are touched.
    """
    victims: dict[int, psutil.Process] = {}
    groups: list[int] = []
    for node in record.nodes:
        proc = process_of(node)
        if proc is None:
            continue
        groups.append(node.pid)
        victims[proc.pid] = proc
        try:
            for child in proc.children(recursive=True):
                victims[child.pid] = child
        except psutil.Error:
            pass
    for proc in _in_session(record.session_dir):
        victims.setdefault(proc.pid, proc)
    for pid in groups:  # SIGTERM each ``ray start``: it shuts its node down
        _signal_group(pid, signal.SIGTERM)
    alive = wait_exit([victims[pid] for pid in groups if pid in victims], grace_s)
    for pid in groups:
        _signal_group(pid, signal.SIGKILL)
    for proc in victims.values():
        try:
            proc.send_signal(signal.SIGKILL)  # psutil checks the pid still names this process
        except psutil.Error:
            pass
    wait_exit(list(victims.values()), 5)
    if alive:
        log.warning("leftover Ray node(s) %s ignored SIGTERM for %.0f s; killed", [p.pid for p in alive], grace_s)
    return len(victims)


def wait_exit(procs: list[psutil.Process], timeout_s: float) -> list[psutil.Process]:
    """Wait until ``procs`` exit; those still running after ``timeout_s`` are returned.

    Not ``psutil.wait_procs``: these are not our children, and when the reaper they were left to is
    slow (a container's init), an exited one lingers as a zombie that counts as gone here.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        alive = [p for p in procs if _running(p)]
        if not alive or time.monotonic() >= deadline:
            return alive
        time.sleep(0.05)


def _running(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _in_session(session: str | None) -> list[psutil.Process]:
    """This user's processes whose command line names the Ray session dir (workers, drivers, agents)."""
    if not session or "session_" not in os.path.basename(session):
        return []
    me = os.getuid()
    found = []
    for proc in psutil.process_iter(["cmdline", "uids"]):
        try:
            if proc.pid == os.getpid() or proc.info["uids"] is None or proc.info["uids"].real != me:
                continue
            if any(session in part for part in proc.info["cmdline"] or []):
                found.append(proc)
        except psutil.Error:
            continue
    return found


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def wait_gone(record: RayRecord, timeout_s: float = 10.0) -> None:
    """Until no recorded node process is alive (ports are free again for the fresh start)."""
    deadline = time.monotonic() + timeout_s
    while any(process_of(n) for n in record.nodes) and time.monotonic() < deadline:
        time.sleep(0.1)
