"""Sign-in with an LDAP directory (issue 26): WebUI, API tokens by password and SFTP passwords.

How a password is checked (``Directory.check``), with the pure-Python ``ldap3`` client:

1. bind as the search account (``ldap_bind_dn``; anonymously without it) and look the user up under
   ``ldap_user_base`` with ``ldap_user_filter``, the name escaped (``escape_filter_chars``): a DN is never
   built from what was typed, and ``*)(uid=*`` finds nothing. The filter also decides who is enabled: an
   entry it excludes (a locked attribute, a missing group) is "not found";
2. bind as the entry found, with the password. An empty password is refused before any of this: an LDAP
   simple bind with a DN and no password is an *anonymous* bind that "succeeds" (RFC 4513 §5.1.2);
3. list the user's groups under ``ldap_group_base`` (``{dn}``/``{user}`` escaped the same way).

What a sign-in does in Argus (``Directory.sign_in``): the first one creates the user (marked
``directory``: no local password, home made, audit-logged); every one syncs the mapped teams
(core/directory.py: joined as member, removed from mapped teams whose groups they left, unmapped teams
untouched) and, with ``ldap_admin_group``, whether they are a site admin. Refused: a name that is a *local*
user (never taken over: the directory is not even asked), a user disabled in Argus (told so, like a
local one, only after the directory accepted the password), a name that cannot be an Argus user name
(told why, after the password was accepted), and a known directory user the filter no longer finds
("account disabled in the directory" in the log; the client gets the generic failure).

A directory that cannot be reached raises ``Unavailable`` (503, the login page says so); the callers
check local users first, so those still sign in. Network calls happen before any write in the sign-in's
transaction (SQLite begins a write only at the first INSERT/UPDATE).
"""

from __future__ import annotations

import logging
import math
import ssl
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import select
from sqlalchemy.orm import Session

from argus.core.directory import group_key, in_group, parse_team_groups, plan_team_sync
from argus.core.paths import USER_NAME_RE
from argus.core.teams import TeamRole
from argus.db.models import TeamMemberModel, TeamModel, UserModel
from argus.errors import Forbidden, Unavailable
from argus.services import audit
from argus.services.principal import Principal
from argus.services.tasks import stop_for_lost_team
from argus.services.teams import teams_of
from argus.services.users import create_user

if TYPE_CHECKING:
    from argus.settings import Settings

log = logging.getLogger(__name__)
DOWN = "the user directory (LDAP) cannot be reached; try again later (local accounts still sign in)"
DISABLED = "this account is disabled — ask an administrator to enable it"
MAX_NAME = 256  # longer "names" are refused before any search
DIRECTORY_ACTOR = "(directory)"


class Outcome(StrEnum):
    OK = "ok"
    EMPTY_PASSWORD = "empty password"
    NOT_FOUND = "not found by the user filter"
    AMBIGUOUS = "several entries match the user filter"
    WRONG_PASSWORD = "wrong password"


@dataclass(frozen=True)
class DirectoryCheck:
    outcome: Outcome
    dn: str | None = None
    groups: frozenset[str] = frozenset()  # group_key form: DNs and cns


class Directory:
    """One per process (the API's ``ctx.extras``, the SFTP child): the configuration, no open connection."""

    def __init__(self, settings: Settings) -> None:
        self.url = settings.ldap_url
        self.user_base = settings.ldap_user_base
        self.user_filter = settings.ldap_user_filter
        self.bind_dn = settings.ldap_bind_dn or None
        self.bind_password = settings.ldap_bind_password or None
        self.group_base = settings.ldap_group_base
        self.group_filter = settings.ldap_group_filter
        self.team_groups = parse_team_groups(settings.ldap_team_groups)
        self.admin_group = settings.ldap_admin_group
        self.starttls = settings.ldap_starttls
        self.ca_file = settings.ldap_ca_file or None
        self.timeout_s = settings.ldap_timeout_s
        self.root: Path = settings.root

    @classmethod
    def from_settings(cls, settings: Settings) -> Directory | None:
        """The directory, or None when sign-in with LDAP is off (``ldap_url`` empty)."""
        return cls(settings) if settings.ldap_url else None

    # ------------------------------------------------------------------ the directory itself

    def _server(self):  # noqa: ANN202
        import ldap3

        tls = None
        if self.url.lower().startswith("ldaps://") or self.starttls:
            tls = ldap3.Tls(validate=ssl.CERT_REQUIRED, ca_certs_file=self.ca_file)
        return ldap3.Server(self.url, get_info=ldap3.NONE, connect_timeout=self.timeout_s, tls=tls)

    def _connect(self, server, user: str | None, password: str | None):  # noqa: ANN001, ANN202
        """An open, bound connection, or None when the bind was refused (wrong credentials)."""
        import ldap3

        conn = ldap3.Connection(server, user=user, password=password, auto_bind=ldap3.AUTO_BIND_NONE,
                                read_only=True, receive_timeout=max(1, math.ceil(self.timeout_s)),  # whole s
                                raise_exceptions=False)
        conn.open()
        if self.starttls and not self.url.lower().startswith("ldaps://") and not conn.start_tls():
            conn.unbind()
            raise OSError(f"StartTLS refused: {conn.result.get('description')}")
        if not conn.bind():
            conn.unbind()
            return None
        return conn

    def check(self, name: str, password: str) -> DirectoryCheck:
        """Whether the directory accepts ``name`` with ``password``, and the user's groups; raises
        ``Unavailable`` when it cannot be asked (down, timed out, the search account refused)."""
        if not password:
            return DirectoryCheck(Outcome.EMPTY_PASSWORD)
        if not name or len(name) > MAX_NAME:
            return DirectoryCheck(Outcome.NOT_FOUND)
        from ldap3.core.exceptions import LDAPException
        from ldap3.utils.conv import escape_filter_chars

        try:
            server = self._server()
            service = self._connect(server, self.bind_dn, self.bind_password)
            if service is None:
                log.error("LDAP: the search account %r was refused by %s (check ldap_bind_dn and ldap_bind_password)",
                          self.bind_dn or "(anonymous)", self.url)
                raise Unavailable(DOWN, code="directory_unavailable")
            try:
                found = self._search(service, self.user_base,
                                     self.user_filter.replace("{user}", escape_filter_chars(name)), [])
                if not found:
                    return DirectoryCheck(Outcome.NOT_FOUND)
                if len(found) > 1:
                    log.warning("LDAP: %d entries match the user filter for %r; refusing (make the filter unique)",
                                len(found), name)
                    return DirectoryCheck(Outcome.AMBIGUOUS)
                dn = found[0][0]
                user_conn = self._connect(server, dn, password)
                if user_conn is None:
                    return DirectoryCheck(Outcome.WRONG_PASSWORD, dn)
                user_conn.unbind()
                return DirectoryCheck(Outcome.OK, dn, self._groups(service, dn, name))
            finally:
                service.unbind()
        except (LDAPException, OSError) as exc:
            log.warning("LDAP: %s cannot be reached: %s", self.url, exc)
            raise Unavailable(DOWN, code="directory_unavailable") from None

    def _search(self, conn, base: str, search_filter: str, attributes: list[str]) -> list[tuple[str, dict]]:  # noqa: ANN001
        import ldap3

        ok = conn.search(base, search_filter, search_scope=ldap3.SUBTREE,
                         attributes=attributes or ldap3.NO_ATTRIBUTES, size_limit=0 if attributes else 2,
                         time_limit=max(1, int(self.timeout_s)))
        result = conn.result.get("description")
        if not ok and result not in ("success", "noSuchObject", "sizeLimitExceeded"):
            raise OSError(f"search under {base!r} failed: {result} {conn.result.get('message') or ''}".strip())
        return [(r["dn"], r.get("attributes") or {}) for r in conn.response or () if r.get("type") == "searchResEntry"]

    def _groups(self, conn, dn: str, name: str) -> frozenset[str]:  # noqa: ANN001
        if not self.group_base:
            return frozenset()
        from ldap3.utils.conv import escape_filter_chars

        query = self.group_filter.replace("{dn}", escape_filter_chars(dn)).replace("{user}", escape_filter_chars(name))
        keys: set[str] = set()
        for group_dn, attributes in self._search(conn, self.group_base, query, ["cn"]):
            keys.add(group_key(group_dn))
            cns = attributes.get("cn") or []
            keys.update(group_key(cn) for cn in ([cns] if isinstance(cns, str) else cns))
        return frozenset(keys)

    # ------------------------------------------------------------------ what a sign-in does in Argus

    def sign_in(self, session: Session, name: str, password: str, *, address: str | None = None) -> Principal | None:
        """The principal when the directory accepts the password (creating or updating the Argus user), else
        None. Raises Forbidden for a user disabled in Argus or a name Argus cannot take (only after the
        directory accepted the password), Unavailable when the directory cannot be asked."""
        valid = USER_NAME_RE.fullmatch(name) is not None  # else never looked up (a NUL is an error on PostgreSQL)
        user = session.scalar(select(UserModel).where(UserModel.name == name)) if valid else None
        if user is not None and not user.directory:
            return None  # a local user: the directory is never asked about them (no takeover)
        result = self.check(name, password)
        if result.outcome is not Outcome.OK:
            if result.outcome is Outcome.NOT_FOUND and user is not None:
                log.warning("directory sign-in of %r from %s refused: account disabled in the directory "
                            "(the user filter no longer finds it)", name, address or "?")
            else:
                log.info("directory sign-in of %r from %s refused: %s", name[:80], address or "?", result.outcome)
            return None
        if not valid:
            log.warning("directory sign-in of %r refused: not a valid Argus user name", name[:80])
            raise Forbidden(f"the directory account {name[:80]!r} cannot be an Argus user: user names must match "
                            "^[a-z][a-z0-9_-]{1,31}$ (lowercase letter first, 2–32 chars); ask an administrator",
                            code="invalid_directory_name")
        if user is not None and user.disabled:
            raise Forbidden(DISABLED, code="user_disabled")
        if user is None:
            user = create_user(session, self.root, name)
            user.directory = True
            audit.record(session, actor=name, action=audit.USER_CREATED, target=name,
                         detail={"via": "ldap", "dn": result.dn}, source_ip=address)
            log.info("directory sign-in created user %r (%s)", name, result.dn)
        self._sync(session, user, result.groups, address)
        return Principal(id=user.id, name=user.name, is_admin=user.is_admin)

    def _sync(self, session: Session, user: UserModel, groups: frozenset[str], address: str | None) -> None:
        if self.admin_group:
            admin = in_group(self.admin_group, groups)
            if admin != user.is_admin:
                log.info("directory sign-in: %r is %s a site admin (ldap_admin_group)", user.name,
                         "now" if admin else "no longer")
                user.is_admin = admin
        if not self.team_groups:
            return
        current = frozenset(n for n, _, _ in teams_of(session, user.id))
        plan = plan_team_sync(self.team_groups, groups, current)
        joined, left = set_directory_teams(session, user.id, plan.join, plan.leave)
        for team in left:  # their running tasks show its folder read-write: stopped, as when a team admin removes
            stop_for_lost_team(session, user.id, team, actor=DIRECTORY_ACTOR)
        for team, action in [(t, audit.TEAM_MEMBER_ADDED) for t in joined] + [(t, audit.TEAM_MEMBER_REMOVED) for t in left]:
            audit.record(session, actor=DIRECTORY_ACTOR, action=action, target=team,
                         detail={"user": user.name, "via": "ldap"}, source_ip=address)


def set_directory_teams(session: Session, user_id: int, join: frozenset[str], leave: frozenset[str]
                        ) -> tuple[list[str], list[str]]:
    """A directory sign-in's team changes (core/directory.plan_team_sync): join ``join`` as a member, leave
    ``leave``; teams that do not exist are skipped. The default team follows services/teams' rule: the first
    team joined becomes it, and after leaving it the earliest team joined of those left. Returns the teams
    joined and left."""
    joined: list[str] = []
    left: list[str] = []
    for name in sorted(join):
        team = session.scalar(select(TeamModel).where(TeamModel.name == name))
        if team is None or session.get(TeamMemberModel, (team.id, user_id)) is not None:
            continue
        first = session.scalar(select(TeamMemberModel.team_id).where(TeamMemberModel.user_id == user_id).limit(1)) is None
        session.add(TeamMemberModel(team_id=team.id, user_id=user_id, role=TeamRole.MEMBER.value, is_default=first))
        session.flush()
        joined.append(name)
    for name in sorted(leave):
        team = session.scalar(select(TeamModel).where(TeamModel.name == name))
        row = session.get(TeamMemberModel, (team.id, user_id)) if team is not None else None
        if row is None:
            continue
        session.delete(row)
        session.flush()
        left.append(name)
    rows = list(session.scalars(select(TeamMemberModel).where(TeamMemberModel.user_id == user_id)
                                .order_by(TeamMemberModel.added_at, TeamMemberModel.team_id)))
    if rows and not any(r.is_default for r in rows):
        rows[0].is_default = True
    return joined, left
