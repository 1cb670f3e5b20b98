"""Real receivers for the notification tests (issue 24): an HTTP server and an SMTP server on free ports.

``Receiver`` (http.server in a thread) records each POST (headers, raw body, whether the HMAC signature
matched the secret it was told) and answers from a script of status codes, or holds the request
(``hang``) until the test ends. ``Mailbox`` is aiosmtpd's own server, receiving real SMTP.

The receiver listens on loopback, where webhooks may not go (services/webhook_target.py) unless the operator
allows it: a test that delivers to it passes ``ALLOW_LOCAL`` as ``notify_webhook_allow`` (its Settings) or
``webhook_allow`` (``deliver_due``, ``create_channel``).
"""

from __future__ import annotations

import hashlib
import hmac
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email import message_from_bytes
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from argus.server import notification_sender
from argus.settings import Settings
from tests.helpers import LiveServer, free_port, live_server
from tests.waiting import wait_until

ALLOW_LOCAL = ["127.0.0.1"]  # the operator's allowlist that lets a webhook reach the local receiver


@dataclass
class Hit:
    path: str
    headers: dict[str, str]
    body: bytes
    signed_ok: bool | None  # None: no secret set on the receiver


@dataclass
class Receiver:
    url: str
    script: list[int] = field(default_factory=list)  # status codes to answer in turn; then 200
    secret: str | None = None
    hang: bool = False
    location: str | None = None  # sent as the Location header (a redirect, with a 3xx in ``script``)
    hits: list[Hit] = field(default_factory=list)
    released: threading.Event = field(default_factory=threading.Event)

    def wait_for(self, n: int, timeout: float = 30.0) -> list[Hit]:
        wait_until(lambda: len(self.hits) >= n, timeout, every=0.05,
                   what=lambda: f"{len(self.hits)} of {n} requests arrived")
        return self.hits


def _handler(rx: Receiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            ok = None
            if rx.secret is not None:
                want = "sha256=" + hmac.new(rx.secret.encode(), body, hashlib.sha256).hexdigest()
                ok = hmac.compare_digest(want, self.headers.get("X-Argus-Signature", ""))
            rx.hits.append(Hit(self.path, {k.lower(): v for k, v in self.headers.items()}, body, ok))
            if rx.hang:
                rx.released.wait(120)
                return
            code = rx.script.pop(0) if rx.script else 200
            self.send_response(code)
            if rx.location is not None:
                self.send_header("Location", rx.location)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args: object) -> None:
            pass

    return Handler


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    port = free_port()
    rx = Receiver(url=f"http://127.0.0.1:{port}/hook")
    server = ThreadingHTTPServer(("127.0.0.1", port), _handler(rx))
    server.daemon_threads = True
    server.block_on_close = False  # a hanging handler must not hold the test's end
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield rx
    finally:
        rx.released.set()
        server.shutdown()
        server.server_close()


@dataclass
class Mailbox:
    host: str
    port: int
    messages: list[tuple[str, list[str], Message]] = field(default_factory=list)  # (mail from, rcpt to, message)

    def wait_for(self, n: int, timeout: float = 30.0) -> list[tuple[str, list[str], Message]]:
        wait_until(lambda: len(self.messages) >= n, timeout, every=0.05,
                   what=lambda: f"{len(self.messages)} of {n} e-mails arrived")
        return self.messages


@pytest.fixture
def mailbox() -> Iterator[Mailbox]:
    from aiosmtpd.controller import Controller

    box = Mailbox("127.0.0.1", free_port())

    class Handler:
        async def handle_DATA(self, server, session, envelope):  # noqa: ANN001, ANN201, N802 - aiosmtpd's hook
            box.messages.append((envelope.mail_from, list(envelope.rcpt_tos), message_from_bytes(envelope.content)))
            return "250 Message accepted for delivery"

    controller = Controller(Handler(), hostname=box.host, port=box.port)
    controller.start()
    try:
        yield box
    finally:
        controller.stop()


@contextmanager
def notifying_server(settings: Settings) -> Iterator[LiveServer]:
    """A live server with its notification sender running (polling every 0.2 s), stopped and disposed after."""
    senders = []

    def configure(ctx):  # noqa: ANN001, ANN202
        sender = notification_sender(ctx)
        sender.poll_s = 0.2
        senders.append(sender)

    with live_server(settings, configure=configure) as srv:
        senders[0].start()
        try:
            yield srv
        finally:
            senders[0].stop()
            senders[0].db.dispose()
