"""Page routes: sign-in, tasks, New Task, one task, Data, Account, Nodes, Environments, Teams, Admin; a 404 page
otherwise.

Signed-out page requests get a 303 to ``/login?next=…``. A task page is rendered only when the
task exists *for this user* (the same ``get_task`` the API uses, so another user's task is the
same 404 page as a task that never existed). Everything else the page shows, it fetches from
``/api/v2`` itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from jinja2 import Environment, FileSystemLoader, select_autoescape

from argus.api.context import AppContext
from argus.api.deps import get_ctx
from argus.api.routers.envs import registry as env_registry
from argus.api.static_assets import asset_index
from argus.errors import NotFound
from argus.services import audit, first_run
from argus.services.pipelines import get_pipeline
from argus.services.principal import Principal
from argus.services.sweeps import get_sweep
from argus.services.tasks import get_task
from argus.web import i18n
from argus.web.auth import page_principal
from argus.web.templates_catalog import spec_templates

WEB_DIR = Path(__file__).parent
STATIC_DIR = WEB_DIR / "static"
_env = Environment(loader=FileSystemLoader(WEB_DIR / "templates"), autoescape=select_autoescape(default=True))


def asset_url(path: str) -> str:
    """``/static/x`` as the page links it: under the folder's version, so it is cached for good and a
    deploy that changes any asset changes every URL (``api/static_assets.py``)."""
    return f"/static/v/{asset_index(STATIC_DIR.resolve()).version}/{path.removeprefix('/static/')}"


_env.globals["asset"] = asset_url

# Pages run only same-origin code: scripts from /static, no inline script, no framing. Styles may be
# inline because CodeMirror and uPlot set element styles at run time.
CSP = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
       "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
       "frame-ancestors 'none'")
router = APIRouter(include_in_schema=False)


def render(request: Request, template: str, *, title_key: str, principal: Principal | None,
           status_code: int = 200, **page: Any) -> HTMLResponse:
    lang = i18n.pick_language(request.cookies.get(i18n.COOKIE), request.headers.get("accept-language"))
    t = i18n.translator(lang)
    data = {"lang": lang, "user": principal.name if principal else None,
            "is_admin": bool(principal and principal.is_admin), **page}
    html = _env.get_template(template).render(t=t, lang=lang, title=t(title_key), page=data,
                                              catalog=i18n.catalog(lang), principal=principal)
    return HTMLResponse(html, status_code=status_code, headers={
        "Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff", "Referrer-Policy": "same-origin",
        "Cache-Control": "no-store", "Vary": "Cookie, Accept-Language"})


class SignInFirst(Exception):  # noqa: N818 - a redirect, not an error
    """Raised by ``signed_in`` for a signed-out page request; ``install_web`` answers it with a 303."""


def signed_in(request: Request, ctx: AppContext = Depends(get_ctx)) -> Principal:
    """The page's user; signed out, the browser goes to ``/login?next=<this page>`` instead."""
    principal = page_principal(request, ctx)
    if principal is None:
        raise SignInFirst
    return principal


def to_login(request: Request, _exc: Exception) -> RedirectResponse:
    target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return RedirectResponse(f"/login?next={quote(target, safe='')}", status_code=303)


@router.get("/")
def home() -> Response:
    return RedirectResponse("/tasks", status_code=303)


@router.get("/login")
def login_page(request: Request, ctx: AppContext = Depends(get_ctx)) -> Response:
    principal = page_principal(request, ctx)
    nxt = _safe_next(request.query_params.get("next"))
    if principal is not None:
        return RedirectResponse(nxt, status_code=303)
    return render(request, "login.html", title_key="login.title", principal=None, next=nxt,
                  directory=bool(ctx.settings.ldap_url))


def _safe_next(target: str | None) -> str:
    """Only a path on this site (``/x``), never ``//host`` or ``https://…``: no open redirect."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/tasks"
    return target


def _starting_point(ctx: AppContext) -> first_run.StartingPoint:
    """Where New Task opens, from the cluster's default environment (services/first_run decides)."""
    reg = env_registry(ctx)
    env = reg.get(reg.default)
    return first_run.starting_point(env.public() if env is not None and env.ok else None)


@router.get("/tasks")
def tasks_page(request: Request, ctx: AppContext = Depends(get_ctx),
               principal: Principal = Depends(signed_in)) -> Response:
    return render(request, "tasks.html", title_key="tasks.title", principal=principal,
                  doctor_spec=first_run.DOCTOR_SPEC, first_templates=_starting_point(ctx).first_templates)


@router.get("/tasks/new")
def new_task_page(request: Request, ctx: AppContext = Depends(get_ctx),
                  principal: Principal = Depends(signed_in)) -> Response:
    lang = i18n.pick_language(request.cookies.get(i18n.COOKIE), request.headers.get("accept-language"))
    start = _starting_point(ctx)
    return render(request, "new_task.html", title_key="new.title", principal=principal,
                  templates=spec_templates(lang, start.device), start=start.template,
                  clone=request.query_params.get("clone"), paths=_paths(ctx, principal))


@router.get("/tasks/{task_id}")
def task_page(task_id: str, request: Request, ctx: AppContext = Depends(get_ctx),
              principal: Principal = Depends(signed_in)) -> Response:
    try:
        with ctx.db.session() as session:
            get_task(session, principal, task_id, team_read=True)
    except NotFound:
        return not_found(request, principal)
    return render(request, "task.html", title_key="task.title", principal=principal, task_id=task_id,
                  ray_dashboard=ctx.settings.task_ray_dashboard)


@router.get("/compare")
def compare_page(request: Request, principal: Principal = Depends(signed_in)) -> Response:
    """Compare runs (``?tasks=a,b``): the page fetches GET /api/v2/compare, which names any id the user cannot see."""
    return render(request, "compare.html", title_key="compare.title", principal=principal)


@router.get("/jobs/{task_id}/")
def task_folder(task_id: str) -> Response:
    """The task page's folder link: its ``/jobs/<id>/`` folder in the Data page."""
    return RedirectResponse(f"/data?path={quote('/jobs/' + task_id, safe='/')}", status_code=303)


def _paths(ctx: AppContext, principal: Principal) -> dict[str, str]:
    """Where ``$HOME`` and the shared folders are on the server, for the pages that translate paths."""
    root = ctx.settings.root
    return {"home": str(ctx.layout.home(principal.name)), "datasets": str(root / "datasets"), "hf": str(root / "hf")}


def _sftp_command(ctx: AppContext, principal: Principal) -> str:
    s = ctx.settings
    return f"sftp -P {s.sftp_port} {principal.name}@{s.sftp_public_host}"


@router.get("/data")
def data_page(request: Request, ctx: AppContext = Depends(get_ctx),
              principal: Principal = Depends(signed_in)) -> Response:
    """The file browser; which folder it shows is in the URL (``?path=``) and checked by the API."""
    return render(request, "data.html", title_key="data.title", principal=principal,
                  sftp=_sftp_command(ctx, principal), sftp_enabled=ctx.settings.sftp_enabled,
                  paths=_paths(ctx, principal))


@router.get("/account")
def account_page(request: Request, ctx: AppContext = Depends(get_ctx),
                 principal: Principal = Depends(signed_in)) -> Response:
    return render(request, "account.html", title_key="account.title", principal=principal,
                  sftp=_sftp_command(ctx, principal), sftp_enabled=ctx.settings.sftp_enabled)


@router.get("/nodes")
def nodes_page(request: Request, principal: Principal = Depends(signed_in)) -> Response:
    return render(request, "nodes.html", title_key="nodes.title", principal=principal)


@router.get("/envs")
def envs_page(request: Request, principal: Principal = Depends(signed_in)) -> Response:
    """The training environments tasks can name in ``env:`` (GET /api/v2/envs); managing them is the CLI's."""
    return render(request, "envs.html", title_key="envs.title", principal=principal)


@router.get("/teams")
def teams_page(request: Request, principal: Principal = Depends(signed_in)) -> Response:
    """Your teams (a site admin: every team) and usage by team; the page fetches /api/v2/teams and /usage."""
    return render(request, "teams.html", title_key="teams.title", principal=principal)


def _owned_page(request: Request, ctx: AppContext, principal: Principal, lookup: Any, row_id: str | None,
                template: str, key: str) -> Response:
    """A list page (``row_id`` None) or one row's page, which the principal must be able to read (else the
    not-found page); the page's script fetches the rest from the API."""
    if row_id is not None:
        try:
            with ctx.db.session() as session:
                lookup(session, principal, row_id)
        except NotFound:
            return not_found(request, principal)
    return render(request, f"{template}.html", title_key=f"{template}.title", principal=principal, **{key: row_id})


@router.get("/sweeps")
@router.get("/sweeps/{sweep_id}")
def sweeps_page(request: Request, sweep_id: str | None = None, ctx: AppContext = Depends(get_ctx),
                principal: Principal = Depends(signed_in)) -> Response:
    """Your sweeps (issue 38), or one: its trials on one chart of its metric, their table, the best trial."""
    return _owned_page(request, ctx, principal, get_sweep, sweep_id, "sweeps", "sweep_id")


@router.get("/pipelines")
@router.get("/pipelines/{pipeline_id}")
def pipelines_page(request: Request, pipeline_id: str | None = None, ctx: AppContext = Depends(get_ctx),
                   principal: Principal = Depends(signed_in)) -> Response:
    """Your pipelines, or one: its steps' states, tasks, gates and artifacts (GET /api/v2/pipelines[/{id}])."""
    return _owned_page(request, ctx, principal, get_pipeline, pipeline_id, "pipelines", "pipeline_id")


@router.get("/models")
@router.get("/models/{ref:path}")
def models_page(request: Request, ref: str | None = None, principal: Principal = Depends(signed_in)) -> Response:
    """Your registered models and your teams', or one (``name`` or ``team/name``): its versions with lineage and
    scores, and its aliases (GET /api/v2/models[/{ref}]; what the reference means is the API's to say)."""
    return render(request, "models.html", title_key="models.title", principal=principal, model=ref)


@router.get("/admin")
def admin_page(request: Request, principal: Principal = Depends(signed_in)) -> Response:
    """Admins only; anyone else gets the same 404 page as an unknown address (the API refuses them too)."""
    if not principal.is_admin:
        return not_found(request, principal)
    return render(request, "admin.html", title_key="admin.title", principal=principal,
                  audit_actions=list(audit.ACTIONS))  # the audit filter offers the fixed vocabulary


def not_found(request: Request, principal: Principal | None) -> HTMLResponse:
    return render(request, "not_found.html", title_key="notfound.title", principal=principal, status_code=404)
