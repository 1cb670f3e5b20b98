"""Sign-in with the directory (issue 26), service level, against a real OpenLDAP (tests/ldap_fixtures.py)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from sqlalchemy import select

from argus.db.models import AuditEventModel, UserModel
from argus.db.session import Database
from argus.errors import Conflict, Forbidden, Unavailable
from argus.services import teams as team_svc
from argus.services import users as user_svc
from argus.services.directory import Directory, Outcome
from argus.services.logins import login_with_password
from argus.services.principal import Principal
from argus.settings import Settings
from tests.helpers import free_port
from tests.ldap_fixtures import USERS, Slapd, fresh_slapd, slapd  # noqa: F401 - fixtures

ROOT = Principal(id=0, name="root", is_admin=True)


def pw(name: str) -> str:
    return USERS[name][0]


class World:
    def __init__(self, tmp: Path, server: Slapd, **extra: object) -> None:
        self.settings = Settings(state_dir=tmp / "state", sftp_enabled=False, verl_validation="off",
                                 **server.settings(**extra))
        self.db = Database(self.settings.db_url)
        self.db.migrate()
        self.directory = Directory.from_settings(self.settings)
        assert self.directory is not None
        with self.db.session() as s:
            for team in ("nlp", "vision", "ops"):
                team_svc.create_team(s, ROOT, team)

    def login(self, name: str, password: str) -> Principal | None:
        with self.db.session() as s:
            return login_with_password(s, name, password, directory=self.directory, address="10.0.0.1")

    def user(self, name: str) -> UserModel | None:
        with self.db.session() as s:
            return s.scalar(select(UserModel).where(UserModel.name == name))

    def teams(self, name: str) -> dict[str, tuple[str, bool]]:
        with self.db.session() as s:
            user = s.scalar(select(UserModel).where(UserModel.name == name))
            return {t: (r.value, d) for t, r, d in team_svc.teams_of(s, user.id)}


@pytest.fixture
def world(tmp_path: Path, slapd: Slapd) -> World:  # noqa: F811
    return World(tmp_path, slapd)


def test_first_sign_in_creates_a_directory_user_with_a_home_and_an_audit_event(world: World) -> None:
    p = world.login("dana", pw("dana"))
    assert p is not None and p.name == "dana" and not p.is_admin
    user = world.user("dana")
    assert user is not None and user.directory and user.password_hash is None
    assert (world.settings.root / "users" / "dana").is_dir()
    assert world.login("dana", pw("dana")) == p  # the second time: the same user
    with world.db.session() as s:
        events = list(s.scalars(select(AuditEventModel).where(AuditEventModel.action == "user.created")))
    assert len(events) == 1 and events[0].target == "dana" and events[0].detail["via"] == "ldap"
    assert events[0].source_ip == "10.0.0.1"


def test_wrong_empty_and_unknown_are_refused(world: World) -> None:
    assert world.login("dana", "not-her-password") is None
    assert world.login("dana", "") is None
    assert world.directory.check("dana", "").outcome is Outcome.EMPTY_PASSWORD  # never an anonymous bind
    assert world.login("nobody", "whatever-password") is None
    assert world.directory.check("nobody", "whatever-password").outcome is Outcome.NOT_FOUND
    assert world.user("dana") is None and world.user("nobody") is None  # no user made by a failure


@pytest.mark.hostile
@pytest.mark.parametrize("name", ["*", "d*", "*)(uid=*", "dana)(|(uid=*", "*)(&", "dana\x00", "x" * 5000])
def test_filter_injection_finds_no_one(world: World, name: str) -> None:
    assert world.directory.check(name, pw("dana")).outcome is Outcome.NOT_FOUND
    assert world.login(name, pw("dana")) is None


def test_a_user_the_filter_excludes_is_refused(world: World) -> None:
    assert world.directory.check("carol", pw("carol")).outcome is Outcome.NOT_FOUND  # employeeType: disabled
    assert world.login("carol", pw("carol")) is None and world.user("carol") is None


def test_locked_in_the_directory_after_signing_in_is_refused_and_logged(tmp_path: Path, fresh_slapd: Slapd,  # noqa: F811
                                                                        caplog: pytest.LogCaptureFixture) -> None:
    w = World(tmp_path, fresh_slapd)
    assert w.login("erik", pw("erik")) is not None
    fresh_slapd.lock("erik")
    with caplog.at_level(logging.INFO, logger="argus.services.directory"):
        assert w.login("erik", pw("erik")) is None
    assert "account disabled in the directory" in caplog.text


def test_disabled_in_argus_is_refused_even_when_the_directory_accepts(world: World) -> None:
    assert world.login("dana", pw("dana")) is not None
    with world.db.session() as s:
        user_svc.set_user_disabled(s, "dana", True)
    with pytest.raises(Forbidden) as exc:
        world.login("dana", pw("dana"))
    assert exc.value.code == "user_disabled"
    assert world.login("dana", "wrong-password") is None  # told only with the right password


def test_a_directory_name_argus_cannot_take_is_refused_with_the_reason(world: World) -> None:
    with pytest.raises(Forbidden) as exc:
        world.login("John.Doe", pw("John.Doe"))
    assert exc.value.code == "invalid_directory_name" and "^[a-z][a-z0-9_-]{1,31}$" in exc.value.message
    assert world.login("John.Doe", "wrong-password") is None  # a guesser learns nothing


def test_groups_map_to_teams_and_leaving_a_group_leaves_the_team(tmp_path: Path, fresh_slapd: Slapd) -> None:  # noqa: F811
    w = World(tmp_path, fresh_slapd)
    assert w.login("dana", pw("dana")) is not None
    teams = w.teams("dana")
    assert set(teams) == {"nlp", "vision"} and all(role == "member" for role, _ in teams.values())
    assert sum(default for _, default in teams.values()) == 1
    with w.db.session() as s:  # an admin adds her to a team the mapping does not name
        team_svc.add_member(s, ROOT, "ops", "dana")
        team_svc.set_default_team(s, Principal(w.user("dana").id, "dana", False), "nlp")
    fresh_slapd.remove_from_group("nlp", "dana")
    assert w.login("dana", pw("dana")) is not None
    teams = w.teams("dana")
    assert set(teams) == {"vision", "ops"}  # nlp left with its group; ops (unmapped) untouched
    assert sum(default for _, default in teams.values()) == 1  # the default moved off nlp
    with w.db.session() as s:
        actions = [(e.action, e.target) for e in s.scalars(select(AuditEventModel).order_by(AuditEventModel.id))
                   if e.actor == "(directory)"]
    assert ("team.member_removed", "nlp") in actions and ("team.member_added", "vision") in actions
    fresh_slapd.add_to_group("nlp", "dana")
    assert w.login("dana", pw("dana")) is not None
    assert set(w.teams("dana")) == {"nlp", "vision", "ops"}


def test_the_admin_group_makes_site_admins(world: World) -> None:
    erik = world.login("erik", pw("erik"))  # in cn=ops, the ldap_admin_group
    assert erik is not None and erik.is_admin
    assert world.teams("erik") == {"vision": ("member", True)}  # the ops *group* is not mapped to a team
    dana = world.login("dana", pw("dana"))
    assert dana is not None and not dana.is_admin


def test_a_local_user_is_never_checked_against_the_directory(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    with world.db.session() as s:
        alice = user_svc.create_user(s, world.settings.root, "alice")
        user_svc.set_password(s, alice.id, "alice-local-pass")
    asked: list[str] = []
    real = world.directory.check
    monkeypatch.setattr(world.directory, "check", lambda name, password: asked.append(name) or real(name, password))
    assert world.login("alice", pw("alice")) is None  # the directory's alice does not take the local one over
    assert world.login("alice", "alice-local-pass") is not None
    assert asked == []
    assert not world.user("alice").directory


def test_directory_down_refuses_directory_users_and_lets_local_users_in(tmp_path: Path, slapd: Slapd) -> None:  # noqa: F811
    w = World(tmp_path, slapd, ldap_url=f"ldap://127.0.0.1:{free_port()}", ldap_timeout_s=2.0)
    with w.db.session() as s:
        bob = user_svc.create_user(s, w.settings.root, "bob")
        user_svc.set_password(s, bob.id, "bob-local-pass")
    with pytest.raises(Unavailable) as exc:
        w.login("dana", pw("dana"))
    assert exc.value.code == "directory_unavailable"
    assert w.login("bob", "bob-local-pass") is not None


def test_a_refused_search_account_is_a_directory_problem_not_a_wrong_password(tmp_path: Path, slapd: Slapd) -> None:  # noqa: F811
    w = World(tmp_path, slapd, ldap_bind_password="not-the-search-password")
    with pytest.raises(Unavailable):
        w.login("dana", pw("dana"))


def test_a_directory_user_changes_their_password_in_the_directory(world: World) -> None:
    world.login("dana", pw("dana"))
    with world.db.session() as s, pytest.raises(Conflict) as exc:
        user_svc.change_own_password(s, world.user("dana").id, "a-new-password", pw("dana"))
    assert exc.value.code == "directory_user" and "directory" in exc.value.message
    with world.db.session() as s, pytest.raises(Conflict):
        user_svc.set_password(s, world.user("dana").id, "a-new-password")  # nor an admin's reset


def test_half_configured_ldap_settings_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="ldap_user_base"):
        Settings(state_dir=tmp_path, ldap_url="ldap://127.0.0.1:1")
    with pytest.raises(ValueError, match="ldap_team_groups"):
        Settings(state_dir=tmp_path, ldap_url="ldap://127.0.0.1:1", ldap_user_base="dc=x",
                 ldap_team_groups="cn=x,dc=y=Not A Team")
    assert Directory.from_settings(Settings(state_dir=tmp_path)) is None  # off by default
