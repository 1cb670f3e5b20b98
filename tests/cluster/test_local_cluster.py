"""The embedded cluster, the Jobs client and the inventory against a real Ray (one per session)."""

from __future__ import annotations

import json
import shlex
import sys
import time
from pathlib import Path

import pytest

from argus.cluster.dashboard import Dashboard
from argus.cluster.inventory import RayInventory
from argus.cluster.jobs import RayJobsClient
from argus.cluster.types import JobAlreadyExists, JobInfo, RayJobStatus, WorkerNode
from argus.nodes.local import MAX_TEMP_DIR_LEN, LocalCluster
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e
WORKER = {"worker_node": 1}
TERMINAL = {RayJobStatus.SUCCEEDED, RayJobStatus.FAILED, RayJobStatus.STOPPED}


@pytest.fixture(scope="module")
def dash(ray_cluster: LocalCluster) -> Dashboard:
    return Dashboard(ray_cluster.dashboard_url, token=ray_cluster.settings.ray_auth_token)


@pytest.fixture(scope="module")
def jobs(dash: Dashboard) -> RayJobsClient:
    return RayJobsClient(dash)


def raw_nodes(dash: Dashboard) -> dict[str, dict]:
    return {n["node_id"]: n for n in dash.get_json("/api/v0/nodes")["data"]["result"]["result"]}


def wait_status(jobs: RayJobsClient, sid: str, want: set[RayJobStatus], timeout: float = 120) -> JobInfo:
    seen: list[JobInfo] = []

    def arrived() -> JobInfo | None:
        info = jobs.get(sid)
        assert info is not None
        seen[:] = [info]
        if info.status in want:
            return info
        assert info.status not in TERMINAL, info  # ended in another state: it will never come
        return None

    return wait_until(arrived, timeout, what=lambda: f"{sid} still {seen[-1].status}")


def driver_entrypoint(job_dir: Path, *argv: str) -> str:
    return shlex.join([sys.executable, "-m", "argus.launcher.driver", "--job-dir", str(job_dir),
                       "--attempt", "1", "--python", sys.executable, "--", *argv])


def test_head_runs_nothing_and_the_worker_advertises_worker_node(ray_cluster: LocalCluster, dash: Dashboard) -> None:
    nodes = raw_nodes(dash)
    head = nodes[ray_cluster.head.node_id]["resources_total"]
    assert "worker_node" not in head and "GPU" not in head
    worker = nodes[ray_cluster.workers["worker-1"].node_id]["resources_total"]
    assert worker["worker_node"] == ray_cluster.settings.worker_node_capacity
    assert len(str(ray_cluster.temp_dir)) <= MAX_TEMP_DIR_LEN  # unix socket paths stay under 107 bytes


def test_every_platform_raylet_has_rays_memory_monitor_off(ray_cluster: LocalCluster) -> None:
    """Ray's host-wide memory monitor killed a task's JobSupervisor on a full host while the task's launcher (the
    node agent's, bounded by its cgroup) trained on (issue 36): the platform's nodes run without it."""
    logs = sorted((ray_cluster.temp_dir / "session_latest" / "logs").glob("raylet*.out"))
    assert len(logs) >= 1 + len(ray_cluster.workers), logs
    for log in logs:
        assert "ThresholdMemoryMonitor disabled" in log.read_text(errors="replace"), log


def test_jobs_lifecycle(ray_cluster: LocalCluster, jobs: RayJobsClient, tmp_path: Path) -> None:
    sid = f"argus-test-{time.time_ns()}"
    t0 = time.monotonic()
    jobs.submit(sid, "python -c 'print(42)'", entrypoint_resources=WORKER, runtime_env={},
                metadata={"task_id": "t-1"})
    running = wait_status(jobs, sid, {RayJobStatus.RUNNING, RayJobStatus.SUCCEEDED})
    t_running = time.monotonic() - t0
    done = wait_status(jobs, sid, {RayJobStatus.SUCCEEDED})
    t_done = time.monotonic() - t0
    print(f"\nsubmit→{running.status}: {t_running:.2f} s, submit→SUCCEEDED: {t_done:.2f} s")
    assert done.driver_exit_code == 0
    assert done.driver_node_id == ray_cluster.workers["worker-1"].node_id != ray_cluster.head.node_id
    assert done.metadata["task_id"] == "t-1"
    assert done.start_time_ms and done.end_time_ms and done.end_time_ms >= done.start_time_ms
    assert sid in {j.submission_id for j in jobs.list()}

    with pytest.raises(JobAlreadyExists):
        jobs.submit(sid, "true", entrypoint_resources=WORKER, runtime_env={}, metadata={})
    assert jobs.delete(sid) is True
    assert jobs.get(sid) is None
    assert jobs.get("argus-no-such-job") is None
    assert jobs.stop("argus-no-such-job") is False
    assert jobs.delete("argus-no-such-job") is False


def test_driver_on_ray_exit_code_and_node(ray_cluster: LocalCluster, jobs: RayJobsClient, tmp_path: Path) -> None:
    sid = f"argus-test-{time.time_ns()}"
    job_dir = tmp_path / "users" / "alice" / "jobs" / "t-2"
    jobs.submit(sid, driver_entrypoint(job_dir, "bash", "-c", "echo hello; exit 3"),
                entrypoint_resources=WORKER, runtime_env={"env_vars": {"RAY_ADDRESS": ray_cluster.gcs_address}},
                metadata={})
    info = wait_status(jobs, sid, {RayJobStatus.FAILED})
    assert info.driver_exit_code == 3
    status = json.loads((job_dir / "status.json").read_text())
    worker_id = ray_cluster.workers["worker-1"].node_id
    assert status["exit_code"] == 3 and status["node_id"] == worker_id == info.driver_node_id
    log = (job_dir / "logs" / "attempt-1.log").read_text().splitlines()
    assert f"(ray node {worker_id})" in log[0] and log[1].startswith("[argus] bounds: ") and log[2] == "hello"
    jobs.delete(sid)


def test_stop_a_running_driver(ray_cluster: LocalCluster, jobs: RayJobsClient, tmp_path: Path) -> None:
    sid = f"argus-test-{time.time_ns()}"
    job_dir = tmp_path / "j"
    jobs.submit(sid, driver_entrypoint(job_dir, "bash", "-c", "echo started; sleep 300"),
                entrypoint_resources=WORKER, runtime_env={}, metadata={})
    wait_status(jobs, sid, {RayJobStatus.RUNNING})
    log = job_dir / "logs" / "attempt-1.log"
    wait_until(lambda: log.exists() and "started" in log.read_text(), 60, what="the driver's 'started' line")
    assert jobs.delete(sid) is False  # not finished yet: Ray refuses, the client says so
    assert jobs.stop(sid) is True
    wait_status(jobs, sid, {RayJobStatus.STOPPED}, timeout=60)
    wait_until(lambda: json.loads((job_dir / "status.json").read_text())["exit_code"] is not None, 30,
               what="the driver did not record its end")
    assert json.loads((job_dir / "status.json").read_text())["signal"] == "SIGTERM"
    assert jobs.delete(sid) is True


def test_inventory_sees_a_joining_gpu_worker_and_its_death(ray_cluster: LocalCluster, dash: Dashboard) -> None:
    inv = RayInventory(dash, cache_s=60)
    first = inv.worker_nodes()
    assert inv.worker_nodes() is first  # cached
    w1 = next(n for n in first if n.node_id == ray_cluster.workers["worker-1"].node_id)
    assert w1.alive and w1.gpus_total == 0 and w1.cpus_total > 0
    assert ray_cluster.head.node_id not in {n.node_id for n in first}

    t0 = time.monotonic()
    extra = ray_cluster.add_worker(gpus=4)
    print(f"\nworker join: {time.monotonic() - t0:.2f} s")
    try:
        inv.invalidate()
        node = next(n for n in inv.worker_nodes() if n.node_id == extra.node_id)
        assert node.alive and node.gpus_total == 4 and node.gpus_free == 4
        assert node.resources["worker_node"] == ray_cluster.settings.worker_node_capacity
    finally:
        ray_cluster.kill_worker(extra.name)
    killed_at = time.monotonic()

    def dead() -> WorkerNode | None:
        inv.invalidate()
        node = next(n for n in inv.worker_nodes() if n.node_id == extra.node_id)
        return node if not node.alive else None

    node = wait_until(dead, 30, every=0.2, what="the killed worker was not declared dead")
    print(f"worker declared dead after {time.monotonic() - killed_at:.2f} s")
    assert node.gpus_free == 0
    assert [n.node_id for n in inv.worker_nodes() if n.alive] == [w1.node_id]


def test_inventory_counts_the_cpus_and_memory_a_driver_reserves(ray_cluster: LocalCluster, dash: Dashboard,
                                                                 jobs: RayJobsClient) -> None:
    """Issue 15: ``entrypoint_num_cpus``/``entrypoint_memory`` reach Ray, and the inventory reads them back as used."""
    inv = RayInventory(dash, cache_s=0)
    w1 = ray_cluster.workers["worker-1"].node_id

    def reported() -> WorkerNode | None:
        node = next(n for n in inv.worker_nodes() if n.node_id == w1)
        return node if node.cpus_free is not None else None

    # Ray's usage report (the autoscaler monitor's) lags a node's join by a few seconds: None until then
    before = wait_until(reported, 30, every=0.3, what="no usage report for worker-1")
    assert before.cpus_free == before.cpus_total >= 1 and before.memory_total > 0
    assert before.memory_free == before.memory_total
    sid = f"cpu-reserve-{time.monotonic_ns()}"
    jobs.submit(sid, "sleep 60", entrypoint_resources=WORKER, entrypoint_num_cpus=1, entrypoint_memory=2**27,
                runtime_env={}, metadata={})
    try:
        wait_status(jobs, sid, {RayJobStatus.RUNNING})

        def reserved() -> WorkerNode | None:
            node = next(n for n in inv.worker_nodes() if n.node_id == w1)
            return node if node.cpus_free != before.cpus_free else None

        now = wait_until(reserved, 30, every=0.3, what="Ray's usage report never showed the driver's CPU")
        assert now.cpus_free == before.cpus_total - 1
        assert now.memory_free == before.memory_total - 2**27
    finally:
        jobs.stop(sid)
        wait_status(jobs, sid, {RayJobStatus.STOPPED}, timeout=60)
        jobs.delete(sid)
