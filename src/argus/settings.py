"""One Settings object for the whole process, injected where needed.

Values come from (highest first): explicit constructor arguments (CLI flags),
``ARGUS_*`` environment variables, an optional YAML file (``ARGUS_CONFIG`` or
``<state_dir>/argus.yaml``), then the defaults below. Nothing else in the code
base reads the environment, so a test can build a Settings and know exactly
what the process will do.
"""

from __future__ import annotations

import ipaddress
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
    # How long an API/SFTP request waits for another writer's database lock before answering 503 "database
    # busy" with Retry-After (api/db_unavailable.py); the scheduler's loops wait 30 s (they retry anyway).
    db_request_busy_timeout_s: float = Field(default=5.0, gt=0, le=300)

    api_host: str = "127.0.0.1"
    api_port: int = 8080
    public_url: str | None = None
    # Reverse proxies whose X-Forwarded-For / -Proto the API believes (addresses or CIDRs, "*" for any; default
    # none): a peer not listed is its own address, for the sign-in limiter and the audit log. Never trust
    # loopback by default: every task on the head's node reaches the API from there.
    trusted_proxies: list[str] = Field(default_factory=list)
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
    # embedded cluster picks free ones (see nodes/local.py); the defaults are what `argus head` uses for
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
    # Per-user defaults (an admin can set each user's own: PATCH /api/v2/users/{name}); 0 = no limit
    max_running_tasks_per_user: int = Field(default=16, ge=0)
    max_gpus_per_user: int = Field(default=0, ge=0)  # GPUs one user's tasks may hold at once
    max_retries: int = 1
    start_timeout_s: float = 600.0
    # RUNNING in Ray but the driver's status.json heartbeat (every 15 s) unchanged this long: say so in
    # the task's message and timeline (the task is left running); 0 turns the check off
    driver_silence_s: float = 120.0
    # Training health (issue 24, core/stall.py): a RUNNING task that printed no new verl step and no output
    # for this long is STALLED (event, message, notification, the spec's on_stall); before its first step the
    # longer limit applies (model loading, compilation). A spec's stall_after / stall_first_step win; 0: never.
    stall_after_s: int = Field(default=1800, ge=0)
    stall_first_step_s: int = Field(default=5400, ge=0)
    # Fair share (scheduler/fairshare.py): how fast past GPU-/CPU-seconds are forgotten. A day: yesterday's
    # heavy user yields to the others today (half weight), last week's use is all but gone (1/128).
    fairshare_half_life_s: float = Field(default=86400.0, gt=0)

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
    # The reward dry-run's budget in seconds of its own CPU time, not of the clock (verl/rewards.py)
    reward_check_timeout_s: float = 30.0
    # Jail for head-side processes that handle user input (reward dry-run, verl validator): see verl/sandbox.py
    sandbox: Literal["auto", "bwrap", "off"] = "auto"
    # Each of those processes' data-segment limit (RLIMIT_DATA, MiB; 0: none): a warm verl validator uses ~1.5 GiB
    sandbox_memory_mb: int = Field(default=6144, ge=0)
    # Jail for every process of a task on the nodes (driver, trainer, Ray workers): see launcher/jail.py.
    # auto: on when bubblewrap is installed here; bwrap: required; off: tasks run unconfined.
    task_jail: Literal["auto", "bwrap", "off"] = "auto"
    # Each Ray task's private cluster runs its own Ray dashboard, proxied to its owner behind Argus's auth
    # (GET /api/v2/tasks/{id}/ray-dashboard/): ~200 MB more per running Ray task (issue 21), hence opt-in.
    task_ray_dashboard: bool = False
    # A task's bounds on each node (issue 36, launcher/task_bounds.py), besides memory_per_node (without it: the
    # node's RAM share for the task's CPUs/GPUs): processes and threads together (pids.max; not yet measured against a
    # real GRPO run's peak: Ray's workers plus torch's and vLLM's threads — lower it only after measuring), its private /tmp as a tmpfs of this size (MiB; it counts in its memory; 0: a folder on the node's
    # disk, unbounded), and whether cpus_per_node is also a hard CPU cap (it is always the task's CPU weight).
    task_pids_max: int = Field(default=4096, ge=0)
    task_tmp_mb: int = Field(default=4096, ge=0)
    task_cpu_quota: bool = False
    # What a graceful stop of `argus up` / `argus worker` does to the tasks training on its node: stop them (they
    # are requeued and resume from their last checkpoint at the next start), or leave them to the node agent,
    # which keeps them training and hands them back to the next start. A crash or kill -9 always leaves them.
    keep_training_on_stop: bool = False

    # Runtime on workers. Argus's own interpreter there (the launcher: platform code, never the task's), the
    # same path on every node; and the built-in training environment "argus" (train_python: what `python3`
    # means inside a task that names no other environment).
    launcher_python: str = Field(default_factory=lambda: sys.executable)
    train_python: str = Field(default_factory=lambda: sys.executable)
    # Training environments (issue 22, argus/envs): the one a task runs in when its spec names none ("argus":
    # the built-in one above), and how many environments' validators stay warm at once (each costs its
    # verl's import, ~0.5 GB; the least recently used one is stopped beyond this).
    default_env: str = "argus"
    env_validators_warm: int = Field(default=3, ge=1, le=32)

    # Files
    quota_bytes: int | None = None
    admin_writes_shared: bool = True
    login_max_failures: int = 5
    login_window_s: float = 60.0
    # Browser sessions (services/web_sessions.py): how long a sign-in lasts (the cookie's Max-Age)
    web_session_hours: float = Field(default=12.0, gt=0, le=24 * 90)

    # Sign-in with an LDAP directory (issue 26, services/directory.py); off while ldap_url is empty. A user is
    # found under ldap_user_base with ldap_user_filter ({user}: the name typed, escaped), searching as
    # ldap_bind_dn (anonymously without it), then bound as with their password. The filter also decides who is
    # enabled (exclude a locked attribute, require a group). Groups: found under ldap_group_base with
    # ldap_group_filter ({dn}: the user's DN, {user}: the name); ldap_team_groups maps them to teams as
    # "group=team;group=team" (group: a DN or a cn); members of ldap_admin_group are site admins.
    # ldaps:// URLs use TLS from the start; ldap_starttls upgrades ldap://; certificates are checked
    # against the system's CAs or ldap_ca_file.
    ldap_url: str = ""
    ldap_user_base: str = ""
    ldap_user_filter: str = "(uid={user})"
    ldap_bind_dn: str = ""
    ldap_bind_password: str = ""
    ldap_group_base: str = ""
    ldap_group_filter: str = "(|(member={dn})(uniqueMember={dn})(memberUid={user}))"
    ldap_team_groups: str = ""
    ldap_admin_group: str = ""
    ldap_starttls: bool = False
    ldap_ca_file: str = ""
    ldap_timeout_s: float = Field(default=5.0, gt=0, le=120)

    # Operations (issue 14). GET /metrics answers an admin token or this bearer token (a scraper needs no admin
    # rights); never open without one.
    metrics_token: str | None = None
    # Ray keeps every job's record forever: delete the records of Argus's own ended jobs after this many days
    # (Argus's task rows, events and logs are unaffected); 0 keeps them.
    ray_job_retention_days: float = Field(default=7.0, ge=0)
    # `argus admin prune` / POST /api/v2/admin/prune without --older-than: events and copied logs older than this
    prune_older_than_days: float = Field(default=90.0, gt=0)

    # Notifications (issue 24, services/notifications.py): e-mail goes out through this SMTP server, as
    # smtp_from; without smtp_host the API refuses e-mail channels (webhooks still work). smtp_starttls
    # upgrades the connection before smtp_user/smtp_password log in.
    smtp_host: str | None = None
    smtp_port: int = Field(default=25, ge=1, le=65535)
    smtp_user: str | None = None
    smtp_password: str | None = None
    smtp_from: str = "argus@localhost"
    smtp_starttls: bool = False
    # How long one webhook POST or SMTP exchange may wait on the network (each connect/read) before the
    # attempt counts as failed and is retried later; the sender thread never waits longer on one receiver.
    notify_http_timeout_s: float = Field(default=10.0, gt=0, le=300)
    # Webhooks never reach the platform's own network (loopback, private, link-local such as cloud metadata,
    # CGNAT, multicast, reserved; in any spelling, and checked again on every send after one DNS lookup).
    # The internal receivers the operator trusts (a chat bridge on the private network) are listed here as
    # addresses or networks: ["10.0.5.7", "192.168.10.0/24"] (ARGUS_NOTIFY_WEBHOOK_ALLOW, a JSON list).
    notify_webhook_allow: list[str] = Field(default_factory=list)

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

    @field_validator("notify_webhook_allow")
    @classmethod
    def _webhook_allow_networks(cls, entries: list[str]) -> list[str]:
        """A typo is refused at start, naming the entry, rather than at the first channel created."""
        for entry in entries:
            try:
                ipaddress.ip_network(entry.strip(), strict=False)
            except ValueError:
                raise ValueError(f"notify_webhook_allow: {entry!r} is not an IP address or network "
                                 "(write 10.0.5.7 or 10.0.5.0/24)") from None
        return [e.strip() for e in entries]

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

    @model_validator(mode="after")
    def _ldap_complete(self) -> Settings:
        """A half-configured directory is refused at start, in one line, not at the first sign-in."""
        if not self.ldap_url:
            return self
        if not self.ldap_url.lower().startswith(("ldap://", "ldaps://")):
            raise ValueError(f"ldap_url {self.ldap_url!r} must start with ldap:// or ldaps://")
        if not self.ldap_user_base:
            raise ValueError("ldap_url is set but ldap_user_base is empty: say where users are searched")
        if "{user}" not in self.ldap_user_filter:
            raise ValueError("ldap_user_filter must contain {user} (the name typed at sign-in)")
        from argus.core.directory import parse_team_groups  # pure; the problem names the bad pair

        parse_team_groups(self.ldap_team_groups)
        return self

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
