"""HTTP access to the Ray dashboard (Jobs API, state API) without becoming a Ray driver.

``ray.init()`` in the server would register a permanent driver job per connection, and
``JobSubmissionClient`` pulls in Ray's client machinery; plain REST over one pooled
``httpx.Client`` is cheaper (~3-7 ms a call) and its failures are easy to map: anything at the
transport level is ``ClusterUnavailable`` (callers keep their state and retry later).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import httpx

from argus.cluster.types import ClusterUnavailable
from argus.settings import Settings


def dashboard_url(settings: Settings) -> str:
    """``ray_dashboard_url``, else the dashboard port on the GCS address's host (loopback when none)."""
    if settings.ray_dashboard_url:
        return settings.ray_dashboard_url.rstrip("/")
    host = "127.0.0.1"
    if settings.ray_address and settings.ray_address not in ("auto", "local"):
        host = urlsplit(f"//{settings.ray_address.split('://')[-1]}").hostname or host
    return f"http://{host}:{settings.ray_dashboard_port}"


class Dashboard:
    """One dashboard endpoint; ``token`` is sent as ``Authorization: Bearer`` for clusters with token auth."""

    def __init__(self, url: str, *, token: str | None = None, timeout_s: float = 10.0) -> None:
        self.url = url.rstrip("/")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(base_url=self.url, headers=headers, timeout=timeout_s)

    @classmethod
    def from_settings(cls, settings: Settings) -> Dashboard:
        return cls(dashboard_url(settings), token=settings.ray_auth_token)

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            resp = self._http.request(method, path, **kwargs)
        except httpx.TransportError as e:
            raise ClusterUnavailable(f"Ray dashboard {self.url} unreachable: {e}") from e
        if resp.status_code in (401, 403):
            raise ClusterUnavailable(
                f"Ray dashboard {self.url} refused the request ({resp.status_code}): the cluster uses token "
                "auth; set ARGUS_RAY_AUTH_TOKEN"
            )
        if resp.status_code in (502, 503, 504):
            raise ClusterUnavailable(f"Ray dashboard {self.url} answered {resp.status_code}")
        return resp

    def get_json(self, path: str, **kwargs: Any) -> Any:
        resp = self.request("GET", path, **kwargs)
        if resp.status_code != 200:
            raise ClusterUnavailable(f"GET {self.url}{path} answered {resp.status_code}: {resp.text[:300]}")
        return resp.json()

    def close(self) -> None:
        self._http.close()
