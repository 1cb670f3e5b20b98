"""A small HTTP client for the CLI (and scripts): the CLI never touches the database."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import yaml
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


def _config_file() -> Path:
    return Path.home() / ".config" / "argus" / "cli.yaml"


class CliConfig(BaseSettings):
    """``ARGUS_URL`` / ``ARGUS_TOKEN``, falling back to ~/.config/argus/cli.yaml (written by `argus login`)."""

    model_config = SettingsConfigDict(env_prefix="ARGUS_", extra="ignore")

    url: str = Field(default="")
    token: str = Field(default="")

    @classmethod
    def load(cls) -> CliConfig:
        cfg = cls()
        path = _config_file()
        if (not cfg.url or not cfg.token) and path.exists():
            data = yaml.safe_load(path.read_text()) or {}
            cfg.url = cfg.url or data.get("url", "")
            cfg.token = cfg.token or data.get("token", "")
        cfg.url = (cfg.url or "http://127.0.0.1:8080").rstrip("/")
        return cfg

    def save(self) -> Path:
        path = _config_file()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump({"url": self.url, "token": self.token}))
        path.chmod(0o600)
        return path


class ApiError(Exception):
    """An error answer from the server, with its structured detail."""

    def __init__(self, status: int, detail: dict[str, Any]) -> None:
        self.status = status
        self.detail = detail
        super().__init__(detail.get("message", f"HTTP {status}"))

    @property
    def errors(self) -> list[dict[str, Any]]:
        return list(self.detail.get("errors") or [])


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

    def get(self, path: str, **kw: Any) -> Any:
        return self.request("GET", path, **kw)

    def post(self, path: str, **kw: Any) -> Any:
        return self.request("POST", path, **kw)

    def delete(self, path: str, **kw: Any) -> Any:
        return self.request("DELETE", path, **kw)

    def stream(self, method: str, path: str, **kw: Any) -> Iterator[bytes]:
        with self.http.stream(method, path, **kw) as resp:
            if resp.status_code >= 400:
                resp.read()
                self._decode(resp)
            yield from resp.iter_bytes()
