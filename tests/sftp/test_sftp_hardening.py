"""Hostile SFTP clients: failed-login throttling per (user, address), huge passwords, chmod on
platform-owned folders. A real asyncssh server, real paramiko / OpenSSH clients."""

from __future__ import annotations

import logging
import os
import stat
import time

import paramiko
import pytest
from argon2 import PasswordHasher

from argus.services.logins import LoginLimiter
from argus.services.users import MAX_PASSWORD_BYTES
from tests.sftp.conftest import PASSWORD

pytestmark = pytest.mark.hostile  # the hostile-input suite: grows with every hole found


def _refused(env, user: str, password: str) -> None:
    with pytest.raises(paramiko.AuthenticationException):
        env.paramiko(user, password=password)


def test_guessing_bobs_password_does_not_lock_out_alice(env, caplog):
    """30 wrong passwords for bob from one address: bob's password is locked there, alice's is not."""
    caplog.set_level(logging.WARNING, logger="argus.services.logins")
    for _ in range(30):  # login_max_failures=3: only the first 3 are checked and counted
        _refused(env, "bob", "guess guess")
    _refused(env, "bob", PASSWORD)  # locked for (bob, 127.0.0.1)
    with env.paramiko("alice", password=PASSWORD) as c, c.open_sftp() as s:
        assert "datasets" in s.listdir("/")
    with env.paramiko("alice") as c, c.open_sftp() as s:
        assert "datasets" in s.listdir("/")
    with env.paramiko("bob") as c, c.open_sftp() as s:  # bob's own key still works
        assert "datasets" in s.listdir("/")
    lockouts = [r.getMessage() for r in caplog.records if "lockout" in r.getMessage()]
    assert len(lockouts) == 1, lockouts
    assert "'bob'" in lockouts[0] and "127.0.0.1" in lockouts[0] and "until 20" in lockouts[0]


def test_address_ceiling_blocks_passwords_but_never_a_valid_key(env, caplog):
    """A client spraying names hits the per-address ceiling (10 × 3 failures): passwords from that
    address are refused for every user, keys still log in."""
    caplog.set_level(logging.WARNING, logger="argus.services.logins")
    for i in range(30):
        _refused(env, f"nobody{i}", "guess guess")
    _refused(env, "alice", PASSWORD)
    with env.paramiko("alice") as c, c.open_sftp() as s:
        assert "datasets" in s.listdir("/")
    assert env.sftp("bob", "ls /\n").returncode == 0  # OpenSSH client, key auth
    assert any("every user" in r.getMessage() and "127.0.0.1" in r.getMessage() for r in caplog.records)


def test_limiter_window_and_scopes():
    lim = LoginLimiter(3, 0.3, address_factor=2)
    for _ in range(2):
        assert lim.failed("bob", "10.0.0.1") == []
    [lock] = lim.failed("bob", "10.0.0.1")
    assert lock.scope == "user+address" and lock.user == "bob" and lock.address == "10.0.0.1"
    assert lim.blocked("bob", "10.0.0.1")
    assert not lim.blocked("bob", "10.0.0.2") and not lim.blocked("alice", "10.0.0.1")
    for _ in range(2):
        lim.failed("carol", "10.0.0.1")
    locks = lim.failed("carol", "10.0.0.1")  # 6th failure from the address: the ceiling (2 × 3)
    assert sorted(lock.scope for lock in locks) == ["address", "user+address"]
    assert lim.blocked("alice", "10.0.0.1") and not lim.blocked("alice", "10.0.0.2")
    time.sleep(0.35)  # time passing is the input here (the 0.3 s window ends), not a wait
    assert not lim.blocked("bob", "10.0.0.1") and not lim.blocked("alice", "10.0.0.1")


def test_huge_password_refused_quickly_at_login(env, monkeypatch):
    from argus.services import users
    from argus.services.logins import login_with_password

    hashed: list[int] = []

    class SpyHasher(PasswordHasher):  # the real Argon2 hasher, recording what it was asked to verify
        def verify(self, hash, password):  # noqa: A002, ANN001, ANN201
            hashed.append(len(password))
            return super().verify(hash, password)

    monkeypatch.setattr(users, "_hasher", SpyHasher())
    _refused(env, "alice", "x" * (64 * 1024))
    with env.live.ctx.db.session() as session:
        assert login_with_password(session, "alice", "y" * (MAX_PASSWORD_BYTES + 1)) is None
        assert hashed == []  # refused before Argon2 ever saw it
        assert login_with_password(session, "alice", PASSWORD) is not None
        assert hashed == [len(PASSWORD)]


def test_huge_password_refused_by_the_api(env):
    alice = env.live.new_user("dora")
    with alice:
        r = alice.post("/api/v2/me/password", json={"password": "p" * (MAX_PASSWORD_BYTES + 1)})
        assert r.status_code == 400, r.text
        err = r.json()["detail"]["errors"][0]
        assert err["field"] == "password" and str(MAX_PASSWORD_BYTES) in err["message"]
        r = alice.post("/api/v2/me/password", json={"password": "é" * (MAX_PASSWORD_BYTES // 2 + 1)})  # bytes count
        assert r.status_code == 400, r.text
        assert alice.post("/api/v2/me/password", json={"password": "p" * MAX_PASSWORD_BYTES}).status_code == 204


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_chmod_on_home_and_common_refused(env):
    home = env.home("alice")
    datasets = env.root / "datasets"
    before = {p: _mode(p) for p in (home, datasets, env.root / "hf")}
    (datasets / "shared.txt").write_text("x")
    shared_before = _mode(datasets / "shared.txt")
    with env.paramiko("alice") as c, c.open_sftp() as s:
        for target in ("/", ".", "/common/datasets", "/common/hf", "/common/datasets/shared.txt", "/common"):
            with pytest.raises(PermissionError):
                s.chmod(target, 0o777)
        s.chmod("/datasets", 0o750)  # her own folders stay hers to chmod
        assert _mode(home / "datasets") == 0o750
    assert {p: _mode(p) for p in before} == before
    assert _mode(datasets / "shared.txt") == shared_before


def test_admin_chmod_in_common_refused_too(env):
    """Admins may write files into /common, but its modes stay the platform's."""
    datasets = env.root / "datasets"
    (datasets / "d").mkdir()
    before = (_mode(datasets), _mode(datasets / "d"))
    env.add_user("root2", password=None)
    with env.live.ctx.db.session() as session:
        from sqlalchemy import text

        session.execute(text("UPDATE users SET is_admin = 1 WHERE name = 'root2'"))
    with env.paramiko("root2") as c, c.open_sftp() as s:
        for target in ("/common/datasets", "/common/datasets/d", "/"):
            with pytest.raises(PermissionError):
                s.chmod(target, 0o700)
        s.utime("/common/datasets/d", (1_000_000_000, 1_000_000_000))  # times stay settable
    assert (_mode(datasets), _mode(datasets / "d")) == before
    assert os.stat(datasets / "d").st_mtime == 1_000_000_000
