"""One Settings object for the whole process, injected where needed.

Values come from (highest first): explicit constructor arguments (CLI flags),
``ARGUS_*`` environment variables, an optional YAML file (``ARGUS_CONFIG`` or
``<state_dir>/argus.yaml``), then the defaults below. Nothing else in the code
base reads the environment, so a test can build a Settings and know exactly
what the process will do.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import Field, field_validator, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from argus.core.envvars import DEFAULT_ENV_ALLOWLIST

DEFAULT_ENTRY_ALLOWLIST = ["verl.trainer.", "verl.model_merger", "argus.jobs."]
# Ray's default --min-worker-port/--max-worker-port: a Ray port of ours in there makes `ray start` fail
RAY_WORKER_PORTS = (10002, 19999)
RAY_PORT_FIELDS = ("ray_head_port", "ray_dashboard_port", "ray_client_server_port")


class _YamlFileSource(PydanticBaseSettingsSource):
    """Reads the optional YAML settings file named by ARGUS_CONFIG."""

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:  # pragma: no cover
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        path = os.environ.get("ARGUS_CONFIG")
        if not path:
            return {}
        data = yaml.safe_load(Path(path).read_text()) or {}
        if not isinstance(data, dict):
            raise ValueError(f"ARGUS_CONFIG={path}: expected a mapping of setting names to values")
        return data


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ARGUS_", extra="forbid", env_nested_delimiter="__")

    mode: Literal["embedded", "cluster"] = "embedded"
    state_dir: Path = Field(default_factory=lambda: Path.home() / ".argus")
    data_root: Path | None = None
    database_url: str | None = None

    api_host: str = "127.0.0.1"
    api_port: int = 8080
    public_url: str | None = None
    sftp_host: str = "127.0.0.1"
    sftp_port: int = 2222
    sftp_enabled: bool = True
    # comma-separated SSH ciphers the SFTP server offers; empty: asyncssh's defaults (see sftp/server.py)
    sftp_ciphers: str = ""

    admin_token: str | None = None
    admin_name: str = "admin"

    # Ray
    ray_address: str | None = None
    ray_dashboard_url: str | None = None
    ray_auth_token: str | None = None  # for clusters with Ray token auth (RAY_AUTH_MODE=token)
    # The ports of the Ray head Argus starts itself. Left unset (not given by flag, env or YAML), the
    # embedded cluster picks free ones (see cluster/local.py); the defaults are what `argus head` uses for
    # its GCS and what `argus server --ray-address` assumes for an existing cluster's dashboard.
    ray_head_port: int = 6380
    ray_dashboard_port: int = 8265
    ray_client_server_port: int = 10001
    worker_gpus: int | None = None
    worker_node_capacity: int = 1000
    # cluster mode (`argus head`): the head's routable IP that workers join (default: detected)
    advertise_address: str | None = None
    inventory_cache_s: float = 2.0

    # Scheduling limits
    scheduler_tick_s: float = 1.0
    scheduler_fast_tick_s: float = 0.2  # while a task is starting or being canceled
    max_running_tasks: int = 64
    max_running_tasks_per_user: int = 16
    max_retries: int = 1
    start_timeout_s: float = 600.0

    # Admission
    entry_allowlist: list[str] = Field(default_factory=lambda: list(DEFAULT_ENTRY_ALLOWLIST))
    # VAR=value an advanced command may set: NAME, PREFIX_* or NAME=a|b (see core/envvars.py)
    env_allowlist: list[str] = Field(default_factory=lambda: list(DEFAULT_ENV_ALLOWLIST))
    max_spec_bytes: int = 256 * 1024
    max_nnodes: int = 1024
    max_gpus_per_node: int = 64

    # verl integration
    verl_python: str = Field(default_factory=lambda: sys.executable)
    verl_validation: Literal["required", "optional", "off"] = "optional"
    verl_timeout_s: float = 60.0
    # Model paths and Hugging Face ids at submit (verl/models.py): required rejects a missing model; warn
    # accepts with a warning (clusters whose workers download models themselves); off skips the check.
    model_check: Literal["required", "warn", "off"] = "required"
    reward_check_rows: int = 4
    reward_check_timeout_s: float = 30.0
    # Jail for head-side processes that handle user input (reward dry-run, verl validator): see verl/sandbox.py
    sandbox: Literal["auto", "bwrap", "off"] = "auto"
    # Jail for every process of a task on the nodes (driver, trainer, Ray workers): see runtime/jail.py.
    # auto: on when bubblewrap is installed here; bwrap: required; off: tasks run unconfined.
    task_jail: Literal["auto", "bwrap", "off"] = "auto"

    # Runtime on workers: the interpreter that `python3` means inside a task
    train_python: str = Field(default_factory=lambda: sys.executable)

    # Files
    quota_bytes: int | None = None
    admin_writes_shared: bool = True
    login_max_failures: int = 5
    login_window_s: float = 60.0

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings, _YamlFileSource(settings_cls))

    @field_validator(*RAY_PORT_FIELDS)
    @classmethod
    def _outside_ray_worker_ports(cls, port: int) -> int:
        """Refused here, in one line, rather than by ``ray start``'s traceback 30 s later."""
        lo, hi = RAY_WORKER_PORTS
        if not 1 <= port <= 65535:
            raise ValueError(f"port {port} is not a TCP port (1-65535)")
        if lo <= port <= hi:
            raise ValueError(f"port {port} is inside Ray's worker port range {lo}-{hi}; choose one outside it")
        return port

    def port_given(self, name: str) -> bool:
        """Whether a port setting was asked for (flag, ``ARGUS_*`` or YAML) rather than left at its default."""
        return name in self.model_fields_set

    @model_validator(mode="after")
    def _derive_paths(self) -> Settings:
        self.state_dir = Path(self.state_dir).expanduser().resolve()
        if self.data_root is None:
            self.data_root = self.state_dir / "private" if self.mode == "embedded" else Path("/private")
        self.data_root = Path(self.data_root).expanduser().resolve()
        if self.database_url is None:
            self.database_url = f"sqlite:///{self.state_dir / 'argus.db'}"
        return self

    @property
    def root(self) -> Path:
        """The data root (never None after validation)."""
        assert self.data_root is not None
        return self.data_root

    @property
    def db_url(self) -> str:
        assert self.database_url is not None
        return self.database_url

    @property
    def sftp_public_host(self) -> str:
        """The host users connect to over SFTP: a wildcard listen address is no address to connect to."""
        if self.sftp_host not in ("0.0.0.0", "::"):
            return self.sftp_host
        if self.advertise_address:
            return self.advertise_address
        if self.public_url:
            from urllib.parse import urlsplit

            return urlsplit(self.public_url).hostname or self.sftp_host
        import socket

        return socket.getfqdn()

    @property
    def api_url(self) -> str:
        if self.public_url:
            return self.public_url.rstrip("/")
        host = "127.0.0.1" if self.api_host in ("0.0.0.0", "::") else self.api_host
        return f"http://{host}:{self.api_port}"
