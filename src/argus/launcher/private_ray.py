"""Inside a task's sandbox: start the task's own Ray cluster, then run the task's command against it.

    python -I private_ray.py [--head PORT --client-port PORT --cpus N --gpus N [--memory B]
                              [--object-store B] [--node-ip IP]] -- argv...
    python -I private_ray.py --join HEAD_ADDRESS --cpus N --gpus N [--memory B] [--node-ip IP]

Why a private cluster (issue 21): verl sizes and places its worker groups from
``ray.available_resources()`` and assumes it owns its cluster, and a Ray cluster is one
trust domain (whoever reaches its GCS can list, kill and start anything in it). So each
task gets a Ray of its own, started here, inside the sandbox, from the training
environment's Ray:

* its resources are exactly the task's share on this node (``--num-cpus/--num-gpus/--memory``), and
  ``worker_node``, as on the platform's worker nodes;
* its session, sockets and worker logs live in the sandbox's private ``/tmp``;
* it uses token auth with a token made for this task alone (``RAY_AUTH_TOKEN``, set by the
  launcher), so another task on the same network cannot join or drive it;
* no autoscaler monitor, and no dashboard unless the platform offers one to owners
  (``task_ray_dashboard``; ``--dashboard-port``): ~370 MB instead of ~590 MB (bench/overhead.py);
* no Prometheus endpoint (``RAY_NO_METRICS``): Ray serves its metrics without a token on every address, so
  another task could read this one's (and the CPU they cost is saved);
* the command gets ``RAY_ADDRESS`` pointing at it, so verl's ``ray.init(address="auto")`` and
  a plain ``ray.init()`` both attach to it, never to the platform's.

Nothing stops the cluster at the end: this process is the sandbox's main process, and when
it exits the kernel ends every process of the sandbox's PID namespace, Ray's daemons too
(without a sandbox, ``end_descendants`` kills every process below this one, its subreaper).
Standard library only, run with ``-I``: it runs in the training environment, whatever that has.

A loaded machine: Ray's own start-up waits are fixed (30 s for the raylet to register with the
GCS, ~15 s for the raylet to see its agents' ports) and cannot be lengthened from outside. Under
20 CPU burners on 2 cores one start alone is up in about a minute, but starts side by side miss
them ("The current node timed out during startup"): 4 at once failed every attempt for 15 minutes,
retries and all, since each attempt of one slowed the others'. So on a loaded machine (and for
any retry) a start waits for its turn: one ``ray start`` at a time on the machine (``start_turn``).
A start that failed for a transient reason (``transient_reason``: Ray's waits ran out, it hung, a
port was taken meanwhile) is cleaned up — every process below this one killed — and made again
after a back-off, each retry said in the task's log, within a total time that stretches with the
load (``StartBudget``). Any other failure (no Ray in the environment, a bad argument, GPUs that are
not there) is reported at once.
"""

from __future__ import annotations

import argparse
import ctypes
import fcntl
import itertools
import os
import random
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

START_LOG = Path("/tmp/argus-private-ray.log")
RAY_TEMP = "/tmp/ray"
# One ``ray start`` takes ~5 s on an idle machine. These hold where at most one process per core is runnable and
# stretch with the load (load_scale): one attempt, and every attempt of one start together.
START_TIMEOUT_S = 120.0
START_DEADLINE_S = 300.0
MAX_LOAD_SCALE = 3.0  # no longer past 3 runnable processes per core: a node that slow should fail, not hang
MAX_ATTEMPTS = 6
MIN_ATTEMPT_S = 30.0  # an attempt with less time left than this cannot succeed on a loaded machine: give up
BACKOFF_S, BACKOFF_MAX_S, JOIN_BACKOFF_MAX_S = 2.0, 30.0, 10.0
# What ``ray start`` prints when it lost a race against a loaded machine rather than met a mistake: one of Ray's
# fixed start-up waits ran out, or a port picked free was taken before Ray bound it (``claim_ports``).
TRANSIENT = (
    ("timed out during startup", "the raylet did not register in Ray's 30 s"),
    ("Timed out waiting for", "a Ray daemon did not come up within Ray's fixed wait"),
    ("Failed to start GCS", "the GCS did not start in time"),
    ("Failed to connect to GCS", "the GCS did not answer in time"),
    ("Failed to get head node info", "the GCS did not answer in time"),
    ("may not have started successfully", "the head's GCS or raylet was not up yet"),
    ("GCS has become overloaded", "the GCS did not answer in time"),
    ("DEADLINE_EXCEEDED", "a Ray call timed out"),
    ("Deadline Exceeded", "a Ray call timed out"),
    ("Failed to start a dashboard", "Ray's dashboard did not come up in time"),
    ("already occupied", "a port of this Ray was taken meanwhile"),
    ("Address already in use", "a port of this Ray was taken meanwhile"),
)
# Another node's join fails in whatever way the head's progress allows while the head still starts, so it retries
# every failure but these, which no wait mends (exit code 2 is a usage error: a bad argument).
PERMANENT = ("No module named", "ersion mismatch")
RAY_WORKER_PORTS = (10002, 19999)  # as task_sandbox.RAY_WORKER_PORTS: never hand one of these out
# The turn of a start (start_turn): an flock on this script's folder, which every task's sandbox on the machine shows
# (read-only is enough for flock; a folder, not the file, whose inode an update of the script replaces).
TURN = Path(__file__).resolve().parent
TURN_POLL_S = 0.5
# Every node of a task's cluster is a worker node: the basic templates pin TransferQueue's storage units to nodes
# with this resource (core.builders.transfer_queue_settings, written for the platform's cluster, whose head has
# none), and TransferQueue refuses to start where no node has it (found by the first real GRPO run, issue 34).
WORKER_NODE_RESOURCE = '{"worker_node": 1}'
# The daemons a head cannot lose, by process name: either one's death ends the command's Ray for good (Ray's
# GCS fault tolerance needs an external Redis, which a task's Ray has not). Watched every WATCH_S.
RAY_DAEMONS = {"gcs_server": "GCS", "raylet": "raylet"}
WATCH_S = 1.0
EX_RAY_FAILED = 70  # EX_SOFTWARE: the platform part of the task failed, not the user's command
PR_SET_CHILD_SUBREAPER = 36
# Ray's Prometheus endpoints answer anyone who reaches the port, and Ray has no token for them: the dashboard
# agent's metrics export port (off with metrics collection: its port file then says -1) and the dashboard's own
# metrics server on a fixed port (44227; Ray logs a bind error for a port number out of range and goes on
# without it). The platform's Ray nodes get the same (launcher/jail.py: platform_ray_env).
RAY_NO_METRICS = {"RAY_enable_metrics_collection": "0", "DASHBOARD_METRIC_PORT": "65536"}


def parse_args(args: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="private_ray.py", description=__doc__.splitlines()[0])
    p.add_argument("--head", type=int, metavar="PORT", help="start a head whose GCS listens on PORT")
    p.add_argument("--client-port", type=int, help="the head's Ray Client port (ray start always opens one)")
    p.add_argument("--join", metavar="ADDRESS", help="join the task's head at ADDRESS and block (other nodes)")
    p.add_argument("--cpus", type=float, default=1)
    p.add_argument("--gpus", type=int, default=0)
    p.add_argument("--memory", type=int, default=0, help="bytes of memory Ray may hand out (0: Ray's default)")
    p.add_argument("--object-store", type=int, default=0, help="object store bytes (0: Ray's default)")
    p.add_argument("--node-ip", default="127.0.0.1", help="the address this node of the task is reached at")
    p.add_argument("--dashboard-port", type=int, default=0, help="head: run Ray's dashboard on this port (0: none)")
    p.add_argument("--wait-nodes", type=int, default=1, help="head: start the command once this many nodes joined")
    p.add_argument("argv", nargs=argparse.REMAINDER, help="-- then the command to run")
    ns = p.parse_args(args)
    if ns.argv[:1] == ["--"]:
        ns.argv = ns.argv[1:]
    if not ns.join and not ns.argv:
        p.error("no command given after --")
    return ns


def ray_start_argv(ns: argparse.Namespace) -> list[str]:
    common = [f"--num-cpus={max(int(ns.cpus), 1)}", f"--num-gpus={ns.gpus}", f"--temp-dir={RAY_TEMP}",
              f"--resources={WORKER_NODE_RESOURCE}",
              f"--node-ip-address={ns.node_ip}", "--disable-usage-stats", "--dashboard-agent-listen-port=0",
              *([f"--memory={ns.memory}"] if ns.memory else []),
              *([f"--object-store-memory={ns.object_store}"] if ns.object_store else [])]
    ray = [sys.executable, "-m", "ray.scripts.scripts", "start"]
    if ns.join:
        return [*ray, f"--address={ns.join}", "--block", *common]
    return [*ray, "--head", f"--port={ns.head}", f"--ray-client-server-port={ns.client_port}",
            *(["--include-dashboard=true", "--dashboard-host=0.0.0.0", f"--dashboard-port={ns.dashboard_port}"]
              if ns.dashboard_port else ["--include-dashboard=false"]), "--no-monitor", *common]


def load_scale() -> float:
    """How much longer than on an idle machine a start may take now: the 1-minute load average per core this
    process may run on, between 1 and MAX_LOAD_SCALE (1 where the kernel does not say)."""
    try:
        per_core = os.getloadavg()[0] / max(len(os.sched_getaffinity(0)), 1)
    except (OSError, AttributeError):
        return 1.0
    return min(max(per_core, 1.0), MAX_LOAD_SCALE)


def describe_load() -> str:
    try:
        return f"load {os.getloadavg()[0]:.1f} on {len(os.sched_getaffinity(0))} cores"
    except (OSError, AttributeError):
        return "load unknown"


def backoff_s(attempt: int, cap: float = BACKOFF_MAX_S, jitter: float | None = None) -> float:
    """The pause after failed attempt ``attempt`` (1, 2, …): BACKOFF_S doubled each time up to ``cap``, times
    0.5…1.5 at random, so that the tasks one burst started do not all try again at the same moment."""
    return min(BACKOFF_S * 2 ** (attempt - 1), cap) * (0.5 + (random.random() if jitter is None else jitter))


class StartBudget:
    """The time one start may take, all attempts together: ``base_s`` stretched by the highest load seen since it
    began (a burst of starts raises the 1-minute average only as it goes), so a slow machine gets the time and a
    broken node still fails."""

    def __init__(self, base_s: float = START_DEADLINE_S, attempt_base_s: float = START_TIMEOUT_S) -> None:
        self.base_s, self.attempt_base_s = base_s, attempt_base_s
        self.started = time.monotonic()
        self.scale = load_scale()

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def left(self) -> float:
        self.scale = max(self.scale, load_scale())
        return self.base_s * self.scale - self.elapsed()

    def attempt_s(self) -> float:
        """One attempt's time: ``attempt_base_s`` stretched the same way, never past what the whole start has left."""
        left = self.left()
        return max(min(self.attempt_base_s * self.scale, left), 1.0)


def transient_reason(output: str, returncode: int | None) -> str | None:
    """Why a failed ``ray start`` (``returncode`` None: killed when its time ran out) is worth another attempt,
    or None: a mistake that no retry mends, to be reported at once."""
    if returncode is None:
        return "ray start did not finish in time"
    if returncode < 0:
        return f"ray start was killed by signal {-returncode}"
    return next((why for needle, why in TRANSIENT if needle in output), None)


def ray_start_once(argv: list[str], timeout_s: float) -> tuple[int | None, str]:
    """One ``ray start``, its output appended to START_LOG: its exit code (None: it did not finish in ``timeout_s``
    and was killed; what it started is still running) and what this attempt printed."""
    offset = START_LOG.stat().st_size if START_LOG.exists() else 0
    with open(START_LOG, "ab") as out:
        try:
            code: int | None = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                              timeout=timeout_s).returncode
        except subprocess.TimeoutExpired:
            code = None
    with open(START_LOG, "rb") as log:
        log.seek(offset)
        return code, log.read().decode(errors="replace")


def port_taken(port: int) -> bool:
    """Something listens on ``port`` (bound with SO_REUSEADDR, as servers bind: a closed connection does not count)."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("", port))
        except OSError:
            return True
    return False


def free_port() -> int:
    """A port nobody listens on now, outside Ray's worker port range (as the launcher picks them)."""
    while True:
        with socket.socket() as sock:
            sock.bind(("", 0))
            port = sock.getsockname()[1]
        if not RAY_WORKER_PORTS[0] <= port <= RAY_WORKER_PORTS[1]:
            return port


def claim_ports(ns: argparse.Namespace) -> str | None:
    """Before each attempt, check that the head's ports are still free: the launcher picked them free, but nothing
    holds them until Ray binds them, and a process binding port 0 meanwhile may get one. A one-node task's GCS and
    client ports are then picked again (only this process tells them on); the dashboard's (recorded for the
    server's proxy) and a gang's GCS (its other nodes join there) cannot move: an error, at once."""
    for name, what in (("head", "GCS"), ("client_port", "Ray Client"), ("dashboard_port", "dashboard")):
        port = getattr(ns, name)
        if not port or not port_taken(port):
            continue
        if name == "dashboard_port" or (name == "head" and ns.wait_nodes > 1):
            return (f"port {port} ({what}) of this task's private Ray is taken by another process on this node; "
                    f"a new attempt of the task gets other ports")
        setattr(ns, name, free_port())
        print(f"[argus] port {port} ({what}) of this task's private Ray was taken by another process meanwhile; "
              f"it uses {getattr(ns, name)} instead", flush=True)
    return None


def start_turn(budget: StartBudget, attempt: int) -> tuple[int | None, str | None]:
    """On a loaded machine, or before a retry: wait until no other ``ray start`` of a task runs on this machine.
    Returns the descriptor that holds the turn (close it to pass the turn on; the kernel does when this process
    ends, however it ends) or None when no turn is needed, and why the wait gave up (the budget ran out) or None.
    The descriptor is not inherited: ``ray start``'s daemons never hold the turn."""
    if attempt == 1 and load_scale() <= 1.0:
        return None, None
    try:
        fd = os.open(TURN, os.O_RDONLY)
    except OSError:
        return None, None  # not to be seen here: start without a turn, as on an idle machine
    waiting = False
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd, None
        except BlockingIOError:
            pass
        if budget.left() < MIN_ATTEMPT_S:
            os.close(fd)
            return None, f"waited {budget.elapsed():.0f} s for other tasks' Ray starts on this machine ({describe_load()})"
        if not waiting:
            print(f"[argus] waiting for another task's Ray start on this machine to finish ({describe_load()})",
                  flush=True)
            waiting = True
        time.sleep(TURN_POLL_S)


def head_attempt(ns: argparse.Namespace, budget: StartBudget) -> tuple[str | None, str | None]:
    """One ``ray start`` of the head: (None, None) when it is up, else why not and the transient reason (or None)."""
    problem = claim_ports(ns)
    if problem:
        return problem, None
    timeout = budget.attempt_s()
    code, output = ray_start_once(ray_start_argv(ns), timeout)
    if code == 0:
        return None, None
    tail = "\n".join(output.strip().splitlines()[-15:])
    problem = f"ray start did not finish in {timeout:.0f} s:\n{tail}" if code is None else \
        f"ray start exited {code}:\n{tail}"
    return problem, transient_reason(output, code)


def start_head(ns: argparse.Namespace) -> str | None:
    """Start the task's Ray head; None when it is up, else why not (the log's last lines). A start that failed for
    a transient reason is cleaned up and made again after a back-off, up to MAX_ATTEMPTS within a StartBudget."""
    budget = StartBudget()
    for attempt in range(1, MAX_ATTEMPTS + 1):
        turn, problem = start_turn(budget, attempt)
        if problem:
            return problem
        try:
            problem, reason = head_attempt(ns, budget)
            ended = end_descendants() if reason else 0  # in the turn: the next start does not meet them
        finally:
            if turn is not None:
                os.close(turn)
        if problem is None:
            break
        if reason is None:
            return problem
        pause = backoff_s(attempt)
        if attempt == MAX_ATTEMPTS or budget.left() < pause + MIN_ATTEMPT_S:
            return f"{problem}\n(gave up after {attempt} attempt(s) in {budget.elapsed():.0f} s, {describe_load()})"
        print(f"[argus] the task's private Ray did not start, attempt {attempt}: {reason} ({describe_load()}); "
              f"ended its {ended} process(es), trying again in {pause:.0f} s", flush=True)
        time.sleep(pause)
    if ns.wait_nodes > 1:
        problem = wait_nodes(ns, max(budget.left(), START_TIMEOUT_S))
        if problem:
            return problem
    print(f"[argus] private Ray cluster of this task: {ns.wait_nodes} node(s), {int(max(ns.cpus, 1))} CPUs and "
          f"{ns.gpus} GPUs each, up in {budget.elapsed():.1f} s (RAY_ADDRESS={ns.node_ip}:{ns.head}; only "
          f"this task can reach it)", flush=True)
    return None


WAIT_CODE = """
import sys, time, ray
ray.init(address=sys.argv[1], logging_level="ERROR", log_to_driver=False)
want, deadline = int(sys.argv[2]), time.monotonic() + float(sys.argv[3])
while True:
    alive = [n for n in ray.nodes() if n["Alive"]]
    if len(alive) >= want:
        sys.exit(0)
    if time.monotonic() > deadline:
        print(f"{len(alive)} of {want} nodes joined", flush=True)
        sys.exit(1)
    time.sleep(0.5)
"""


def wait_nodes(ns: argparse.Namespace, timeout_s: float = START_TIMEOUT_S) -> str | None:
    """Until the task's other nodes joined (their sandboxes start beside this one, and retry their joins as this
    head retries its start): None, else why not."""
    try:
        done = subprocess.run([sys.executable, "-c", WAIT_CODE, f"{ns.node_ip}:{ns.head}", str(ns.wait_nodes),
                               str(timeout_s)], capture_output=True, text=True, timeout=timeout_s + 60)
    except subprocess.TimeoutExpired:
        return f"the task's other nodes did not join in {timeout_s:.0f} s"
    if done.returncode != 0:
        return f"the task's other nodes did not join: {(done.stdout + done.stderr).strip()[-500:]}"
    return None


def join(ns: argparse.Namespace) -> int:
    """Another node of the task: join its head, then stay until it ends. Attempts fail while the head still starts
    (and retries its own start), so every failure but a PERMANENT one is cleaned up and tried again, within a
    budget that outlasts the head's."""
    become_subreaper()  # what a failed attempt left running is below us, and ended before the next one
    budget = StartBudget(START_DEADLINE_S + START_TIMEOUT_S)
    argv = [a for a in ray_start_argv(ns) if a != "--block"]
    for attempt in itertools.count(1):
        turn, problem = start_turn(budget, attempt)
        if problem:
            print(f"[argus] error: could not join the task's head at {ns.join}: {problem}", flush=True)
            return EX_RAY_FAILED
        try:
            code, output = ray_start_once(argv, budget.attempt_s())
            ended = end_descendants() if code != 0 else 0
        finally:
            if turn is not None:
                os.close(turn)
        if code == 0:
            break
        pause = backoff_s(attempt, JOIN_BACKOFF_MAX_S)
        if code == 2 or any(s in output for s in PERMANENT) or budget.left() < pause + 1:
            tail = "\n".join(output.strip().splitlines()[-15:])
            print(f"[argus] error: could not join the task's head at {ns.join} ({attempt} attempt(s) in "
                  f"{budget.elapsed():.0f} s):\n{tail}", flush=True)
            return EX_RAY_FAILED
        print(f"[argus] joining the task's head at {ns.join}, attempt {attempt}: "
              f"{transient_reason(output, code) or 'the head did not take this node (yet)'} ({describe_load()}); "
              f"ended its {ended} process(es), trying again in {pause:.0f} s", flush=True)
        time.sleep(pause)
    print(f"[argus] joined the task's private Ray at {ns.join}", flush=True)
    return stay_joined(ray_daemons())


def stay_joined(daemons: dict[int, str]) -> int:
    """Keep a joined node until its raylet ends; then its exit status: 0 when the raylet exited by itself, else
    EX_RAY_FAILED. At the attempt's end the launcher has the node stopped (its node actor asks the node's agent);
    a node whose actor is gone — the platform's Ray restarted under the task — ends here instead: once the task's
    private Ray head has gone, the raylet loses its GCS and exits (Ray gives up on it after ~60 s), and the
    node's agent then empties its group. Without this a node outlived its task for ever, sandbox and GPUs held."""
    if not daemons:  # not seen below us (it cannot be watched): the node's stop ends it, as before
        print("[argus] warning: this node's raylet is not below its join; the node ends only when stopped", flush=True)
        while True:
            time.sleep(3600)
    while True:
        time.sleep(WATCH_S)
        dead = dead_daemons(daemons)
        if dead:
            print(f"[argus] this node's part of the task's private Ray ended: {'; '.join(dead)} (its head gone, or "
                  f"it was stopped); the node ends", flush=True)
            return EX_RAY_FAILED if any(" was killed by " in d for d in dead) else 0


def ray_daemons() -> dict[int, str]:
    """The private Ray's daemons that this node cannot lose (RAY_DAEMONS) below this process: pid → name. Looked up
    once the head is up: ``ray start`` has exited by then and they are our children (``become_subreaper``)."""
    found = {}
    for pid in descendants(os.getpid()):
        try:
            name = Path(f"/proc/{pid}/comm").read_text().strip()
        except OSError:
            continue
        if name in RAY_DAEMONS:
            found[pid] = name
    return found


def _how_it_ended(pid: int) -> str:
    """'exited with code N' / 'was killed by SIGKILL' for an ended child of ours (it is reaped here)."""
    try:
        done, status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return "is gone"
    if done == 0:
        return "is gone"
    if os.WIFSIGNALED(status):
        return f"was killed by {signal.Signals(os.WTERMSIG(status)).name}"
    return f"exited with code {os.waitstatus_to_exitcode(status)}"


def dead_daemons(daemons: dict[int, str]) -> list[str]:
    """What became of each daemon of ``daemons`` that no longer runs (gone, or a zombie of ours), e.g.
    "its raylet (pid 42) was killed by SIGKILL"; empty while all run."""
    dead = []
    for pid, name in daemons.items():
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            state = "gone"
        if state in ("Z", "X", "gone"):
            dead.append(f"its {RAY_DAEMONS[name]} ({name}, pid {pid}) {_how_it_ended(pid)}")
    return dead


def run_command(argv: list[str], env: dict[str, str], daemons: dict[int, str] | None = None) -> int:
    """The task's command in its own process group; SIGTERM/SIGINT go to that whole group. While it runs, the
    private Ray's ``daemons`` are watched: a command whose Ray died does not end by itself (verl waits on its
    actors, for ever), so it is killed within WATCH_S and the task ends with EX_RAY_FAILED and a line that names
    what died (the monitor's failure kind: core.failures, TASK_RUNTIME)."""
    try:
        child = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, process_group=0)
    except OSError as e:
        print(f"[argus] cannot start {argv[0]!r}: {e}", flush=True)
        return 127

    def forward(signum: int, _frame: object) -> None:
        try:
            os.killpg(child.pid, signum)
        except ProcessLookupError:
            pass

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, forward)
    while True:
        try:
            code = child.wait(timeout=WATCH_S)
            break
        except subprocess.TimeoutExpired:
            pass
        dead = dead_daemons(daemons or {})
        if dead:
            print(f"[argus] error: the task's private Ray died: {'; '.join(dead)}. Ending the task's command "
                  f"(it cannot go on without its Ray)", flush=True)
            forward(signal.SIGKILL, None)
            child.wait()
            return EX_RAY_FAILED
    return 128 - code if code < 0 else code


def become_subreaper() -> None:
    """Orphans below us (Ray's daemons, a task's daemonised helpers) become our children, not init's."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def descendants(root: int) -> list[int]:
    """The processes below ``root`` that still run (zombies left out: they only wait to be reaped)."""
    children: dict[int, list[tuple[int, bool]]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            state, ppid = (entry / "stat").read_text().rsplit(")", 1)[1].split()[:2]
        except (OSError, ValueError):
            continue
        children.setdefault(int(ppid), []).append((int(entry.name), state == "Z"))
    found, todo = [], [root]
    while todo:
        for pid, zombie in children.get(todo.pop(), []):
            todo.append(pid)
            if not zombie:
                found.append(pid)
    return found


def reap() -> None:
    """Collect every ended child, so that none stays a zombie (no ``subprocess`` child is running when called)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def end_descendants(timeout_s: float = 10.0) -> int:
    """SIGKILL every process below us and reap it; how many there were. Without a sandbox (``task_jail: off``) no
    PID namespace ends them, and a failed start's must go before the next attempt. Again until none is left: a
    killed raylet's agents and workers are reparented to us (``become_subreaper``) rather than dying with it."""
    me, ended, deadline = os.getpid(), set(), time.monotonic() + timeout_s
    while True:
        live = descendants(me)
        reap()
        if not live or time.monotonic() > deadline:
            return len(ended)
        for pid in live:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        ended.update(live)
        time.sleep(0.05)


def main(args: list[str] | None = None) -> int:
    ns = parse_args(args)
    os.environ.update(RAY_NO_METRICS)  # ray start, the join and the command's own Ray processes
    env = dict(os.environ)
    if ns.join:
        try:
            return join(ns)
        finally:
            end_descendants()
    become_subreaper()
    try:
        if ns.head:
            problem = start_head(ns)
            if problem:
                print(f"[argus] error: the task's private Ray cluster did not start: {problem}", flush=True)
                return EX_RAY_FAILED
            env["RAY_ADDRESS"] = f"{ns.node_ip}:{ns.head}"
        sys.stdout.flush()
        return run_command(ns.argv, env, ray_daemons() if ns.head else None)
    finally:
        end_descendants()


if __name__ == "__main__":
    sys.exit(main())
