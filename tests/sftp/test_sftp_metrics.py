"""SFTP sessions and bytes on GET /metrics: counted in the SFTP process, reported to the server, kept across a
restart of that process (sftp/stats.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import httpx
import psutil
from prometheus_client.parser import text_string_to_metric_families

from argus.sftp.stats import SftpStats
from tests.helpers import CLIENT_TIMEOUT_S
from tests.sftp_process import TOKEN, sftp_server_process
from tests.waiting import slack, wait_until


def _sftp_metrics(url: str) -> dict[str, float]:
    r = httpx.get(f"{url}/metrics", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=slack(CLIENT_TIMEOUT_S))
    assert r.status_code == 200, r.text
    out = {}
    for family in text_string_to_metric_families(r.text):
        for s in family.samples:
            if s.name.startswith(("argus_sftp_", "argus_component_")):
                out[s.name + "".join(f"{{{k}={v}}}" for k, v in sorted(s.labels.items()))] = s.value
    return out


def _until(url: str, pred, timeout: float = 20.0) -> dict[str, float]:
    seen: dict[str, dict[str, float]] = {}

    def holds() -> dict[str, float] | None:
        seen["metrics"] = got = _sftp_metrics(url)
        return got if pred(got) else None

    return wait_until(holds, timeout, every=0.3, what=lambda: f"the SFTP metrics; last {seen.get('metrics')}")


def test_sessions_and_bytes_reach_the_servers_metrics_and_survive_a_restart(tmp_path: Path) -> None:
    payload = tmp_path / "payload.bin"
    payload.write_bytes(b"x" * 300_000)
    with sftp_server_process(tmp_path, "fred", quiet=True) as server:
        base = _until(server.url, lambda m: m.get("argus_component_up{component=sftp}") == 1)
        assert base["argus_sftp_sessions_started_total"] == 0
        batch = f"put {payload} /payload.bin\nget /payload.bin {tmp_path / 'back.bin'}\n"
        done = subprocess.run(server.sftp_cmd(), input=batch, text=True, capture_output=True, timeout=60)
        assert done.returncode == 0, done.stderr
        got = _until(server.url, lambda m: m["argus_sftp_bytes_total{direction=download}"] >= 300_000
                     and m["argus_sftp_sessions"] == 0)
        assert got["argus_sftp_bytes_total{direction=upload}"] == 300_000
        assert got["argus_sftp_sessions_started_total"] == 1

        child = next(p for p in psutil.Process(server.proc.pid).children() if "argus.sftp.child" in p.cmdline())
        child.kill()  # a crash: the next child starts from zero, the server's counters do not
        got = _until(server.url, lambda m: m["argus_component_restarts_total{component=sftp}"] == 1
                     and m["argus_component_up{component=sftp}"] == 1, timeout=30)
        assert got["argus_sftp_bytes_total{direction=upload}"] == 300_000
        assert got["argus_sftp_sessions_started_total"] == 1


def test_stats_lines_round_trip_and_bad_ones_are_ignored() -> None:
    s = SftpStats(1, 5, 100, 200)
    assert SftpStats.parse(s.line()) == s
    for bad in ("ready", "stats {", "stats {}", 'stats {"sessions_open": "x"}', ""):
        assert SftpStats.parse(bad) is None
    assert s.plus(SftpStats(3, 2, 10, 20)) == SftpStats(1, 7, 110, 220)
