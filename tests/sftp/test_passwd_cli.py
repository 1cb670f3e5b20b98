"""`echo pw | argus passwd`: no getpass warning, the password logs in over SFTP with the printed command."""

from __future__ import annotations

import os
import subprocess
import sys

import paramiko
import pytest

from tests.sftp.conftest import PASSWORD
from tests.waiting import slack


def _passwd(env, stdin: str, current: str | None = PASSWORD) -> subprocess.CompletedProcess:  # noqa: ANN001
    with env.live.admin() as a:
        token = a.post("/api/v2/users/alice/tokens", json={}).json()["token"]
    cli_env = {**os.environ, "ARGUS_URL": env.live.url, "ARGUS_TOKEN": token, "HOME": str(env.tmp)}
    cli_env.pop("ARGUS_CURRENT_PASSWORD", None)
    if current is not None:  # alice has a password already (issue 25: changing it needs the current one)
        cli_env["ARGUS_CURRENT_PASSWORD"] = current
    return subprocess.run([sys.executable, "-m", "argus.cli.main", "passwd"], input=stdin, env=cli_env,
                          capture_output=True, text=True, cwd=env.tmp, timeout=60)


@pytest.mark.parametrize("stdin", ["a brand new password\n", "a brand new password\na brand new password\n"])
def test_passwd_from_a_pipe_prints_the_exact_sftp_command(env, stdin):
    r = _passwd(env, stdin)
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""  # no GetPassWarning, no prompt
    with env.live.admin() as a:  # the admin's /me answers with the same server settings
        me_sftp = a.get("/api/v2/me").json()["sftp"]
    expected = me_sftp.replace(me_sftp.split()[-1].split("@")[0] + "@", "alice@")
    assert r.stdout == f"password set; log in with: {expected}\n"
    # the printed command is the one that works: its port, user and host log in with the new password
    _, flag, port, target = expected.split()
    user, host = target.split("@")
    assert flag == "-P" and user == "alice"
    c = paramiko.SSHClient()
    c.set_missing_host_key_policy(paramiko.AutoAddPolicy())
    c.connect(host, int(port), username=user, password="a brand new password", allow_agent=False,
              look_for_keys=False, timeout=slack(10), banner_timeout=slack(10), auth_timeout=slack(10))
    with c, c.open_sftp() as s:
        assert "datasets" in s.listdir(".")


def test_passwd_from_a_pipe_refuses_two_different_lines(env):
    r = _passwd(env, "first password\nsecond password\n")
    assert r.returncode == 1 and "two identical lines" in r.stderr and "GetPassWarning" not in r.stderr


def test_passwd_from_a_pipe_needs_the_current_password(env):
    r = _passwd(env, "a brand new password\n", current=None)
    assert r.returncode == 1 and "ARGUS_CURRENT_PASSWORD" in r.stderr
    r = _passwd(env, "a brand new password\n", current="not the password")
    assert r.returncode == 1 and "current_password" in r.stderr and "not your current password" in r.stderr
