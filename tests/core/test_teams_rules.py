"""core/teams: who may manage a team, and the last-team-admin rule (issue 26)."""

from argus.core.teams import (
    TEAM_NAME_RE,
    TeamRole,
    leaves_team_without_admin,
    may_change_team,
    may_manage_members,
)

A, M = TeamRole.ADMIN, TeamRole.MEMBER


def test_who_manages() -> None:
    assert may_manage_members(site_admin=True, role=None)
    assert may_manage_members(site_admin=False, role=A)
    assert not may_manage_members(site_admin=False, role=M)
    assert not may_manage_members(site_admin=False, role=None)
    assert may_change_team(site_admin=True) and not may_change_team(site_admin=False)


def test_last_team_admin() -> None:
    roles = {"alice": A, "bob": M}
    assert leaves_team_without_admin(roles, "alice", None)
    assert leaves_team_without_admin(roles, "alice", M)
    assert not leaves_team_without_admin(roles, "alice", A)
    assert not leaves_team_without_admin(roles, "bob", None)
    assert not leaves_team_without_admin({**roles, "bob": A}, "alice", None)
    assert not leaves_team_without_admin({"bob": M}, "bob", None)  # a team with no admin stays as it was


def test_team_names_are_folder_names() -> None:
    assert TEAM_NAME_RE.fullmatch("nlp-2")
    for bad in ("N", "a", "../x", "nlp\n", "9lab", "a" * 33, "a b"):
        assert not TEAM_NAME_RE.fullmatch(bad), bad
