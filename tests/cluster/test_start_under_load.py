"""Ray starts on a loaded machine: the platform's nodes (LocalCluster, with the process boundary faked) and a task's
private Ray for real under CPU burners. The retry decisions of the private Ray's start are unit-tested in
tests/launcher/test_private_ray_start.py; bench/start_under_load.py measures many starts."""

from __future__ import annotations

import logging
import os
import secrets
import subprocess
import sys
import time
from pathlib import Path

import pytest

from argus.launcher import private_ray
from argus.launcher.task_sandbox import PRIVATE_RAY, free_ports
from argus.nodes import local
from argus.nodes.local import LocalCluster, LocalClusterError, RayNode
from argus.settings import Settings
from tests.helpers import free_port

RAYLET_TIMEOUT = "Exception: The current node timed out during startup. This could happen because some of the " \
                 "raylet failed to startup or the GCS has become overloaded.\n"
NO_DASHBOARD = "Exception: Cannot include dashboard with missing packages.\n"


class FakeProc:
    """A ``ray start --block`` that exits with ``code`` (None: runs until stopped)."""

    def __init__(self, code: int | None) -> None:
        self.returncode = code
        self.pid = 0

    def poll(self) -> int | None:
        return self.returncode


class FakeRay:
    """The process boundary of LocalCluster: each spawn plays the next script entry — ("exit", code, log text),
    ("hang",) or ("up", node id) — and the dashboard answers as the nodes that are up say."""

    def __init__(self, cluster: LocalCluster, monkeypatch: pytest.MonkeyPatch, *script: tuple) -> None:
        self.script = list(script)
        self.nodes: list[dict] = []
        self.spawned: list[str] = []
        self.stopped: list[str] = []
        monkeypatch.setattr(local, "spawn_node", self.spawn)
        monkeypatch.setattr(local, "stop_node", lambda node: self.stopped.append(node.name))
        monkeypatch.setattr(local, "MIN_ATTEMPT_S", 0.0)
        monkeypatch.setattr(local, "backoff_s", lambda attempt: 0.0)
        monkeypatch.setattr(private_ray, "load_scale", lambda: 1.0)
        monkeypatch.setattr(local.time, "sleep", lambda s: None)
        monkeypatch.setattr(cluster, "_answers", lambda url: any(n.get("is_head_node") for n in self.nodes))
        monkeypatch.setattr(cluster, "_nodes", lambda: list(self.nodes))
        monkeypatch.setattr(cluster, "_save_record", lambda: None)
        # nothing here binds a port: a port another test took since the fixture picked it is no conflict
        monkeypatch.setattr(cluster, "_check_ports", lambda: None)

    def spawn(self, node: RayNode) -> None:
        step = self.script.pop(0)
        self.spawned.append(node.name)
        node.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(node.log_path, "a") as log:
            log.write(f"attempt {len(self.spawned)}\n" + (step[2] if step[0] == "exit" else ""))
        node.proc = FakeProc(step[1] if step[0] == "exit" else None)  # type: ignore[assignment]
        if step[0] == "up":
            self.nodes.append({"node_id": step[1], "state": "ALIVE", "is_head_node": node.name == "head",
                               "resources_total": {} if node.name == "head" else {"worker_node": 1}})


@pytest.fixture
def cluster(tmp_path: Path) -> LocalCluster:
    settings = Settings(state_dir=tmp_path, ray_head_port=free_port(), ray_dashboard_port=free_port(),
                        ray_client_server_port=free_port(), worker_gpus=0, sftp_enabled=False,
                        verl_validation="off", task_jail="off")
    return LocalCluster(settings, timeout_s=2.0)


def test_a_head_that_exited_on_a_transient_reason_is_stopped_and_started_again(cluster: LocalCluster, monkeypatch,  # noqa: ANN001
                                                                                caplog) -> None:  # noqa: ANN001
    ray = FakeRay(cluster, monkeypatch, ("exit", 1, RAYLET_TIMEOUT), ("hang",), ("up", "h1"))
    with caplog.at_level(logging.WARNING, logger="argus.nodes.local"):
        head = cluster.start_head()
    assert head.node_id == "h1" and ray.spawned == ["head"] * 3 and ray.stopped == ["head"] * 2
    retries = [r.getMessage() for r in caplog.records]
    assert retries[0].startswith("Ray head did not start, attempt 1: the raylet did not register in Ray's 30 s (load ")
    assert retries[1].startswith("Ray head did not start, attempt 2: not ready in 2 s (load ")


def test_a_head_that_cannot_start_fails_at_once_with_the_reason_from_its_log(cluster: LocalCluster,  # noqa: ANN001
                                                                           monkeypatch) -> None:  # noqa: ANN001
    ray = FakeRay(cluster, monkeypatch, ("exit", 1, NO_DASHBOARD), ("up", "h1"))
    with pytest.raises(LocalClusterError, match=r"Ray head exited while waiting for the Jobs API to answer "
                                                r"\(Exception: Cannot include dashboard with missing packages\.\); see "):
        cluster.start_head()
    assert ray.spawned == ["head"] and ray.stopped == []


def test_a_head_that_keeps_failing_gives_up_after_the_last_attempt(cluster: LocalCluster, monkeypatch) -> None:  # noqa: ANN001
    ray = FakeRay(cluster, monkeypatch, *[("exit", 1, RAYLET_TIMEOUT)] * private_ray.MAX_ATTEMPTS)
    with pytest.raises(LocalClusterError, match=rf"exited while waiting .* \(attempt {private_ray.MAX_ATTEMPTS}\)$"):
        cluster.start_head()
    assert len(ray.spawned) == private_ray.MAX_ATTEMPTS


def test_a_retried_worker_is_not_mistaken_for_the_stopped_attempt_still_listed_alive(cluster: LocalCluster,  # noqa: ANN001
                                                                                    monkeypatch) -> None:  # noqa: ANN001
    ray = FakeRay(cluster, monkeypatch, ("up", "h1"), ("hang",), ("up", "w-new"))
    cluster.start_head()

    def stop(node: RayNode) -> None:  # the hung attempt registered as it was stopped: listed ALIVE a little longer
        ray.stopped.append(node.name)
        ray.nodes.append({"node_id": "w-stopped", "state": "ALIVE", "resources_total": {"worker_node": 1}})

    monkeypatch.setattr(local, "stop_node", stop)
    node = RayNode("worker-1", ["ray", "start"], {}, cluster.log_dir / "worker-1.log")
    cluster._join(node)
    assert node.node_id == "w-new" and ray.stopped == ["worker-1"]


def _alive_with(mark: str) -> list[int]:
    """Processes still running (not zombies) whose environment carries ``mark``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and mark.encode() in (entry / "environ").read_bytes() and \
                    (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                found.append(int(entry.name))
        except OSError:
            continue
    return found


BURNER = "import sys, time\nend = time.monotonic() + float(sys.argv[1])\nwhile time.monotonic() < end: pass\n"
PROGRAM = "import ray; ray.init(); print('cpus', ray.cluster_resources()['CPU'], flush=True)"


@pytest.mark.e2e
def test_a_private_ray_starts_under_cpu_burners_and_leaves_nothing_behind(tmp_path: Path) -> None:
    """Real: four CPU burners per core (each ends by itself after 4 minutes), a private Ray started as the launcher
    starts it without a sandbox, a Ray program against it; then no process of it is left (Ray's agents outlived
    the raylet that ``end_children`` killed before: nothing killed the orphans)."""
    mark = f"ARGUS_TEST_MARK={secrets.token_hex(8)}"
    burners = [subprocess.Popen([sys.executable, "-c", BURNER, "240"]) for _ in range(4 * (os.cpu_count() or 1))]
    try:
        gcs, client = free_ports(2)
        env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(24),
               "RAY_USAGE_STATS_ENABLED": "0", mark.split("=")[0]: mark.split("=")[1]}
        started = time.monotonic()
        done = subprocess.run([sys.executable, "-I", PRIVATE_RAY, "--head", str(gcs), "--client-port", str(client),
                               "--cpus", "1", "--gpus", "0", "--object-store", str(200 << 20), "--",
                               sys.executable, "-c", PROGRAM], env=env, capture_output=True, text=True, timeout=420)
        took = time.monotonic() - started
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-3000:]
    assert "[argus] private Ray cluster of this task: 1 node(s)" in out and "cpus 1.0" in out, out[-3000:]
    time.sleep(1)
    assert _alive_with(mark) == [], f"left running after the task ended ({took:.0f} s): {out[-1000:]}"
