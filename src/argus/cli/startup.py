"""Settings from the flags of the commands that start things (`up`, `server`, `head`, `worker`, `admin token`).

A bad value (a Ray port inside Ray's worker port range, a malformed ``ARGUS_*``) ends the command with
one ``error: …`` line naming the flag and the setting, and exit status 2, never a traceback.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from argus.settings import Settings

# setting → the flag of `argus up` / `argus server` that sets it
FLAGS = {
    "state_dir": "--state-dir", "api_host": "--host", "api_port": "--port", "sftp_port": "--sftp-port",
    "sftp_enabled": "--no-sftp", "worker_gpus": "--gpus", "ray_address": "--ray-address",
    "ray_head_port": "--ray-port", "ray_dashboard_port": "--ray-dashboard-port",
    "ray_client_server_port": "--ray-client-port", "advertise_address": "--advertise-address",
    "data_root": "--data-root", "default_env": "--default-env",
}


def settings_or_exit(**overrides: object) -> Settings:
    """``Settings`` from the flags given (None: not given), or exit 2 with one line per bad value."""
    from pydantic import ValidationError

    from argus.settings import Settings

    try:
        return Settings(**{k: v for k, v in overrides.items() if v is not None})
    except ValidationError as exc:
        for err in exc.errors():
            name = str(err["loc"][0]) if err["loc"] else ""
            where = f"ARGUS_{name.upper()}" if name else "settings"
            if name in FLAGS:
                where = f"{FLAGS[name]} ({where})"
            msg = str(err["msg"]).removeprefix("Value error, ")
            typer.echo(f"error: {where}: {msg}", err=True)
        raise typer.Exit(2) from None
    except ValueError as exc:  # ARGUS_CONFIG naming something that is not a mapping
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
