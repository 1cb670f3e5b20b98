"""Notifications (issue 24): a user's channels (webhook URLs, e-mail addresses) and the outbox.

A status change never talks to the network. ``enqueue`` writes one outbox row per subscribed channel
*inside the caller's transaction* (``switch_task_status``, the monitor), so a notification exists
exactly when the change it reports was committed — a rolled-back change leaves none behind. The
sender thread (``services/notify_sender.py``) delivers those rows later with its own sessions, retries
with back-off, and never runs inside the scheduler's loop: a slow or dead receiver delays nobody's
task.

A user sees and touches only their own channels; another user's channel is "not found" (404), as a
task is. A webhook's secret is made here, shown once in the answer that created the channel, and
signs every body the channel sends (``X-Argus-Signature``).

A webhook never reaches the platform's own network (``services/webhook_target.py``): a URL whose host is an
internal address, however spelled, is refused here; a name is checked on every send. The operator's
``notify_webhook_allow`` lists the internal receivers that are fine. "Send a test" is rate-limited per user
(``SendTestLimiter``), so the button is neither a flood nor a fast probe.
"""

from __future__ import annotations

import re
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx
from sqlalchemy import bindparam, func, insert, select
from sqlalchemy.orm import Session

from argus.core.messages import field_error, msg, refusal
from argus.db.models import NotificationChannelModel, NotificationOutboxModel, TaskModel, utcnow
from argus.errors import ClientError, FieldError, NotFound, TooManyRequests
from argus.services import audit, webhook_target
from argus.services.notify_sender import NotificationSender, SmtpSettings, deliver_due  # noqa: F401 - one entry point
from argus.services.principal import Principal

KINDS = ("webhook", "email")
# What a channel can subscribe to. SUCCEEDED/FAILED/CANCELED come from switch_task_status; STALLED, RESUMED and
# IDLE_GPU from the monitor (through ``notify``). TEST is sent on request only and needs no subscription.
# MODEL_ALIAS (issue 38): one of the user's model aliases moved (services/model_registries.py), sent with the
# version's task; a team's alias: to every member of the team (``enqueue_to``).
MODEL_ALIAS = "MODEL_ALIAS"
EVENTS = ("SUCCEEDED", "FAILED", "CANCELED", "STALLED", "RESUMED", "IDLE_GPU", MODEL_ALIAS)
TEST_EVENT = "TEST"
MAX_CHANNELS_PER_USER = 20
MAX_URL_CHARS = 2000
MAX_MESSAGE_CHARS = 2000
DELIVERIES_SHOWN = 20
TESTS_PER_WINDOW = 5  # "send a test" per user in any TEST_WINDOW_S seconds
TEST_WINDOW_S = 60.0
# one address, as people write them: no display name, no spaces, no header-breaking characters
_EMAIL = re.compile(r"^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
                    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$")

# Built once (house style §5.12): runs on every terminal status change, in the scheduler's transaction.
_SUBSCRIBED = (select(NotificationChannelModel.id, NotificationChannelModel.events)
               .where(NotificationChannelModel.user_id == bindparam("user_id"),
                      NotificationChannelModel.enabled.is_(True)))


@dataclass(frozen=True)
class CreatedChannel:
    channel: NotificationChannelModel
    secret: str | None  # the webhook's signing secret: in this answer only


@dataclass
class SendTestThrottled(TooManyRequests):
    """Too many tests by this user just now (HTTP 429); ``retry_after_s``: when the next one is accepted."""

    retry_after_s: int = 1


class SendTestLimiter:
    """At most ``limit`` tests per user in any ``window_s`` seconds: a sliding window of each user's recent
    tests, keyed by user id.

    Kept in this process's memory on purpose (the API keeps one per app in ``ctx.extras``): a restart
    forgets it and each server process counts alone, which is enough to stop one user from turning the
    test button into a flood or a fast probe of addresses; it is not a quota. Thread-safe: the API's
    handlers run in a thread pool."""

    def __init__(self, limit: int = TESTS_PER_WINDOW, window_s: float = TEST_WINDOW_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.limit, self.window_s, self.clock = limit, window_s, clock
        self._recent: dict[int, deque[float]] = {}
        self._lock = threading.Lock()

    def take(self, user_id: int) -> float:
        """Count one test for ``user_id`` and answer 0, or count nothing and answer the seconds to wait."""
        now = self.clock()
        with self._lock:
            recent = self._recent.setdefault(user_id, deque())
            while recent and recent[0] <= now - self.window_s:
                recent.popleft()
            if len(recent) >= self.limit:
                return max(recent[0] + self.window_s - now, 0.001)
            recent.append(now)
            if len(self._recent) > 10_000:  # forget users whose window has passed: the map stays small
                self._recent = {u: q for u, q in self._recent.items() if q and q[-1] > now - self.window_s}
            return 0.0


# ---------------------------------------------------------------- events (called by status writers)


def enqueue(session: Session, task: TaskModel, event: str, message: str | None) -> int:
    """One outbox row per enabled channel of the task's owner that subscribes to ``event``; how many.

    Runs inside the caller's transaction: one SELECT of the owner's channels, then the INSERTs (none when
    nobody listens). Never fails on the network: delivery is the sender's job."""
    rows = session.execute(_SUBSCRIBED, {"user_id": task.user_id}).all()
    wanted = [cid for cid, events in rows if event == TEST_EVENT or event in (events or ())]
    if not wanted:
        return 0
    now = utcnow()
    payload = task_payload(task, event, message, now)
    session.execute(insert(NotificationOutboxModel), [
        {"channel_id": cid, "task_id": task.id, "event": event, "payload": payload, "attempts": 0,
         "next_attempt_at": now, "created_at": now} for cid in wanted])
    return len(wanted)


def enqueue_to(session: Session, user_ids: Collection[int], event: str, payload: dict[str, Any],
               task_id: str | None = None) -> int:
    """``enqueue`` for an event that concerns several users (a team's model alias moved): one outbox row per
    enabled channel of any of ``user_ids`` that subscribes to ``event``, each with ``payload``; how many."""
    if not user_ids:
        return 0
    rows = session.execute(select(NotificationChannelModel.id, NotificationChannelModel.events).where(
        NotificationChannelModel.user_id.in_(sorted(set(user_ids))), NotificationChannelModel.enabled.is_(True)))
    wanted = [cid for cid, events in rows if event in (events or ())]
    if not wanted:
        return 0
    now = utcnow()
    session.execute(insert(NotificationOutboxModel), [
        {"channel_id": cid, "task_id": task_id, "event": event, "payload": payload, "attempts": 0,
         "next_attempt_at": now, "created_at": now} for cid in wanted])
    return len(wanted)


def notify(session: Session, task: TaskModel, event: str, message: str | None = None) -> int:
    """``enqueue`` for the events that are not status changes (STALLED, RESUMED, IDLE_GPU), for the monitor:
    ``notify(session, task, "STALLED", "no new step for 30 min")`` in the transaction that records it."""
    if event not in EVENTS:
        raise ValueError(f"unknown notification event {event!r}; one of {', '.join(EVENTS)}")
    return enqueue(session, task, event, message)


def task_payload(task: TaskModel, event: str, message: str | None, at: Any) -> dict[str, Any]:
    """The JSON a webhook receives (and an e-mail is written from): what happened to which task, and where
    to look (``link``: a path on this server; the e-mail makes it a full URL)."""
    return {
        "event": event,
        "task_id": task.id,
        "name": task.name,
        "status": task.status,
        "termination_reason": task.termination_reason,
        "failure_kind": task.failure_kind,
        "message": (message or task.status_message or "")[:MAX_MESSAGE_CHARS] or None,
        "at": at.isoformat(timespec="seconds"),
        "link": f"/tasks/{task.id}",
    }


# ---------------------------------------------------------------- channels (API, CLI, WebUI)


def list_channels(session: Session, principal: Principal) -> list[NotificationChannelModel]:
    return list(session.scalars(select(NotificationChannelModel)
                                .where(NotificationChannelModel.user_id == principal.id)
                                .order_by(NotificationChannelModel.id)))


def get_channel(session: Session, principal: Principal, channel_id: int) -> NotificationChannelModel:
    """Another user's channel is NotFound, never Forbidden (no existence leak), for admins too: a channel
    points at someone's inbox or endpoint and is theirs alone."""
    row = session.get(NotificationChannelModel, channel_id)
    if row is None or row.user_id != principal.id:
        raise refusal(NotFound, "channel_not_found", "notify.channel_not_found", channel=channel_id)
    return row


def create_channel(session: Session, principal: Principal, kind: Any, target: Any, events: Any = None, *,
                   email_enabled: bool, source_ip: str | None = None,
                   webhook_allow: Iterable[str] = ()) -> CreatedChannel:
    """Check every field (all problems in one answer, each naming field, value and fix), then store.

    ``events`` None: every event. ``email_enabled`` is whether the operator configured SMTP;
    ``webhook_allow`` the operator's internal receivers (``Settings.notify_webhook_allow``)."""
    errors = check_channel(kind, target, events, email_enabled=email_enabled, webhook_allow=webhook_allow)
    if errors:
        raise refusal(ClientError, "invalid_channel", "notify.channel_invalid", errors=errors)
    count = session.scalar(select(func.count()).select_from(NotificationChannelModel)
                           .where(NotificationChannelModel.user_id == principal.id)) or 0
    if count >= MAX_CHANNELS_PER_USER:
        raise refusal(ClientError, "too_many_channels", "notify.too_many_channels",
                      errors=[field_error("kind", kind, "notify.too_many_channels_field", count=count)])
    secret = secrets.token_hex(32) if kind == "webhook" else None
    chosen = list(EVENTS) if events is None else [e for e in EVENTS if e in events]  # canonical order, no repeats
    row = NotificationChannelModel(user_id=principal.id, kind=kind, target=target.strip(), secret=secret,
                                   events=chosen, enabled=True, created_at=utcnow())
    session.add(row)
    session.flush()
    audit.record(session, actor=principal.name, action=audit.NOTIFY_CHANNEL_ADDED, target=principal.name,
                 detail={"channel_id": row.id, "kind": kind, "to": shown_target(row)}, source_ip=source_ip)
    return CreatedChannel(row, secret)


def check_channel(kind: Any, target: Any, events: Any, *, email_enabled: bool,
                  webhook_allow: Iterable[str] = ()) -> list[FieldError]:
    errors: list[FieldError] = []
    if kind not in KINDS:
        errors.append(field_error("kind", kind, "notify.kind_rule"))
    elif kind == "email" and not email_enabled:
        errors.append(field_error("kind", kind, "notify.email_disabled"))
    if not isinstance(target, str) or not target.strip():
        errors.append(field_error("target", target, "notify.target_missing"))
    elif kind == "webhook":
        problem = url_problem(target.strip(), webhook_allow)
        if problem:
            errors.append(FieldError("target", target[:200], problem))
    elif kind == "email" and not (len(target.strip()) <= 254 and _EMAIL.match(target.strip())):
        errors.append(field_error("target", target[:200], "notify.email_invalid"))
    if events is not None:
        if not isinstance(events, list) or not events:
            errors.append(field_error("events", events, "notify.events_list", events=", ".join(EVENTS)))
        else:
            for e in events:
                if e not in EVENTS:
                    errors.append(field_error("events", e, "notify.event_unknown", events=", ".join(EVENTS)))
    return errors


def url_problem(url: str, webhook_allow: Iterable[str] = ()) -> str | None:
    """Why ``url`` cannot be a webhook (None when it can): http(s), a host, no spaces, a sane length, a URL
    the sender can parse, and not an internal address however spelled unless the operator allows it (a
    name is judged when sending: what it resolves to can change)."""
    if len(url) > MAX_URL_CHARS:
        return f"longer than {MAX_URL_CHARS} characters"
    if any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in url):
        return "contains spaces or control characters; percent-encode them"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number in 0-65535
    except ValueError as exc:
        return f"not a URL ({exc}); write it as https://host[:port]/path"
    if parts.scheme.lower() not in ("http", "https"):
        return f"scheme {parts.scheme or '(none)'!r} is not allowed: a webhook URL starts with https:// or http://"
    if not parts.hostname:
        return "no host: write it as https://host[:port]/path"
    problem = webhook_target.literal_problem(parts.hostname, webhook_target.parse_allow(webhook_allow))
    if problem:
        return problem
    try:
        httpx.URL(url)
    except (httpx.InvalidURL, ValueError) as exc:
        return f"not a URL the sender can use ({exc}); write it as https://host[:port]/path"
    return None


def shown_target(row: NotificationChannelModel) -> str:
    """The target as lists show it: an e-mail address whole; a URL without its query string, which often
    carries a token (chat services put one there), in case it is shown where others can see."""
    if row.kind != "webhook":
        return row.target
    parts = urlsplit(row.target)
    return parts._replace(query="…" if parts.query else "", fragment="").geturl()


def delete_channel(session: Session, principal: Principal, channel_id: int, *, source_ip: str | None = None) -> None:
    """Remove the channel and its outbox (pending deliveries are dropped: the foreign key cascades)."""
    row = get_channel(session, principal, channel_id)
    detail = {"channel_id": row.id, "kind": row.kind, "to": shown_target(row)}
    session.execute(NotificationOutboxModel.__table__.delete().where(NotificationOutboxModel.channel_id == row.id))
    session.delete(row)
    audit.record(session, actor=principal.name, action=audit.NOTIFY_CHANNEL_REMOVED, target=principal.name,
                 detail=detail, source_ip=source_ip)


def send_test(session: Session, principal: Principal, channel_id: int, *,
              limiter: SendTestLimiter | None = None) -> NotificationOutboxModel:
    """Queue a TEST notification to this channel (delivered by the sender, like any other).

    With a ``limiter`` (the API always passes its own), the user's tests beyond its limit raise
    SendTestThrottled; a test of a channel that is not theirs is NotFound first and counts nothing."""
    row = get_channel(session, principal, channel_id)
    wait = limiter.take(principal.id) if limiter is not None else 0.0
    if limiter is not None and wait:
        seconds = max(1, int(wait + 0.999))
        said = msg("notify.too_many_tests", limit=limiter.limit, window=f"{limiter.window_s:g}", seconds=seconds)
        raise SendTestThrottled(said.text, code="too_many_tests", retry_after_s=seconds, message_code=said.code,
                                message_params=said.params)
    now = utcnow()
    payload = {"event": TEST_EVENT, "task_id": None, "name": None, "status": None, "termination_reason": None,
               "failure_kind": None, "message": f"a test notification for {principal.name}: this channel works",
               "at": now.isoformat(timespec="seconds"), "link": "/account"}
    out = NotificationOutboxModel(channel_id=row.id, task_id=None, event=TEST_EVENT, payload=payload, attempts=0,
                                  next_attempt_at=now, created_at=now)
    session.add(out)
    session.flush()
    return out


def list_deliveries(session: Session, principal: Principal, channel_id: int,
                    limit: int = DELIVERIES_SHOWN) -> list[NotificationOutboxModel]:
    """The channel's last ``limit`` notifications, newest first, delivered or not."""
    row = get_channel(session, principal, channel_id)
    return list(session.scalars(select(NotificationOutboxModel)
                                .where(NotificationOutboxModel.channel_id == row.id)
                                .order_by(NotificationOutboxModel.id.desc()).limit(limit)))


def delivery_state(row: NotificationOutboxModel) -> str:
    """delivered, pending (due now or after a back-off) or failed (gave up; ``last_error`` says why)."""
    if row.delivered_at is not None:
        return "delivered"
    return "failed" if row.next_attempt_at is None else "pending"
