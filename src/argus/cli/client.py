"""The CLI's configuration (URL, token); the HTTP client itself is ``argus.client.http``, shared with the SDK.

The CLI never touches the database. ``ApiError`` and ``ArgusClient`` are re-exported here for the CLI's modules.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from argus.client.http import MAX_BACKOFF_S, RETRY_FOR_S, RETRY_STATUS, ApiError, ArgusClient

__all__ = ["MAX_BACKOFF_S", "RETRY_FOR_S", "RETRY_STATUS", "ApiError", "ArgusClient", "CliConfig"]


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
