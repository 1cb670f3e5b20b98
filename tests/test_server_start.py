"""`argus server` as a user runs it: a subprocess that serves the API and prints the admin token once."""

import os
import signal
import subprocess
import sys
import time

import httpx

from tests.helpers import free_port


def start(state_dir, port, **env):
    e = {**os.environ, "ARGUS_SFTP_ENABLED": "false", "ARGUS_VERL_VALIDATION": "off", **env}
    e.pop("ARGUS_ADMIN_TOKEN", None) if "ARGUS_ADMIN_TOKEN" not in env else None
    return subprocess.Popen(
        [sys.executable, "-m", "argus.cli.main", "server", "--state-dir", str(state_dir), "--port", str(port),
         "--ray-address", "127.0.0.1:1"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=e,
    )


def wait_healthy(port, proc, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stdout.read()
        try:
            if httpx.get(f"http://127.0.0.1:{port}/api/v2/health", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise AssertionError("server did not become healthy")


def stop(proc):
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=30)
    return out


def test_server_serves_and_prints_token_once(tmp_path):
    port = free_port()
    proc = start(tmp_path, port)
    wait_healthy(port, proc)
    out = stop(proc)
    tokens = [line.split("admin token: ")[1] for line in out.splitlines() if line.startswith("admin token: ")]
    assert len(tokens) == 1, out
    r = None
    proc = start(tmp_path, port)
    try:
        wait_healthy(port, proc)
        r = httpx.get(f"http://127.0.0.1:{port}/api/v2/me", headers={"Authorization": f"Bearer {tokens[0]}"})
    finally:
        out2 = stop(proc)
    assert r.status_code == 200 and r.json()["name"] == "admin"
    assert "admin token:" not in out2  # printed once, on first start only


def test_fixed_admin_token(tmp_path):
    port = free_port()
    proc = start(tmp_path, port, ARGUS_ADMIN_TOKEN="argus_fixed_for_automation")
    try:
        wait_healthy(port, proc)
        r = httpx.get(f"http://127.0.0.1:{port}/api/v2/me",
                      headers={"Authorization": "Bearer argus_fixed_for_automation"})
        assert r.status_code == 200 and r.json()["is_admin"]
    finally:
        stop(proc)
