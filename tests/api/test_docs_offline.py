"""/docs and /redoc work on an air-gapped cluster: every asset they reference is served by Argus."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest


class _Refs(HTMLParser):
    """Every URL a browser would fetch while loading the page (scripts, stylesheets, icons, images)."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        for key in ("src", "href"):
            if a.get(key) and tag in ("script", "link", "img", "iframe"):
                self.urls.append(a[key] or "")


def _refs(html: str) -> list[str]:
    p = _Refs()
    p.feed(html)
    return p.urls


@pytest.mark.parametrize(("page", "must_load"), [
    ("/docs", {"swagger-ui-bundle.js", "swagger-ui.css"}),
    ("/redoc", {"redoc.standalone.js"}),
])
def test_docs_pages_reference_only_assets_this_server_serves(live, page: str, must_load: set[str]) -> None:
    with live.client() as c:
        r = c.get(page)
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
        html = r.text
        urls = _refs(html)
        assert {u.rsplit("/", 1)[-1] for u in urls} >= must_load, urls
        assert "http://" not in html and "https://" not in html, "a CDN or font URL is left in the page"
        for url in urls:
            assert url.startswith("/") and not url.startswith("//"), f"{url} is not a local path"
            got = c.get(url)
            assert got.status_code == 200, f"{url}: {got.status_code}"
            assert len(got.content) > 1000, f"{url} is suspiciously small"
        assert c.get("/openapi.json").json()["info"]["title"] == "Argus"


def test_openapi_still_lists_the_api_and_not_the_docs_routes(live) -> None:
    with live.client() as c:
        spec = c.get("/openapi.json")
        assert spec.status_code == 200
        paths = spec.json()["paths"]
        assert "/api/v2/tasks" in paths and "/docs" not in paths and "/redoc" not in paths
        redirect = c.get("/docs/oauth2-redirect")
        assert redirect.status_code == 200 and "https://" not in redirect.text
        assert c.get("/docs-assets/../../etc/passwd").status_code == 404
