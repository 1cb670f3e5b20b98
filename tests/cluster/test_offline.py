"""The adapters without a cluster: unreachable Ray is ClusterUnavailable, the temp dir stays short."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from argus.cluster.dashboard import Dashboard, dashboard_url
from argus.cluster.inventory import RayInventory
from argus.cluster.jobs import RayJobsClient
from argus.cluster.types import ClusterUnavailable
from argus.nodes.local import MAX_TEMP_DIR_LEN, ray_temp_dir
from argus.settings import Settings
from tests.helpers import free_port


def test_unreachable_dashboard_is_cluster_unavailable() -> None:
    dash = Dashboard(f"http://127.0.0.1:{free_port()}", timeout_s=2)
    jobs = RayJobsClient(dash)
    with pytest.raises(ClusterUnavailable):
        jobs.get("argus-x")
    with pytest.raises(ClusterUnavailable):
        jobs.submit("argus-x", "true", entrypoint_resources={}, runtime_env={}, metadata={})
    with pytest.raises(ClusterUnavailable):
        RayInventory(dash).worker_nodes()


def test_dashboard_url_from_settings(tmp_path: Path) -> None:
    assert dashboard_url(Settings(state_dir=tmp_path, ray_dashboard_port=9000)) == "http://127.0.0.1:9000"
    s = Settings(state_dir=tmp_path, ray_address="10.0.0.5:6379", ray_dashboard_port=8265)
    assert dashboard_url(s) == "http://10.0.0.5:8265"
    s = Settings(state_dir=tmp_path, ray_address="10.0.0.5:6379", ray_dashboard_url="http://dash:1/")
    assert dashboard_url(s) == "http://dash:1"


def test_long_state_dir_gets_a_short_ray_temp_dir(tmp_path: Path) -> None:
    state = tmp_path / ("x" * 60)
    temp = ray_temp_dir(state)
    try:
        assert len(str(temp)) <= MAX_TEMP_DIR_LEN
        assert temp.resolve() == (state / "ray").resolve()
        assert ray_temp_dir(state) == temp  # stable across restarts
    finally:
        temp.unlink()


def test_short_state_dir_is_used_as_is() -> None:
    state = Path(f"/tmp/argus-t{os.getpid()}")
    assert ray_temp_dir(state) == state / "ray"
    (state / "ray").rmdir()
    state.rmdir()


def test_a_platform_node_starts_with_the_node_allowlist_only_and_no_drain(monkeypatch) -> None:
    """Issue 21: nothing of the server's environment reaches a node (and so a launcher or a task)."""
    from argus.nodes.local import node_process_env

    monkeypatch.setenv("ARGUS_ADMIN_TOKEN", "secret-admin")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret-aws")
    monkeypatch.setenv("NCCL_SOCKET_IFNAME", "eth0")
    env = node_process_env({"RAY_AUTH_MODE": "token"})
    assert "ARGUS_ADMIN_TOKEN" not in env and "AWS_SECRET_ACCESS_KEY" not in env
    assert env["NCCL_SOCKET_IFNAME"] == "eth0" and env["RAY_AUTH_MODE"] == "token"
    assert env["RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S"] == "0"  # a node with a task stops at once
