"""The audit log (issue 14): admin actions and security events, kept for admins to list.

Why a table and not the server log: an admin asks "who disabled bob, and when?" weeks later,
through the API, filtered by action or actor; log files rotate and are not queryable.

``record`` adds a row to the caller's session, so the event commits or rolls back *with* the
action it describes (a user creation that fails leaves no "user.created" behind). The one
exception is an event about something refused (a sign-in lockout): there the action's
transaction rolls back by design, so the caller records it in a transaction of its own
(``record_alone``).

Actions are a fixed vocabulary (``ACTIONS``) so that filters and dashboards can rely on them;
``detail`` holds the specifics (never a secret: no token, no password, no key material beyond
its fingerprint).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import and_, or_, select
from sqlalchemy.orm import Session

from argus.db.models import AuditEventModel, utcnow
from argus.errors import ClientError, FieldError

if TYPE_CHECKING:
    from argus.services.logins import Lockout

USER_CREATED = "user.created"
USER_DISABLED = "user.disabled"
USER_ENABLED = "user.enabled"
USER_PASSWORD_SET = "user.password_set"
USER_LIMITS_CHANGED = "user.limits_changed"
TOKEN_CREATED = "token.created"
TOKEN_REVOKED = "token.revoked"
ADMIN_TOKEN_RESET = "admin.token_reset"
SSH_KEY_ADDED = "ssh_key.added"
SSH_KEY_REMOVED = "ssh_key.removed"
LOGIN_LOCKOUT = "login.lockout"
TASK_CANCELED_BY_OTHER = "task.canceled_by_other"
PRUNE = "retention.prune"
CHECKPOINTS_REMOVED = "checkpoints.removed"
NOTIFY_CHANNEL_ADDED = "notification.channel_added"  # a webhook sends task data out: who pointed it where
NOTIFY_CHANNEL_REMOVED = "notification.channel_removed"
TEAM_CREATED = "team.created"
TEAM_CHANGED = "team.changed"  # weight, quotas, budget: detail holds the new values
TEAM_DELETED = "team.deleted"
TEAM_MEMBER_ADDED = "team.member_added"
TEAM_MEMBER_REMOVED = "team.member_removed"
TEAM_ROLE_CHANGED = "team.role_changed"
PRIORITY_CLASS_CHANGED = "priority_class.changed"  # created, changed or deleted: detail says which
MODEL_REGISTERED = "model.registered"  # issue 38: a model version; detail: its path, task and step
MODEL_ALIAS_MOVED = "model.alias_moved"  # detail: from and to versions

ACTIONS = (
    USER_CREATED, USER_DISABLED, USER_ENABLED, USER_PASSWORD_SET, USER_LIMITS_CHANGED,
    TOKEN_CREATED, TOKEN_REVOKED, ADMIN_TOKEN_RESET, SSH_KEY_ADDED, SSH_KEY_REMOVED,
    LOGIN_LOCKOUT, TASK_CANCELED_BY_OTHER, PRUNE, CHECKPOINTS_REMOVED, NOTIFY_CHANNEL_ADDED,
    NOTIFY_CHANNEL_REMOVED, TEAM_CREATED, TEAM_CHANGED, TEAM_DELETED, TEAM_MEMBER_ADDED, TEAM_MEMBER_REMOVED,
    TEAM_ROLE_CHANGED, PRIORITY_CLASS_CHANGED, MODEL_REGISTERED, MODEL_ALIAS_MOVED,
)
MAX_PAGE = 500


def record(
    session: Session,
    *,
    actor: str,
    action: str,
    target: str | None = None,
    detail: dict[str, Any] | None = None,
    source_ip: str | None = None,
) -> AuditEventModel:
    """Add one audit event to ``session`` (committed with the caller's transaction)."""
    if action not in ACTIONS:
        raise ValueError(f"unknown audit action {action!r}; add it to services.audit.ACTIONS")
    row = AuditEventModel(at=utcnow(), actor=actor[:64], action=action,
                          target=target[:256] if target else target, detail=detail or None,
                          source_ip=source_ip[:64] if source_ip else source_ip)
    session.add(row)
    return row


def record_alone(open_session: Callable[[], AbstractContextManager[Session]], **event: Any) -> None:
    """``record`` in a transaction of its own, for events about a refused action (its own rolls back)."""
    with open_session() as session:
        record(session, **event)


def lockout_recorder(open_session: Callable[[], AbstractContextManager[Session]], via: str) -> Callable[[Lockout], None]:
    """A ``LoginLimiter(on_lockout=...)`` callback: each lockout becomes a ``login.lockout`` event.

    Recorded at the threshold, not per failure: the log shows attacks, not every typo."""
    def on_lockout(lock: Lockout) -> None:
        record_alone(open_session, actor=lock.user, action=LOGIN_LOCKOUT, target=lock.user,
                     detail={"via": via, "scope": lock.scope, "until": lock.until.isoformat(timespec="seconds")},
                     source_ip=lock.address)
    return on_lockout


@dataclass(frozen=True)
class AuditPage:
    events: list[AuditEventModel]
    next_cursor: str | None


def _encode_cursor(row: AuditEventModel) -> str:
    raw = json.dumps([row.at.isoformat(), row.id]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_cursor(cursor: str) -> tuple[datetime, int]:
    try:
        at, row_id = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        parsed = datetime.fromisoformat(at)
        if parsed.tzinfo is None or not isinstance(row_id, int):
            raise ValueError
        return parsed, row_id
    except (ValueError, TypeError, json.JSONDecodeError):
        raise ClientError("invalid cursor", code="invalid_cursor", errors=[FieldError(
            "cursor", cursor[:100], "pass the next_cursor of the previous page unchanged")]) from None


def list_events(
    session: Session,
    *,
    action: str | None = None,
    actor: str | None = None,
    since: datetime | None = None,
    limit: int = 100,
    cursor: str | None = None,
    user: str | None = None,
) -> AuditPage:
    """Newest first; ``next_cursor`` continues after the last event of this page (stable while events
    are added: a cursor is a position (time, id), not an offset). ``user``: events by *or about* that
    user (an admin asking "what happened to bob" wants both bob's acts and the ones done to him)."""
    if action is not None and action not in ACTIONS:
        raise ClientError("unknown action", code="invalid_action", errors=[FieldError(
            "action", action, "one of: " + ", ".join(ACTIONS))])
    if not 1 <= limit <= MAX_PAGE:
        raise ClientError("invalid limit", code="invalid_limit",
                          errors=[FieldError("limit", limit, f"must be between 1 and {MAX_PAGE}")])
    query = select(AuditEventModel)
    if action is not None:
        query = query.where(AuditEventModel.action == action)
    if actor is not None:
        query = query.where(AuditEventModel.actor == actor)
    if user is not None:
        query = query.where(or_(AuditEventModel.actor == user, AuditEventModel.target == user))
    if since is not None:
        query = query.where(AuditEventModel.at >= since)
    if cursor is not None:
        at, row_id = _decode_cursor(cursor)
        query = query.where(or_(AuditEventModel.at < at, and_(AuditEventModel.at == at, AuditEventModel.id < row_id)))
    rows = list(session.scalars(query.order_by(AuditEventModel.at.desc(), AuditEventModel.id.desc()).limit(limit + 1)))
    more = len(rows) > limit
    rows = rows[:limit]
    return AuditPage(events=rows, next_cursor=_encode_cursor(rows[-1]) if more and rows else None)
