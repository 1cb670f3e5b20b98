"""`argus server` with only its API and SFTP parts, in a subprocess, and a user holding an SSH key.

Shared by the 1 GiB memory test and bench/sftp.py: both measure the server as a separate
process (its RSS, its throughput) with the OpenSSH `sftp` client.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.helpers import CLIENT_TIMEOUT_S, free_port
from tests.waiting import slack, wait_until

TOKEN = "argus_sftp_process_admin_token_0123456789"
SERVE = """
import sys
from argus.server import _sftp_components, run_server
from argus.settings import Settings
run_server(Settings(state_dir=sys.argv[1], api_port=int(sys.argv[2]), sftp_port=int(sys.argv[3])),
           components_factory=_sftp_components)
"""


@dataclass
class SftpServerProcess:
    proc: subprocess.Popen
    url: str
    sftp_port: int
    user: str
    key: Path
    known_hosts: Path

    def sftp_pid(self, timeout: float = 30) -> int:
        """The SFTP server's own process (a child of the server, see argus/sftp/process.py)."""
        import psutil

        def child() -> int | None:
            for p in psutil.Process(self.proc.pid).children():
                try:
                    if "argus.sftp.child" in p.cmdline():
                        return p.pid
                except psutil.Error:  # a crashed one not reaped yet
                    continue
            return None

        return wait_until(child, timeout, what="no SFTP child process")

    def sftp_cmd(self, *extra: str) -> list[str]:
        """OpenSSH `sftp` in batch mode (commands on stdin) logged in as the user with their key."""
        return ["sftp", *extra, "-b", "-", "-P", str(self.sftp_port), "-o", "StrictHostKeyChecking=no",
                "-o", f"UserKnownHostsFile={self.known_hosts}", "-o", "IdentitiesOnly=yes", "-i", str(self.key),
                f"{self.user}@127.0.0.1"]


@contextmanager
def sftp_server_process(tmp: Path, user: str, *, quiet: bool = False, serve: str = SERVE
                        ) -> Iterator[SftpServerProcess]:
    """``serve``: the server's script (argv: state dir, API port, SFTP port); bench/sftp_api.py swaps it."""
    api, port = free_port(), free_port()
    env = {**os.environ, "ARGUS_ADMIN_TOKEN": TOKEN, "ARGUS_VERL_VALIDATION": "off"}
    out = subprocess.DEVNULL if quiet else None
    proc = subprocess.Popen([sys.executable, "-c", serve, str(tmp / "state"), str(api), str(port)], env=env,
                            stdout=out, stderr=out)
    try:
        url = f"http://127.0.0.1:{api}"

        def healthy() -> bool:
            if proc.poll() is not None:  # it will not come up: fail now, not after the time-out
                raise RuntimeError(f"argus server did not start (exited with {proc.returncode})")
            return httpx.get(f"{url}/api/v2/health").status_code == 200

        # 60 s (times the light lane's slack): test_sftp_metrics took 77 s instead of 11 s there
        wait_until(healthy, 60, ignore=(httpx.TransportError,), what="argus server did not start")
        key = tmp / "key"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=slack(CLIENT_TIMEOUT_S)) as admin:
            admin.post("/api/v2/users", json={"name": user}).raise_for_status()
            token = admin.post(f"/api/v2/users/{user}/tokens", json={}).json()["token"]
        httpx.post(f"{url}/api/v2/me/keys", headers={"Authorization": f"Bearer {token}"},
                   json={"public_key": key.with_suffix(".pub").read_text()}, timeout=slack(CLIENT_TIMEOUT_S)).raise_for_status()
        yield SftpServerProcess(proc, url, port, user, key, tmp / "known_hosts")
    finally:
        proc.terminate()
        proc.wait(slack(20))
