"""Ray's ports for a cluster Argus starts itself: asked for (and checked) or picked free; no Ray started here."""

from __future__ import annotations

import socket

import pytest
from pydantic import ValidationError

from argus.nodes.local import LocalCluster, LocalClusterError, _last_error, pick_free_ports
from argus.settings import RAY_PORT_FIELDS, Settings


def make(tmp_path, **fields) -> Settings:
    return Settings(state_dir=tmp_path, task_jail="off", sftp_enabled=False, verl_validation="off", **fields)


def test_ray_ports_inside_the_worker_range_are_refused(tmp_path, monkeypatch):
    for name in RAY_PORT_FIELDS:
        with pytest.raises(ValidationError, match="10002-19999"):
            make(tmp_path, **{name: 10002})
    monkeypatch.setenv("ARGUS_RAY_HEAD_PORT", "19999")
    with pytest.raises(ValidationError, match="worker port range"):
        make(tmp_path)
    assert make(tmp_path, ray_head_port=20000).ray_head_port == 20000


def test_unset_ray_ports_are_picked_free_and_outside_the_worker_range(tmp_path):
    ports = pick_free_ports(20)
    assert len(set(ports)) == 20 and not any(10002 <= p <= 19999 for p in ports)
    a = LocalCluster(make(tmp_path / "a"))
    b = LocalCluster(make(tmp_path / "b"))
    pa = [getattr(a.settings, n) for n in RAY_PORT_FIELDS]
    pb = [getattr(b.settings, n) for n in RAY_PORT_FIELDS]
    assert len(set(pa + pb)) == 6 and 8265 not in pa and 6380 not in pa
    assert a.gcs_address.endswith(f":{pa[0]}") and a.dashboard_url.endswith(f":{pa[1]}")


def test_given_ray_ports_are_kept_and_cluster_head_keeps_6380(tmp_path):
    c = LocalCluster(make(tmp_path / "a", ray_dashboard_port=23456))
    assert c.settings.ray_dashboard_port == 23456 and c.settings.ray_head_port != 6380
    head = LocalCluster(make(tmp_path / "b", mode="cluster", data_root=tmp_path / "root"))
    assert head.settings.ray_head_port == 6380 and head.settings.ray_dashboard_port != 8265


def test_a_taken_ray_port_is_one_line_naming_the_flag(tmp_path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        c = LocalCluster(make(tmp_path, ray_head_port=port))
        with pytest.raises(LocalClusterError) as exc:
            c.start_head()
    msg = str(exc.value)
    assert "\n" not in msg and f"port {port} (Ray GCS)" in msg and "--ray-port N (ARGUS_RAY_HEAD_PORT)" in msg
    assert "leave it unset" in msg and c.head is None  # nothing was started


def test_last_error_line_of_a_node_log(tmp_path):
    log = tmp_path / "head.log"
    log.write_text("Traceback (most recent call last):\n  File x\nValueError: worker_ports 12000 used by other\n\n")
    assert _last_error(log) == "ValueError: worker_ports 12000 used by other"
    assert _last_error(tmp_path / "missing.log") == ""
