"""SFTP logins: password and public-key checks, and the failed-login limiter.

The limiter is in memory (one server process owns the SFTP port) and counts failed
*password* attempts in a sliding window of ``window_s``:

* per (user, address): after ``max_failures`` failures for one name from one address,
  password logins for that name from that address are refused, even a correct one, until
  old failures leave the window. Guessing bob's password from one machine therefore never
  locks alice out, nor bob himself on another machine.
* per address, across names: ``address_factor × max_failures`` failures from one address
  (a client spraying many names) refuse every *password* login from it.

A public-key login is never refused by the limiter: a key cannot be guessed (the client must
sign with the private key), so throttling it only lets an attacker lock out legitimate users
who share an address (NAT, a login node). Unknown users cost a failure like wrong passwords,
so names cannot be enumerated faster. Each lockout is logged with the user, the address and
the time it ends.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from argus.core.messages import refusal
from argus.core.paths import USER_NAME_RE
from argus.db.models import SshKeyModel, UserModel
from argus.errors import ClientError, TooManyRequests
from argus.services.directory import Directory
from argus.services.principal import Principal
from argus.services.users import change_own_password, password_too_long, verify_password

log = logging.getLogger(__name__)
_SWEEP_AT = 10_000  # tracked keys before stale ones are dropped (a name-spraying client creates many)


@dataclass(frozen=True)
class Lockout:
    """A limit was just reached: password logins for ``user`` (or any user, scope "address") from
    ``address`` are refused until ``until`` (UTC)."""

    user: str
    address: str
    scope: str  # "user+address" | "address"
    until: datetime


class LoginLimiter:
    def __init__(self, max_failures: int, window_s: float, *, address_factor: int = 10,
                 on_lockout: Callable[[Lockout], None] | None = None) -> None:
        """``on_lockout``: called with each lockout as it starts (the audit log); its errors are logged,
        never raised into a sign-in."""
        self.max_failures = max_failures
        self.on_lockout = on_lockout
        self.window_s = window_s
        self.address_max = max_failures * address_factor
        self._lock = threading.Lock()
        self._failures: dict[tuple[str, ...], deque[float]] = {}

    def _recent(self, key: tuple[str, ...], now: float) -> int:
        q = self._failures.get(key)
        if not q:
            return 0
        while q and now - q[0] > self.window_s:
            q.popleft()
        if not q:
            del self._failures[key]
            return 0
        return len(q)

    def _limits(self, user: str, address: str) -> tuple[tuple[tuple[str, ...], int, str], ...]:
        return (("u", user, address), self.max_failures, "user+address"), (("a", address), self.address_max, "address")

    def blocked(self, user: str, address: str) -> bool:
        """Whether a *password* login for ``user`` from ``address`` is refused now (keys never are)."""
        now = time.monotonic()
        with self._lock:
            return any(self._recent(key, now) >= limit for key, limit, _ in self._limits(user, address))

    def failed(self, user: str, address: str) -> list[Lockout]:
        """Count a failed password login; returns (and logs) the lockouts it starts, if any."""
        now = time.monotonic()
        lockouts = []
        with self._lock:
            if len(self._failures) > _SWEEP_AT:
                for key in list(self._failures):
                    self._recent(key, now)
            for key, limit, scope in self._limits(user, address):
                before = self._recent(key, now)
                q = self._failures.setdefault(key, deque())
                q.append(now)
                if before < limit <= before + 1:
                    ends = q[-limit] + self.window_s  # when the oldest counted failure leaves the window
                    lockouts.append(Lockout(user, address, scope, datetime.fromtimestamp(time.time() + ends - now, UTC)))
        for lock in lockouts:
            who = f"{user!r}" if lock.scope == "user+address" else f"every user (last tried {user!r})"
            limit = self.max_failures if lock.scope == "user+address" else self.address_max
            log.warning("login lockout: password logins for %s from %s refused until %s (%d failures in %g s)",
                        who, address, lock.until.isoformat(timespec="seconds"), limit, self.window_s)
            if self.on_lockout is not None:
                try:
                    self.on_lockout(lock)
                except Exception:
                    log.exception("could not record the lockout of %r from %s", user, address)
        return lockouts


def _active_user(session: Session, name: str) -> UserModel | None:
    user = session.scalar(select(UserModel).where(UserModel.name == name))
    return None if user is None or user.disabled else user


def login_with_password(session: Session, name: str, password: str, *, directory: Directory | None = None,
                        address: str | None = None) -> Principal | None:
    """The principal when the password is right and the user enabled; argon2 is slow: call off the loop.

    A password over ``MAX_PASSWORD_BYTES`` is refused before any look-up or hashing. A local user is checked
    locally and only there; with a ``directory`` (LDAP sign-in on), a directory user or an unknown name is
    checked against it (services/directory.py), which may raise Forbidden (disabled in Argus, a name Argus
    cannot take: told only after the directory accepted the password) or Unavailable (directory down)."""
    if password_too_long(password):
        return None
    if USER_NAME_RE.fullmatch(name):
        user = session.scalar(select(UserModel).where(UserModel.name == name))
        if user is not None and not user.directory:
            return Principal(id=user.id, name=user.name, is_admin=user.is_admin) if verify_password(user, password) \
                else None
    if directory is None:
        return None
    return directory.sign_in(session, name, password, address=address)


def login_with_key(session: Session, name: str, fingerprint: str) -> Principal | None:
    """The principal when a key with this SHA-256 fingerprint is registered to an enabled user."""
    user = _active_user(session, name)
    if user is None:
        return None
    found = session.scalar(select(SshKeyModel.id).where(SshKeyModel.user_id == user.id,
                                                        SshKeyModel.fingerprint == fingerprint))
    return None if found is None else Principal(id=user.id, name=user.name, is_admin=user.is_admin)


def change_password_throttled(session: Session, limiter: LoginLimiter, principal: Principal, password: object,
                              current: object, address: str) -> None:
    """Change one's own password, a wrong current one counted like a failed sign-in: whoever holds a borrowed
    session or a leaked token must not be able to guess the (SFTP) password at Argon2 speed."""
    if limiter.blocked(principal.name, address):
        raise refusal(TooManyRequests, "too_many_attempts", "password.throttled")
    try:
        change_own_password(session, principal.id, password, current)
    except ClientError as exc:
        if exc.code == "wrong_current_password":
            limiter.failed(principal.name, address)
        raise
