"""A 1 GiB upload and download through the server in its own process, with its memory (RSS) flat."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import httpx

from tests.helpers import free_port

TOKEN = "argus_large_test_admin_token_0123456789"
SERVE = """
import sys
from argus.server import _sftp_components, run_server
from argus.settings import Settings
run_server(Settings(state_dir=sys.argv[1], api_port=int(sys.argv[2]), sftp_port=int(sys.argv[3])),
           components_factory=_sftp_components)
"""
GIB = 1 << 30


def _rss_kib(pid: int) -> int:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def test_one_gib_transfer_with_flat_server_memory(tmp_path):
    api, port = free_port(), free_port()
    env = {**os.environ, "ARGUS_ADMIN_TOKEN": TOKEN, "ARGUS_VERL_VALIDATION": "off"}
    server = subprocess.Popen([sys.executable, "-c", SERVE, str(tmp_path / "state"), str(api), str(port)], env=env)
    samples: list[int] = []
    stop = threading.Event()
    try:
        url = f"http://127.0.0.1:{api}"
        for _ in range(300):
            try:
                if httpx.get(f"{url}/api/v2/health").status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "key")], check=True)
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}) as a:
            a.post("/api/v2/users", json={"name": "alice"}).raise_for_status()
            t = a.post("/api/v2/users/alice/tokens", json={}).json()["token"]
        httpx.post(f"{url}/api/v2/me/keys", headers={"Authorization": f"Bearer {t}"},
                   json={"public_key": (tmp_path / "key.pub").read_text()}).raise_for_status()
        big = tmp_path / "big.bin"
        with big.open("wb") as f:  # sparse: 1 GiB of zeros costs no disk on the client side
            f.truncate(GIB)
        baseline = _rss_kib(server.pid)

        def sample() -> None:
            while not stop.is_set():
                samples.append(_rss_kib(server.pid))
                time.sleep(0.2)

        threading.Thread(target=sample, daemon=True).start()
        cmd = ["sftp", "-b", "-", "-P", str(port), "-o", "StrictHostKeyChecking=no",
               "-o", f"UserKnownHostsFile={tmp_path / 'kh'}", "-o", "IdentitiesOnly=yes",
               "-i", str(tmp_path / "key"), "alice@127.0.0.1"]
        p = subprocess.run(cmd, input="put big.bin /datasets/big.bin\nget /datasets/big.bin back.bin\n",
                           text=True, capture_output=True, cwd=tmp_path, timeout=120)
        stop.set()
        assert p.returncode == 0, p.stderr
        stored = tmp_path / "state" / "private" / "users" / "alice" / "datasets" / "big.bin"
        assert stored.stat().st_size == GIB and (tmp_path / "back.bin").stat().st_size == GIB
        with (tmp_path / "back.bin").open("rb") as f:
            f.seek(GIB // 2)
            assert f.read(1 << 20) == bytes(1 << 20)
        growth_mib = (max(samples) - baseline) / 1024
        assert len(samples) > 10
        assert growth_mib < 150, f"server RSS grew by {growth_mib:.0f} MiB during a 1 GiB transfer"
    finally:
        stop.set()
        server.terminate()
        server.wait(20)
