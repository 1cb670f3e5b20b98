"""Sign-in with an LDAP directory (issue 26): the pure rules — the group→team mapping and what a sign-in syncs.

The directory decides who a user is and which groups they are in; Argus decides what that means. A
mapped team (``ldap_team_groups``) is the directory's: a directory user is added to it as a member while
in one of its groups and removed when no longer in any; a team not in the mapping is never touched, so
admins keep managing those by hand. Nothing here talks to a server (services/directory.py does).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from argus.core.teams import TEAM_NAME_RE, TEAM_NAME_RULE

_AROUND_SEPARATORS = re.compile(r"\s*([,=+])\s*")


def group_key(text: str) -> str:
    """How a group is compared: a DN (``cn=NLP, ou=Groups,…``) lowercased without spaces around its
    separators, or a bare cn lowercased. Directory attribute names and these values compare without case."""
    text = text.strip()
    return _AROUND_SEPARATORS.sub(r"\1", text).lower() if "=" in text else text.lower()


def parse_team_groups(text: str) -> dict[str, str]:
    """``"cn=nlp,ou=groups,dc=example,dc=org=nlp;vision=vision"`` → ``{group key: team}``.

    Pairs are split on ``;``; in each the team is after the *last* ``=`` (a team name has none, a DN has
    several). Raises ValueError naming the pair that is wrong."""
    out: dict[str, str] = {}
    for pair in (p.strip() for p in text.split(";")):
        if not pair:
            continue
        group, sep, team = pair.rpartition("=")
        group, team = group.strip(), team.strip()
        if not sep or not group:
            raise ValueError(f"ldap_team_groups: {pair!r} is not group=team (group: a DN or a cn)")
        if not TEAM_NAME_RE.fullmatch(team):
            raise ValueError(f"ldap_team_groups: team {team!r} in {pair!r} {TEAM_NAME_RULE}")
        out[group_key(group)] = team
    return out


@dataclass(frozen=True)
class TeamSync:
    """What one sign-in changes in a directory user's teams."""

    join: frozenset[str]
    leave: frozenset[str]


def plan_team_sync(mapping: dict[str, str], groups: frozenset[str], current: frozenset[str]) -> TeamSync:
    """The mapped teams the user belongs in (any of their ``groups``, keys as ``group_key``) that they are not in
    yet, and the mapped teams they are in but no longer belong in. Unmapped teams never appear."""
    managed = frozenset(mapping.values())
    wanted = frozenset(team for group, team in mapping.items() if group in groups)
    return TeamSync(join=wanted - current, leave=(current & managed) - wanted)


def in_group(group: str, groups: frozenset[str]) -> bool:
    """Whether ``group`` (a DN or a cn, as configured) is among the user's ``groups`` (``group_key`` form)."""
    return bool(group.strip()) and group_key(group) in groups
