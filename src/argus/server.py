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
    return AppContext(settings=settings, db=db)


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


def run_server(settings: Settings, components_factory: Callable[[AppContext], list[Component]] | None = None) -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    ctx = build_context(settings)
    components = components_factory(ctx) if components_factory else default_components(ctx)
    asyncio.run(serve(ctx, components))


def default_components(ctx: AppContext) -> list[Component]:
    """The background parts of a full server; each issue's part registers here."""
    return []
