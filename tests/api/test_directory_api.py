"""Sign-in with the directory (issue 26) through real HTTP: browser sessions and API tokens by password,
against a real OpenLDAP (tests/ldap_fixtures.py)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from argus.settings import Settings
from tests.helpers import CLIENT_TIMEOUT_S, free_port, live_server
from tests.ldap_fixtures import USERS, Slapd, slapd  # noqa: F401 - fixture
from tests.waiting import slack

LOCAL_PASSWORD = "bob-local-password"


def pw(name: str) -> str:
    return USERS[name][0]


@pytest.fixture
def live(tmp_path: Path, slapd: Slapd):  # noqa: F811
    settings = Settings(state_dir=tmp_path / "state", sftp_enabled=False, verl_validation="off",
                        login_max_failures=3, login_window_s=60, **slapd.settings())
    with live_server(settings) as srv:
        with srv.admin() as a:
            for team in ("nlp", "vision"):
                assert a.post("/api/v2/teams", json={"name": team}).status_code == 201
        with srv.new_user("bob") as bob:
            assert bob.post("/api/v2/me/password", json={"password": LOCAL_PASSWORD}).status_code == 204
        yield srv


def sign_in(live, user: str, password: str) -> httpx.Response:  # noqa: ANN001
    with httpx.Client(base_url=live.url, timeout=slack(CLIENT_TIMEOUT_S)) as b:
        return b.post("/api/v2/session", json={"user": user, "password": password})


def test_a_directory_user_signs_in_and_sees_their_teams(live) -> None:  # noqa: ANN001
    r = sign_in(live, "dana", pw("dana"))
    assert r.status_code == 200, r.text
    assert r.json()["user"] == "dana" and r.json()["is_admin"] is False
    assert "argus_session=" in r.headers["set-cookie"]
    with live.admin() as a:
        users = {u["name"]: u for u in a.get("/api/v2/users").json()}
        assert "dana" in users
        nlp = a.get("/api/v2/teams/nlp").json()
        assert [m["name"] for m in nlp["members"]] == ["dana"]
        created = a.get("/api/v2/audit", params={"action": "user.created"}).json()
        events = created["events"] if isinstance(created, dict) else created
        assert any(e["target"] == "dana" for e in events)


def test_wrong_locked_and_disabled_are_refused(live) -> None:  # noqa: ANN001
    assert sign_in(live, "dana", "wrong-password").status_code == 401
    r = sign_in(live, "carol", pw("carol"))  # locked in the directory: the generic failure
    assert r.status_code == 401 and r.json()["detail"]["code"] == "bad_credentials"
    assert sign_in(live, "erik", pw("erik")).status_code == 200
    with live.admin() as a:
        assert a.post("/api/v2/users/erik/disable").status_code in (200, 204)
    r = sign_in(live, "erik", pw("erik"))
    assert r.status_code == 403 and r.json()["detail"]["code"] == "user_disabled"


def test_a_token_by_password_for_directory_and_local_users(live) -> None:  # noqa: ANN001
    with httpx.Client(base_url=live.url, timeout=slack(CLIENT_TIMEOUT_S)) as c:
        r = c.post("/api/v2/session/token", json={"user": "dana", "password": pw("dana"), "name": "laptop"})
        assert r.status_code == 201, r.text
        token = r.json()["token"]
        me = c.get("/api/v2/me", headers={"Authorization": f"Bearer {token}"})
        assert me.status_code == 200 and me.json()["name"] == "dana"
        r = c.post("/api/v2/session/token", json={"user": "bob", "password": LOCAL_PASSWORD})
        assert r.status_code == 201, r.text
        r = c.post("/api/v2/session/token", json={"user": "dana", "password": "wrong-password"})
        assert r.status_code == 401 and "token" not in r.json()
        # a directory user's password is the directory's
        r = c.post("/api/v2/me/password", json={"password": "a-new-password", "current_password": pw("dana")},
                   headers={"Authorization": f"Bearer {token}"})
        assert r.status_code == 409 and r.json()["detail"]["code"] == "directory_user"
        assert "directory" in r.json()["detail"]["message"]


@pytest.mark.hostile
def test_failed_directory_sign_ins_count_in_the_limiter(live) -> None:  # noqa: ANN001
    for _ in range(3):
        assert sign_in(live, "dana", "wrong-password").status_code == 401
    r = sign_in(live, "dana", pw("dana"))  # even the right one, from this address, for a while
    assert r.status_code == 429
    assert sign_in(live, "bob", LOCAL_PASSWORD).status_code == 200  # another name is not locked out


@pytest.mark.hostile
def test_an_empty_password_and_an_injected_name_get_in_nowhere(live) -> None:  # noqa: ANN001
    assert sign_in(live, "dana", "").status_code == 401
    assert sign_in(live, "*)(uid=*", pw("dana")).status_code == 401
    assert sign_in(live, "*", pw("dana")).status_code == 401


def test_directory_down_is_503_and_local_users_still_sign_in(tmp_path: Path, slapd: Slapd) -> None:  # noqa: F811
    settings = Settings(state_dir=tmp_path / "state", sftp_enabled=False, verl_validation="off",
                        **slapd.settings(ldap_url=f"ldap://127.0.0.1:{free_port()}", ldap_timeout_s=2.0))
    with live_server(settings) as srv:
        with srv.new_user("bob") as bob:
            assert bob.post("/api/v2/me/password", json={"password": LOCAL_PASSWORD}).status_code == 204
        r = sign_in(srv, "dana", pw("dana"))
        assert r.status_code == 503 and r.json()["detail"]["code"] == "directory_unavailable"
        assert "local accounts" in r.json()["detail"]["message"]
        assert sign_in(srv, "bob", LOCAL_PASSWORD).status_code == 200


def test_argus_login_with_a_directory_password_saves_a_working_token(live, monkeypatch, tmp_path: Path) -> None:  # noqa: ANN001
    import yaml
    from typer.testing import CliRunner

    from argus.cli.main import app

    monkeypatch.setenv("HOME", str(tmp_path))
    for var in ("ARGUS_URL", "ARGUS_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    r = CliRunner().invoke(app, ["login", "--url", live.url, "--user", "dana"], input=pw("dana") + "\n")
    assert r.exit_code == 0, r.output
    assert "logged in as dana" in r.output and pw("dana") not in r.output
    saved = yaml.safe_load((tmp_path / ".config" / "argus" / "cli.yaml").read_text())
    with httpx.Client(base_url=live.url, headers={"Authorization": f"Bearer {saved['token']}"}, timeout=slack(CLIENT_TIMEOUT_S)) as c:
        assert c.get("/api/v2/me").json()["name"] == "dana"
    r = CliRunner().invoke(app, ["login", "--url", live.url, "--user", "dana"], input="wrong-password\n")
    assert r.exit_code != 0 and "wrong user name or password" in r.output
