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
it exits the kernel ends every process of the sandbox's PID namespace, Ray's daemons too.
Standard library only, run with ``-I``: it runs in the training environment, whatever that has.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

START_LOG = Path("/tmp/argus-private-ray.log")
RAY_TEMP = "/tmp/ray"
START_TIMEOUT_S = 120.0
# Every node of a task's cluster is a worker node: the basic templates pin TransferQueue's storage units to nodes
# with this resource (core.builders.transfer_queue_settings, written for the platform's cluster, whose head has
# none), and TransferQueue refuses to start where no node has it (found by the first real GRPO run, issue 34).
WORKER_NODE_RESOURCE = '{"worker_node": 1}'
EX_RAY_FAILED = 70  # EX_SOFTWARE: the platform part of the task failed, not the user's command
PR_SET_CHILD_SUBREAPER = 36
# Ray's Prometheus endpoints answer anyone who reaches the port, and Ray has no token for them: the dashboard
# agent's metrics export port (off with metrics collection: its port file then says -1) and the dashboard's own
# metrics server on a fixed port (44227; Ray logs a bind error for a port number out of range and goes on
# without it). The platform's Ray nodes get the same (runtime/jail.py: platform_ray_env).
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


def start_head(ns: argparse.Namespace) -> str | None:
    """Start the task's Ray head; None when it is up, else why not (the log's last lines)."""
    started = time.monotonic()
    with open(START_LOG, "ab") as out:
        try:
            done = subprocess.run(ray_start_argv(ns), stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                  timeout=START_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return f"ray start did not finish in {START_TIMEOUT_S:.0f} s"
    if done.returncode != 0:
        tail = START_LOG.read_text(errors="replace").strip().splitlines()[-15:]
        return f"ray start exited {done.returncode}:\n" + "\n".join(tail)
    if ns.wait_nodes > 1:
        problem = wait_nodes(ns)
        if problem:
            return problem
    print(f"[argus] private Ray cluster of this task: {ns.wait_nodes} node(s), {int(max(ns.cpus, 1))} CPUs and "
          f"{ns.gpus} GPUs each, up in {time.monotonic() - started:.1f} s (RAY_ADDRESS={ns.node_ip}:{ns.head}; only "
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


def wait_nodes(ns: argparse.Namespace) -> str | None:
    """Until the task's other nodes joined (their sandboxes start beside this one): None, else why not."""
    try:
        done = subprocess.run([sys.executable, "-c", WAIT_CODE, f"{ns.node_ip}:{ns.head}", str(ns.wait_nodes),
                               str(START_TIMEOUT_S)], capture_output=True, text=True, timeout=START_TIMEOUT_S + 60)
    except subprocess.TimeoutExpired:
        return f"the task's other nodes did not join in {START_TIMEOUT_S:.0f} s"
    if done.returncode != 0:
        return f"the task's other nodes did not join: {(done.stdout + done.stderr).strip()[-500:]}"
    return None


def join(ns: argparse.Namespace) -> int:
    """Another node of the task: join its head (retrying while the head starts), then stay until it ends."""
    deadline = time.monotonic() + START_TIMEOUT_S
    argv = [a for a in ray_start_argv(ns) if a != "--block"]
    while True:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL)
        if done.returncode == 0:
            break
        if time.monotonic() > deadline:
            print(f"[argus] error: could not join the task's head at {ns.join}", flush=True)
            return EX_RAY_FAILED
        time.sleep(1.0)
    print(f"[argus] joined the task's private Ray at {ns.join}", flush=True)
    while True:  # the sandbox ends when the launcher's node actor is killed
        time.sleep(3600)


def run_command(argv: list[str], env: dict[str, str]) -> int:
    """The task's command in its own process group; SIGTERM/SIGINT go to that whole group."""
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
    code = child.wait()
    return 128 - code if code < 0 else code


def become_subreaper() -> None:
    """Orphans below us (Ray's daemons, a task's daemonised helpers) become our children, not init's."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def end_children() -> None:
    """SIGKILL whatever is still below us: without a sandbox (``task_jail: off``) no PID namespace ends them."""
    me = os.getpid()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == me:
            try:
                os.kill(int(entry.name), signal.SIGKILL)
            except OSError:
                pass


def main(args: list[str] | None = None) -> int:
    ns = parse_args(args)
    os.environ.update(RAY_NO_METRICS)  # ray start, the join and the command's own Ray processes
    env = dict(os.environ)
    if ns.join:
        return join(ns)
    become_subreaper()
    try:
        if ns.head:
            problem = start_head(ns)
            if problem:
                print(f"[argus] error: the task's private Ray cluster did not start: {problem}", flush=True)
                return EX_RAY_FAILED
            env["RAY_ADDRESS"] = f"{ns.node_ip}:{ns.head}"
        sys.stdout.flush()
        return run_command(ns.argv, env)
    finally:
        end_children()


if __name__ == "__main__":
    sys.exit(main())
