"""Where a webhook may be sent: never into the platform's own network, unless the operator allows it.

Any user types a webhook's URL, and the server posts to it from inside the platform's network. Left alone,
that URL reaches the cloud metadata service (169.254.169.254), the database, Ray's dashboard, every admin
port on loopback or the private network, and the delivery errors tell open, closed and filtered ports
apart. So two rules:

* **at send time** (the rule that holds): ``post_pinned`` resolves the host ONCE (``socket.getaddrinfo``;
  a literal in any spelling the resolver accepts counts as resolved), checks EVERY address, and connects to
  a checked address with the name kept for TLS (SNI, certificate) and the ``Host`` header. A DNS-rebinding
  name gets no second lookup to answer differently, and a proxy from the environment is never used (it
  would resolve the name again, on its side);
* **at channel creation** (a courtesy, so the user learns at once): ``literal_problem`` refuses a host that
  *is* an internal address however it is written (``2852039166``, ``0xA9FEA9FE``, ``0251.0376.0251.0376``,
  ``127.1``, ``[::ffff:7f00:1]``). A name is only judged when sending: what it resolves to can change.

Internal: loopback, link-local, private (RFC 1918, fc00::/7), CGNAT (100.64.0.0/10), unspecified,
multicast, reserved, broadcast, site-local, anything Python does not call global, and the IPv6 forms that
carry an IPv4 address (mapped, compatible, 6to4, Teredo, NAT64) when that address is internal. The operator
lists trusted internal receivers (a chat bridge on the private network) in ``Settings.notify_webhook_allow``.
"""

from __future__ import annotations

import ipaddress
import socket
import ssl
from collections.abc import Iterable

import httpx

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
AllowList = tuple[IPNetwork, ...]

# Tried in turn when connecting is refused at once (an IPv6 address on a host without an IPv6 route): each
# costs at most one connect timeout, so the sender's worst case per row stays bounded.
MAX_ADDRESSES = 3
# Refused whatever Python's ipaddress tables say (they differ between Python versions).
_INTERNAL = tuple(ipaddress.ip_network(n) for n in (
    "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
    "192.0.0.0/24", "192.168.0.0/16", "198.18.0.0/15", "224.0.0.0/4", "240.0.0.0/4",
    "::/128", "::1/128", "fc00::/7", "fe80::/10", "fec0::/10", "ff00::/8", "64:ff9b:1::/48"))
_NAT64 = ipaddress.ip_network("64:ff9b::/96")  # the well-known prefix: DNS64 answers for IPv4-only names
_V4_CHARS = frozenset("0123456789abcdefxABCDEFX.")


class TargetRefused(Exception):
    """The host is, or resolves to, an address webhooks may not reach; the text is for the server log only."""


def parse_allow(entries: Iterable[str | IPNetwork]) -> AllowList:
    """The operator's allowlist as networks (``10.0.5.7`` is ``10.0.5.7/32``); a bad entry raises ValueError
    naming it (``Settings`` checks them at start, so this only fails for a caller's own list)."""
    out: list[IPNetwork] = []
    for entry in entries:
        if isinstance(entry, ipaddress.IPv4Network | ipaddress.IPv6Network):
            out.append(entry)
            continue
        try:
            out.append(ipaddress.ip_network(str(entry).strip(), strict=False))
        except ValueError:
            raise ValueError(f"{entry!r} is not an IP address or network (write 10.0.5.7 or 10.0.5.0/24)") from None
    return tuple(out)


def literal_ip(host: str) -> IPAddress | None:
    """The address ``host`` spells, read as the resolver reads it, or None for a name.

    IPv6 with or without brackets and zone id; IPv4 in the legacy forms ``inet_aton`` (and so
    ``getaddrinfo``) accepts: decimal, hex, octal, and short (``127.1``), one trailing dot allowed."""
    text = host.strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    if ":" in text:
        try:
            return ipaddress.IPv6Address(text.split("%", 1)[0])
        except ValueError:
            return None
    text = text[:-1] if text.endswith(".") else text
    if not text or not set(text) <= _V4_CHARS:  # a name (and never glibc's "trailing text after a space")
        return None
    try:
        return ipaddress.IPv4Address(socket.inet_aton(text))
    except OSError:
        return None


def _carried_v4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address a connection to ``ip`` really reaches: IPv4-mapped (a dual-stack socket) or NAT64."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip in _NAT64:
        return ipaddress.IPv4Address(ip.packed[12:])
    return None


def _tunnelled_v4(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """IPv4 addresses embedded in tunnel forms (6to4, Teredo server and client, IPv4-compatible)."""
    out = [ip.sixtofour] if ip.sixtofour is not None else []
    if ip.teredo is not None:
        out.extend(ip.teredo)
    if ip.packed[:12] == bytes(12) and int(ip) > 1:
        out.append(ipaddress.IPv4Address(ip.packed[12:]))
    return out


def is_internal(ip: IPAddress) -> bool:
    """True for an address on the platform's side of the network (see the module's docstring)."""
    if isinstance(ip, ipaddress.IPv6Address):
        carried = _carried_v4(ip)
        if carried is not None:  # judged as the IPv4 address it reaches: NAT64 to a public one is fine
            return is_internal(carried)
        if ip.is_site_local or any(is_internal(v4) for v4 in _tunnelled_v4(ip)):
            return True
    return (any(ip in net for net in _INTERNAL) or not ip.is_global or ip.is_loopback or ip.is_link_local
            or ip.is_private or ip.is_unspecified or ip.is_multicast or ip.is_reserved)


def permitted(ip: IPAddress, allow: AllowList = ()) -> bool:
    """Public, or inside the operator's allowlist (an IPv4-mapped or NAT64 form matches as its IPv4 address)."""
    if not is_internal(ip):
        return True
    carried = _carried_v4(ip) if isinstance(ip, ipaddress.IPv6Address) else None
    return any(ip in net or (carried is not None and carried in net) for net in allow)


def literal_problem(host: str, allow: AllowList = ()) -> str | None:
    """Why a webhook URL's host cannot be used (None when it can, or when it is a name: judged when sending)."""
    ip = literal_ip(host)
    if ip is None or permitted(ip, allow):
        return None
    carried = _carried_v4(ip) if isinstance(ip, ipaddress.IPv6Address) else None
    shown = f"{ip} ({carried})" if carried is not None else str(ip)
    return (f"{host} is the internal address {shown}: webhooks cannot reach this platform's own network "
            "(loopback, private, link-local such as cloud metadata, multicast, reserved); use the receiver's "
            "public host name or address, or ask the operator to allow internal receivers with the "
            "notify_webhook_allow setting (ARGUS_NOTIFY_WEBHOOK_ALLOW)")


def resolve_target(host: str, port: int, allow: AllowList = ()) -> list[str]:
    """Resolve ``host`` once and check every address; the distinct addresses, in the resolver's order.

    One internal address among public ones refuses the whole name: a name answering both is the usual
    rebinding trick. Raises TargetRefused, or OSError (``socket.gaierror``) when the name does not resolve."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    addresses: list[str] = []
    for info in infos:
        text = str(info[4][0]).split("%", 1)[0]
        ip = ipaddress.ip_address(text)
        if not permitted(ip, allow):
            raise TargetRefused(f"{host} resolves to {ip}, an internal address not in notify_webhook_allow")
        if text not in addresses:
            addresses.append(text)
    if not addresses:
        raise OSError(f"{host} resolved to no address")
    return addresses


def _tls_context() -> ssl.SSLContext:
    """Certificates checked against the default CAs, or SSL_CERT_FILE/SSL_CERT_DIR as httpx honours them:
    the client itself runs with ``trust_env=False`` (no proxy from the environment), which would drop those."""
    return httpx.create_ssl_context(trust_env=True)


def post_pinned(url: str, body: bytes, headers: dict[str, str], timeout_s: float, allow: AllowList = ()) -> int:
    """POST ``body`` to ``url`` at an address checked by ``resolve_target``; the answer's status code.

    The request's URL names the checked IP; the name stays in the ``Host`` header and in TLS (httpx's
    ``sni_hostname`` extension: SNI and the certificate check use the name). Redirects are not followed and
    the answer's body is not read. Raises TargetRefused, httpx.InvalidURL, httpx errors and OSError."""
    target = httpx.URL(url)
    host = target.host
    port = target.port or (443 if target.scheme == "https" else 80)
    addresses = resolve_target(host, port, allow)[:MAX_ADDRESSES]
    sent = {**headers, "Host": target.netloc.decode("ascii")}
    extensions = {"sni_hostname": host} if target.scheme == "https" else {}
    with httpx.Client(timeout=httpx.Timeout(timeout_s), follow_redirects=False, trust_env=False,
                      verify=_tls_context()) as client:
        for n, address in enumerate(addresses):
            try:
                with client.stream("POST", target.copy_with(host=address), content=body, headers=sent,
                                   extensions=extensions) as resp:
                    return resp.status_code
            except httpx.ConnectError:
                if n == len(addresses) - 1:
                    raise
    raise AssertionError("unreachable: the loop returns or raises")
