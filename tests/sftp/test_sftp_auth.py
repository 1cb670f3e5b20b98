"""Logins: password, key, disabled users, rate limiting, a stable host key; quota over SFTP."""

from __future__ import annotations

import paramiko
import pytest
from sqlalchemy import text

from argus.services.files import shared_store
from argus.sftp.server import SftpServer, load_host_key
from tests.helpers import free_port
from tests.sftp.conftest import PASSWORD, LoopThread


def test_password_and_key_login(env):
    with env.paramiko("alice", password=PASSWORD) as c, c.open_sftp() as s:
        assert "datasets" in s.listdir("/")
    with env.paramiko("alice") as c, c.open_sftp() as s:
        assert "datasets" in s.listdir("/")
    with pytest.raises(paramiko.AuthenticationException):
        env.paramiko("alice", password="wrong password")
    with pytest.raises(paramiko.AuthenticationException):  # bob's key is not alice's
        env.keys["alice_saved"] = env.keys["alice"]
        env.keys["alice"] = env.keys["bob"]
        try:
            env.paramiko("alice")
        finally:
            env.keys["alice"] = env.keys["alice_saved"]
    with pytest.raises(paramiko.AuthenticationException):
        env.paramiko("nobody", password=PASSWORD)


def test_disabled_user_refused(env):
    with env.live.admin() as a:
        assert a.post("/api/v2/users/alice/disable").status_code == 200
    with pytest.raises(paramiko.AuthenticationException):
        env.paramiko("alice", password=PASSWORD)
    with pytest.raises(paramiko.AuthenticationException):
        env.paramiko("alice")
    assert env.sftp("alice", "ls /\n", check=False).returncode != 0


def test_failed_logins_are_rate_limited(env):
    for _ in range(3):  # login_max_failures=3 in the fixture
        with pytest.raises(paramiko.AuthenticationException):
            env.paramiko("bob", password="guess guess")
    with pytest.raises(paramiko.AuthenticationException):  # right password, still refused in the window
        env.paramiko("bob", password=PASSWORD)
    with env.paramiko("bob") as c, c.open_sftp() as s:  # a valid key is never throttled
        assert "datasets" in s.listdir("/")


def test_host_key_is_stable_across_restarts(env, sftp_settings):
    """A second server start on the same state dir serves the same key (a restart keeps known_hosts valid)."""
    with env.paramiko("alice") as c:
        seen1 = c.get_transport().get_remote_server_key().get_base64()
    assert (sftp_settings.state_dir / "ssh_host_ed25519_key").stat().st_mode & 0o077 == 0
    loop = LoopThread()
    restarted = sftp_settings.model_copy(update={"sftp_port": free_port()})
    second = SftpServer(restarted, env.live.ctx.db, shared_store(env.live.ctx.extras, restarted))
    loop.run(second.start())
    try:
        env.port, old_port = restarted.sftp_port, env.port
        with env.paramiko("alice") as c:
            assert c.get_transport().get_remote_server_key().get_base64() == seen1
    finally:
        env.port = old_port
        loop.run(second.stop())
        loop.close()
    assert seen1 in load_host_key(sftp_settings.state_dir).export_public_key().decode()


def test_quota_over_sftp_leaves_no_partial_file(env):
    with env.live.ctx.db.session() as session:
        session.execute(text("UPDATE users SET quota_bytes = 1000000 WHERE name = 'alice'"))
    (env.tmp / "big.bin").write_bytes(b"x" * 2_000_000)
    (env.tmp / "small.bin").write_bytes(b"y" * 10_000)
    p = env.sftp("alice", "put big.bin /datasets/big.bin\n", check=False)
    assert p.returncode != 0 and "failure" in p.stderr.lower()  # OpenSSH prints only the v3 code
    assert [x.name for x in (env.home("alice") / "datasets").iterdir()] == []
    with env.paramiko("alice") as c, c.open_sftp() as s:
        with pytest.raises(OSError, match="quota"):
            with s.open("/datasets/big2.bin", "wb") as f:
                f.write(b"z" * 2_000_000)
    assert list((env.home("alice") / "datasets").iterdir()) == []
    env.sftp("alice", "put small.bin /datasets/small.bin\n")  # under quota still works
    assert (env.home("alice") / "datasets" / "small.bin").stat().st_size == 10_000
