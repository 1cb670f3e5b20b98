"""Browser sessions (issue 12): sign in with a password or an API token, then a server-side session.

Why server-side rows and not a signed cookie: signing out, disabling the user or revoking must end
a session *at once*, which a self-contained cookie cannot do. The cookie carries 32 random bytes
(the session id); the ``web_sessions`` row stores only its SHA-256, like API tokens (full entropy,
so a fast hash is safe), so a copy of the database signs no one in.

CSRF: the page must echo a CSRF token in ``X-CSRF-Token`` on every mutating request. The token is
derived from the session id (``sha256("argus-csrf:" + id)``) so that ``GET /api/v2/session`` can hand it
back to a reloaded page without the database ever holding it: the row keeps only its hash. Knowing the
CSRF token reveals nothing about the session id (a one-way function of it), and a cross-site page can
read neither (the cookie is HttpOnly, the API sends no CORS headers).

Password sign-ins share the SFTP limiter's rules (``services.logins.LoginLimiter``): after
``login_max_failures`` failures for a name from an address in ``login_window_s``, further password
sign-ins for it from there are refused, even a correct one, until the window passes. An unknown name
costs an Argon2 verification like a known one, so response time does not tell which names exist.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from sqlalchemy import delete, or_, select
from sqlalchemy.orm import Session

from argus.core.paths import USER_NAME_RE
from argus.db.models import UserModel, WebSessionModel, utcnow
from argus.errors import Forbidden, TooManyRequests, Unauthorized
from argus.services.directory import Directory
from argus.services.logins import LoginLimiter, login_with_password
from argus.services.principal import Principal
from argus.services.users import authenticate_token, password_matches, password_too_long

SESSION_COOKIE = "argus_session"
CSRF_HEADER = "X-CSRF-Token"
BAD_CREDENTIALS = "wrong user name or password, or invalid token"
DISABLED = "this account is disabled — ask an administrator to enable it"
# last_seen_at is a hint for admins ("active 3 min ago"), not an audit log: one write a minute at most
_SEEN_EVERY = timedelta(seconds=60)
# ended and expired rows are deleted this long after they stop working (kept a while for an admin's look)
_KEEP_ENDED = timedelta(days=7)


@dataclass(frozen=True)
class WebSession:
    """A live session: who it is, and the CSRF token the page must echo on writes."""

    principal: Principal
    csrf_token: str
    expires_at: datetime


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def csrf_token_for(session_id: str) -> str:
    """The CSRF token bound to a session id (see the module docstring for why it is derived)."""
    return _sha256("argus-csrf:" + session_id)


_dummy_hasher = PasswordHasher()
_dummy_hash: str | None = None


def _spend_like_a_password_check(password: str) -> None:
    """Verify against a throwaway hash: an unknown user costs as much time as a wrong password."""
    global _dummy_hash
    if _dummy_hash is None:
        _dummy_hash = _dummy_hasher.hash(secrets.token_urlsafe(16))
    try:
        _dummy_hasher.verify(_dummy_hash, password)
    except (VerificationError, InvalidHashError):
        pass


def authenticate_password(session: Session, limiter: LoginLimiter, name: str, password: str,
                          address: str, *, directory: Directory | None = None) -> Principal:
    """The principal for a right password of an enabled user, else Unauthorized (one generic message).

    A *disabled* user with the right password gets Forbidden "this account is disabled" instead: they are
    owed the reason (else they retry and lock themselves out), and only whoever knows the password learns it,
    at the same Argon2 cost as a wrong guess (no timing or message oracle about the account's state).

    With a ``directory`` (LDAP sign-in on), names that are not local users are checked against it
    (services/directory.py); a directory that cannot be reached is Unavailable (503), never a failure counted
    against the user. Throttled per (name, address) and per address by ``limiter``; Argon2 is slow: call
    off the loop."""
    if limiter.blocked(name, address):
        raise TooManyRequests("too many failed sign-ins from your address; wait a minute and try again",
                              code="too_many_attempts")
    possible = USER_NAME_RE.fullmatch(name) is not None  # else never looked up (a NUL is an error on PostgreSQL)
    principal = login_with_password(session, name, password, directory=directory, address=address) \
        if possible or directory is not None else None
    if principal is None:
        user = session.scalar(select(UserModel).where(UserModel.name == name)) if possible else None
        if user is not None and user.disabled and password_matches(user, password):
            # Only whoever knows the password learns the account is disabled (no oracle for guessers).
            raise Forbidden(DISABLED, code="user_disabled")
        if (user is None or not user.password_hash) and not password_too_long(password):
            _spend_like_a_password_check(password)
        limiter.failed(name, address)
        raise Unauthorized(BAD_CREDENTIALS, code="bad_credentials")
    return principal


def authenticate_api_token(session: Session, limiter: LoginLimiter, token: str, address: str) -> Principal:
    """The principal of a valid API token (a disabled user's is refused). Failures count against the
    address (a token cannot be guessed, but a client spraying tokens is stopped like one spraying names)."""
    if limiter.blocked("(token)", address):
        raise TooManyRequests("too many failed sign-ins from your address; wait a minute and try again",
                              code="too_many_attempts")
    try:
        return authenticate_token(session, token)
    except Unauthorized as exc:
        if exc.code == "user_disabled":  # a valid token: its holder may know the account is disabled
            raise Forbidden(DISABLED, code="user_disabled") from None
        limiter.failed("(token)", address)
        raise Unauthorized(BAD_CREDENTIALS, code="bad_credentials") from None


def start_session(session: Session, principal: Principal, *, hours: float) -> tuple[str, WebSession]:
    """Create a session row; returns the cookie value (shown now, stored only hashed) and the session."""
    now = utcnow()
    session.execute(delete(WebSessionModel).where(or_(WebSessionModel.expires_at < now - _KEEP_ENDED,
                                                      WebSessionModel.revoked_at < now - _KEEP_ENDED)))
    session_id = secrets.token_urlsafe(32)
    csrf = csrf_token_for(session_id)
    expires = now + timedelta(hours=hours)
    session.add(WebSessionModel(user_id=principal.id, session_hash=_sha256(session_id), csrf_hash=_sha256(csrf),
                                created_at=now, last_seen_at=now, expires_at=expires))
    session.flush()
    return session_id, WebSession(principal=principal, csrf_token=csrf, expires_at=expires)


def resolve_session(session: Session, session_id: str) -> WebSession:
    """The live session for a cookie value, or Unauthorized: unknown, ended, expired, or its user disabled.

    Checked on every request, so disabling a user or signing out takes effect on the next one."""
    now = utcnow()
    row = session.execute(
        select(WebSessionModel, UserModel)
        .join(UserModel, UserModel.id == WebSessionModel.user_id)
        .where(WebSessionModel.session_hash == _sha256(session_id))
    ).first()
    if row is None or row[0].revoked_at is not None or row[0].expires_at <= now:
        raise Unauthorized("not signed in, or the session ended; sign in again", code="session_expired")
    web, user = row
    if user.disabled:
        raise Unauthorized(f"user {user.name!r} is disabled", code="user_disabled")
    csrf = csrf_token_for(session_id)
    if not hmac.compare_digest(_sha256(csrf), web.csrf_hash):  # a row written by another scheme: refuse
        raise Unauthorized("not signed in, or the session ended; sign in again", code="session_expired")
    if web.last_seen_at is None or now - web.last_seen_at > _SEEN_EVERY:
        web.last_seen_at = now
    return WebSession(principal=Principal(id=user.id, name=user.name, is_admin=user.is_admin), csrf_token=csrf,
                      expires_at=web.expires_at)


def csrf_matches(web: WebSession, sent: str | None) -> bool:
    """Constant-time comparison of the ``X-CSRF-Token`` header with the session's token."""
    return bool(sent) and hmac.compare_digest(sent.encode(), web.csrf_token.encode())  # type: ignore[union-attr]


def end_session(session: Session, session_id: str) -> bool:
    """Revoke the session with this cookie value; False when there was none live (idempotent)."""
    row = session.scalar(select(WebSessionModel).where(WebSessionModel.session_hash == _sha256(session_id)))
    if row is None or row.revoked_at is not None:
        return False
    row.revoked_at = utcnow()
    return True


def authenticate_session(session: Session, session_id: str) -> Principal:
    """Who a session cookie belongs to (for page routes, which have no CSRF step on GET), or Unauthorized."""
    return resolve_session(session, session_id).principal
