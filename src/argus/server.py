"""Composition root: wires settings, database, API, and the background parts into one process.

This is the only module that knows every layer. ``argus server`` and ``argus up``
call ``run_server``; tests call ``build_context`` + ``create_app`` directly.
Background parts (scheduler loops, SFTP, the verl validator) implement
``Component`` and are started after the database is ready and stopped in
reverse order on Ctrl-C/SIGTERM.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import threading
from collections.abc import Callable
from typing import Protocol

import uvicorn

from argus.api.app import create_app
from argus.api.context import AppContext
from argus.db.session import Database
from argus.services.users import ensure_admin
from argus.settings import Settings

log = logging.getLogger("argus")


class Component(Protocol):
    name: str

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


def build_context(settings: Settings, *, announce: Callable[[str], None] = print) -> AppContext:
    """Open and migrate the database, make sure the admin exists, print its token once."""
    settings.state_dir.mkdir(parents=True, exist_ok=True)
    settings.root.mkdir(parents=True, exist_ok=True)
    db = Database(settings.db_url)
    db.migrate()
    with db.session() as session:
        token = ensure_admin(session, settings.root, settings.admin_name, settings.admin_token)
    if token:
        announce(f"admin token: {token}")
    ctx = AppContext(settings=settings, db=db)
    _wire_verl(ctx)
    return ctx


def _wire_verl(ctx: AppContext) -> None:
    """verl's own validation as an admission check; the validator process starts with the components."""
    from argus.verl.component import make_verl_check

    check, validator = make_verl_check(ctx.settings)
    ctx.checks = (*ctx.checks, check)
    ctx.extras["verl_validator"] = validator


async def serve(ctx: AppContext, components: list[Component], *, announce: Callable[[str], None] = print) -> None:
    s = ctx.settings
    app = create_app(ctx, extra_routers=tuple(ctx.extras.get("routers", ())))
    config = uvicorn.Config(app, host=s.api_host, port=s.api_port, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    started: list[Component] = []
    try:
        for comp in components:
            await comp.start()
            started.append(comp)
        _survive_uvicorn_sigterm()
        serve_task = asyncio.create_task(server.serve())
        while not server.started and not serve_task.done():
            await asyncio.sleep(0.05)
        if serve_task.done():
            await serve_task
            raise SystemExit(f"API server failed to start on {s.api_host}:{s.api_port}")
        announce(f"Argus API: {s.api_url}  (docs: {s.api_url}/docs)")
        for line in ctx.extras.get("banner", []):
            announce(line)
        await serve_task
    finally:
        for comp in reversed(started):
            try:
                await comp.stop()
            except Exception:  # noqa: BLE001 - keep stopping the rest
                log.exception("stopping %s failed", comp.name)
        ctx.db.dispose()


def _survive_uvicorn_sigterm() -> None:
    """uvicorn re-raises the signal that stopped it after restoring the previous handler; with the default
    SIGTERM action that kills the process before the components are stopped (Ray left running, the
    discovery file still saying "running"). A no-op handler lets ``serve`` return and clean up instead."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, lambda *_: None)


def run_server(
    settings: Settings,
    components_factory: Callable[[AppContext], list[Component]] | None = None,
    *,
    start_ray: bool = False,
) -> None:
    """Serve until Ctrl-C/SIGTERM; with ``start_ray`` (``argus up`` without ``--ray-address``) the
    embedded Ray cluster starts before every other component and stops after them; in cluster mode
    (``argus head``) that is a Ray head alone plus the discovery file workers join through."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one INFO line per Ray poll otherwise
    embedded: Component | None = None
    if start_ray:
        from argus.cluster.local import EmbeddedRay, LocalCluster

        cluster = LocalCluster(settings)
        settings.ray_address = cluster.gcs_address
        settings.ray_dashboard_url = settings.ray_dashboard_url or cluster.dashboard_url  # loopback-only
        embedded = EmbeddedRay(cluster)
        if settings.mode == "cluster":  # `argus head`: a head with no workers, published for `argus worker`
            from argus.cluster.discovery import discovery_path
            from argus.cluster.head import ClusterHead, HeadRay

            api_url = settings.api_url
            if not settings.public_url and settings.api_host in ("0.0.0.0", "::"):
                api_url = f"http://{cluster.host}:{settings.api_port}"
            embedded = HeadRay(ClusterHead(cluster, discovery_path(settings.root), api_url))
    ctx = build_context(settings)
    components = components_factory(ctx) if components_factory else default_components(ctx)
    asyncio.run(serve(ctx, [embedded, *components] if embedded else components))


def default_components(ctx: AppContext) -> list[Component]:
    """The background parts of a full server; each issue's part registers here."""
    components: list[Component] = []
    components += _verl_components(ctx)
    components += _sftp_components(ctx)
    components += _scheduler_components(ctx)
    return components


def _verl_components(ctx: AppContext) -> list[Component]:
    """Start the warm verl validator with the server (import verl takes seconds), stop it with it."""
    from argus.verl.component import VerlValidatorComponent

    validator = ctx.extras.get("verl_validator")
    return [VerlValidatorComponent(validator)] if validator is not None else []


def _scheduler_components(ctx: AppContext) -> list[Component]:
    """Scheduler loops (issue 3); the API wakes them and reads the nodes view through ctx."""
    from argus.scheduler.wiring import build_scheduler

    sched = build_scheduler(ctx.db, ctx.settings, **ctx.extras.get("ray_endpoints", {}))
    ctx.wake = sched.runner.wake
    ctx.nodes = sched.nodes
    return [sched.component]


def _sftp_components(ctx: AppContext) -> list[Component]:
    """The embedded SFTP server (issue 4), sharing the HTTP files API's store (one quota ledger)."""
    if not ctx.settings.sftp_enabled:
        return []
    from argus.services.files import shared_store
    from argus.sftp.server import SftpServer

    sftp = SftpServer(ctx.settings, ctx.db, shared_store(ctx.extras, ctx.settings))
    ctx.extras.setdefault("banner", []).append(sftp.banner)
    return [sftp]
