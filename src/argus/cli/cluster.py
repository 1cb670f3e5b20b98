"""`argus head` and `argus worker`: the multi-machine mode (ARCHITECTURE §1 "Cluster").

`argus head` = `argus up` without the local worker: a Ray head on a routable address, the server,
and the discovery file `<data root>/.argus/head.json` on the shared filesystem. `argus worker` is
the long-running watchdog on each GPU machine that joins whatever head that file names.
"""

from __future__ import annotations

import logging
import signal
import threading
from pathlib import Path

import typer


def head(
    state_dir: Path | None = typer.Option(None, "--state-dir", help="where the database, keys and Ray logs live"),
    host: str = typer.Option("0.0.0.0", "--host", help="API and SFTP listen address"),  # noqa: S104
    port: int | None = typer.Option(None, "--port", help="API port"),
    sftp_port: int | None = typer.Option(None, "--sftp-port"),
    ray_port: int | None = typer.Option(None, "--ray-port", help="Ray GCS port workers join"),
    dashboard_port: int | None = typer.Option(None, "--dashboard-port", help="Ray dashboard (loopback only)"),
    advertise_address: str | None = typer.Option(
        None, "--advertise-address", help="this machine's IP as workers reach it (default: detected)"),
) -> None:
    """Run the head machine: Ray head (no training), API/SFTP/scheduler, discovery file.

    The data root defaults to /private (ARGUS_DATA_ROOT overrides it) and must be the shared
    filesystem every worker mounts at the same path.
    """
    from argus.cli.startup import settings_or_exit
    from argus.nodes.discovery import detect_ip
    from argus.server import run_server

    settings = settings_or_exit(mode="cluster", state_dir=state_dir, api_host=host, sftp_host=host, api_port=port,
                                sftp_port=sftp_port, ray_head_port=ray_port, ray_dashboard_port=dashboard_port,
                                advertise_address=advertise_address)
    settings.advertise_address = settings.advertise_address or detect_ip()
    run_server(settings, start_ray=True)


def worker(
    data_root: Path | None = typer.Option(None, "--data-root", help="the shared filesystem (default /private)"),
    discovery: Path | None = typer.Option(None, "--discovery", help="default: <data root>/.argus/head.json"),
    gpus: int | None = typer.Option(None, "--gpus", help="GPUs to advertise (default: detected by Ray)"),
    cpus: int | None = typer.Option(None, "--cpus", help="CPUs to advertise (default: detected by Ray)"),
    name: str | None = typer.Option(None, "--name", help="node name shown by Argus (default: host name)"),
    state_dir: Path | None = typer.Option(None, "--state-dir", help="raylet log and Ray temp dir (default ~/.argus)"),
) -> None:
    """Keep this GPU machine joined to the head named in the discovery file; re-join when needed.

    Runs until Ctrl-C/SIGTERM, which stops this machine's raylet (and the tasks on it).
    """
    from argus.cli.startup import settings_or_exit
    from argus.nodes.discovery import discovery_path
    from argus.nodes.worker import WorkerConfig, WorkerWatchdog

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    settings = settings_or_exit(mode="cluster", data_root=data_root, state_dir=state_dir)
    # the discovery file lives at <data root>/.argus/head.json on the shared filesystem
    root = Path(data_root) if data_root else (discovery.parent.parent if discovery else settings.root)
    cfg = WorkerConfig(discovery=discovery or discovery_path(settings.root), state_dir=settings.state_dir,
                       name=name or "", gpus=gpus, cpus=cpus, capacity=settings.worker_node_capacity,
                       data_root=root, task_jail=settings.task_jail, python=settings.train_python,
                       keep_training_on_stop=settings.keep_training_on_stop)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    WorkerWatchdog(cfg).run(stop)


def register(app: typer.Typer) -> None:
    app.command()(head)
    app.command()(worker)
