"""Webhooks cannot reach the platform's own network (services/webhook_target.py), against real local servers.

A literal is read as the OS resolver reads it; a name is resolved once when sending, every address is
checked, and the connection goes to the checked one (a scripted ``getaddrinfo`` plays the rebinding name,
``socket.create_connection`` is watched to see where the connection really went, and no test leaves this
machine). What the channel's owner is told is the same for a closed port, a timeout and an unknown name.
"""

from __future__ import annotations

import datetime
import ipaddress
import socket
import ssl
import threading
import time
from collections import Counter
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest

from argus.services import webhook_target as wt
from argus.services.notifications import url_problem
from argus.services.notify_sender import REFUSED, UNREACHABLE, Outcome, send_webhook
from argus.settings import Settings
from tests.helpers import free_port
from tests.notify_fixtures import ALLOW_LOCAL, Receiver, _handler

pytestmark = pytest.mark.hostile

LOCAL = wt.parse_allow(ALLOW_LOCAL)
PUBLIC = "1.1.1.1"  # a global address the scripted resolver hands out; a connection to it never leaves the machine

# Spellings of 169.254.169.254 (cloud metadata), 127.0.0.1 and 0.0.0.0 the resolver accepts, and what they are.
SPELLINGS = [
    ("2852039166", "169.254.169.254"), ("0xA9FEA9FE", "169.254.169.254"), ("0xa9.0xfe.0xa9.0xfe", "169.254.169.254"),
    ("0251.0376.0251.0376", "169.254.169.254"), ("169.254.43518", "169.254.169.254"),
    ("::ffff:169.254.169.254", "::ffff:169.254.169.254"), ("[::ffff:a9fe:a9fe]", "::ffff:169.254.169.254"),
    ("127.1", "127.0.0.1"), ("0x7f.1", "127.0.0.1"), ("017700000001", "127.0.0.1"), ("2130706433", "127.0.0.1"),
    ("127.0.0.1.", "127.0.0.1"), ("::ffff:7f00:1", "::ffff:127.0.0.1"), ("::127.0.0.1", "::7f00:1"),
    ("0", "0.0.0.0"), ("0.0", "0.0.0.0"), ("0x0", "0.0.0.0"), ("::", "::"), ("::ffff:0.0.0.0", "::ffff:0:0"),
    ("fe80::1%eth0", "fe80::1"), ("fe80::1%25eth0", "fe80::1"),
]
INTERNAL = ["127.0.0.1", "127.255.0.9", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.0.1", "100.64.0.1",
            "100.127.255.254", "169.254.169.254", "0.0.0.0", "0.1.2.3", "255.255.255.255", "224.0.0.1", "239.1.1.1",
            "240.0.0.1", "192.0.0.8", "198.18.0.1", "::1", "::", "fc00::1", "fd12:3456::1", "fe80::1", "fec0::1",
            "ff02::1", "::ffff:10.0.0.1", "::ffff:127.0.0.1", "::10.0.0.1", "2002:7f00:1::", "2002:a9fe:a9fe::1",
            "2002:c0a8:101::", "64:ff9b::7f00:1", "64:ff9b::a9fe:a9fe", "64:ff9b:1::a00:1",
            "2001:0:4136:e378:8000:63bf:3fff:fdd2", "2001:db8::1"]
PUBLIC_ADDRESSES = ["1.1.1.1", "8.8.8.8", "93.184.216.34", "2606:4700::1111", "::ffff:1.1.1.1", "64:ff9b::101:101",
                    "2002:101:101::1"]


def fake_dns(monkeypatch: pytest.MonkeyPatch, answers: dict[str, list[list[str]]]) -> Counter:
    """``socket.getaddrinfo`` answering the names in ``answers`` from a script (one list of addresses per
    lookup, the last one repeated); anything else (the IP a connection resolves) goes to the real resolver.
    The counter says how often each scripted name was looked up."""
    real, calls = socket.getaddrinfo, Counter()

    def getaddrinfo(host, port, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202 - socket's signature
        if host not in answers:
            return real(host, port, *args, **kwargs)
        script = answers[host]
        addresses = script[min(calls[host], len(script) - 1)]
        calls[host] += 1
        return [(socket.AF_INET6, socket.SOCK_STREAM, 6, "", (a, port, 0, 0)) if ":" in a else
                (socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port)) for a in addresses]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return calls


def watch_connects(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """Where each connection went; one to anything but loopback is refused here, so no test leaves the machine."""
    real, seen = socket.create_connection, []

    def create_connection(address, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        seen.append((address[0], address[1]))
        if address[0] != "127.0.0.1":
            raise ConnectionRefusedError(111, "Connection refused (a test never leaves this machine)")
        return real(address, *args, **kwargs)

    monkeypatch.setattr(socket, "create_connection", create_connection)
    return seen


def post(url: str, allow: wt.AllowList = (), timeout_s: float = 5.0) -> Outcome:
    return send_webhook(url, "s3cret", "TEST", {"event": "TEST"}, 7, timeout_s, allow=allow)


@pytest.mark.parametrize(("host", "means"), SPELLINGS)
def test_a_literal_is_read_as_the_resolver_reads_it_and_refused(host: str, means: str) -> None:
    assert wt.literal_ip(host) == ipaddress.ip_address(means)
    if ":" not in host and not host.endswith("."):  # the OS resolver agrees (inet_aton semantics)
        assert socket.getaddrinfo(host, 80, type=socket.SOCK_STREAM)[0][4][0] == str(ipaddress.ip_address(means))
    url = f"http://[{host.strip('[]')}]/hook" if ":" in host else f"http://{host}:8080/hook"
    problem = url_problem(url)
    assert problem and "internal address" in problem and "notify_webhook_allow" in problem, (url, problem)


@pytest.mark.parametrize("address", INTERNAL)
def test_internal_addresses_are_refused_in_every_form(address: str) -> None:
    ip = ipaddress.ip_address(address)
    assert wt.is_internal(ip) and not wt.permitted(ip), address


@pytest.mark.parametrize("address", PUBLIC_ADDRESSES)
def test_public_addresses_are_permitted(address: str) -> None:
    assert wt.permitted(ipaddress.ip_address(address)), address


def test_names_and_public_literals_pass_creation() -> None:
    for url in ("https://hooks.example.com/x", "http://1.1.1.1:8080/", "http://[2606:4700::1111]/", "http://localhost/",
                "http://0x1.0x1.0x1.0x1/"):
        assert url_problem(url) is None, url


def test_the_operators_allowlist_lets_listed_internal_receivers_in() -> None:
    allow = wt.parse_allow(["10.0.5.0/24", "127.0.0.1", " fd00::7 "])
    for address in ("10.0.5.9", "127.0.0.1", "::ffff:127.0.0.1", "fd00::7"):
        assert wt.permitted(ipaddress.ip_address(address), allow), address
    for address in ("10.0.6.1", "127.0.0.2", "169.254.169.254", "fd00::8"):
        assert not wt.permitted(ipaddress.ip_address(address), allow), address
    assert url_problem("http://10.0.5.9:9000/h", ["10.0.5.0/24"]) is None
    assert url_problem("http://10.0.6.1:9000/h", ["10.0.5.0/24"])
    with pytest.raises(ValueError, match="not-a-network"):
        wt.parse_allow(["not-a-network"])


def test_the_setting_is_a_json_list_checked_at_start(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ARGUS_NOTIFY_WEBHOOK_ALLOW", '["10.0.5.0/24", " 127.0.0.1 "]')
    assert Settings(state_dir=tmp_path).notify_webhook_allow == ["10.0.5.0/24", "127.0.0.1"]
    monkeypatch.setenv("ARGUS_NOTIFY_WEBHOOK_ALLOW", '["10.0.5.0/33"]')
    with pytest.raises(ValueError, match="notify_webhook_allow: '10.0.5.0/33'"):
        Settings(state_dir=tmp_path)
    monkeypatch.delenv("ARGUS_NOTIFY_WEBHOOK_ALLOW")
    assert Settings(state_dir=tmp_path).notify_webhook_allow == []


def test_a_name_resolving_to_loopback_is_refused_when_sending(receiver: Receiver) -> None:
    port = int(receiver.url.rsplit(":", 1)[1].split("/")[0])
    out = post(f"http://localhost:{port}/hook")
    assert out == Outcome(False, REFUSED, permanent=True)
    assert receiver.hits == []
    assert post(f"http://localhost:{port}/hook", LOCAL).delivered  # unless the operator allows it
    assert len(receiver.hits) == 1


def test_one_internal_address_among_public_ones_refuses_the_name(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_dns(monkeypatch, {"mixed.test": [[PUBLIC, "10.0.0.1"]], "v6.test": [["2606:4700::1111", "::1"]]})
    connects = watch_connects(monkeypatch)
    assert post("http://mixed.test/hook").error == REFUSED
    assert post("http://v6.test/hook").error == REFUSED
    assert connects == []


def test_a_rebinding_name_is_looked_up_once_and_the_connection_goes_to_the_checked_address(
        receiver: Receiver, monkeypatch: pytest.MonkeyPatch) -> None:
    port = int(receiver.url.rsplit(":", 1)[1].split("/")[0])
    calls = fake_dns(monkeypatch, {"rebind.test": [[PUBLIC], ["127.0.0.1"]]})  # public when checked, then loopback
    connects = watch_connects(monkeypatch)
    out = post(f"http://rebind.test:{port}/hook")
    assert calls["rebind.test"] == 1  # never asked again between the check and the connection
    assert connects == [(PUBLIC, port)]  # the checked address, never the second answer
    assert out == Outcome(False, UNREACHABLE) and receiver.hits == []


def test_the_pinned_connection_keeps_the_name_in_the_host_header(receiver: Receiver,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    port = int(receiver.url.rsplit(":", 1)[1].split("/")[0])
    calls = fake_dns(monkeypatch, {"hooks.test": [["127.0.0.1"], [PUBLIC]]})  # allowed when checked, then public
    connects = watch_connects(monkeypatch)
    assert post(f"http://hooks.test:{port}/hook?token=abc", LOCAL).delivered
    assert calls["hooks.test"] == 1 and connects == [("127.0.0.1", port)]
    [hit] = receiver.hits
    assert hit.headers["host"] == f"hooks.test:{port}" and hit.path == "/hook?token=abc"


def test_a_redirect_is_a_failure_and_is_not_followed(receiver: Receiver) -> None:
    receiver.script, receiver.location = [302, 301], receiver.url + "/followed"
    out = post(receiver.url, LOCAL)
    assert not out.delivered and not out.permanent and "HTTP 302" in out.error and "not followed" in out.error
    assert post(receiver.url, LOCAL).permanent  # 301: moved for good, asking again is no use
    time.sleep(0.2)
    assert [h.path for h in receiver.hits] == ["/hook", "/hook"]


def test_a_closed_port_a_timeout_and_an_unknown_name_read_the_same(receiver: Receiver) -> None:
    receiver.hang = True
    started = time.monotonic()
    timed_out = post(receiver.url, LOCAL, timeout_s=1.0)
    assert time.monotonic() - started < 3.0
    closed = post(f"http://127.0.0.1:{free_port()}/hook", LOCAL, timeout_s=1.0)
    unknown = post("http://no-such-host.invalid/hook", timeout_s=1.0)
    assert timed_out == closed == unknown == Outcome(False, UNREACHABLE)


def test_an_unusable_url_is_refused_generically() -> None:
    assert post("http://010.010.010.010/").error.startswith("refused: the URL cannot be sent to")
    assert post("http://0251.0376.0251.0376/").error.startswith("refused: the URL cannot be sent to")


# ---------------------------------------------------------------- TLS: the name is kept for SNI and the certificate


def _certificates(tmp_path: Path, name: str) -> tuple[Path, Path, Path]:
    """A test CA (its certificate: the CA file) and a server certificate for ``name`` only (no IP address)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.UTC)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "argus test CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
          .sign(ca_key, hashes.SHA256()))
    leaf = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    paths = tmp_path / "ca.pem", tmp_path / "server.pem", tmp_path / "server.key"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return paths


@pytest.fixture
def tls_receiver(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Receiver, list[str]]]:
    """An HTTPS receiver on loopback with a certificate for hooks.test, trusted through SSL_CERT_FILE; the
    list holds the SNI name of each handshake."""
    pytest.importorskip("cryptography")
    ca, cert, key = _certificates(tmp_path, "hooks.test")
    monkeypatch.setenv("SSL_CERT_FILE", str(ca))
    port, snis = free_port(), []
    rx = Receiver(url=f"https://hooks.test:{port}/hook")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    ctx.sni_callback = lambda _sock, name, _ctx: snis.append(name)
    server = ThreadingHTTPServer(("127.0.0.1", port), _handler(rx))
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield rx, snis
    finally:
        server.shutdown()
        server.server_close()


def test_tls_to_the_pinned_address_checks_the_certificate_for_the_name(
        tls_receiver: tuple[Receiver, list[str]], monkeypatch: pytest.MonkeyPatch) -> None:
    rx, snis = tls_receiver
    port = int(rx.url.rsplit(":", 1)[1].split("/")[0])
    fake_dns(monkeypatch, {"hooks.test": [["127.0.0.1"]], "other.test": [["127.0.0.1"]]})
    connects = watch_connects(monkeypatch)
    assert post(rx.url, LOCAL).delivered
    assert snis == ["hooks.test"] and connects == [("127.0.0.1", port)]
    assert rx.hits[0].headers["host"] == f"hooks.test:{port}"
    # the same server under another name: its certificate does not match, so nothing is sent
    assert post(f"https://other.test:{port}/hook", LOCAL) == Outcome(False, UNREACHABLE)
    assert len(rx.hits) == 1
