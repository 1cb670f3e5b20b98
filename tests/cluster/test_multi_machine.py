"""Multi-machine mode on one host, with real Ray: `argus head`, the discovery file, `argus worker` re-joins.

The head here is the product's ``ClusterHead`` (a Ray head on the host's routable address plus the
discovery file) rather than a full server, to keep the module cheap; one test runs the real
`argus head` command. The worker is always the real `argus worker` command in a subprocess.
Every process started here (and everything below it) is recorded and SIGKILLed at the end, also
on failure; `ray stop` is never used. Timings are printed (run with -s to see them).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import psutil
import pytest

from argus.cluster.dashboard import Dashboard
from argus.cluster.inventory import RayInventory
from argus.cluster.types import ClusterUnavailable, WorkerNode
from argus.nodes.discovery import (
    STOPPED,
    detect_ip,
    discovery_path,
    local_ray_version,
    mark_stopped,
    read_discovery,
    write_discovery,
)
from argus.nodes.head import ClusterHead
from argus.nodes.local import LocalCluster
from argus.settings import Settings
from tests.helpers import free_port, terminate
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e
WORKER_NAME = f"argus-test-worker-{os.getpid()}"
CAPACITY = 7


class Tracker:
    """Processes this module started and their descendants (pid → create time), to kill at the end."""

    def __init__(self) -> None:
        self.seen: dict[int, float] = {}

    def add(self, pid: int) -> None:
        try:
            for p in self.tree(pid):
                self.seen[p.pid] = p.create_time()
        except psutil.Error:
            pass

    @staticmethod
    def tree(pid: int) -> list[psutil.Process]:
        proc = psutil.Process(pid)
        return [proc, *proc.children(recursive=True)]

    def alive(self) -> list[psutil.Process]:
        out = []
        for pid, created in self.seen.items():
            try:
                p = psutil.Process(pid)
                if p.create_time() == created and p.status() != psutil.STATUS_ZOMBIE:
                    out.append(p)
            except psutil.Error:
                pass
        return out

    def kill_all(self) -> None:
        for p in self.alive():
            try:
                p.kill()
            except psutil.Error:
                pass


def wait_for(what: str, check: Callable[[], object], timeout: float, tick: Callable[[], None] = lambda: None):
    """``wait_until`` with ``tick`` run before each look (it records the processes to clean up)."""
    def ticked() -> object:
        tick()
        return check()

    return wait_until(ticked, timeout, every=0.25, what=f"no {what} after {timeout:.0f} s")


def start_head(tmp: Path, data_root: Path, label: str) -> ClusterHead:
    """A Ray head on fresh ports at this host's routable address, published in the discovery file."""
    settings = Settings(mode="cluster", state_dir=tmp / label, data_root=data_root, advertise_address=detect_ip(),
                        ray_head_port=free_port(), ray_dashboard_port=free_port(),
                        ray_client_server_port=free_port(), sftp_enabled=False, verl_validation="off")
    head = ClusterHead(LocalCluster(settings), discovery_path(data_root), "http://127.0.0.1:1")
    head.start()
    return head


def worker_node(head: ClusterHead, *, not_id: str | None = None) -> WorkerNode | None:
    """Our worker as the head's inventory sees it, when alive (and not the node ``not_id``)."""
    try:
        nodes = RayInventory(Dashboard(head.cluster.dashboard_url, token=head.cluster.settings.ray_auth_token), cache_s=0).worker_nodes()
    except ClusterUnavailable:
        return None
    return next((n for n in nodes if n.hostname == WORKER_NAME and n.alive and n.node_id != not_id), None)


class Env:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.data_root = tmp / "data"
        self.tracker = Tracker()
        self.heads: list[ClusterHead] = []
        self.worker: subprocess.Popen[bytes] | None = None
        self.worker_log = tmp / "worker.out"

    @property
    def head(self) -> ClusterHead:
        return self.heads[-1]

    def new_head(self) -> ClusterHead:
        self.heads.append(start_head(self.tmp, self.data_root, f"head{len(self.heads) + 1}"))
        self.track()
        return self.head

    def start_worker(self) -> None:
        env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
        with open(self.worker_log, "ab") as out:
            self.worker = subprocess.Popen(
                [sys.executable, "-m", "argus.cli.main", "worker", "--discovery", str(discovery_path(self.data_root)),
                 "--name", WORKER_NAME, "--gpus", "2", "--cpus", "1", "--state-dir", str(self.tmp / "worker")],
                stdout=out, stderr=subprocess.STDOUT, env={**env, "ARGUS_WORKER_NODE_CAPACITY": str(CAPACITY)})
        self.track()

    def track(self) -> None:
        for h in self.heads:
            if h.cluster.head and h.cluster.head.proc:
                self.tracker.add(h.cluster.head.proc.pid)
        if self.worker is not None:
            self.tracker.add(self.worker.pid)

    def raylets(self) -> list[psutil.Process]:
        assert self.worker is not None
        return [p for p in psutil.Process(self.worker.pid).children(recursive=True) if p.name() == "raylet"]

    def log(self) -> str:
        return self.worker_log.read_text(errors="replace")[-4000:]

    def close(self) -> None:
        try:
            if self.worker is not None and self.worker.poll() is None:
                self.worker.send_signal(signal.SIGTERM)
                self.worker.wait(40)
            for h in self.heads:
                h.stop()
        finally:
            self.tracker.kill_all()


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    e = Env(tmp_path_factory.mktemp("multi"))
    try:
        e.new_head()
        e.start_worker()
        yield e
    finally:
        e.close()


def test_head_publishes_itself_and_runs_no_training(env: Env) -> None:
    info = read_discovery(discovery_path(env.data_root))
    assert info is not None and info == env.head.info
    assert info.gcs_address == f"{detect_ip()}:{env.head.cluster.settings.ray_head_port}"
    assert info.ray_version == local_ray_version() and info.state == "running"
    nodes = Dashboard(env.head.cluster.dashboard_url, token=env.head.cluster.settings.ray_auth_token).get_json("/api/v0/nodes")["data"]["result"]["result"]
    head_node = next(n for n in nodes if n["is_head_node"])
    assert "worker_node" not in head_node["resources_total"] and "GPU" not in head_node["resources_total"]


def test_worker_joins_with_its_resources(env: Env) -> None:
    t0 = time.monotonic()
    node = wait_for("worker in the inventory", lambda: worker_node(env.head), 90, env.track)
    print(f"\njoin: {time.monotonic() - t0:.1f} s (after the worker process started: see the log)")
    assert node.resources["worker_node"] == CAPACITY and node.gpus_total == 2 and node.cpus_total == 1
    assert "joining the head" in env.log()


def test_worker_rejoins_after_its_raylet_is_killed(env: Env) -> None:
    before = wait_for("worker in the inventory", lambda: worker_node(env.head), 90, env.track)
    raylets = wait_for("a raylet under the worker", env.raylets, 30, env.track)
    t0 = time.monotonic()
    for p in raylets:
        p.kill()
    after = wait_for("a new worker node", lambda: worker_node(env.head, not_id=before.node_id), 60, env.track)
    print(f"\nrejoin after raylet kill -9: {time.monotonic() - t0:.1f} s")
    assert after.node_id != before.node_id and after.gpus_total == 2
    assert "the raylet exited; joining" in env.log()


def test_worker_leaves_a_stopped_head_and_comes_back(env: Env) -> None:
    before = wait_for("worker in the inventory", lambda: worker_node(env.head), 90, env.track)
    path, info = discovery_path(env.data_root), env.head.info
    assert mark_stopped(path, info.generation)  # what a clean head stop writes (Ray itself stays up here)
    wait_for("the raylet to stop", lambda: not env.raylets(), 30)
    assert "leave: the head on" in env.log()
    write_discovery(path, info)  # running again: the same generation
    wait_for("the worker back", lambda: worker_node(env.head, not_id=before.node_id), 90, env.track)


def test_worker_follows_a_crashed_head_to_a_new_address(env: Env) -> None:
    wait_for("worker in the inventory", lambda: worker_node(env.head), 90, env.track)
    raylets = env.raylets()
    old = env.head
    t0 = time.monotonic()
    for p in Tracker.tree(old.cluster.head.proc.pid):  # the head machine dies: the file still says "running"
        p.kill()
    old.info = None  # a dead head marks nothing
    new = env.new_head()  # new generation on new ports: as if it came back on another machine
    t_head = time.monotonic() - t0
    node = wait_for("the worker on the new head", lambda: worker_node(new), 90, env.track)
    print(f"\nhead crash + restart elsewhere: new head up in {t_head:.1f} s, worker re-joined "
          f"{time.monotonic() - t0 - t_head:.1f} s later")
    assert node.gpus_total == 2
    log = env.log()
    assert f"rejoin: the head restarted: {old.cluster.gcs_address}" in log or "the raylet exited" in log, log
    assert f"{new.cluster.gcs_address} (generation {new.info.generation})" in log
    assert not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in raylets)  # the old raylet is gone


def test_sigterm_stops_the_worker_and_its_raylet(env: Env) -> None:
    wait_for("worker in the inventory", lambda: worker_node(env.head), 90, env.track)
    raylets = env.raylets()
    assert raylets and env.worker is not None
    env.worker.send_signal(signal.SIGTERM)
    assert env.worker.wait(40) == 0, env.log()
    assert not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in raylets)
    wait_for("the node to be gone", lambda: worker_node(env.head) is None, 30)


def test_argus_head_command(tmp_path: Path) -> None:
    """The real command: server health, the discovery file while running, marked stopped after SIGTERM."""
    port, ray_port = free_port(), free_port()
    data_root = tmp_path / "data"
    e = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "ARGUS_ADMIN_TOKEN")}
    e.update(ARGUS_DATA_ROOT=str(data_root), ARGUS_SFTP_ENABLED="false", ARGUS_VERL_VALIDATION="off",
             ARGUS_RAY_CLIENT_SERVER_PORT=str(free_port()))
    tracker = Tracker()
    log_path = tmp_path / "head.out"
    with open(log_path, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "argus.cli.main", "head", "--state-dir", str(tmp_path / "state"),
             "--host", "127.0.0.1", "--port", str(port), "--ray-port", str(ray_port),
             "--dashboard-port", str(free_port()), "--advertise-address", "127.0.0.1"],
            stdout=out, stderr=subprocess.STDOUT, env=e)
    try:
        def healthy() -> bool:
            tracker.add(proc.pid)
            assert proc.poll() is None, log_path.read_text()
            try:
                return httpx.get(f"http://127.0.0.1:{port}/api/v2/health", timeout=2).status_code == 200
            except httpx.TransportError:
                return False

        t0 = time.monotonic()
        wait_for("healthy `argus head`", healthy, 150)
        print(f"\nargus head healthy in {time.monotonic() - t0:.1f} s")
        info = read_discovery(discovery_path(data_root))
        assert info is not None and info.state == "running", log_path.read_text()
        assert info.gcs_address == f"127.0.0.1:{ray_port}" and info.api_url == f"http://127.0.0.1:{port}"
        assert "discovery file:" in log_path.read_text()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0, log_path.read_text()[-3000:]
        stopped = read_discovery(discovery_path(data_root))
        assert stopped.state == STOPPED and stopped.generation == info.generation
    finally:
        terminate(proc, 30)
        tracker.kill_all()
