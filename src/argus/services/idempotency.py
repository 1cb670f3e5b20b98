"""Idempotent submit (issue 11): the same ``Idempotency-Key`` from the same user within 24 h
gets the first answer back, never a second task (nor a second sweep or pipeline: issue 38).

A client whose POST was cut (a server crash, a dropped connection) cannot know whether its
task exists; it sends the same request with the same key again. The key's row is written in
the *same transaction* as the task (``remember`` before the commit), so a crash leaves
either both or neither — never a task without its key, or a key without its task.

* The key is the client's (a fresh UUID per ``argus submit``), scoped to the user: another
  user's identical key is a different key.
* ``request_hash`` tells a retry (same body and content type) from a reuse of the key for
  another spec, which is refused (409) rather than answered with the wrong task.
* Only a created task is remembered. A refused spec (400) stores nothing: running the
  checks again gives the same verdict, and the key may then carry the corrected spec.
* Rows older than :data:`TTL` are ignored and deleted (at each keyed submit; the index on
  ``created_at`` keeps that cheap).
* Two requests with one key at the same moment: the second's insert hits the primary key,
  its whole transaction (task included) rolls back, and it answers with the winner's row.
* One table for every submit endpoint (tasks, sweeps, pipelines): a key is the user's, whatever it
  was sent to. The ``task_id`` column holds the id of what the key made (``sweep-…``,
  ``pipeline-…``), and the hash of a sweep or pipeline includes its endpoint, so the same text sent
  with one key to another endpoint is a different request (409), never the other kind's answer.
  :func:`submit_once` is the whole flow for an endpoint whose work runs in one transaction.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from argus.db.models import IdempotencyKeyModel, utcnow
from argus.errors import ClientError, Conflict, FieldError

HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotent-Replayed"
MAX_KEY_CHARS = 255
TTL = timedelta(hours=24)


@dataclass(frozen=True)
class Replay:
    """The first answer to this key, to send again as it was."""

    status_code: int
    response: dict[str, Any]
    task_id: str | None


class KeyRace(Exception):
    """Another request stored this key first (between our lookup and our insert)."""


def parse_key(value: str | None) -> str | None:
    """The header's key, or None without one; a malformed key is a 400 naming the rule."""
    if value is None:
        return None
    problem = None
    if not value:
        problem = "must not be empty"
    elif len(value) > MAX_KEY_CHARS:
        problem = f"must be at most {MAX_KEY_CHARS} characters (a UUID is 36)"
    elif not all(" " <= ch <= "~" for ch in value):
        problem = "must be printable ASCII (no control characters); a UUID is a good key"
    if problem is None:
        return value
    shown = value if len(value) <= 64 else value[:64] + "…"
    raise ClientError(f"invalid {HEADER} header", code="invalid_idempotency_key",
                      errors=[FieldError(HEADER, shown.encode("ascii", "backslashreplace").decode(), problem)])


def request_hash(body: str, content_type: str | None, endpoint: str | None = None) -> str:
    """What makes two requests "the same": the body and its media type (parameters ignored), and the
    ``endpoint`` (``sweeps``, ``pipelines``) for every submit but a task's (whose hash, stored since
    issue 11, stays what it was)."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    scope = f"{endpoint}\n" if endpoint else ""
    return hashlib.sha256(f"{scope}{media}\n{body}".encode()).hexdigest()


def _made(made_id: str | None) -> str:
    """What a key made, named: ``sweep sweep-…``, ``pipeline pipeline-…``, else ``task …``."""
    noun = next((n for n in ("sweep", "pipeline") if (made_id or "").startswith(f"{n}-")), "task")
    return f"{noun} {made_id}"


def prune(session: Session, now: datetime | None = None) -> int:
    """Delete keys past their 24 hours; returns how many."""
    cutoff = (now or utcnow()) - TTL
    res = session.execute(delete(IdempotencyKeyModel).where(IdempotencyKeyModel.created_at < cutoff))
    return res.rowcount or 0


def lookup(session: Session, user_id: int, key: str, req_hash: str, now: datetime | None = None) -> Replay | None:
    """The stored first answer for this user's key, None if there is none (or it expired).

    Raises Conflict when the key was used for a different request."""
    row = session.get(IdempotencyKeyModel, (user_id, key))
    if row is None or row.created_at < (now or utcnow()) - TTL:
        return None
    if row.request_hash != req_hash:
        raise Conflict(f"{HEADER} {key!r} was already used for a different request ({_made(row.task_id)}); "
                       "send a new key for a new spec", code="idempotency_key_reused")
    return Replay(row.status_code, dict(row.response), row.task_id)


def remember(session: Session, user_id: int, key: str, req_hash: str, *, task_id: str | None,
             status_code: int, response: dict[str, Any], now: datetime | None = None) -> None:
    """Store the answer in the caller's transaction (the one that created the task; ``task_id``: the id of
    what it made, a sweep's or a pipeline's too).

    Raises KeyRace when a concurrent request stored the same key first; the caller's
    transaction must then roll back (its task with it)."""
    now = now or utcnow()
    prune(session, now)  # here, not before the checks: on SQLite a write holds the lock until commit
    session.add(IdempotencyKeyModel(user_id=user_id, key=key, request_hash=req_hash, task_id=task_id,
                                    status_code=status_code, response=response, created_at=now))
    try:
        session.flush()
    except IntegrityError as exc:
        raise KeyRace(key) from exc


def winner(session: Session, user_id: int, key: str, req_hash: str) -> Replay:
    """After a :class:`KeyRace`: the answer of the request that stored the key first."""
    replay = lookup(session, user_id, key, req_hash)
    if replay is None:  # the winner's row vanished (expired this instant): let the client retry
        raise Conflict(f"{HEADER} {key!r} is in use by a concurrent request; retry", code="idempotency_key_busy")
    return replay


@dataclass(frozen=True)
class Made:
    """What a keyed submit made: its id and the answer to store (and send) for it."""

    made_id: str
    status_code: int
    response: dict[str, Any]


def submit_once(transaction: Callable[[], AbstractContextManager[Session]], user_id: int, key: str, req_hash: str,
                make: Callable[[Session], Made]) -> Made | Replay:
    """``make`` and the key's row in one ``transaction`` (both or neither), unless the key already has an answer:
    then that answer (:class:`Replay`; a different request under the key: Conflict). A refusal that ``make``
    raises stores nothing. Two at once: the loser's transaction rolls back and it answers the winner's answer."""
    with transaction() as session:
        if replay := lookup(session, user_id, key, req_hash):
            return replay
    try:
        with transaction() as session:
            made = make(session)
            remember(session, user_id, key, req_hash, task_id=made.made_id, status_code=made.status_code,
                     response=made.response)
        return made
    except KeyRace:
        with transaction() as session:
            return winner(session, user_id, key, req_hash)
