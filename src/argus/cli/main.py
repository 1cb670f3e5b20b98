"""The `argus` command: start the product (`up`, `server`) and talk to it over HTTP."""

from __future__ import annotations

from pathlib import Path

import typer

from argus.cli import admin, cluster, files, logs, metrics, tasks

app = typer.Typer(help="Argus: run verl post-training tasks on a shared Ray cluster.", no_args_is_help=True,
                  pretty_exceptions_enable=False)
tasks.register(app)
admin.register(app)
metrics.register(app)
files.register(app)
logs.register(app)
cluster.register(app)


def _settings(**overrides: object):  # noqa: ANN202 - Settings imported lazily to keep the CLI fast
    from argus.settings import Settings

    return Settings(**{k: v for k, v in overrides.items() if v is not None})


@app.command()
def server(
    state_dir: Path | None = typer.Option(None, "--state-dir", help="where the database and keys live"),
    host: str | None = typer.Option(None, "--host"),
    port: int | None = typer.Option(None, "--port"),
    sftp_port: int | None = typer.Option(None, "--sftp-port"),
    ray_address: str | None = typer.Option(None, "--ray-address", help="an existing Ray cluster (GCS address)"),
) -> None:
    """Run the API/WebUI/SFTP/scheduler server against an existing (or no) Ray cluster."""
    from argus.server import run_server

    run_server(_settings(state_dir=state_dir, api_host=host, api_port=port, sftp_port=sftp_port,
                         ray_address=ray_address))


@app.command()
def up(
    state_dir: Path | None = typer.Option(None, "--state-dir", help="where the database, data root and Ray live"),
    port: int | None = typer.Option(None, "--port"),
    sftp_port: int | None = typer.Option(None, "--sftp-port"),
    gpus: int | None = typer.Option(None, "--gpus", help="GPUs the local worker advertises (default: detected)"),
    ray_address: str | None = typer.Option(None, "--ray-address", help="use this Ray cluster instead of starting one"),
) -> None:
    """Start everything on this machine: Ray head, a local worker node, and the server."""
    from argus.server import run_server

    run_server(_settings(mode="embedded", state_dir=state_dir, api_port=port, sftp_port=sftp_port,
                         worker_gpus=gpus, ray_address=ray_address), start_ray=ray_address is None)


if __name__ == "__main__":
    app()
