"""An embedded Argus (HTTP + SFTP) on free ports, and helpers for paramiko and OpenSSH `sftp`."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import paramiko
import pytest

from argus.services.files import shared_store
from argus.settings import Settings
from argus.sftp.server import SftpServer
from tests.helpers import LiveServer, free_port, live_server
from tests.waiting import slack

PASSWORD = "correct horse battery"


@dataclass
class SftpEnv:
    live: LiveServer
    port: int
    root: Path
    tmp: Path
    keys: dict[str, Path] = field(default_factory=dict)
    known_hosts: Path | None = None

    def home(self, user: str) -> Path:
        return self.root / "users" / user

    def add_user(self, name: str, *, password: str | None = PASSWORD, key: bool = True) -> None:
        client = self.live.new_user(name)
        with client:
            if password:
                assert client.post("/api/v2/me/password", json={"password": password}).status_code == 204
            if key:
                path = self.tmp / f"id_{name}"
                subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)
                r = client.post("/api/v2/me/keys", json={"public_key": (path.with_suffix(".pub")).read_text()})
                assert r.status_code == 201, r.text
                self.keys[name] = path

    def paramiko(self, user: str, *, password: str | None = None, key: bool = True) -> paramiko.SSHClient:
        c = paramiko.SSHClient()
        c.set_missing_host_key_policy(paramiko.AutoAddPolicy())
        c.connect("127.0.0.1", self.port, username=user, password=password,
                  key_filename=str(self.keys[user]) if key and password is None else None,
                  allow_agent=False, look_for_keys=False, timeout=slack(10), banner_timeout=slack(10),
                  auth_timeout=slack(10))
        return c

    def sftp(self, user: str, commands: str, *, check: bool = True) -> subprocess.CompletedProcess:
        """OpenSSH `sftp` in batch mode with the user's key; with -b, the first failing command stops it."""
        assert self.known_hosts is not None
        cmd = ["sftp", "-b", "-", "-P", str(self.port), "-o", "StrictHostKeyChecking=no",
               "-o", f"UserKnownHostsFile={self.known_hosts}", "-o", "BatchMode=yes",
               "-o", "IdentitiesOnly=yes", "-i", str(self.keys[user]), f"{user}@127.0.0.1"]
        proc = subprocess.run(cmd, input=commands, capture_output=True, text=True, timeout=120, cwd=self.tmp)
        if check:
            assert proc.returncode == 0, proc.stderr + proc.stdout
        return proc


class LoopThread:
    """An asyncio loop in a thread to host the asyncssh server next to the uvicorn test server."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro, timeout: float = 30):  # noqa: ANN001, ANN201
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


@pytest.fixture
def sftp_settings(tmp_path: Path) -> Settings:
    return Settings(state_dir=tmp_path / "state", verl_validation="off", sftp_enabled=True,
                    sftp_port=free_port(), login_max_failures=3, login_window_s=30)


@pytest.fixture
def env(sftp_settings: Settings, tmp_path: Path) -> Iterator[SftpEnv]:
    if shutil.which("sftp") is None:
        pytest.fail("the OpenSSH sftp client is required: apt-get install -y openssh-client")
    loop = LoopThread()
    with live_server(sftp_settings) as live:
        server = SftpServer(sftp_settings, live.ctx.db, shared_store(live.ctx.extras, sftp_settings))
        loop.run(server.start())
        work = tmp_path / "client"
        work.mkdir()
        e = SftpEnv(live=live, port=sftp_settings.sftp_port, root=sftp_settings.root, tmp=work,
                    known_hosts=work / "known_hosts")
        e.add_user("alice")
        e.add_user("bob")
        try:
            yield e
        finally:
            loop.run(server.stop())
            loop.close()
