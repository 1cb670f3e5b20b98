"""The embedded Ray cluster of ``argus up`` (and of the test suites): a head plus worker raylets on this host.

Why it is built this way:

* The head advertises no GPUs, no CPUs and no ``worker_node`` resource, and drivers ask for
  ``worker_node: 1``, so no driver — and no actor a trainer starts — runs on the head.
* The cluster is the platform's fabric only (issue 21): it runs launchers, never a task's own
  processes (those run in per-task sandboxes with a private Ray, ``argus.launcher.jail``). It
  uses Ray's token auth (``RAY_AUTH_MODE=token``, the token in ``<root>/.argus``, which no
  sandbox shows), its head runs no Ray Client server (``argus.nodes.ray_node``), and every
  node starts with a cleared environment (``core.envvars.NODE_ENV_KEEP``): the server's own
  variables — the admin token, a database password — never reach a launcher or a task.
* Every node is one ``ray start --block`` process started in its own session. That process is the
  node's handle: its process group holds the GCS/raylet/dashboard/agents, and on SIGTERM it shuts
  its node down. ``stop()`` therefore ends exactly what this object started. ``ray stop`` is never
  used: it kills every Ray process of the user on the host (other clusters, other test sessions).
* Extra worker raylets on one host need ``--dashboard-agent-listen-port=0`` (else a 6 s start and no
  job logs from that node) and ``--include-log-monitor=false`` (else duplicated output). The head
  uses a random agent port too, so two embedded clusters on one host never collide on 52365.
* The dashboard (Jobs API) binds to loopback, and answers only the token.
* Health checks every 1 s with 3 misses on the head: a dead worker is DEAD after ~3 s instead of
  ~13 s, so a lost task is noticed and retried quickly.
* Ray's own ports (GCS, dashboard, client server) are the ones asked for (flag, ``ARGUS_*``), else
  free ones picked here outside Ray's worker port range, so a Ray left running, another user's Ray or
  a second ``argus up`` never collide with this one. ``argus head`` keeps 6380 for the GCS unless told
  otherwise: workers' firewalls are opened for it. A port asked for that is taken is refused in one
  line naming the flag, before anything starts.
* A ``kill -9`` of ``argus up`` leaves every node running (own sessions). The cluster is therefore
  recorded in ``<state_dir>/embedded-ray.json`` while it runs, and the next start adopts it or
  stops it (``take_over_leftover``, rules in ``nodes/leftover.py``).
* Ray puts unix sockets under ``<temp>/session_<date>_<pid>/sockets/``; a socket path must fit in
  107 bytes, so a long state directory is reached through a short symlink (see ``ray_temp_dir``).
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psutil

from argus.core.envvars import NODE_ENV_KEEP, env_kept
from argus.launcher import jail, ray_auth
from argus.launcher.private_ray import MAX_ATTEMPTS, MIN_ATTEMPT_S, StartBudget, backoff_s, transient_reason
from argus.launcher.task_sandbox import free_ports
from argus.nodes import agent, agent_client, cgroups, leftover
from argus.nodes.paths import AgentPaths
from argus.settings import RAY_PORT_FIELDS, RAY_WORKER_PORTS, Settings

log = logging.getLogger(__name__)

# Ray's memory monitor kills the biggest Ray worker of a node whose *host* memory is over 95 % used. On a platform
# node those are JobSupervisors and launchers' Ray jobs; the tasks' own processes are the node agent's, each
# bounded by its cgroup (launcher/task_bounds.py). Measured on a host near its memory (bench/outage_multinode.py):
# it killed a task's JobSupervisor, and Ray called the task FAILED while its launcher trained on. Off on the
# platform's Ray; a task's private Ray keeps its own monitor (the sandbox's environment does not carry RAY_*).
PLATFORM_RAY_TUNING = {"RAY_memory_monitor_refresh_ms": "0"}

HOST = "127.0.0.1"
# Ray appends about 65 bytes (session_<date>_<pid>/sockets/plasma_store.N) to the temp dir;
# unix socket paths are limited to 107 bytes.
MAX_TEMP_DIR_LEN = 40


class LocalClusterError(RuntimeError):
    """The embedded cluster could not start (the message, one line, says why and where the log is)."""


# What each Ray port is called and how a user changes it: `argus up` flags, `argus head` flags, setting
_PORTS = {
    "ray_head_port": ("Ray GCS", "--ray-port", "--ray-port"),
    "ray_dashboard_port": ("Ray dashboard", "--ray-dashboard-port", "--dashboard-port"),
    "ray_client_server_port": ("Ray client server", "--ray-client-port", None),
}


def port_hint(settings: Settings, name: str) -> str:
    """How to choose another value for a Ray port setting, e.g. ``--ray-port N (ARGUS_RAY_HEAD_PORT)``."""
    _, up_flag, head_flag = _PORTS[name]
    flag = up_flag if settings.mode == "embedded" else head_flag
    env = f"ARGUS_{name.upper()}"
    return f"{flag} N ({env})" if flag else env


def port_free(port: int, host: str = "") -> bool:
    """Nothing listens on ``port`` (all interfaces by default). SO_REUSEADDR as servers set it, so a
    connection of a just-stopped run in TIME_WAIT does not count as taken."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def pick_free_ports(count: int) -> list[int]:
    """``count`` distinct free ports outside Ray's worker port range (the kernel's ephemeral range is)."""
    return free_ports(count, RAY_WORKER_PORTS)


def ray_temp_dir(state_dir: Path) -> Path:
    """Ray's temp dir: ``<state>/ray``, or a short ``/tmp/argus-<hash>`` symlink to it when that is too long."""
    target = state_dir / "ray"
    target.mkdir(parents=True, exist_ok=True)
    if len(str(target)) <= MAX_TEMP_DIR_LEN:
        return target
    link = Path("/tmp") / f"argus-{hashlib.sha1(str(target).encode()).hexdigest()[:12]}"
    if link.is_symlink() and Path(os.readlink(link)) != target:
        link.unlink()
    if not link.is_symlink():
        link.symlink_to(target, target_is_directory=True)
    return link


def ray_bin() -> str:
    """The ``ray`` script next to this interpreter (the server's venv), not whatever PATH finds."""
    candidate = Path(sys.executable).parent / "ray"
    return str(candidate) if candidate.exists() else "ray"


def ray_start() -> list[str]:
    """``ray start`` without a Ray Client server (``argus.nodes.ray_node``)."""
    return [sys.executable, "-m", "argus.nodes.ray_node", "start"]


def node_process_env(extra: dict[str, str]) -> dict[str, str]:
    """A platform node's ``ray start`` environment: the node allowlist of ours, then ``extra``.

    Every launcher and Ray daemon of the node inherits it, so nothing of the server's own
    environment (``ARGUS_ADMIN_TOKEN``, ``ARGUS_DATABASE_URL``, cloud credentials) goes there.
    """
    env = {k: v for k, v in os.environ.items() if env_kept(k, NODE_ENV_KEEP) or k in ("HOME", "USER", "LOGNAME")}
    # Ray ≥ 2.5x drains a node on SIGTERM until every worker lease is returned, up to 30 s; a node
    # running a task never gets there, so every stop ran into our kill timeout. Nothing on an Argus
    # node gains from the drain (the tasks' launchers end with the node either way): stop at once.
    env.update(RAY_USAGE_STATS_ENABLED="0", RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S="0", **extra)
    return env


@dataclass
class RayNode:
    """One ``ray start --block`` process and what is needed to start it again."""

    name: str
    argv: list[str]
    env: dict[str, str]
    log_path: Path
    proc: subprocess.Popen[bytes] | None = None
    node_id: str | None = None
    descendants: dict[int, float] = field(default_factory=dict)  # pid -> create time
    # the ``ray start`` process: ``proc``'s, or one adopted from an earlier ``argus up`` (not our child)
    pid: int | None = None
    created: float | None = None
    cmdline: list[str] = field(default_factory=list)  # as the kernel shows it (a ``ray`` script: python first)

    @property
    def running(self) -> bool:
        if self.proc is not None:
            return self.proc.poll() is None
        if self.pid is None or self.created is None:
            return False
        return leftover.process_of(self.record()) is not None

    def record(self) -> leftover.NodeRecord:
        if not self.cmdline and self.proc is not None and self.proc.poll() is None:
            try:
                self.cmdline = psutil.Process(self.proc.pid).cmdline()
            except psutil.Error:
                pass
        return leftover.NodeRecord(self.name, self.pid or 0, self.created or 0.0, self.argv, self.node_id,
                                   self.cmdline)


POLL_S = 0.25  # a start or join takes seconds; each look asks the dashboard's state API, which costs it CPU


class LocalCluster:
    """Start/stop a head and worker raylets on this host; the addresses drivers and clients need."""

    def __init__(self, settings: Settings, *, timeout_s: float = 120.0) -> None:
        self.settings = settings
        self.timeout_s = timeout_s
        # The address other machines reach the GCS on (``argus head``); loopback for ``argus up``.
        self.host = settings.advertise_address or HOST
        self.temp_dir = ray_temp_dir(settings.state_dir)
        self.log_dir = settings.state_dir / "ray-logs"
        self._choose_ports()
        self.head: RayNode | None = None
        self.workers: dict[str, RayNode] = {}
        self.node_env = self._node_env()
        self.record_path = leftover.record_path(settings.state_dir)
        self.adopted = False

    @functools.cached_property
    def _http(self) -> httpx.Client:
        """One client for every poll of the dashboard, made at the first: ``httpx.get`` builds a client and its
        SSL context per call, ~30 ms of CPU, which was most of what a start cost this process on a loaded
        machine (a cluster only asked about its ports never makes one)."""
        return httpx.Client(timeout=5)

    def _node_env(self) -> dict[str, str]:
        """What every node's ``ray start`` adds to its environment: token auth, the sandbox config, and Ray's
        memory monitor off (``PLATFORM_RAY_TUNING``)."""
        s = self.settings
        token = ray_auth.ensure_ray_token(s.root)  # embedded and head: this machine owns the token
        s.ray_auth_token = s.ray_auth_token or token
        return {**PLATFORM_RAY_TUNING, **ray_auth.platform_ray_env(s.root),
                **jail.node_env(mode=s.task_jail, data_root=s.root, state_dir=s.state_dir, python=s.train_python),
                agent_client.AGENT_ENV: str(AgentPaths(s.state_dir).socket)}

    def _ensure_agent(self) -> None:
        """The node agent that owns the tasks' processes (nodes/agent.py): started if none answers, with this
        process as its keeper. Its socket is in every worker's environment already (``_node_env``)."""
        agent_client.ensure_running(self.settings.state_dir, keeper=os.getpid(), python=self.settings.launcher_python)

    @property
    def auth_headers(self) -> dict[str, str]:
        """``Authorization`` for the dashboard's REST API (Jobs, state)."""
        return {"Authorization": f"Bearer {self.settings.ray_auth_token}"}

    def _choose_ports(self) -> None:
        """Free ports for the Ray ports nobody asked for (``argus head`` keeps its documented GCS port)."""
        s = self.settings
        pick = [name for name in RAY_PORT_FIELDS if not s.port_given(name) and self._pickable(name)]
        for name, port in zip(pick, pick_free_ports(len(pick)), strict=True):
            setattr(s, name, port)
        self.picked_ports = set(pick)

    def _pickable(self, name: str) -> bool:
        return not (name == "ray_head_port" and self.settings.mode == "cluster")

    def _check_ports(self) -> None:
        """A Ray port that is taken is refused in one line naming the flag, before ``ray start`` fails on it."""
        s = self.settings
        for name in RAY_PORT_FIELDS:
            port = getattr(s, name)
            if port_free(port):
                continue
            fix = f"choose another with {port_hint(s, name)}"
            if name not in self.picked_ports and self._pickable(name):
                fix += ", or leave it unset to have a free one picked"
            raise LocalClusterError(f"port {port} ({_PORTS[name][0]}) is already in use on this machine "
                                    f"({_holder(port) or 'a Ray left running, or another user'}?); {fix}")

    @property
    def gcs_address(self) -> str:
        """Give this to drivers as ``RAY_ADDRESS``: with two clusters on one host ``auto`` may pick the wrong one."""
        return f"{self.host}:{self.settings.ray_head_port}"

    @property
    def dashboard_url(self) -> str:
        return f"http://{HOST}:{self.settings.ray_dashboard_port}"

    def __enter__(self) -> LocalCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """Head, then one worker with ``settings.worker_gpus`` GPUs (Ray detects them when None);
        nothing when ``take_over_leftover`` adopted a running cluster (it is recorded as ours now)."""
        if self.adopted:
            self._ensure_agent()
            self._save_record()
            return
        try:
            self.start_head()
            self.add_worker("worker-1", gpus=self.settings.worker_gpus)
        except BaseException:
            self.stop()
            raise

    def start_head(self) -> RayNode:
        s = self.settings
        self._check_ports()
        argv = [
            *ray_start(), "--head", "--block", "--disable-usage-stats",
            f"--port={s.ray_head_port}",
            f"--dashboard-host={HOST}", f"--dashboard-port={s.ray_dashboard_port}",
            f"--ray-client-server-port={s.ray_client_server_port}",
            "--dashboard-agent-listen-port=0", "--num-gpus=0", "--num-cpus=0", f"--temp-dir={self.temp_dir}",
            *([f"--node-ip-address={self.host}"] if self.host != HOST else []),
        ]
        env = {"RAY_health_check_period_ms": "1000", "RAY_health_check_failure_threshold": "3", **self.node_env}
        self.head = RayNode("head", argv, env, self.log_dir / "head.log")
        started = time.monotonic()
        head = self.head

        def ready() -> bool:
            if not self._answers(f"{self.dashboard_url}/api/jobs/"):
                return False
            head.node_id = next((n["node_id"] for n in self._nodes() if n.get("is_head_node")), None)
            return head.node_id is not None

        self._start_node(head, ready, "the Jobs API to answer", before_retry=self._ports_released)
        self._save_record()
        log.info("Ray head up in %.1f s: %s", time.monotonic() - started, self.dashboard_url)
        return self.head

    def add_worker(self, name: str | None = None, *, gpus: int | None = None, cpus: int | None = None) -> RayNode:
        """Join another worker raylet (same host) advertising ``worker_node`` and ``gpus`` (logical) GPUs."""
        if self.head is None:
            raise LocalClusterError("start the head first")
        name = name or f"worker-{len(self.workers) + 1}"
        if name in self.workers and self.workers[name].running:
            raise LocalClusterError(f"{name} is already running")
        argv = [
            *ray_start(), "--block", "--disable-usage-stats",
            f"--address={self.gcs_address}",
            f"--resources={json.dumps({'worker_node': self.settings.worker_node_capacity})}",
            "--dashboard-agent-listen-port=0", "--include-log-monitor=false", f"--temp-dir={self.temp_dir}",
            *([f"--num-gpus={gpus}"] if gpus is not None else []),
            *([f"--num-cpus={cpus}"] if cpus is not None else []),
        ]
        self._ensure_agent()
        node = RayNode(name, argv, dict(self.node_env), self.log_dir / f"{name}.log")
        self.workers[name] = node
        self._join(node)
        return node

    def kill_worker(self, name: str) -> None:
        """SIGKILL a worker's raylet and agents, as if the machine died: the attempts the node agent runs for that
        node die with it (one agent serves every embedded worker, so it is asked which are that node's)."""
        node = self.workers[name]
        _kill_group(node, signal.SIGKILL)
        if node.proc is not None:
            node.proc.wait(10)
        if node.node_id:
            self._kill_attempts_placed_on(node.node_id)

    def _kill_attempts_placed_on(self, node_id: str) -> None:
        try:
            listed = agent_client.request(AgentPaths(self.settings.state_dir).socket, "list", timeout_s=10)
        except agent_client.AgentError:
            return  # no agent: the attempts were the raylet's children and died with it
        layout = cgroups.detect()
        for att in listed.get("attempts", []):
            if not att.get("running") or att.get("node_id") != node_id:
                continue
            if layout is not None and att.get("cgroup"):
                cgroups.Group(layout, att["cgroup"]).kill()
                continue
            if not agent.same_process(int(att["pid"]), float(att.get("create_time") or 0)):
                continue  # ended meanwhile, its pid perhaps reused: never signal anything else
            try:
                root = psutil.Process(int(att["pid"]))
                for proc in [*root.children(recursive=True), root]:
                    proc.kill()
            except psutil.Error:
                pass

    def restart_worker(self, name: str) -> RayNode:
        """Start a killed worker again with the same arguments; Ray gives it a new node id."""
        node = self.workers[name]
        if node.running:
            raise LocalClusterError(f"{name} is still running")
        self._join(node)
        return node

    def stop(self) -> None:
        """The node agent's tasks (stopped, or left training with ``keep_training_on_stop``), then the workers,
        then the head: SIGTERM each ``ray start``, then SIGKILL whatever it left."""
        if self.workers:
            agent_client.release(self.settings.state_dir, stop_tasks=not self.settings.keep_training_on_stop)
        nodes = [*self.workers.values(), *([self.head] if self.head else [])]
        for node in nodes:
            snapshot_descendants(node)
        for node in nodes:
            stop_node(node)
        self.record_path.unlink(missing_ok=True)
        self.adopted = False
        if self.temp_dir.is_symlink():
            self.temp_dir.unlink()

    # -- helpers -----------------------------------------------------------------------------

    def _join(self, node: RayNode) -> None:
        known = {n["node_id"] for n in self._nodes()}
        started = time.monotonic()

        def joined() -> bool:
            new = [n for n in self._nodes() if n["node_id"] not in known and n.get("state") == "ALIVE"
                   and "worker_node" in (n.get("resources_total") or {})]
            if new:
                node.node_id = new[0]["node_id"]
            return bool(new)

        # a failed attempt's node may still be listed ALIVE for a few health checks after it was stopped
        self._start_node(node, joined, "the node to join",
                         before_retry=lambda: known.update(n["node_id"] for n in self._nodes()))
        self._save_record()
        log.info("Ray %s joined in %.1f s (node %s)", node.name, time.monotonic() - started, node.node_id)

    def _start_node(self, node: RayNode, ready: Callable[[], bool], what: str,
                    before_retry: Callable[[], None]) -> None:
        """Spawn ``node`` and wait until ``ready()``. On a loaded machine Ray's fixed start-up waits run out (30 s
        for the raylet to register, ~15 s for its agents' ports) and the node exits, or it is not ready in time:
        such a start is stopped and made again after a back-off, each retry logged with its reason, up to
        ``MAX_ATTEMPTS`` within ``timeout_s`` × 2.5 stretched by the load (``private_ray.StartBudget``). Any other
        failure is raised at once. ``before_retry`` runs after the failed attempt was stopped."""
        budget = StartBudget(self.timeout_s * 2.5, self.timeout_s)
        for attempt in itertools.count(1):
            offset = node.log_path.stat().st_size if node.log_path.exists() else 0
            spawn_node(node)
            timeout = budget.attempt_s()
            try:
                self._wait(node, ready, what, timeout)
                return
            except LocalClusterError as e:
                if node.running:
                    reason: str | None = f"not ready in {timeout:.0f} s"
                else:
                    assert node.proc is not None
                    reason = transient_reason(_read_from(node.log_path, offset), node.proc.returncode)
                pause = backoff_s(attempt)
                if reason is None or attempt >= MAX_ATTEMPTS or budget.left() < pause + MIN_ATTEMPT_S:
                    raise LocalClusterError(f"{e}{f' (attempt {attempt})' if attempt > 1 else ''}") from None
                log.warning("Ray %s did not start, attempt %d: %s (load %.1f); stopping it, trying again in %.0f s",
                            node.name, attempt, reason, os.getloadavg()[0], pause)
            stop_node(node)
            time.sleep(pause)
            before_retry()

    def _ports_released(self, timeout_s: float = 30.0) -> None:
        """Before the head's next attempt: until its Ray ports are free again (its killed processes close them as
        they go: on a loaded machine, with its disk busy, a killed dashboard took over 10 s), then the check of a
        first start, which refuses a port that another process took meanwhile."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and not all(port_free(getattr(self.settings, n)) for n in RAY_PORT_FIELDS):
            time.sleep(0.2)
        self._check_ports()

    def _wait(self, node: RayNode, ready, what: str, timeout_s: float) -> None:  # noqa: ANN001 - a predicate
        deadline = time.monotonic() + timeout_s
        while not ready():
            if not node.running:
                why = _last_error(node.log_path)
                raise LocalClusterError(f"Ray {node.name} exited while waiting for {what}"
                                        f"{f' ({why})' if why else ''}; see {node.log_path}")
            if time.monotonic() > deadline:
                raise LocalClusterError(f"Ray {node.name}: still waiting for {what} after {timeout_s:.0f} s; "
                                        f"see {node.log_path}")
            time.sleep(POLL_S)

    # -- the record of a running cluster, and the one an earlier run left -------------------

    def _save_record(self) -> None:
        s = self.settings
        nodes = [n.record() for n in (self.head, *self.workers.values()) if n is not None and n.pid]
        leftover.save(self.record_path, leftover.RayRecord(
            owner_pid=os.getpid(), state_dir=str(s.state_dir), mode=s.mode, host=self.host,
            ports={name: getattr(s, name) for name in RAY_PORT_FIELDS}, temp_dir=str(self.temp_dir),
            session_dir=leftover.session_dir(self.temp_dir), jail_digest=leftover.jail_digest(self.node_env),
            jail_env=self.node_env, worker_gpus=s.worker_gpus, ray_version=_ray_version(), nodes=nodes))

    def take_over_leftover(self) -> str | None:
        """Adopt the cluster an earlier run in this state dir left running, or stop it (see ``leftover``).

        Call before anything reads the Ray ports: adopting sets them to the recorded ones. Returns the
        one line logged, or None when nothing was left. Only ``argus up`` adopts; ``argus head``
        always starts a new head generation, so it stops a leftover head.
        """
        record = leftover.load(self.record_path)
        if record is None:
            return None
        why_not = self._why_not_adopt(record)
        if why_not is None:
            self._adopt(record)
            line = (f"embedded Ray: adopted the cluster left running by pid {record.owner_pid} "
                    f"(GCS {self.gcs_address}, dashboard {self.dashboard_url}); it stops with this server")
        else:
            killed = leftover.stop_leftover(record)
            leftover.wait_gone(record)
            self.record_path.unlink(missing_ok=True)
            line = (f"embedded Ray: not adopting the cluster left by pid {record.owner_pid} ({why_not}); "
                    f"stopped {killed} leftover process(es), starting a fresh one")
        log.info("%s", line)
        return line

    def _why_not_adopt(self, record: leftover.RayRecord) -> str | None:
        """None when the recorded cluster is ours and healthy; otherwise the reason, for the log."""
        s = self.settings
        if s.mode != "embedded" or record.mode != "embedded":
            return "argus head starts a new head generation"
        if record.state_dir != str(s.state_dir) or record.temp_dir != str(self.temp_dir):
            return f"recorded for another state dir ({record.state_dir})"
        asked = [n for n in RAY_PORT_FIELDS
                 if n not in self.picked_ports and s.port_given(n) and getattr(s, n) != record.ports.get(n)]
        if asked:
            return f"{', '.join(asked)} asked for differs from the recorded port"
        if record.worker_gpus != s.worker_gpus:
            return f"it has --gpus {record.worker_gpus}, asked for {s.worker_gpus}"
        if record.ray_version != _ray_version():
            return f"it runs Ray {record.ray_version}, this is Ray {_ray_version()}"
        if record.jail_digest != leftover.jail_digest(self.node_env) or record.jail_env != self.node_env:
            return "its node setup (token auth, sandbox) differs"
        if record.node("head") is None or record.node("worker-1") is None:
            return "the record lacks the head or the worker"
        for node in record.nodes:
            proc = leftover.process_of(node)
            if proc is None:
                return f"its {node.name} (pid {node.pid}) is gone or the pid is another process now"
            if node.argv[:len(ray_start())] != ray_start():
                return f"its {node.name} was not started as {' '.join(ray_start()[-3:])}"
            if not leftover.env_matches(proc, self.node_env):
                return f"its {node.name} runs without this node setup (token auth, sandbox)"
        if record.session_dir is None or leftover.session_dir(self.temp_dir) != record.session_dir:
            return "its Ray session is not the latest in the temp dir"
        alive = {n["node_id"] for n in self._nodes_at(record.ports["ray_dashboard_port"]) if n.get("state") == "ALIVE"}
        missing = [n.name for n in record.nodes if n.node_id not in alive]
        if missing:
            return f"Ray does not report {', '.join(missing)} alive"
        return None

    def _adopt(self, record: leftover.RayRecord) -> None:
        for name, port in record.ports.items():
            setattr(self.settings, name, port)
        self.picked_ports = set()
        for node in record.nodes:
            rn = RayNode(node.name, node.argv, dict(self.node_env), self.log_dir / f"{node.name}.log",
                         node_id=node.node_id, pid=node.pid, created=node.created, cmdline=node.cmdline)
            if node.name == "head":
                self.head = rn
            else:
                self.workers[node.name] = rn
        self.adopted = True

    def _answers(self, url: str) -> bool:
        try:
            return self._http.get(url, timeout=2, headers=self.auth_headers).status_code == 200
        except httpx.HTTPError:
            return False

    def _nodes_at(self, dashboard_port: int) -> list[dict]:
        try:
            r = self._http.get(f"http://{HOST}:{dashboard_port}/api/v0/nodes", params={"limit": 10000},
                               headers=self.auth_headers)
            r.raise_for_status()
            return r.json()["data"]["result"]["result"]
        except (httpx.HTTPError, KeyError, ValueError):
            return []

    def _nodes(self) -> list[dict]:
        try:
            r = self._http.get(f"{self.dashboard_url}/api/v0/nodes", params={"limit": 10000},
                               headers=self.auth_headers)
            r.raise_for_status()
            return r.json()["data"]["result"]["result"]
        except (httpx.HTTPError, KeyError, ValueError):
            return []


def spawn_node(node: RayNode) -> None:
    """Start a node's ``ray start --block`` in its own session, output appended to its log."""
    node.log_path.parent.mkdir(parents=True, exist_ok=True)
    env = node_process_env(node.env)
    with open(node.log_path, "ab") as out:
        node.proc = subprocess.Popen(node.argv, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                     stderr=subprocess.STDOUT, start_new_session=True)
    node.descendants = {}
    node.pid = node.proc.pid
    node.cmdline = []  # read once it runs (``record``): right after Popen the kernel may still show none
    try:
        node.created = psutil.Process(node.pid).create_time()
    except psutil.Error:  # already gone: the wait for it reports why
        node.created = None


def _holder(port: int) -> str | None:
    """"held by pid N (name)" for a TCP port some process listens on, when this account may see it."""
    try:
        for c in psutil.net_connections(kind="tcp"):
            if c.laddr and c.laddr.port == port and c.status == psutil.CONN_LISTEN and c.pid:
                try:
                    return f"held by pid {c.pid} ({psutil.Process(c.pid).name()})"
                except psutil.Error:
                    return f"held by pid {c.pid}"
    except (psutil.Error, OSError):
        pass
    return None


def stop_node(node: RayNode, grace_s: float = 15.0) -> None:
    """SIGTERM the ``ray start`` (it shuts its node down), then SIGKILL whatever of it is left."""
    snapshot_descendants(node)
    if node.running:
        if node.proc is not None:
            node.proc.send_signal(signal.SIGTERM)
            try:
                node.proc.wait(grace_s)
            except subprocess.TimeoutExpired:
                log.warning("Ray %s did not stop in %.0f s; killing it", node.name, grace_s)
        else:  # adopted: not our child, so wait on it through psutil
            proc = leftover.process_of(node.record())
            if proc is not None:
                proc.send_signal(signal.SIGTERM)
                if leftover.wait_exit([proc], grace_s):
                    log.warning("Ray %s did not stop in %.0f s; killing it", node.name, grace_s)
    _kill_group(node, signal.SIGKILL)
    if node.proc is not None:
        node.proc.wait(10)


def snapshot_descendants(node: RayNode) -> None:
    """Remember every process below a node's ``ray start``: Ray workers and job drivers leave its group."""
    if not node.running or node.pid is None:
        return
    try:
        children = psutil.Process(node.pid).children(recursive=True)
    except psutil.Error:
        return
    for child in children:
        try:
            node.descendants[child.pid] = child.create_time()
        except psutil.Error:
            pass


def _kill_group(node: RayNode, sig: signal.Signals) -> None:
    """Signal a node's process group and the descendants seen before; never anything else."""
    snapshot_descendants(node)
    if node.proc is not None or node.running:  # an adopted node's group only while it is still that process
        assert node.pid is not None
        try:
            os.killpg(node.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
    for pid, created in node.descendants.items():
        try:
            proc = psutil.Process(pid)
            if proc.create_time() == created:  # the same process, not a reused pid
                proc.send_signal(sig)
        except psutil.Error:
            pass


def _ray_version() -> str:
    from importlib.metadata import version

    return version("ray")


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def _read_from(path: Path, offset: int) -> str:
    """What a node's log got from ``offset`` on: one start's output (the log is appended to by every start)."""
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def _last_error(path: Path, limit: int = 200) -> str:
    """The last line of a node's log that names an error (Ray ends a failed start with one: an ``Exception:`` for
    its start-up timeouts), shortened."""
    lines = [line.strip() for line in _tail(path, 60).splitlines() if line.strip()]
    found = next((line for line in reversed(lines) if any(w in line for w in ("Error", "error", "Exception"))), "")
    return found if len(found) <= limit else found[: limit - 1] + "…"


class EmbeddedRay:
    """The server ``Component`` of ``argus up``: the local cluster starts first and stops last.

    Start and stop run on the event loop's thread on purpose: Ctrl-C (or SIGTERM) during the
    start then interrupts ``LocalCluster.start``, which stops what it already started, instead of
    leaving a thread that keeps starting raylets after the process decided to exit.
    """

    name = "ray"

    def __init__(self, cluster: LocalCluster, announce: Callable[[str], None] = print) -> None:
        self.cluster = cluster
        self.announce = announce

    async def start(self) -> None:
        previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
        try:
            self.cluster.start()
        finally:
            signal.signal(signal.SIGTERM, previous)
        adopted = ", adopted from the previous run" if self.cluster.adopted else ""
        self.announce(f"Ray dashboard: {self.cluster.dashboard_url}  (GCS {self.cluster.gcs_address}, "
                      f"logs {self.cluster.log_dir}{adopted})")

    async def stop(self) -> None:
        self.cluster.stop()
