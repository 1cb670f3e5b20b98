"""The node agent: the one process on a node that owns every task attempt's processes (issue 36).

    python -m argus.nodes.agent --state-dir <node state dir> [--keeper PID]

Why it exists: a task's launcher used to be a child of the platform Ray's job supervisor, so when the
platform's head or raylet restarted, the raylet took every running training with it. Now the Ray job's
entry point only *asks* this agent to start the attempt (:mod:`argus.nodes.attach`) and follows it; the
launcher (:mod:`argus.launcher.driver`), its sandbox and the task's private Ray are the agent's, in the
attempt's own cgroup (:mod:`argus.nodes.cgroups`). The platform's Ray still places the task and holds its
resources; if that Ray, the server or ``argus up`` dies, the training goes on, its record on the shared
filesystem keeps reporting (launcher/attempt_record.py), and the server follows it when it is back.

* **Started** by ``argus up`` / ``argus worker`` when none answers on the node's socket (its own session,
  so a kill of either does not reach it), or by systemd in cluster mode (docs/operator-guide.md).
* **Talks** JSON over a Unix socket in ``<state>/agent/`` (mode 0700, root's): no sandbox shows the node's
  state dirs, so no task can reach it. One request per connection: ``start`` (idempotent per attempt),
  ``wait``, ``stop``, ``list``, ``hello`` (a new keeper), ``release`` (the keeper's graceful end).
* **Remembers** each attempt in ``<state>/agent/attempts/<key>.json`` (pid, its start time, its cgroup, the
  exit code once known), so an agent that restarts takes up the attempts it had (same PIDs; it can no
  longer wait for them, so it polls them and reads the exit code the launcher leaves in ``<key>.exit``).
* **Ends** an attempt completely: when its launcher exits, whatever is left in its cgroup is killed and
  the group is verified empty and removed before the attempt is reported over, so no second attempt
  of a task ever runs beside the first's leftovers. On a GPU node it then asks the driver whether the
  attempt's GPUs are free (:mod:`argus.nodes.gpu_check`: ``gpus_free`` with the attempt's end; a GPU left
  busy is held back from the scheduler until a later look finds it free).
* **Lingers** only while it has work: once its keeper (the ``argus up`` / ``argus worker`` that started
  it) is gone and no attempt runs, it exits; one started without a keeper (systemd) stays.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import signal
import socket
import socketserver
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psutil

from argus.core.gpu_free import GpuCheck
from argus.launcher import attempt_record
from argus.nodes import cgroups, gpu_check
from argus.nodes.paths import AgentPaths

log = logging.getLogger("argus.agent")

KEY_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
STOP_GRACE_S = 15.0  # a launcher asked to stop stops its task within its own grace; then the group is killed
GPU_CHECK_S = 2 * sum(gpu_check.WAITS_S) + 4 * gpu_check.QUERY_TIMEOUT_S  # the end's GPU check, at most
LINGER_S = 5.0  # with no keeper and no attempt, this long before exiting
ECHO_LIMIT = 1 << 20  # the launcher's stdout file is kept this small (launcher/driver.py: CappedEcho)
# What the launcher finds in its environment when the agent started it
KEY_ENV, TASK_CGROUP_ENV, EXIT_FILE_ENV, ECHO_LIMIT_ENV = (
    "ARGUS_AGENT_KEY", "ARGUS_TASK_CGROUP", "ARGUS_AGENT_EXIT_FILE", "ARGUS_ECHO_LIMIT")
# the raylet the Ray job's entry point descends from (the launcher under the agent cannot find it): nodes/attach.py
# passes it on, and the agent keeps it with the attempt, since one agent may serve several raylets (embedded workers)
NODE_ID_ENV = "ARGUS_RAY_NODE_ID"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass
class Attempt:
    """One attempt the agent started (or took up after a restart)."""

    key: str
    argv: list[str]
    pid: int = 0
    create_time: float = 0.0  # the launcher's process start time: a reused pid is not ours
    cgroup: str = ""  # relative path of the attempt's group ('' when the node has no cgroups)
    node_id: str = ""  # the Ray node that placed it (NODE_ID_ENV)
    started_at: str = ""
    exit_code: int | None = None
    finished_at: str | None = None
    stop_requested_at: str | None = None
    emptied: bool | None = None  # its cgroup was verified empty at the end
    gpus: str | None = None  # CUDA_VISIBLE_DEVICES Ray gave it (None: unset; "": no GPU)
    data_root: str = ""  # where its GPU check is recorded for the server ('' : not a launcher's attempt)
    gpus_free: bool | None = None  # its GPUs had no process left at the end (None: not checked; gpu_check says why)
    gpu_check: dict[str, Any] | None = None  # core.gpu_free.GpuCheck.as_dict()
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False, compare=False)

    def public(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "proc"}
        data["running"] = self.finished_at is None
        return data


class Agent:
    def __init__(self, paths: AgentPaths, *, keeper: int | None = None, layout: cgroups.Layout | None = None,
                 smi: gpu_check.Smi | None = None) -> None:
        self.paths = paths
        self.smi = smi if smi is not None else gpu_check.Smi()
        self.gpu_waits: tuple[float, ...] = gpu_check.WAITS_S
        self.holds = gpu_check.Holds(paths.dir / "gpus-held.json")
        self._said: set[str] = set()  # why a GPU check was skipped, logged once each
        self.keeper = keeper
        self.permanent = keeper is None  # started without a keeper (systemd): it stays, whoever says hello
        self.layout = layout
        self.attempts: dict[str, Attempt] = {}
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)
        self.closing = threading.Event()

    # -- records ----------------------------------------------------------------------------

    def _save(self, att: Attempt) -> None:
        path = self.paths.attempt_file(att.key)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(json.dumps(att.public()) + "\n")
        os.replace(tmp, path)

    def take_up(self) -> None:
        """After a restart: every attempt still running is ours again (same PIDs); the rest are closed."""
        for path in sorted(self.paths.attempts.glob("*.json")):
            try:
                data = json.loads(path.read_text())
                att = Attempt(**{k: v for k, v in data.items() if k in Attempt.__dataclass_fields__ and k != "proc"})
            except (OSError, ValueError, TypeError):
                continue
            if att.finished_at is not None:
                continue
            self.attempts[att.key] = att
            if same_process(att.pid, att.create_time):
                log.info("took up attempt %s (pid %d) still running", att.key, att.pid)
                threading.Thread(target=self._follow, args=(att,), daemon=True).start()
            else:
                self._finish(att, self._exit_file_code(att))

    # -- operations -------------------------------------------------------------------------

    def start(self, key: str, argv: list[str], env: dict[str, str], cwd: str | None) -> dict[str, Any]:
        if not KEY_RE.match(key):
            raise ValueError(f"bad attempt key {key!r}")
        if self.holds:  # a held-back GPU may be the one Ray gives this attempt: look again first
            self.recheck_gpus()
        with self.lock:
            att = self.attempts.get(key)
            if att is not None:  # a second start of one attempt (a retried Ray entry point): the same one
                return {"pid": att.pid, "new": False, **att.public()}
            att = Attempt(key=key, argv=argv, started_at=_now(), node_id=env.get(NODE_ID_ENV, ""),
                          gpus=env.get(gpu_check.GPUS_ENV), data_root=str(gpu_check.data_root(argv, env) or ""))
            busy = {str(h.get(k)) for h in self.holds.items for k in ("uuid", "index")}
            if busy and att.gpus and any(g.strip() in busy for g in att.gpus.split(",")):
                log.warning("attempt %s was given a GPU still held back (%s)", key, att.gpus)
            group = self._group(key)
            task = group.child("task") if group is not None else None
            launcher = group.child("launcher") if group is not None else None
            if group is not None:
                group.kill(timeout_s=5)  # a leftover of a dead agent's attempt by this name: nothing may remain
                group.remove()
                group.create()
                assert task is not None and launcher is not None
                task.create()
                launcher.create()
                att.cgroup = group.rel
            exit_file = self.paths.exit_file(key)
            exit_file.unlink(missing_ok=True)
            out = open(self.paths.out_file(key), "wb")  # noqa: SIM115 - the child's stdout; closed below
            child_env = {**env, KEY_ENV: key, EXIT_FILE_ENV: str(exit_file), ECHO_LIMIT_ENV: str(ECHO_LIMIT),
                         **({TASK_CGROUP_ENV: task.rel} if task is not None else {})}

            def preexec() -> None:
                if launcher is not None:
                    launcher.join()

            try:
                att.proc = subprocess.Popen(argv, env=child_env, cwd=cwd or "/", stdin=subprocess.DEVNULL,
                                            stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                            preexec_fn=preexec)
            finally:
                out.close()
            att.pid = att.proc.pid
            try:
                att.create_time = psutil.Process(att.pid).create_time()
            except psutil.Error:
                att.create_time = 0.0
            self.attempts[key] = att
            self._save(att)
        log.info("started attempt %s: pid %d, cgroup %s", key, att.pid, att.cgroup or "none")
        threading.Thread(target=self._follow, args=(att,), daemon=True).start()
        return {"pid": att.pid, "new": True, **att.public()}

    def wait(self, key: str, timeout_s: float) -> dict[str, Any]:
        deadline = time.monotonic() + max(0.0, min(timeout_s, 300.0))
        with self.lock:
            att = self.attempts.get(key)
            while att is not None and att.finished_at is None and time.monotonic() < deadline:
                self.changed.wait(timeout=max(0.01, deadline - time.monotonic()))
            return att.public() if att is not None else {"key": key, "unknown": True}

    def stop(self, key: str, grace_s: float = STOP_GRACE_S) -> dict[str, Any]:
        """SIGTERM the launcher (it stops its task politely, then kills it), then the whole group: confirmed
        once the attempt is over and its group is empty."""
        with self.lock:
            att = self.attempts.get(key)
            if att is None:
                return {"key": key, "unknown": True}
            if att.finished_at is None and att.stop_requested_at is None:
                att.stop_requested_at = _now()
                self._save(att)
                _signal(att.pid, att.create_time, signal.SIGTERM)
        done = self.wait(key, grace_s)
        if done.get("running"):
            log.warning("attempt %s did not stop within %.0f s: killing its group", key, grace_s)
            group = self._group(key)
            if group is not None:
                group.kill()
            _signal(att.pid, att.create_time, signal.SIGKILL)
            done = self.wait(key, 10.0 + GPU_CHECK_S)
        return done

    def list(self) -> list[dict[str, Any]]:
        with self.lock:
            return [a.public() for a in self.attempts.values()]

    def running(self) -> list[Attempt]:
        with self.lock:
            return [a for a in self.attempts.values() if a.finished_at is None]

    def release(self, stop_tasks: bool) -> dict[str, Any]:
        """The keeper's graceful end: stop every attempt (or leave them training); the agent then exits once
        no attempt runs, whoever started it."""
        running = self.running()
        if stop_tasks:
            threads = [threading.Thread(target=self.stop, args=(a.key,)) for a in running]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        self.keeper = -1  # nobody keeps it now
        return {"stopped": len(running) if stop_tasks else 0, "running": len(self.running())}

    # -- the attempt's end ------------------------------------------------------------------

    def _group(self, key: str) -> cgroups.Group | None:
        return cgroups.Group(self.layout, f"{self.paths.cgroup_base}/{key}") if self.layout is not None else None

    def _follow(self, att: Attempt) -> None:
        if att.proc is not None:
            code: int | None = att.proc.wait()
            code = 128 - code if code is not None and code < 0 else code
        else:  # taken up after a restart: not our child, so poll it
            while same_process(att.pid, att.create_time):
                time.sleep(1.0)
            code = self._exit_file_code(att)
        self._finish(att, code)

    def _exit_file_code(self, att: Attempt) -> int | None:
        try:
            return int(self.paths.exit_file(att.key).read_text().strip())
        except (OSError, ValueError):
            return None

    def _finish(self, att: Attempt, code: int | None) -> None:
        group = self._group(att.key)
        emptied = None
        if group is not None and group.exists():
            emptied = group.kill()
        else:
            group = None
        checked = self._check_gpus(att, group)  # before the group goes: a pid still in it is the attempt's
        if group is not None:
            group.remove()
        with self.lock:
            att.exit_code, att.finished_at, att.emptied = code, _now(), emptied
            att.gpus_free, att.gpu_check = checked.gpus_free, checked.as_dict()
            self._save(att)
            self.changed.notify_all()
        log.info("attempt %s ended: exit code %s, group emptied: %s, GPUs free: %s", att.key, code, emptied,
                 "not checked" if checked.gpus_free is None else checked.gpus_free)

    def _check_gpus(self, att: Attempt, group: cgroups.Group | None) -> GpuCheck:
        """The attempt's GPUs asked of the driver (nodes/gpu_check.py), recorded for the server; a GPU left busy
        is held back. Not checked (None) without GPUs, without nvidia-smi or when it fails: said once."""
        ours = gpu_check.attempt_member(group.pids if group is not None else set, att.pid, att.create_time)
        checked = gpu_check.check(att.gpus, self.smi, ours, waits=self.gpu_waits)
        if not att.gpus or not att.gpus.strip():
            return checked  # no GPU: nothing to say
        if checked.gpus_free is None and checked.note and checked.note not in self._said:
            self._said.add(checked.note)
            log.info("GPUs of ended attempts are not checked here: %s (said once)", checked.note)
        root = Path(att.data_root) if att.data_root else None
        hostname = socket.gethostname()
        if root is not None:
            failed = attempt_record.write_json(attempt_record.gpu_check_path(root, att.key), {
                "key": att.key, "node_id": att.node_id, "hostname": hostname, "checked_at": _now(),
                **checked.as_dict()})
            if failed is not None:
                log.warning("could not record the GPU check of %s: %s", att.key, failed)
        if checked.gpus_free is False:
            held = gpu_check.held_gpus(checked, att.key, att.node_id, hostname, _now())
            for h in held:
                log.warning("attempt %s: %s", att.key, h.event())
            self.holds.add(root, held)
        return checked

    def recheck_gpus(self) -> None:
        """Look at the held-back GPUs again (every RECHECK_S and before a start); release the free ones."""
        self.holds.recheck(self.smi)

    # -- the agent's own life ---------------------------------------------------------------

    def idle_to_exit(self) -> bool:
        if self.permanent:
            return False
        keeper = self.keeper
        kept = keeper is not None and keeper > 0 and psutil.pid_exists(keeper)
        return not kept and not self.running()

    def prune(self, keep_s: float = 7 * 86400) -> None:
        """Records of attempts that ended long ago go (the server has taken up their outcome by then)."""
        cutoff = time.time() - keep_s
        for path in self.paths.attempts.glob("*"):
            try:
                if path.stat().st_mtime < cutoff and self.attempts.get(path.name.split(".json")[0]) is None:
                    path.unlink()
            except OSError:
                pass


def same_process(pid: int, create_time: float) -> bool:
    """Whether ``pid`` is still the live process that started at ``create_time`` (a reused pid is not)."""
    if pid <= 0:
        return False
    try:
        proc = psutil.Process(pid)
        return proc.status() != psutil.STATUS_ZOMBIE and (not create_time or abs(proc.create_time() - create_time) < 1)
    except psutil.Error:
        return False


def _signal(pid: int, create_time: float, sig: int) -> None:
    if same_process(pid, create_time):
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


class _Handler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        agent: Agent = self.server.agent  # type: ignore[attr-defined]
        try:
            req = json.loads(self.rfile.readline(1 << 22) or b"{}")
            op = req.get("op")
            if op == "start":
                out: Any = agent.start(str(req["key"]), [str(a) for a in req["argv"]],
                                       {str(k): str(v) for k, v in (req.get("env") or {}).items()}, req.get("cwd"))
            elif op == "wait":
                out = agent.wait(str(req["key"]), float(req.get("wait_s", 30)))
            elif op == "stop":
                out = agent.stop(str(req["key"]), float(req.get("grace_s", STOP_GRACE_S)))
            elif op == "list":
                out = {"attempts": agent.list(), "pid": os.getpid()}
            elif op == "hello":
                agent.keeper = int(req["keeper"]) if req.get("keeper") else agent.keeper
                out = {"pid": os.getpid(), "running": len(agent.running())}
            elif op == "release":
                out = agent.release(bool(req.get("stop_tasks", True)))
            else:
                raise ValueError(f"unknown op {op!r}")
            reply = {"ok": True, "result": out}
        except Exception as exc:  # noqa: BLE001 - one bad request answers with its error, the agent goes on
            log.warning("request failed: %s", exc)
            reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        self.wfile.write((json.dumps(reply) + "\n").encode())


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


def serve(paths: AgentPaths, keeper: int | None) -> int:
    paths.make()
    layout = cgroups.detect()
    agent = Agent(paths, keeper=keeper, layout=layout)
    lock = paths.lock()
    if lock is None:
        log.info("another agent holds %s: not starting", paths.pid_file)
        return 0
    paths.socket.unlink(missing_ok=True)
    server = _Server(str(paths.socket), _Handler)
    os.chmod(paths.socket, 0o600)
    server.agent = agent  # type: ignore[attr-defined]
    agent.take_up()
    log.info("node agent %d on %s (cgroups: %s, keeper %s)", os.getpid(), paths.socket,
             f"{layout.version} {sorted(layout.dirs)}" if layout else "none: tasks are not bounded", keeper)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: agent.closing.set())
    idle_since: float | None = None
    last_prune = last_gpus = 0.0
    while not agent.closing.wait(1.0):
        if time.monotonic() - last_prune > 3600:
            agent.prune()
            last_prune = time.monotonic()
        if agent.holds and time.monotonic() - last_gpus > gpu_check.RECHECK_S:
            agent.recheck_gpus()
            last_gpus = time.monotonic()
        if agent.idle_to_exit():
            idle_since = idle_since or time.monotonic()
            if time.monotonic() - idle_since >= LINGER_S:
                break
        else:
            idle_since = None
    # SIGTERM (systemd's stop, an operator): leave the attempts running; a new agent takes them up
    server.shutdown()
    if layout is not None and not agent.running():  # the node's folder of groups, empty by now: leave none
        cgroups.Group(layout, paths.cgroup_base).remove()
    paths.socket.unlink(missing_ok=True)
    log.info("node agent %d exits (%d attempts left running)", os.getpid(), len(agent.running()))
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m argus.nodes.agent", description=__doc__.splitlines()[0])
    p.add_argument("--state-dir", required=True, type=Path, help="the node's state dir (the agent's files go in agent/)")
    p.add_argument("--keeper", type=int, default=None, help="exit once this process is gone and no attempt runs")
    ns = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s",
                        stream=sys.stderr)
    return serve(AgentPaths(ns.state_dir), ns.keeper)


if __name__ == "__main__":
    sys.exit(main())
