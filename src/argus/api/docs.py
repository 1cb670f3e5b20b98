"""The API's own documentation pages (/docs, /redoc) with every asset served by this server.

FastAPI's default pages load Swagger UI and ReDoc from a public CDN, so on an air-gapped
cluster ``/docs`` is a blank page. The JavaScript and CSS come instead from the pinned
``fastapi-offline`` package (its ``static/`` folder: Swagger UI 5's ``swagger-ui-bundle.js``
and ``swagger-ui.css``, ReDoc 2's ``redoc.standalone.js``, a favicon), mounted at
:data:`ASSETS_URL` by ``static_assets.AssetFiles`` (gzip/brotli made once, linked under its version
with immutable caching); only that folder is used, not the package's FastAPI wrapper, so the
app keeps being built by ``api.app``. The pages are FastAPI's own
(``get_swagger_ui_html``/``get_redoc_html``) with the asset URLs swapped, and ReDoc is told
not to fetch Google Fonts.
"""

from __future__ import annotations

from pathlib import Path

import fastapi_offline
from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from fastapi.responses import HTMLResponse

from argus.api.static_assets import AssetFiles

ASSETS_DIR = Path(fastapi_offline.__file__).with_name("static")
ASSETS_URL = "/docs-assets"
DOCS_URL = "/docs"
REDOC_URL = "/redoc"


def install_docs(app: FastAPI) -> None:
    """Serve /docs (Swagger UI), its OAuth2 redirect page and /redoc from local assets.

    ``app`` must be created with ``docs_url=None, redoc_url=None`` (FastAPI's CDN pages off).
    """
    openapi_url = app.openapi_url or "/openapi.json"
    oauth2_redirect_url = app.swagger_ui_oauth2_redirect_url or f"{DOCS_URL}/oauth2-redirect"
    assets = AssetFiles(ASSETS_DIR)  # compressed once; immutable under its version (2.8 MB -> 0.7 MB)
    app.mount(ASSETS_URL, assets, name="docs-assets")
    versioned = f"{ASSETS_URL}/v/{assets.version}"

    def base(request: Request) -> str:
        return str(request.scope.get("root_path", "")).rstrip("/")

    @app.get(DOCS_URL, include_in_schema=False)
    async def swagger_ui(request: Request) -> HTMLResponse:
        root = base(request)
        return get_swagger_ui_html(
            openapi_url=f"{root}{openapi_url}",
            title=f"{app.title} - Swagger UI",
            oauth2_redirect_url=f"{root}{oauth2_redirect_url}",
            swagger_js_url=f"{root}{versioned}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{versioned}/swagger-ui.css",
            swagger_favicon_url=f"{root}{versioned}/favicon.png",
            swagger_ui_parameters=app.swagger_ui_parameters,
        )

    @app.get(oauth2_redirect_url, include_in_schema=False)
    async def swagger_ui_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()

    @app.get(REDOC_URL, include_in_schema=False)
    async def redoc(request: Request) -> HTMLResponse:
        root = base(request)
        return get_redoc_html(
            openapi_url=f"{root}{openapi_url}",
            title=f"{app.title} - ReDoc",
            redoc_js_url=f"{root}{versioned}/redoc.standalone.js",
            redoc_favicon_url=f"{root}{versioned}/favicon.png",
            with_google_fonts=False,
        )
