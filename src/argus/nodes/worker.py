"""``argus worker``: keep this machine joined to whatever head the discovery file names.

The loop is observe → :func:`argus.nodes.watchdog.decide` → act, once a ``poll_s``. The raylet
is a ``ray start --block`` in its own session (as in ``LocalCluster``): when any of its Ray
processes dies, that process exits, so "raylet alive" is simply "our ``ray start`` still runs".
Stopping signals only that process group and its recorded descendants, never ``ray stop`` (which
would kill every Ray process of the user on the machine).

Every change of decision is logged with its reason, so ``journalctl -u argus-worker`` tells why a
node left or re-joined. SIGTERM / Ctrl-C stop the raylet and end the loop.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from argus.launcher import jail, ray_auth
from argus.nodes import agent_client
from argus.nodes.discovery import DiscoveryError, HeadInfo, local_ray_version, read_discovery
from argus.nodes.local import (
    PLATFORM_RAY_TUNING,
    RayNode,
    ray_start,
    ray_temp_dir,
    snapshot_descendants,
    spawn_node,
    stop_node,
)
from argus.nodes.paths import AgentPaths
from argus.nodes.watchdog import Action, Backoff, Decision, Observation, decide

log = logging.getLogger(__name__)


@dataclass
class WorkerConfig:
    discovery: Path
    state_dir: Path  # raylet log and Ray temp dir live here
    name: str = ""  # Ray node name (what Argus shows); default: the host name
    gpus: int | None = None  # None: Ray detects them
    cpus: int | None = None
    capacity: int = 1000  # the worker_node resource: how many drivers may share this machine
    poll_s: float = 1.0
    probe_timeout_s: float = 2.0
    silence_limit_s: float = 30.0
    backoff: Backoff | None = None
    data_root: Path | None = None  # the shared filesystem: the homes the node's jails show
    task_jail: str = "off"  # settings.task_jail: auto | bwrap | off
    python: str = sys.executable  # the training interpreter (bound into the jails read-only)
    keep_training_on_stop: bool = False  # settings.keep_training_on_stop: a graceful stop leaves tasks to the agent

    def __post_init__(self) -> None:
        self.name = self.name or socket.gethostname()

    def node_env(self) -> dict[str, str]:
        """What this node's ``ray start`` adds: Ray's memory monitor off (nodes/local.py ``PLATFORM_RAY_TUNING``),
        the platform Ray's token auth (launcher/ray_auth.py) and the sandbox config (launcher/jail.py)."""
        if self.data_root is None:
            return dict(PLATFORM_RAY_TUNING)
        return {**PLATFORM_RAY_TUNING, **ray_auth.platform_ray_env(self.data_root),
                **jail.node_env(mode=self.task_jail, data_root=self.data_root, state_dir=self.state_dir,
                                python=self.python),
                agent_client.AGENT_ENV: str(AgentPaths(self.state_dir).socket)}


class WorkerWatchdog:
    def __init__(self, cfg: WorkerConfig) -> None:
        self.cfg = cfg
        self.backoff = cfg.backoff or Backoff()
        self.ray_version = local_ray_version()
        self.node: RayNode | None = None
        self.joined: HeadInfo | None = None
        self.last_answer = time.monotonic()
        self._last_logged: tuple[Action, str] | None = None
        self._waiting_logged = False
        self._generation: str | None = None  # the last generation seen in the file

    # -- the loop ----------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        log.info("argus worker %s watching %s (Ray %s)", self.cfg.name, self.cfg.discovery, self.ray_version)
        try:
            while not stop.is_set():
                try:
                    self.step()
                except Exception:  # noqa: BLE001 - a watchdog that dies heals nothing; log and go on
                    log.exception("watchdog step failed")
                stop.wait(self.cfg.poll_s)
        finally:
            agent_client.release(self.cfg.state_dir, stop_tasks=not self.cfg.keep_training_on_stop)
            self.leave("the worker is stopping")
            temp_dir = ray_temp_dir(self.cfg.state_dir)
            if temp_dir.is_symlink():  # the short alias of a long state dir (see ray_temp_dir)
                temp_dir.unlink()

    def step(self) -> Decision:
        now = time.monotonic()
        alive = self.node is not None and self.node.running
        if alive:
            snapshot_descendants(self.node)  # so that a dead raylet's leftovers can be found and killed
        elif self.node is not None:
            log.warning("the raylet exited (code %s); see %s", self.node.proc.returncode if self.node.proc else None,
                        self.node.log_path)
            self.backoff.ended(now)
            stop_node(self.node)  # SIGKILL what its group left behind
            self.node = None
        head, problem = self._read()
        if head is not None and head.generation != self._generation:
            self._generation = head.generation
            self.backoff.reset(now)
        if head is not None and alive and self._probe(head):
            self.last_answer = now
        decision = decide(Observation(head=head, raylet_alive=alive, joined=self.joined,
                                      head_silent_s=now - self.last_answer if alive else 0.0,
                                      local_ray_version=self.ray_version, problem=problem),
                          silence_limit_s=self.cfg.silence_limit_s)
        self._log(decision)
        if decision.action in (Action.LEAVE, Action.REJOIN):
            self.leave(decision.reason)
        if decision.action in (Action.JOIN, Action.REJOIN):
            assert head is not None
            if self.backoff.ready(time.monotonic()):
                self.join(head)
            elif not self._waiting_logged:
                self._waiting_logged = True
                log.info("next join attempt in %.0f s (%d quick failures)",
                         self.backoff.next_at - time.monotonic(), self.backoff.failures)
        return decision

    # -- actions -----------------------------------------------------------------------------

    def join(self, head: HeadInfo) -> None:
        cfg = self.cfg
        temp_dir = ray_temp_dir(cfg.state_dir)
        try:
            env = cfg.node_env()
            # the node agent owns the tasks (nodes/agent.py): a raylet that leaves or dies does not take them along
            agent_client.ensure_running(cfg.state_dir, keeper=os.getpid())
        except (jail.JailError, ray_auth.NoRayToken, agent_client.AgentError) as e:  # not joining without auth or sandbox: retry with back-off, the log says why
            log.error("cannot join: %s", e)
            now = time.monotonic()
            self.backoff.started(now)
            self.backoff.ended(now)
            return
        argv = [
            *ray_start(), "--block", "--disable-usage-stats", f"--address={head.gcs_address}",
            f"--resources={json.dumps({'worker_node': cfg.capacity})}", f"--node-name={cfg.name}",
            f"--temp-dir={temp_dir}",
            *([f"--num-gpus={cfg.gpus}"] if cfg.gpus is not None else []),
            *([f"--num-cpus={cfg.cpus}"] if cfg.cpus is not None else []),
        ]
        if head.hostname == socket.gethostname():
            # A second raylet next to the head's: the default agent port is taken (else a 6 s start and no
            # job logs from this node) and a second log monitor would duplicate every driver's output.
            argv += ["--dashboard-agent-listen-port=0", "--include-log-monitor=false"]
        self.node = RayNode(cfg.name, argv, env, cfg.state_dir / "ray-logs" / f"worker-{cfg.name}.log")
        log.info("starting raylet: %s (log %s)", " ".join(argv), self.node.log_path)
        spawn_node(self.node)
        self.joined = head
        now = time.monotonic()
        self.last_answer = now  # the silence clock restarts with every join
        self.backoff.started(now)
        self._waiting_logged = False

    def leave(self, reason: str) -> None:
        if self.node is None:
            return
        if self.node.running:
            # Ray 2.60 drains a node on SIGTERM for up to 30 s by asking the GCS; with the head gone that
            # only hangs, so the raylet then gets 1 s before SIGKILL.
            grace = 15.0 if self.joined is not None and self._probe(self.joined) else 1.0
            log.info("stopping the raylet: %s", reason)
            stop_node(self.node, grace_s=grace)
            self.backoff.ended(time.monotonic(), deliberate=True)
        self.node = None
        self.joined = None

    # -- observations ------------------------------------------------------------------------

    def _read(self) -> tuple[HeadInfo | None, str | None]:
        try:
            return read_discovery(self.cfg.discovery), None
        except DiscoveryError as e:
            return None, str(e)

    def _probe(self, head: HeadInfo) -> bool:
        """Does the head's GCS accept a TCP connection? (cheap, and what a raylet needs first)."""
        try:
            with socket.create_connection(head.gcs_host_port, timeout=self.cfg.probe_timeout_s):
                return True
        except OSError:
            return False

    def _log(self, decision: Decision) -> None:
        key = (decision.action, decision.reason)
        if key != self._last_logged:
            self._last_logged = key
            level = logging.WARNING if decision.action in (Action.REJOIN, Action.LEAVE) else logging.INFO
            log.log(level, "%s: %s", decision.action.value, decision.reason)
