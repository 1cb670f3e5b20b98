"""SFTP passwords of directory users (issue 26) against a real OpenLDAP (tests/ldap_fixtures.py).

The first test runs ``argus server``'s own SFTP child process, configured only through ``ARGUS_LDAP_*``
environment variables: the LDAP settings must reach the child (sftp/process.py hands it the settings).
The others use the in-process server of tests/sftp/conftest.py with the LDAP settings added.
"""

from __future__ import annotations

from pathlib import Path

import paramiko
import pytest

from argus.settings import Settings
from tests.helpers import free_port
from tests.ldap_fixtures import USERS, Slapd, slapd  # noqa: F401 - fixture
from tests.sftp.conftest import PASSWORD
from tests.sftp_process import sftp_server_process
from tests.waiting import slack


def pw(name: str) -> str:
    return USERS[name][0]


def connect(port: int, user: str, password: str) -> paramiko.SSHClient:
    c = paramiko.SSHClient()
    c.set_missing_host_key_policy(paramiko.AutoAddPolicy())
    c.connect("127.0.0.1", port, username=user, password=password, allow_agent=False, look_for_keys=False,
              timeout=slack(20), banner_timeout=slack(20), auth_timeout=slack(20))
    return c


def test_a_directory_user_logs_in_to_the_sftp_process_with_their_directory_password(
        tmp_path: Path, slapd: Slapd, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    for key, value in slapd.settings().items():
        monkeypatch.setenv(f"ARGUS_{key.upper()}", str(value))
    with sftp_server_process(tmp_path, "dora", quiet=True) as server:
        with connect(server.sftp_port, "dana", pw("dana")) as c, c.open_sftp() as s:
            assert "datasets" in s.listdir("/")
            with s.open("/datasets/hello.txt", "w") as f:
                f.write("from the directory\n")
        home = tmp_path / "state" / "private" / "users" / "dana"
        assert (home / "datasets" / "hello.txt").read_text() == "from the directory\n"
        for user, password in (("dana", "wrong-password"), ("carol", pw("carol")), ("dana", "")):
            with pytest.raises(paramiko.AuthenticationException):
                connect(server.sftp_port, user, password)


@pytest.fixture
def sftp_settings(tmp_path: Path, slapd: Slapd) -> Settings:  # noqa: F811 - the conftest's, with LDAP on
    return Settings(state_dir=tmp_path / "state", verl_validation="off", sftp_enabled=True,
                    sftp_port=free_port(), login_max_failures=3, login_window_s=30, **slapd.settings())


def test_disabled_in_argus_and_local_names_are_not_the_directorys(env) -> None:  # noqa: ANN001
    with env.paramiko("erik", password=pw("erik")) as c, c.open_sftp() as s:
        assert "datasets" in s.listdir("/")
    with env.live.admin() as a:
        assert a.post("/api/v2/users/erik/disable").status_code == 200
    with pytest.raises(paramiko.AuthenticationException):
        env.paramiko("erik", password=pw("erik"))
    # alice is a local user (the fixture's): the directory's alice does not get in as her
    with pytest.raises(paramiko.AuthenticationException):
        env.paramiko("alice", password=pw("alice"))
    with env.paramiko("alice", password=PASSWORD) as c, c.open_sftp() as s:
        assert "datasets" in s.listdir("/")


@pytest.mark.hostile
def test_failed_directory_logins_count_in_the_sftp_limiter(env) -> None:  # noqa: ANN001
    for _ in range(3):
        with pytest.raises(paramiko.AuthenticationException):
            env.paramiko("dana", password="guess guess")
    with pytest.raises(paramiko.AuthenticationException):  # the right one too, inside the window
        env.paramiko("dana", password=pw("dana"))
    with pytest.raises(paramiko.AuthenticationException):
        env.paramiko("*)(uid=*", password=pw("erik"))
