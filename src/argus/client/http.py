"""The one HTTP client of Argus's Python side: the SDK (``argus.client.Client``) and the CLI use it.

It talks only HTTP (``/api/v2``): an error answer becomes :class:`ApiError` with the server's
structured detail (``code``, ``message``, ``errors`` with field, value and fix), and a POST that
must not happen twice (a submit) is retried with an ``Idempotency-Key`` (:meth:`ArgusClient.post_retrying`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import httpx


class ApiError(Exception):
    """An error answer from the server, with its structured detail."""

    def __init__(self, status: int, detail: dict[str, Any]) -> None:
        self.status = status
        self.detail = detail
        super().__init__(detail.get("message", f"HTTP {status}"))

    @property
    def errors(self) -> list[dict[str, Any]]:
        return list(self.detail.get("errors") or [])

    @property
    def warnings(self) -> list[str]:
        """What else the server said about a refused request (a spec's deprecated keys)."""
        return list(self.detail.get("warnings") or [])


RETRY_STATUS = (502, 503, 504)  # a proxy or the server saying "not now": the same request may succeed later
RETRY_FOR_S = 60.0
MAX_BACKOFF_S = 5.0


def _retry_after(resp: httpx.Response, default: float) -> float:
    try:
        return min(max(float(resp.headers.get("retry-after", "")), 0.0), MAX_BACKOFF_S)
    except ValueError:
        return default


class ArgusClient:
    def __init__(self, url: str, token: str | None, timeout: float = 30.0) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.http = httpx.Client(base_url=url.rstrip("/"), headers=headers, timeout=timeout)

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            resp = self.http.request(method, path, **kwargs)
        except httpx.TransportError as exc:
            raise ApiError(0, {"code": "unreachable", "message": f"cannot reach {self.http.base_url}: {exc}"}) from None
        return self._decode(resp)

    @staticmethod
    def _decode(resp: httpx.Response) -> Any:
        if resp.status_code >= 400:
            try:
                detail = resp.json().get("detail")
            except ValueError:
                detail = None
            if not isinstance(detail, dict):
                detail = {"code": "http_error", "message": f"HTTP {resp.status_code}: {resp.text[:200]}"}
            raise ApiError(resp.status_code, detail)
        if resp.status_code == 204 or not resp.content:
            return None
        if resp.headers.get("content-type", "").startswith("application/json"):
            return resp.json()
        return resp.content

    def post_retrying(self, path: str, *, key: str, retry_for_s: float = RETRY_FOR_S,
                      on_retry: Callable[[str, float], None] | None = None, **kw: Any) -> Any:
        """POST with an ``Idempotency-Key``, retried on a lost connection or a 502/503/504.

        Safe because the server answers a repeated key with the first answer: a POST whose reply
        was lost (server killed, proxy restarted) is sent again and can never queue a second
        task. Backoff doubles from 0.5 s up to 5 s (or the server's ``Retry-After``), for at most
        ``retry_for_s`` seconds; then the last error is raised. ``on_retry(why, wait_s)`` is told
        before each wait.
        """
        headers = {**kw.pop("headers", {}), "Idempotency-Key": key}
        deadline = time.monotonic() + retry_for_s
        delay = 0.5
        while True:
            try:
                resp = self.http.request("POST", path, headers=headers, **kw)
                if resp.status_code not in RETRY_STATUS:
                    return self._decode(resp)
                wait = _retry_after(resp, delay)
                last: ApiError | None = None
                try:
                    self._decode(resp)
                except ApiError as exc:
                    last = exc
            except httpx.TransportError as exc:
                wait = delay
                last = ApiError(0, {"code": "unreachable", "message": f"cannot reach {self.http.base_url}: {exc}"})
            if time.monotonic() + wait > deadline:
                assert last is not None
                raise last
            if on_retry is not None:
                on_retry(str(last), wait)
            time.sleep(wait)
            delay = min(delay * 2, MAX_BACKOFF_S)

    def get(self, path: str, **kw: Any) -> Any:
        return self.request("GET", path, **kw)

    def post(self, path: str, **kw: Any) -> Any:
        return self.request("POST", path, **kw)

    def put(self, path: str, **kw: Any) -> Any:
        return self.request("PUT", path, **kw)

    def delete(self, path: str, **kw: Any) -> Any:
        return self.request("DELETE", path, **kw)

    def stream(self, method: str, path: str, **kw: Any) -> Iterator[bytes]:
        with self.http.stream(method, path, **kw) as resp:
            if resp.status_code >= 400:
                resp.read()
                self._decode(resp)
            yield from resp.iter_bytes()


def sse_events(chunks: Iterable[bytes]) -> Iterator[tuple[str, str]]:
    """``(event, data)`` pairs from a server-sent event stream (the log follow endpoint)."""
    buf = b""
    event, data = "message", []
    for chunk in chunks:
        buf += chunk
        while b"\n" in buf:
            raw, buf = buf.split(b"\n", 1)
            line = raw.decode("utf-8", errors="replace")
            if not line:
                if data:
                    yield event, "\n".join(data)
                event, data = "message", []
            elif line.startswith(":"):
                continue
            elif line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[6:] if line.startswith("data: ") else line[5:])
