"""Notifications (issue 24) against a real local HTTP receiver and a real SMTP server (aiosmtpd).

Status changes queue outbox rows in their own transaction; ``deliver_due`` sends them. The back-off is
stepped through with an explicit ``now`` instead of sleeping.
"""

from __future__ import annotations

import json
import threading
import time
from datetime import timedelta

import pytest
from sqlalchemy import select

from argus.core.states import TaskStatus, TerminationReason
from argus.db.models import NotificationChannelModel, NotificationOutboxModel, TaskModel, UserModel, utcnow
from argus.db.session import Database
from argus.errors import ClientError, NotFound
from argus.services import notifications as svc
from argus.services import notify_sender
from argus.services.notify_sender import (
    MAX_ATTEMPTS,
    NotificationSender,
    SmtpSettings,
    deliver_due,
    retry_delay,
)
from argus.services.principal import Principal
from argus.services.tasks import switch_task_status
from tests.notify_fixtures import ALLOW_LOCAL, Mailbox, Receiver
from tests.waiting import wait_until

OFF = SmtpSettings()


@pytest.fixture
def db(tmp_path) -> Database:
    d = Database(f"sqlite:///{tmp_path / 'n.db'}")
    d.migrate()
    yield d
    d.dispose()


def add_user(db: Database, name: str) -> Principal:
    with db.session() as s:
        u = UserModel(name=name)
        s.add(u)
        s.flush()
        return Principal(u.id, name)


_n = iter(range(1, 10_000))


def add_task(db: Database, user: Principal, name: str = "my run") -> str:
    tid = f"grpo-20261125-{next(_n):04d}"
    now = utcnow()
    with db.session() as s:
        s.add(TaskModel(id=tid, user_id=user.id, name=name, kind="advanced", workload="grpo", status="QUEUED",
                        priority=0, nnodes=1, n_gpus_per_node=0, spec_raw="", spec_resolved={}, command_raw="x",
                        command_expanded="x", argv=["x"], warnings=[], attempts=0, created_at=now, updated_at=now))
    return tid


def add_channel(db: Database, user: Principal, kind: str, target: str, events: list[str] | None = None,
                email: bool = True) -> svc.CreatedChannel:
    with db.session() as s:  # the operator allows the local receiver (tests/notify_fixtures.py)
        return svc.create_channel(s, user, kind, target, events, email_enabled=email, webhook_allow=ALLOW_LOCAL)


def switch(db: Database, tid: str, *path: TaskStatus, message: str | None = None) -> None:
    for new in path:
        with db.session() as s:
            task = s.get(TaskModel, tid)
            reason = {TaskStatus.SUCCEEDED: TerminationReason.SUCCEEDED, TaskStatus.FAILED: TerminationReason.EXIT_NONZERO,
                      TaskStatus.CANCELED: TerminationReason.USER_CANCELED}.get(new)
            switch_task_status(s, task, new, actor="test", reason=reason, message=message)


def outbox(db: Database) -> list[NotificationOutboxModel]:
    with db.session() as s:
        return list(s.scalars(select(NotificationOutboxModel).order_by(NotificationOutboxModel.id)))


def test_endings_queue_one_row_per_subscribed_channel_and_nothing_else(db: Database) -> None:
    alice, bob = add_user(db, "alice"), add_user(db, "bob")
    every = add_channel(db, alice, "webhook", "https://hooks.example.com/a").channel.id
    failures = add_channel(db, alice, "email", "alice@example.com", ["FAILED"]).channel.id
    add_channel(db, bob, "webhook", "https://hooks.example.com/bob")  # bob's: never about alice's tasks
    with db.session() as s:
        off = svc.create_channel(s, alice, "webhook", "https://hooks.example.com/off", None, email_enabled=False)
        s.get(NotificationChannelModel, off.channel.id).enabled = False

    ok, bad, canceled = add_task(db, alice), add_task(db, alice), add_task(db, alice)
    switch(db, ok, TaskStatus.SUBMITTED, TaskStatus.RUNNING)
    assert outbox(db) == []  # starting is no event
    switch(db, ok, TaskStatus.SUCCEEDED, message="done in 3 h")
    switch(db, bad, TaskStatus.SUBMITTED, TaskStatus.RUNNING, TaskStatus.FAILED, message="exit code 1")
    switch(db, canceled, TaskStatus.CANCELED, message="canceled by alice")

    rows = [(r.channel_id, r.task_id, r.event) for r in outbox(db)]
    assert rows == [(every, ok, "SUCCEEDED"), (every, bad, "FAILED"), (failures, bad, "FAILED"),
                    (every, canceled, "CANCELED")]
    p = outbox(db)[1].payload
    assert p == {"event": "FAILED", "task_id": bad, "name": "my run", "status": "FAILED",
                 "termination_reason": "EXIT_NONZERO", "failure_kind": None, "message": "exit code 1",
                 "at": p["at"], "link": f"/tasks/{bad}"}
    assert all(r.attempts == 0 and r.next_attempt_at is not None and r.delivered_at is None for r in outbox(db))


def test_a_rolled_back_status_change_leaves_no_notification(db: Database) -> None:
    alice = add_user(db, "alice")
    add_channel(db, alice, "webhook", "https://hooks.example.com/a")
    tid = add_task(db, alice)
    with pytest.raises(RuntimeError), db.session() as s:
        switch_task_status(s, s.get(TaskModel, tid), TaskStatus.CANCELED, actor="test")
        assert len(s.scalars(select(NotificationOutboxModel)).all()) == 1
        raise RuntimeError("the caller's transaction fails after the change")
    assert outbox(db) == []


def test_notify_is_for_the_monitors_events_and_honours_subscriptions(db: Database) -> None:
    alice = add_user(db, "alice")
    stalls = add_channel(db, alice, "webhook", "https://hooks.example.com/s", ["STALLED", "IDLE_GPU"]).channel.id
    add_channel(db, alice, "webhook", "https://hooks.example.com/f", ["FAILED"])
    tid = add_task(db, alice)
    with db.session() as s:
        task = s.get(TaskModel, tid)
        assert svc.notify(s, task, "STALLED", "no new step for 30 min") == 1
        assert svc.notify(s, task, "RESUMED", "resumed from step 40") == 0
        with pytest.raises(ValueError, match="unknown notification event"):
            svc.notify(s, task, "EXPLODED")
    [row] = outbox(db)
    assert (row.channel_id, row.event, row.payload["message"], row.payload["status"]) == (
        stalls, "STALLED", "no new step for 30 min", "QUEUED")


def test_webhook_is_signed_and_delivered_after_two_500s_with_back_off(db: Database, receiver: Receiver) -> None:
    alice = add_user(db, "alice")
    made = add_channel(db, alice, "webhook", receiver.url + "?token=abc")
    receiver.secret, receiver.script = made.secret, [500, 500]
    tid = add_task(db, alice)
    switch(db, tid, TaskStatus.SUBMITTED, TaskStatus.RUNNING, TaskStatus.FAILED, message="exit code 3")
    t0 = utcnow()

    assert deliver_due(db, t0, smtp=OFF, http_timeout_s=5, webhook_allow=ALLOW_LOCAL) == 0
    [row] = outbox(db)
    assert (row.attempts, row.delivered_at, row.last_error) == (1, None, "the receiver answered HTTP 500")
    assert row.next_attempt_at == t0 + timedelta(seconds=30)
    not_yet = t0 + timedelta(seconds=29)
    assert deliver_due(db, not_yet, smtp=OFF, http_timeout_s=5, webhook_allow=ALLOW_LOCAL) == 0  # not due yet
    assert len(receiver.hits) == 1
    assert deliver_due(db, t0 + timedelta(seconds=30), smtp=OFF, http_timeout_s=5, webhook_allow=ALLOW_LOCAL) == 0
    [row] = outbox(db)
    assert row.attempts == 2 and row.next_attempt_at == t0 + timedelta(seconds=30 + 120)
    assert deliver_due(db, t0 + timedelta(seconds=150), smtp=OFF, http_timeout_s=5, webhook_allow=ALLOW_LOCAL) == 1
    [row] = outbox(db)
    assert row.attempts == 3 and row.delivered_at is not None and row.next_attempt_at is None and row.last_error is None
    assert svc.delivery_state(row) == "delivered"
    later = t0 + timedelta(days=1)
    assert deliver_due(db, later, smtp=OFF, http_timeout_s=5, webhook_allow=ALLOW_LOCAL) == 0  # never twice

    hits = receiver.hits
    assert len(hits) == 3 and all(h.signed_ok for h in hits)
    assert hits[0].path == "/hook?token=abc"
    assert hits[0].headers["x-argus-event"] == "FAILED" and hits[0].headers["content-type"] == "application/json"
    assert {h.headers["x-argus-delivery"] for h in hits} == {str(row.id)}  # the receiver can drop repeats
    body = json.loads(hits[2].body)
    assert (body["task_id"], body["event"], body["message"], body["link"]) == (tid, "FAILED", "exit code 3", f"/tasks/{tid}")


def test_back_off_grows_then_gives_up_keeping_the_error(db: Database, receiver: Receiver) -> None:
    assert [retry_delay(n).total_seconds() for n in range(1, 8)] == [30, 120, 480, 1920, 3600, 3600, 3600]
    alice = add_user(db, "alice")
    add_channel(db, alice, "webhook", receiver.url)
    receiver.script = [503] * 20
    tid = add_task(db, alice)
    switch(db, tid, TaskStatus.CANCELED)
    now = utcnow()
    for _ in range(MAX_ATTEMPTS):
        deliver_due(db, now, smtp=OFF, http_timeout_s=5, webhook_allow=ALLOW_LOCAL)
        now = now + timedelta(hours=2)
    [row] = outbox(db)
    assert row.attempts == MAX_ATTEMPTS and row.next_attempt_at is None and row.delivered_at is None
    assert row.last_error == "the receiver answered HTTP 503" and svc.delivery_state(row) == "failed"
    deliver_due(db, now + timedelta(days=1), smtp=OFF, http_timeout_s=5, webhook_allow=ALLOW_LOCAL)
    assert len(receiver.hits) == MAX_ATTEMPTS


def test_a_refusal_that_retrying_cannot_change_gives_up_at_once(db: Database, receiver: Receiver) -> None:
    alice = add_user(db, "alice")
    add_channel(db, alice, "webhook", receiver.url)
    receiver.script = [410]
    switch(db, add_task(db, alice), TaskStatus.CANCELED)
    deliver_due(db, utcnow(), smtp=OFF, http_timeout_s=5, webhook_allow=ALLOW_LOCAL)
    [row] = outbox(db)
    assert (row.attempts, row.next_attempt_at, row.last_error) == (1, None, "the receiver answered HTTP 410")


def test_an_unreachable_receiver_is_an_error_on_the_row_not_an_exception(db: Database) -> None:
    from tests.helpers import free_port

    alice = add_user(db, "alice")
    add_channel(db, alice, "webhook", f"http://127.0.0.1:{free_port()}/nobody")
    add_channel(db, alice, "webhook", "http://no-such-host.invalid/x")
    switch(db, add_task(db, alice), TaskStatus.CANCELED)
    assert deliver_due(db, utcnow(), smtp=OFF, http_timeout_s=3, webhook_allow=ALLOW_LOCAL) == 0
    rows = outbox(db)  # the same words for a closed port and a name that does not resolve: no port scanner
    assert [r.last_error for r in rows] == [notify_sender.UNREACHABLE] * 2
    assert all(r.next_attempt_at is not None for r in rows)


def test_a_hanging_receiver_costs_one_timeout(db: Database, receiver: Receiver) -> None:
    alice = add_user(db, "alice")
    add_channel(db, alice, "webhook", receiver.url)
    receiver.hang = True
    switch(db, add_task(db, alice), TaskStatus.CANCELED)
    started = time.monotonic()
    assert deliver_due(db, utcnow(), smtp=OFF, http_timeout_s=1.0, webhook_allow=ALLOW_LOCAL) == 0
    assert time.monotonic() - started < 3.0
    [row] = outbox(db)
    assert row.last_error == notify_sender.UNREACHABLE and row.attempts == 1 and row.next_attempt_at is not None


def test_the_sender_thread_delivers_and_stops_within_one_timeout_of_a_hanging_receiver(
        db: Database, receiver: Receiver) -> None:
    alice = add_user(db, "alice")
    made = add_channel(db, alice, "webhook", receiver.url)
    receiver.secret = made.secret
    sender = NotificationSender(db, OFF, http_timeout_s=1.0, poll_s=0.1, webhook_allow=ALLOW_LOCAL)
    sender.start()
    try:
        switch(db, add_task(db, alice), TaskStatus.CANCELED)
        assert receiver.wait_for(1)[0].signed_ok
        wait_until(lambda: outbox(db)[0].delivered_at is not None, 10, every=0.05,
                   what="the row marked delivered")
        receiver.hang = True
        switch(db, add_task(db, alice), TaskStatus.CANCELED)
        receiver.wait_for(2)  # the sender is now waiting on the receiver, with no transaction open:
        started = time.monotonic()
        switch(db, add_task(db, alice), TaskStatus.CANCELED)  # a status writer (the scheduler) is not held
        assert time.monotonic() - started < 0.5
    finally:
        started = time.monotonic()
        sender.stop()
        assert time.monotonic() - started < 3.0  # the send in progress times out after 1 s
    assert not sender._thread.is_alive()


def test_stop_hands_unsent_rows_back(db: Database, receiver: Receiver) -> None:
    alice = add_user(db, "alice")
    add_channel(db, alice, "webhook", receiver.url)
    switch(db, add_task(db, alice), TaskStatus.CANCELED)
    stop = threading.Event()
    stop.set()
    now = utcnow()
    assert deliver_due(db, now, smtp=OFF, http_timeout_s=1, webhook_allow=ALLOW_LOCAL, stop=stop) == 0
    [row] = outbox(db)
    assert (row.attempts, row.next_attempt_at, row.last_error) == (0, now, None) and receiver.hits == []


def test_email_goes_through_a_real_smtp_server(db: Database, mailbox: Mailbox) -> None:
    alice = add_user(db, "alice")
    add_channel(db, alice, "email", "alice@example.com", ["FAILED"])
    tid = add_task(db, alice, name="math-7b")
    switch(db, tid, TaskStatus.SUBMITTED, TaskStatus.RUNNING, TaskStatus.FAILED, message="exit code 137 (out of memory)")
    smtp = SmtpSettings(host=mailbox.host, port=mailbox.port, sender="argus@cluster.example.com")
    assert deliver_due(db, utcnow(), smtp=smtp, http_timeout_s=5, base_url="https://argus.example.com/") == 1
    [(mail_from, rcpt, msg)] = mailbox.wait_for(1)
    assert mail_from == "argus@cluster.example.com" and rcpt == ["alice@example.com"]
    assert msg["Subject"] == f"[argus] {tid} FAILED" and msg["To"] == "alice@example.com"
    text = msg.get_payload(decode=True).decode()
    assert "exit code 137 (out of memory)" in text and "reason: EXIT_NONZERO" in text
    assert f"https://argus.example.com/tasks/{tid}" in text
    assert outbox(db)[0].delivered_at is not None


def test_email_without_smtp_gives_up_saying_which_setting(db: Database) -> None:
    alice = add_user(db, "alice")
    add_channel(db, alice, "email", "alice@example.com")
    switch(db, add_task(db, alice), TaskStatus.CANCELED)
    deliver_due(db, utcnow(), smtp=OFF, http_timeout_s=1)
    [row] = outbox(db)
    assert row.next_attempt_at is None and "smtp_host" in row.last_error


def test_an_smtp_server_that_is_down_is_retried(db: Database) -> None:
    from tests.helpers import free_port

    alice = add_user(db, "alice")
    add_channel(db, alice, "email", "alice@example.com")
    switch(db, add_task(db, alice), TaskStatus.CANCELED)
    deliver_due(db, utcnow(), smtp=SmtpSettings(host="127.0.0.1", port=free_port()), http_timeout_s=2)
    [row] = outbox(db)
    assert row.next_attempt_at is not None and row.last_error.startswith("SMTP: ")


def test_test_event_reaches_the_channel_and_deliveries_list_it(db: Database, mailbox: Mailbox) -> None:
    alice, bob = add_user(db, "alice"), add_user(db, "bob")
    ch = add_channel(db, alice, "email", "alice@example.com", ["SUCCEEDED"]).channel.id
    with db.session() as s:
        svc.send_test(s, alice, ch)
        with pytest.raises(NotFound):
            svc.send_test(s, bob, ch)
    deliver_due(db, utcnow(), smtp=SmtpSettings(host=mailbox.host, port=mailbox.port), http_timeout_s=5)
    assert mailbox.wait_for(1)[0][2]["Subject"] == "[argus] test notification"
    with db.session() as s:
        [d] = svc.list_deliveries(s, alice, ch)
        assert (d.event, d.attempts, svc.delivery_state(d)) == ("TEST", 1, "delivered")


def test_channel_checks_name_field_value_and_fix(db: Database) -> None:
    def problems(kind, target, events=None, email=True):  # noqa: ANN001, ANN202
        return [(e.field, e.value) for e in svc.check_channel(kind, target, events, email_enabled=email)]

    assert problems("webhook", "https://hooks.example.com/x") == []
    assert problems("webhook", "http://10.0.0.7:9000/hook", ["FAILED"]) == [("target", "http://10.0.0.7:9000/hook")]
    allowed = svc.check_channel("webhook", "http://10.0.0.7:9000/hook", None, email_enabled=True,
                                webhook_allow=["10.0.0.0/8"])
    assert allowed == []  # the operator's notify_webhook_allow
    assert problems("webhook", "ftp://example.com/x") == [("target", "ftp://example.com/x")]
    assert problems("webhook", "https:///path") == [("target", "https:///path")]
    assert problems("webhook", "example.com/hook") == [("target", "example.com/hook")]
    assert problems("webhook", "http://169.254.169.254/latest/meta-data") == [("target", "http://169.254.169.254/latest/meta-data")]
    assert problems("webhook", "http://x.com:99999/") == [("target", "http://x.com:99999/")]
    assert problems("webhook", "https://a.com/x y") == [("target", "https://a.com/x y")]
    assert problems("email", "alice@example.com") == []
    assert problems("email", "not-an-address") == [("target", "not-an-address")]
    assert problems("email", "a@b.com\r\nBcc: evil@x.com") == [("target", "a@b.com\r\nBcc: evil@x.com")]
    assert problems("email", "alice@example.com", email=False) == [("kind", "email")]
    assert problems("sms", "123") == [("kind", "sms")]
    assert problems("webhook", "https://a.com", ["FAILED", "EXPLODED"]) == [("events", "EXPLODED")]
    assert problems("webhook", "https://a.com", []) == [("events", [])]
    assert problems(None, None) == [("kind", None), ("target", None)]
    msg = svc.check_channel("email", "a@b.com", None, email_enabled=False)[0].message
    assert "smtp_host" in msg and "ARGUS_SMTP_HOST" in msg


def test_channels_are_their_owners_alone(db: Database) -> None:
    alice, bob = add_user(db, "alice"), add_user(db, "bob")
    made = add_channel(db, alice, "webhook", "https://hooks.example.com/a", ["FAILED", "SUCCEEDED", "FAILED"])
    assert made.secret and len(made.secret) == 64
    assert made.channel.events == ["SUCCEEDED", "FAILED"]  # canonical order, once each
    with db.session() as s:
        assert [c.id for c in svc.list_channels(s, alice)] == [made.channel.id]
        assert svc.list_channels(s, bob) == []
        for call in (svc.get_channel, svc.list_deliveries, svc.delete_channel):
            with pytest.raises(NotFound):
                call(s, bob, made.channel.id)
        with pytest.raises(NotFound):
            svc.get_channel(s, Principal(bob.id, "bob", is_admin=True), made.channel.id)
    with db.session() as s:
        svc.delete_channel(s, alice, made.channel.id)
    with db.session() as s:
        assert svc.list_channels(s, alice) == []


def test_too_many_channels_is_refused(db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(svc, "MAX_CHANNELS_PER_USER", 2)
    alice = add_user(db, "alice")
    add_channel(db, alice, "webhook", "https://a.example.com/1")
    add_channel(db, alice, "webhook", "https://a.example.com/2")
    with pytest.raises(ClientError) as err:
        add_channel(db, alice, "webhook", "https://a.example.com/3")
    assert err.value.code == "too_many_channels"


def test_old_delivered_and_given_up_rows_are_pruned(db: Database, receiver: Receiver) -> None:
    alice = add_user(db, "alice")
    add_channel(db, alice, "webhook", receiver.url)
    for _ in range(3):
        switch(db, add_task(db, alice), TaskStatus.CANCELED)
    receiver.script = [200, 404]  # delivered, given up; the third stays pending (not due)
    ids = [r.id for r in outbox(db)]
    with db.session() as s:
        s.get(NotificationOutboxModel, ids[2]).next_attempt_at = utcnow() + timedelta(hours=1)
    deliver_due(db, utcnow(), smtp=OFF, http_timeout_s=5, webhook_allow=ALLOW_LOCAL)
    assert notify_sender.prune_outbox(db, utcnow() + timedelta(seconds=1)) == 2
    assert [r.id for r in outbox(db)] == [ids[2]]


def test_the_test_limiter_is_a_sliding_window_per_user() -> None:
    clock = [1000.0]
    limiter = svc.SendTestLimiter(limit=5, window_s=60.0, clock=lambda: clock[0])
    for n in range(5):
        clock[0] = 1000.0 + n  # tests at 1000 … 1004
        assert limiter.take(1) == 0.0
    assert limiter.take(1) == pytest.approx(56.0)  # the oldest leaves the window at 1060
    assert limiter.take(2) == 0.0  # another user is counted apart
    clock[0] = 1060.0
    assert limiter.take(1) == 0.0  # one slot freed, and taken
    assert limiter.take(1) == pytest.approx(1.0)


def test_send_test_beyond_the_limit_is_refused_and_queues_nothing(db: Database) -> None:
    alice = add_user(db, "alice")
    ch = add_channel(db, alice, "webhook", "https://hooks.example.com/a").channel.id
    limiter = svc.SendTestLimiter(limit=2, window_s=60.0)
    with db.session() as s:
        svc.send_test(s, alice, ch, limiter=limiter)
        svc.send_test(s, alice, ch, limiter=limiter)
        with pytest.raises(svc.SendTestThrottled) as err:
            svc.send_test(s, alice, ch, limiter=limiter)
    assert err.value.code == "too_many_tests" and 1 <= err.value.retry_after_s <= 60
    assert len(outbox(db)) == 2
