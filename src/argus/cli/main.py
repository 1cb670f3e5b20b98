"""The `argus` command: start the product (`up`, `server`) and talk to it over HTTP."""

from __future__ import annotations

from pathlib import Path

import typer

from argus.cli import (
    admin,
    checkpoints,
    cluster,
    envs,
    files,
    logs,
    metrics,
    models,
    notify,
    ops,
    pipelines,
    sweeps,
    tasks,
    teams,
    usage,
)
from argus.cli.startup import settings_or_exit

app = typer.Typer(help="Argus: run verl post-training tasks on a shared Ray cluster.", no_args_is_help=True,
                  pretty_exceptions_enable=False)
tasks.register(app)
admin.register(app)
metrics.register(app)
files.register(app)
logs.register(app)
cluster.register(app)
usage.register(app)
ops.register(app)
checkpoints.register(app)
envs.register(app)
notify.register(app)
teams.register(app)
sweeps.register(app)
models.register_commands(app)
pipelines.register(app)


PORT = {"min": 1, "max": 65535}


@app.command()
def server(
    state_dir: Path | None = typer.Option(None, "--state-dir", help="where the database and keys live"),
    host: str | None = typer.Option(None, "--host"),
    port: int | None = typer.Option(None, "--port", **PORT, help="API port [default: 8080]"),
    sftp_port: int | None = typer.Option(None, "--sftp-port", **PORT, help="SFTP port [default: 2222]"),
    sftp: bool | None = typer.Option(None, "--sftp/--no-sftp", help="run the embedded SFTP server [default: on]"),
    ray_address: str | None = typer.Option(None, "--ray-address", help="an existing Ray cluster (GCS address)"),
) -> None:
    """Run the API/SFTP/scheduler server against an existing (or no) Ray cluster."""
    from argus.server import run_server

    run_server(settings_or_exit(state_dir=state_dir, api_host=host, api_port=port, sftp_port=sftp_port,
                                sftp_enabled=sftp, ray_address=ray_address))


@app.command()
def up(
    state_dir: Path | None = typer.Option(None, "--state-dir", help="where the database, data root and Ray live"),
    port: int | None = typer.Option(None, "--port", **PORT, help="API port [default: 8080]"),
    sftp_port: int | None = typer.Option(None, "--sftp-port", **PORT, help="SFTP port [default: 2222]"),
    sftp: bool | None = typer.Option(None, "--sftp/--no-sftp", help="run the embedded SFTP server [default: on]"),
    gpus: int | None = typer.Option(None, "--gpus", help="GPUs the local worker advertises (default: detected)"),
    ray_address: str | None = typer.Option(None, "--ray-address", help="use this Ray cluster instead of starting one"),
    ray_port: int | None = typer.Option(None, "--ray-port", **PORT, help="Ray GCS port [default: a free one]"),
    ray_dashboard_port: int | None = typer.Option(None, "--ray-dashboard-port", **PORT,
                                                  help="Ray dashboard/Jobs API, loopback only [default: a free one]"),
    ray_client_port: int | None = typer.Option(None, "--ray-client-port", **PORT,
                                               help="Ray client server port [default: a free one]"),
    default_env: str | None = typer.Option(None, "--default-env", help="the training environment of a spec "
                                           "without env: and of the WebUI's templates [default: argus]"),
) -> None:
    """Start everything on this machine: Ray head, a local worker node, and the server.

    Ray's ports are free ones unless given (never inside Ray's worker port range 10002-19999), so
    several `argus up` with different --state-dir, --port and --sftp-port (or --no-sftp) share a machine.
    """
    from argus.server import run_server

    run_server(settings_or_exit(mode="embedded", state_dir=state_dir, api_port=port, sftp_port=sftp_port,
                                sftp_enabled=sftp, worker_gpus=gpus, ray_address=ray_address, ray_head_port=ray_port,
                                ray_dashboard_port=ray_dashboard_port, ray_client_server_port=ray_client_port,
                                default_env=default_env),
               start_ray=ray_address is None)


if __name__ == "__main__":
    app()
