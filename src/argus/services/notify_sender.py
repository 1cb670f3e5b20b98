"""Delivering the notification outbox (issue 24): webhooks and e-mail, retried with back-off.

Load → act → apply (house style §5.4): a short transaction claims the due rows (each claim counts an
attempt and moves ``next_attempt_at`` to the back-off time, so a crash mid-send means a retry, not a
loss), the sends run with no transaction open, and a second short transaction records each outcome.
Delivery is therefore at least once; a receiver tells repeats apart by ``X-Argus-Delivery``.

Every network step waits at most ``timeout_s`` (a receiver that never answers costs one timeout, then
the next row goes), and no network error leaves ``deliver_due``: it becomes the row's ``last_error``.
The ``NotificationSender`` thread runs ``deliver_due`` every few seconds with its own database engine,
never inside the scheduler's loop.

A webhook goes only where ``services/webhook_target.py`` allows (never the platform's own network, unless
the operator's ``notify_webhook_allow`` lists the address), and its ``last_error`` is generic: the user who
owns the channel sees "refused", "could not deliver" or the receiver's HTTP status, never the exception
text that would tell an open port from a closed or a filtered one. The detail goes to the server's log.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import smtplib
import ssl
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from email.message import EmailMessage
from email.utils import make_msgid
from typing import Any

import httpx
from sqlalchemy import delete, or_, select, update

from argus.db.models import NotificationChannelModel as Chan
from argus.db.models import NotificationOutboxModel as Out
from argus.db.models import utcnow
from argus.db.session import Database
from argus.services import webhook_target
from argus.services.webhook_target import AllowList

log = logging.getLogger(__name__)

SIGNATURE_HEADER = "X-Argus-Signature"
EVENT_HEADER = "X-Argus-Event"
DELIVERY_HEADER = "X-Argus-Delivery"
# Back-off after attempt n (1-based): 30 s × 4^(n-1), at most an hour: 30 s, 2 min, 8 min, 32 min, 1 h, 1 h, 1 h.
FIRST_RETRY_S = 30.0
RETRY_FACTOR = 4.0
MAX_RETRY_S = 3600.0
MAX_ATTEMPTS = 8
BATCH = 50  # rows claimed per pass: a backlog drains over passes, and a pass stays short
KEEP_DAYS = 30  # delivered and given-up rows older than this are deleted (the sender, once an hour)
# HTTP answers that say "this will never work": no point asking again for hours
_PERMANENT = frozenset({301, 308, 400, 401, 403, 404, 405, 410, 411, 413, 414, 415, 422})
# What a webhook's owner is told: the same words whatever the network said (refused, reset, timed out, no
# route, no such name), so the deliveries list is no port scanner.
REFUSED = ("refused: the address is not allowed (webhooks cannot reach this platform's own network; an "
           "operator can allow an internal receiver with the notify_webhook_allow setting)")
UNREACHABLE = "could not deliver (connection failed or timed out)"
BAD_URL = "refused: the URL cannot be sent to (not a valid http(s) URL)"
SENDER_FAILED = "could not deliver (an error in the sender; the server's log has the detail)"


@dataclass(frozen=True)
class SmtpSettings:
    """The operator's SMTP server (``Settings.smtp_*``); ``host`` None: e-mail is off."""

    host: str | None = None
    port: int = 25
    user: str | None = None
    password: str | None = None
    sender: str = "argus@localhost"
    starttls: bool = False


@dataclass(frozen=True)
class Outcome:
    delivered: bool
    error: str | None = None
    permanent: bool = False  # give up now (a refusal that retrying cannot change)


def retry_delay(attempts: int) -> timedelta:
    """How long to wait after the ``attempts``-th failed try."""
    return timedelta(seconds=min(MAX_RETRY_S, FIRST_RETRY_S * RETRY_FACTOR ** max(0, attempts - 1)))


def sign(secret: str, body: bytes) -> str:
    """The ``X-Argus-Signature`` value: ``sha256=`` + hex HMAC-SHA256 of the raw body with the channel's secret."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class _Claimed:
    id: int
    event: str
    payload: dict[str, Any]
    attempts: int
    kind: str
    target: str
    secret: str | None
    enabled: bool


def deliver_due(db: Database, now: datetime | None = None, *, smtp: SmtpSettings, http_timeout_s: float,
                base_url: str = "", limit: int = BATCH, stop: threading.Event | None = None,
                webhook_allow: Iterable[str] | AllowList = ()) -> int:
    """Send the rows due at ``now`` (default: the clock); how many were delivered. Never raises for a
    receiver's fault. Tests pass ``now`` to step through the back-off without sleeping. Once ``stop`` is
    set, the rows not sent yet are handed back untouched (due again, the attempt not counted).
    ``webhook_allow``: the operator's internal receivers (``Settings.notify_webhook_allow``)."""
    now = now or utcnow()
    allow = webhook_target.parse_allow(webhook_allow)
    claimed = _claim(db, now, limit)
    if not claimed:
        return 0
    outcomes: list[tuple[_Claimed, Outcome | None]] = []
    for row in claimed:
        stopping = stop is not None and stop.is_set()
        outcomes.append((row, None if stopping else _send(row, smtp, http_timeout_s, base_url, allow)))
    done = max(now, utcnow())
    with db.writer() as s:
        for row, out in outcomes:
            if out is None:
                values: dict[str, Any] = {"attempts": row.attempts - 1, "next_attempt_at": now}
            elif out.delivered:
                values = {"delivered_at": done, "next_attempt_at": None, "last_error": None}
            else:
                values = {"last_error": (out.error or "failed")[:1000]}
                if out.permanent or row.attempts >= MAX_ATTEMPTS:
                    values["next_attempt_at"] = None  # given up; the error stays for the deliveries list
            s.execute(update(Out).where(Out.id == row.id).values(**values))
    return sum(1 for _, out in outcomes if out is not None and out.delivered)


def _claim(db: Database, now: datetime, limit: int) -> list[_Claimed]:
    q = (select(Out.id, Out.event, Out.payload, Out.attempts, Chan.kind, Chan.target, Chan.secret, Chan.enabled)
         .join(Chan, Chan.id == Out.channel_id)
         .where(Out.delivered_at.is_(None), Out.next_attempt_at.is_not(None), Out.next_attempt_at <= now)
         .order_by(Out.next_attempt_at, Out.id).limit(limit))
    with db.session() as s:  # idle (the usual case): one indexed read, no write lock taken
        due = s.execute(q).all()
    out: list[_Claimed] = []
    if not due:
        return out
    with db.writer() as s:
        for r in due:
            attempts = r.attempts + 1
            won = s.execute(update(Out).where(Out.id == r.id, Out.attempts == r.attempts, Out.delivered_at.is_(None))
                            .values(attempts=attempts, next_attempt_at=now + retry_delay(attempts))).rowcount
            if won == 1:  # another sender (a second server on the same database) took it otherwise
                out.append(_Claimed(r.id, r.event, r.payload, attempts, r.kind, r.target, r.secret, r.enabled))
    return out


def _send(row: _Claimed, smtp: SmtpSettings, timeout_s: float, base_url: str, allow: AllowList) -> Outcome:
    if not row.enabled:
        return Outcome(False, "the channel is disabled", permanent=True)
    try:
        if row.kind == "webhook":
            return send_webhook(row.target, row.secret or "", row.event, row.payload, row.id, timeout_s, allow=allow)
        if row.kind == "email":
            return send_email(smtp, row.target, row.event, row.payload, timeout_s, base_url)
        return Outcome(False, f"unknown channel kind {row.kind!r}", permanent=True)
    except Exception:  # noqa: BLE001 - a sender bug must not stop the others; logged, a generic row error
        log.exception("notification %s: sending failed", row.id)
        return Outcome(False, SENDER_FAILED)


def send_webhook(url: str, secret: str, event: str, payload: dict[str, Any], delivery_id: int,
                 timeout_s: float, *, allow: AllowList = ()) -> Outcome:
    """POST the payload as JSON, signed, to an address ``webhook_target`` checked; 2xx is delivered.

    The answer's body is not read (a receiver that streams one forever costs nothing); a redirect is a
    failure, not followed (the signature was for this URL, and the next one would escape the check). The
    row's error is generic (see the module's docstring); the detail is logged here, with the host only (a
    URL's query often carries a token)."""
    body = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()
    headers = {"Content-Type": "application/json", "User-Agent": "argus-notify/1",
               SIGNATURE_HEADER: sign(secret, body), EVENT_HEADER: event, DELIVERY_HEADER: str(delivery_id)}
    try:
        code = webhook_target.post_pinned(url, body, headers, timeout_s, allow)
    except webhook_target.TargetRefused as exc:
        log.warning("notification %s: refused: %s", delivery_id, exc)
        return Outcome(False, REFUSED, permanent=True)
    except (httpx.InvalidURL, ValueError) as exc:  # ValueError: also a bad IDNA name (UnicodeError)
        log.warning("notification %s: unusable URL: %s: %s", delivery_id, type(exc).__name__, exc)
        return Outcome(False, BAD_URL, permanent=True)
    except (httpx.HTTPError, OSError) as exc:
        log.warning("notification %s to %s: %s: %s", delivery_id, _host(url), type(exc).__name__, exc)
        return Outcome(False, UNREACHABLE)
    if 200 <= code < 300:
        return Outcome(True)
    if 300 <= code < 400:
        return Outcome(False, f"the receiver answered HTTP {code}, a redirect, which is not followed: give the "
                       "final URL", permanent=code in _PERMANENT)
    return Outcome(False, f"the receiver answered HTTP {code}", permanent=code in _PERMANENT)


def _host(url: str) -> str:
    """The URL's host for the log (never its path or query, which may carry a token)."""
    try:
        return httpx.URL(url).host or "?"
    except (httpx.InvalidURL, ValueError):
        return "?"


def send_email(smtp: SmtpSettings, to: str, event: str, payload: dict[str, Any], timeout_s: float,
               base_url: str) -> Outcome:
    if not smtp.host:
        return Outcome(False, "e-mail is off on this server (smtp_host is not set)", permanent=True)
    msg = email_message(smtp.sender, to, event, payload, base_url)
    try:
        with smtplib.SMTP(smtp.host, smtp.port, timeout=timeout_s) as conn:
            if smtp.starttls:
                conn.starttls(context=ssl.create_default_context())
            if smtp.user:
                conn.login(smtp.user, smtp.password or "")
            conn.send_message(msg)
    except smtplib.SMTPRecipientsRefused as exc:
        return Outcome(False, f"the SMTP server refused the address: {_smtp_reply(exc.recipients)}", permanent=True)
    except smtplib.SMTPAuthenticationError as exc:
        return Outcome(False, f"SMTP login failed: {exc.smtp_code} {exc.smtp_error!r}")
    except TimeoutError:
        return Outcome(False, f"the SMTP server did not answer within {timeout_s:g} s")
    except (smtplib.SMTPException, OSError, ssl.SSLError) as exc:
        return Outcome(False, f"SMTP: {type(exc).__name__}: {exc}"[:500])
    return Outcome(True)


def _smtp_reply(recipients: dict[str, tuple[int, bytes]]) -> str:
    return "; ".join(f"{code} {msg.decode(errors='replace')}" for code, msg in recipients.values())[:300]


def email_message(sender: str, to: str, event: str, payload: dict[str, Any], base_url: str) -> EmailMessage:
    """Subject ``[argus] grpo-20261125-0003 FAILED``; the body: the message, the reason, the task's page."""
    msg = EmailMessage()
    task = payload.get("task_id") or payload.get("model")  # a team's alias moved: maybe no task, always a model
    msg["Subject"] = f"[argus] {task} {event}" if task else "[argus] test notification"
    msg["From"] = sender
    msg["To"] = to
    msg["Message-ID"] = make_msgid(domain=sender.rpartition("@")[2] or None)
    lines = [f"{task} ({payload.get('name') or 'no name'}): {event}" if task else "Argus notification: TEST"]
    if payload.get("message"):
        lines += ["", str(payload["message"])]
    if payload.get("termination_reason"):
        lines += ["", f"reason: {payload['termination_reason']}"]
    if payload.get("failure_kind"):
        lines.append(f"failure kind: {payload['failure_kind']}")
    lines += ["", f"{base_url.rstrip('/')}{payload.get('link', '')}", "",
              "You get this because of a notification channel on your Argus Account page."]
    msg.set_content("\n".join(lines) + "\n")
    return msg


def prune_outbox(db: Database, before: datetime) -> int:
    """Delete delivered and given-up rows created before ``before``: the outbox is no archive."""
    with db.writer() as s:
        return s.execute(delete(Out).where(Out.created_at < before,
                                         or_(Out.delivered_at.is_not(None), Out.next_attempt_at.is_(None)))).rowcount


class NotificationSender:
    """The thread that delivers the outbox every ``poll_s`` (or at once after ``wake``), until ``stop``.

    ``db`` should be an engine of its own (``Database.sibling``): its waits for a lock never hold a request's.
    A pass is bounded: at most ``BATCH`` rows, each at most a timeout per network step."""

    PRUNE_EVERY_S = 3600.0

    def __init__(self, db: Database, smtp: SmtpSettings, *, http_timeout_s: float, base_url: str = "",
                 poll_s: float = 2.0, webhook_allow: Iterable[str] = ()) -> None:
        self.db, self.smtp, self.http_timeout_s, self.base_url, self.poll_s = db, smtp, http_timeout_s, base_url, poll_s
        self.webhook_allow = webhook_target.parse_allow(webhook_allow)  # the operator's notify_webhook_allow
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._pruned_at = float("-inf")
        self.passes = 0

    def wake(self) -> None:
        self._wake.set()

    def run_once(self) -> int:
        delivered = deliver_due(self.db, smtp=self.smtp, http_timeout_s=self.http_timeout_s, base_url=self.base_url,
                                stop=self._stop, webhook_allow=self.webhook_allow)
        self.passes += 1
        return delivered

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                while self.run_once() and not self._stop.is_set():
                    pass  # a full batch may leave more due rows: go on before resting
                if time.monotonic() - self._pruned_at > self.PRUNE_EVERY_S:
                    self._pruned_at = time.monotonic()
                    prune_outbox(self.db, utcnow() - timedelta(days=KEEP_DAYS))
            except Exception:  # noqa: BLE001 - a database hiccup: logged, the next pass retries
                log.exception("notification sender pass failed")
            self._wake.wait(self.poll_s)
            self._wake.clear()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="argus-notify", daemon=True)
        self._thread.start()

    def stop(self, timeout: float | None = None) -> None:
        """Stop after the send in progress (at most one network timeout); unsent rows stay due."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout if timeout is not None else self.http_timeout_s * 3 + 5)
