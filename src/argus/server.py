"""Composition root: wires settings, database, API, and the background parts into one process.

This is the only module that knows every layer. ``argus server`` and ``argus up``
call ``run_server``; tests call ``build_context`` + ``create_app`` directly.
Background parts (scheduler loops, SFTP, the verl validator) implement
``Component`` and are started after the database is ready and stopped in
reverse order on Ctrl-C/SIGTERM.

Start-up problems a user fixes (a port taken, Ray not starting, a bad setting) end the
process with one ``error: …`` line and a non-zero exit status, never a traceback. The admin token
is created and printed only once the API answers its health check, so a failed start
never consumes the one showing of it (``argus admin token --reset`` makes a new one).
"""

from __future__ import annotations

import asyncio
import errno
import logging
import signal
import socket
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import httpx
import uvicorn
from alembic.util.exc import CommandError as AlembicError
from sqlalchemy.exc import SQLAlchemyError

from argus.api.app import create_app
from argus.api.context import AppContext
from argus.db.session import Database
from argus.errors import ArgusError
from argus.services import log_index
from argus.services.users import ensure_admin, ensure_layout, reset_admin_token
from argus.settings import Settings

log = logging.getLogger("argus")


def database_problem(settings: Settings, exc: Exception) -> str:
    """One line for a database Argus cannot open or migrate: a corrupt file, another application's, a newer
    Argus's, an unreachable server."""
    first = (str(getattr(exc, "orig", None) or exc).strip().splitlines() or [type(exc).__name__])[0][:300]
    where = settings.db_url if not settings.db_url.startswith("sqlite") else settings.db_url.split("///", 1)[-1]
    if "revision" in first.lower():
        return (f"the database {where} has a schema Argus does not know ({first}): is it another application's, "
                "or a newer Argus's? Point DATABASE_URL (or --state-dir) at Argus's own")
    return (f"cannot open the database {where}: {first}; if the file is corrupt or not Argus's, move it away "
            "(a new one is created) or point DATABASE_URL / --state-dir at Argus's own")


def say(line: str) -> None:
    """A line for whoever started Argus (the API's URL, the admin token), flushed at once: with stdout
    redirected to a file or a pipe (automation, systemd) a buffered token would not be there to read."""
    print(line, flush=True)


class StartError(Exception):
    """The server cannot start for a reason the user fixes; the message is the one line printed."""


class Component(Protocol):
    name: str

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


def build_context(settings: Settings, *, announce: Callable[[str], None] = say, admin: bool = True) -> AppContext:
    """Open and migrate the database; with ``admin``, make sure the admin exists and print its token once
    (``run_server`` passes ``admin=False`` and does that once the API answers, see ``announce_admin``)."""
    settings.state_dir.mkdir(parents=True, exist_ok=True)
    settings.root.mkdir(parents=True, exist_ok=True)
    db = Database(settings.db_url, busy_timeout_s=settings.db_request_busy_timeout_s)  # requests: 503 when busy
    try:
        db.migrate()
    except (SQLAlchemyError, AlembicError) as exc:
        db.dispose()
        raise StartError(database_problem(settings, exc)) from None
    ctx = AppContext(settings=settings, db=db)
    log_index.use_store(settings.state_dir / "log-index")  # the server's own folder: indexes outlive a restart
    if admin:
        announce_admin(ctx, announce)
    else:
        ensure_layout(settings.root)
    _wire_verl(ctx)
    return ctx


def announce_admin(ctx: AppContext, announce: Callable[[str], None] = say) -> None:
    """Create the admin (and its first token) when missing and print that token: the only time it is shown."""
    s = ctx.settings
    try:
        with ctx.db.session() as session:
            token = ensure_admin(session, s.root, s.admin_name, s.admin_token)
    except ArgusError as exc:  # ARGUS_ADMIN_TOKEN of a non-admin user
        raise StartError(str(exc)) from None
    if token:
        announce(f"admin token: {token}")


def reset_admin_token_in(settings: Settings) -> str:
    """``argus admin token --reset``: revoke the admin's tokens and return a new one, written straight into
    the database of ``settings.state_dir`` (local access to it is the proof), server running or not."""
    if settings.db_url.startswith("sqlite:///") and not settings.db_url.endswith(":memory:"):
        path = settings.db_url.split("///", 1)[1]
        if not Path(path).is_file():
            raise StartError(f"no Argus database at {path}; is --state-dir the one `argus up` uses?")
    db = Database(settings.db_url)
    try:
        db.migrate()
        with db.session() as session:
            return reset_admin_token(session, settings.root, settings.admin_name)
    finally:
        db.dispose()


def check_listen_ports(settings: Settings) -> None:
    """The API and SFTP ports are user-facing (saved in CLI configs and ssh configs), so a taken one is never
    swapped for another: refuse in one line naming the flag, before Ray spends half a minute starting."""
    wanted = [(settings.api_host, settings.api_port, "the API", "--port N (ARGUS_API_PORT)")]
    if settings.sftp_enabled:
        wanted.append((settings.sftp_host, settings.sftp_port, "SFTP", "--sftp-port N (ARGUS_SFTP_PORT), or --no-sftp"))
    for host, port, what, flag in wanted:
        problem = _bind_problem(host, port)
        if problem:
            raise StartError(f"cannot listen on {host}:{port} for the {what} ({problem}); choose another with {flag}")


def _bind_problem(host: str, port: int) -> str | None:
    """Why ``host:port`` cannot be listened on now ("already in use", …), or None when it can."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        return f"unknown host: {exc.strerror}"
    family, _, _, _, addr = infos[0]
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn/asyncssh: TIME_WAIT is no conflict
        try:
            sock.bind(addr)
        except OSError as exc:
            return "port already in use" if exc.errno == errno.EADDRINUSE else (exc.strerror or str(exc))
    return None


def _wire_verl(ctx: AppContext) -> None:
    """verl's own validation as an admission check; the validator process starts with the components."""
    from argus.envs.check import EnvCheck, environment_choices
    from argus.envs.registry import Registry
    from argus.verl.component import make_verl_checks

    registry = Registry.for_settings(ctx.settings)
    checks, pool = make_verl_checks(ctx.settings, registry)
    ctx.checks = (*ctx.checks, EnvCheck(registry), *checks)
    ctx.env_choices = environment_choices(registry) if pool is not None else None
    ctx.extras["env_registry"] = registry
    ctx.extras["verl_validator"] = pool


def forwarded_headers(s: Settings) -> dict[str, object]:
    """uvicorn's proxy-header options: X-Forwarded-* only from ``trusted_proxies``. uvicorn's own default
    trusts them from 127.0.0.1, and every task on the head's node connects from there: one header and each
    password guess came from a new address, so the sign-in limiter never locked anyone out."""
    if not s.trusted_proxies:
        return {"proxy_headers": False}
    return {"proxy_headers": True, "forwarded_allow_ips": ",".join(s.trusted_proxies)}


async def serve(ctx: AppContext, components: list[Component], *, announce: Callable[[str], None] = say,
                on_ready: Callable[[Callable[[str], None]], None] | None = None) -> None:
    """Start the components, then the API; once it answers: its URL, ``on_ready`` (the admin token), banners."""
    s = ctx.settings
    app = create_app(ctx, extra_routers=tuple(ctx.extras.get("routers", ())))
    config = uvicorn.Config(app, host=s.api_host, port=s.api_port, log_level="warning", lifespan="off",
                            **forwarded_headers(s))
    server = uvicorn.Server(config)
    started: list[Component] = []
    try:
        for comp in components:
            try:
                await comp.start()
            except OSError as exc:  # a port taken since check_listen_ports, a missing binary, …
                raise StartError(f"{comp.name} failed to start: {exc}") from None
            started.append(comp)
        _survive_uvicorn_sigterm()
        serve_task = asyncio.create_task(_serve_api(server, s))
        while not server.started and not serve_task.done():
            await asyncio.sleep(0.05)
        if serve_task.done():
            await serve_task
            raise StartError(f"the API server failed to start on {s.api_host}:{s.api_port}")
        await _wait_healthy(s, serve_task)
        announce(f"Argus API: {s.api_url}  (docs: {s.api_url}/docs)")
        if on_ready is not None:
            on_ready(announce)
        for line in ctx.extras.get("banner", []):
            announce(line)
        if "env_registry" in ctx.extras:
            announce(await asyncio.to_thread(ctx.extras["env_registry"].default_line))
        await serve_task
    finally:
        for comp in reversed(started):
            try:
                await comp.stop()
            except Exception:  # noqa: BLE001 - keep stopping the rest
                log.exception("stopping %s failed", comp.name)
        ctx.db.dispose()


async def _serve_api(server: uvicorn.Server, s: Settings) -> None:
    """uvicorn answers a port it cannot bind with ``sys.exit(1)``; here that is a one-line StartError."""
    try:
        await server.serve()
    except SystemExit:
        raise StartError(f"cannot listen on {s.api_host}:{s.api_port} for the API; choose another with "
                         "--port N (ARGUS_API_PORT)") from None


async def _wait_healthy(s: Settings, serve_task: asyncio.Task[None], unhealthy_s: float = 30.0,
                        unanswered_s: float = 300.0) -> None:
    """Poll ``/api/v2/health`` on the listening socket until it answers 200 (the database is reachable).

    Two bounds, because a loaded machine is not a broken one: an API that answers "unhealthy" (its database
    unreachable) fails the start after ``unhealthy_s`` of such answers; an API that has not answered yet (its
    first request still queued behind a busy CPU, measured at more than 30 s beside a Ray cluster on 2 cores)
    gets ``unanswered_s``."""
    host = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(s.api_host, s.api_host)  # noqa: S104 - a match, not a bind
    url = f"http://{f'[{host}]' if ':' in host else host}:{s.api_port}/api/v2/health"
    loop = asyncio.get_running_loop()
    deadline = loop.time() + unanswered_s
    first_unhealthy: float | None = None
    async with httpx.AsyncClient(timeout=30, trust_env=False) as client:
        while True:
            try:
                if (await client.get(url)).status_code == 200:
                    return
                first_unhealthy = loop.time() if first_unhealthy is None else first_unhealthy
            except httpx.HTTPError:
                pass
            if serve_task.done():
                await serve_task
                raise StartError(f"the API server on {s.api_host}:{s.api_port} stopped while starting")
            if first_unhealthy is not None and loop.time() - first_unhealthy > unhealthy_s:
                raise StartError(f"the API server on {s.api_host}:{s.api_port} answered {url} as unhealthy "
                                 f"for {unhealthy_s:.0f} s: is its database reachable?")
            if loop.time() > deadline:
                raise StartError(f"the API server on {s.api_host}:{s.api_port} did not answer {url} "
                                 f"within {unanswered_s:.0f} s")
            await asyncio.sleep(0.1)


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
    (``argus head``) that is a Ray head alone plus the discovery file workers join through.

    A start-up problem the user fixes prints ``error: <one line>`` on stderr and exits with status 1."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one INFO line per Ray poll otherwise
    logging.getLogger("alembic").setLevel(logging.WARNING)  # "Context impl SQLiteImpl." is no news to a user
    from argus.nodes.local import LocalClusterError

    try:
        _run_server(settings, components_factory, start_ray=start_ray)
    except (StartError, LocalClusterError) as exc:
        print(f"error: {exc}", file=sys.stderr, flush=True)
        raise SystemExit(1) from None
    except KeyboardInterrupt:  # Ctrl-C/SIGTERM while starting: what started was stopped on the way out
        print("interrupted", file=sys.stderr, flush=True)
        raise SystemExit(130) from None


def _run_server(
    settings: Settings,
    components_factory: Callable[[AppContext], list[Component]] | None,
    *,
    start_ray: bool,
) -> None:
    from argus.state_lock import StateDirBusy, StateLock

    lock = StateLock(settings.state_dir)  # one server per state dir; dropped by the kernel if we die
    try:
        lock.acquire()
    except StateDirBusy as exc:
        raise StartError(str(exc)) from None
    try:
        _run_locked(settings, components_factory, start_ray=start_ray)
    finally:
        lock.release()


def _run_locked(
    settings: Settings,
    components_factory: Callable[[AppContext], list[Component]] | None,
    *,
    start_ray: bool,
) -> None:
    check_listen_ports(settings)
    embedded: Component | None = None
    if start_ray:
        from argus.nodes.local import EmbeddedRay, LocalCluster

        cluster = LocalCluster(settings)  # picks free ports for the Ray ports nobody asked for
        cluster.take_over_leftover()  # the Ray a killed earlier run left: adopted (its ports) or stopped
        settings.ray_address = cluster.gcs_address
        settings.ray_dashboard_url = settings.ray_dashboard_url or cluster.dashboard_url  # loopback-only
        embedded = EmbeddedRay(cluster)
        if settings.mode == "cluster":  # `argus head`: a head with no workers, published for `argus worker`
            from argus.nodes.discovery import discovery_path
            from argus.nodes.head import ClusterHead, HeadRay

            api_url = settings.api_url
            if not settings.public_url and settings.api_host in ("0.0.0.0", "::"):
                api_url = f"http://{cluster.host}:{settings.api_port}"
            embedded = HeadRay(ClusterHead(cluster, discovery_path(settings.root), api_url))
    ctx = build_context(settings, admin=False)
    on_ready = _admin_when_ready(ctx)
    components = components_factory(ctx) if components_factory else default_components(ctx)
    asyncio.run(serve(ctx, [embedded, *components] if embedded else components, on_ready=on_ready))


def _admin_when_ready(ctx: AppContext) -> Callable[[Callable[[str], None]], None]:
    """What ``serve`` does once the API answers: print the admin token, when there is a new one.

    A generated token is created only then, so a failed start never uses up its one showing.
    ``ARGUS_ADMIN_TOKEN`` is registered now instead: automation waits for health and then uses it,
    and it is no secret to lose; its line (first registration only) still comes after health.
    """
    if not ctx.settings.admin_token:
        return lambda announce: announce_admin(ctx, announce)
    lines: list[str] = []
    announce_admin(ctx, lines.append)

    def replay(announce: Callable[[str], None]) -> None:
        for line in lines:
            announce(line)

    return replay


def default_components(ctx: AppContext) -> list[Component]:
    """The background parts of a full server; each issue's part registers here."""
    components: list[Component] = []
    components += _verl_components(ctx)
    components += _sftp_components(ctx)
    components += _scheduler_components(ctx)
    components += _notification_components(ctx)
    from argus.api.routers.prometheus import warm_up

    warm_up(ctx)  # GET /metrics: the task counts, before the first scrape asks
    return components


def _verl_components(ctx: AppContext) -> list[Component]:
    """Start the warm verl validator with the server (import verl takes seconds), stop it with it."""
    from argus.verl.component import VerlValidatorComponent

    pool = ctx.extras.get("verl_validator")
    return [VerlValidatorComponent(pool, ctx.extras["env_registry"])] if pool is not None else []


def _scheduler_components(ctx: AppContext) -> list[Component]:
    """Scheduler loops (issue 3); the API wakes them and reads the nodes view through ctx."""
    from argus.scheduler.wiring import build_scheduler

    sched = build_scheduler(ctx.db, ctx.settings, **ctx.extras.get("ray_endpoints", {}))
    attach_scheduler(ctx, sched)
    return [sched.component]


def attach_scheduler(ctx: AppContext, sched: Any) -> None:
    """What the API and the scheduler hand each other (a ``scheduler.wiring.Scheduler``): the API wakes its loops
    and reads its nodes view and queue estimates; its pipeline loop admits a pipeline's steps, and its evaluations
    loop each checkpoint's evaluation (``evaluate_checkpoints``), with the API's policy and checks (verl's
    validation), read when a step starts."""
    from argus.services import pipelines

    ctx.wake = sched.runner.wake
    ctx.nodes = sched.nodes
    ctx.queue_estimates = sched.queue
    sched.runner.ctx.admission = lambda: pipelines.Admission(ctx.policy, ctx.checks, ctx.settings.max_spec_bytes)


class _ThreadPart:
    """``Component`` for a background thread with blocking ``start``/``stop`` (and, maybe, its own engine)."""

    def __init__(self, name: str, start: Callable[[], None], stop: Callable[[], None], db: Database | None) -> None:
        self.name, self._start, self._stop, self._db = name, start, stop, db

    async def start(self) -> None:
        self._start()

    async def stop(self) -> None:
        await asyncio.to_thread(self._stop)
        if self._db is not None:
            self._db.dispose()


def notification_sender(ctx: AppContext):  # noqa: ANN201 - argus.services.notify_sender.NotificationSender
    """The outbox's sender (issue 24) on an engine of its own, with the operator's SMTP settings; the API's
    "send a test" wakes it through ``ctx.extras["notify_wake"]``. Tests that want deliveries start it."""
    from argus.services.notify_sender import NotificationSender, SmtpSettings

    s = ctx.settings
    smtp = SmtpSettings(host=s.smtp_host, port=s.smtp_port, user=s.smtp_user, password=s.smtp_password,
                        sender=s.smtp_from, starttls=s.smtp_starttls)
    sender = NotificationSender(ctx.db.sibling(busy_timeout_s=30.0), smtp, http_timeout_s=s.notify_http_timeout_s,
                                base_url=s.api_url, webhook_allow=s.notify_webhook_allow)
    ctx.extras["notify_wake"] = sender.wake
    return sender


def _notification_components(ctx: AppContext) -> list[Component]:
    """Webhooks and e-mail about users' tasks: a thread beside the scheduler's, never inside its loop."""
    sender = notification_sender(ctx)
    return [_ThreadPart("notifications", sender.start, sender.stop, sender.db if sender.db is not ctx.db else None)]


def _sftp_components(ctx: AppContext) -> list[Component]:
    """The SFTP server (issue 4) in a supervised child process of its own (issue 11: transfers kept the
    API's event loop busy), on the same database and data root; see ``sftp/process.py``."""
    if not ctx.settings.sftp_enabled:
        return []
    from argus.sftp.process import SftpProcess

    sftp = SftpProcess(ctx.settings)
    ctx.extras.setdefault("banner", []).append(sftp.banner)
    ctx.extras["sftp_process"] = sftp  # its health on GET /metrics
    return [sftp]
