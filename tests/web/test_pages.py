"""The page routes over HTTP (no browser, no Ray): sign-in redirects, the 404 page, headers, language.

What a browser does with these pages is in test_browser.py; this checks the server's side of the
contract cheaply: who gets which page, that nothing user-controlled is put into the HTML
unescaped, and that pages forbid foreign scripts and framing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

import argus
from tests.helpers import CLIENT_TIMEOUT_S, LiveServer
from tests.waiting import slack

pytestmark = pytest.mark.hostile


@contextmanager
def browser(live: LiveServer, token: str | None = None, lang: str = "en") -> Iterator[httpx.Client]:
    """A cookie-keeping client, signed in with ``token`` through the browser sign-in when given."""
    with httpx.Client(base_url=live.url, headers={"Accept-Language": lang}, timeout=slack(CLIENT_TIMEOUT_S)) as c:
        if token:
            r = c.post("/api/v2/session", json={"token": token})
            assert r.status_code == 200, r.text
        yield c


def test_signed_out_pages_redirect_to_sign_in_with_the_way_back(live: LiveServer) -> None:
    with browser(live) as c:
        for path, nxt in [("/", None), ("/tasks", "%2Ftasks"), ("/tasks/new?clone=x", "%2Ftasks%2Fnew%3Fclone%3Dx"),
                          ("/tasks/job-1", "%2Ftasks%2Fjob-1")]:
            r = c.get(path)
            assert r.status_code == 303
            if nxt:
                assert r.headers["location"] == f"/login?next={nxt}"
        assert c.get("/login").status_code == 200


def test_sign_in_page_never_redirects_off_site(live: LiveServer) -> None:
    with browser(live, live.admin_token) as c:
        for bad in ["//evil.example/x", "https://evil.example/", "/\\evil.example", "javascript:alert(1)"]:
            r = c.get("/login", params={"next": bad})
            assert r.status_code == 303 and r.headers["location"] == "/tasks", bad
        assert c.get("/login", params={"next": "/tasks/new"}).headers["location"] == "/tasks/new"


def test_signed_in_pages_render_with_strict_headers(live: LiveServer) -> None:
    with browser(live, live.admin_token) as c:
        for path in ("/tasks", "/tasks/new"):
            r = c.get(path)
            assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
            csp = r.headers["content-security-policy"]
            assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp and "unsafe-eval" not in csp
            assert r.headers["x-content-type-options"] == "nosniff"
            assert "<script>" not in r.text  # only external modules and inert JSON data blocks


def test_unknown_or_foreign_task_is_the_same_404_page(live: LiveServer) -> None:
    alice, bob = live.new_user("alice"), live.new_user("bob")
    body = "kind: advanced\nworkload: job\nnnodes: 1\nn_gpus_per_node: 0\ncommand: python3 -m argus.jobs.sleep 0\n"
    tid = alice.post("/api/v2/tasks", content=body, headers={"Content-Type": "application/yaml"}).json()["task_id"]
    bob_token = bob.headers["Authorization"].split()[1]
    alice_token = alice.headers["Authorization"].split()[1]
    with browser(live, bob_token) as c:
        foreign, missing = c.get(f"/tasks/{tid}"), c.get("/tasks/job-99999999-9999")
    assert foreign.status_code == missing.status_code == 404
    assert 'id="not-found"' in foreign.text and "Traceback" not in foreign.text
    assert foreign.text.replace(tid, "X") == missing.text.replace("job-99999999-9999", "X")
    with browser(live, alice_token) as c:
        assert c.get(f"/tasks/{tid}").status_code == 200


def test_user_controlled_text_in_a_page_is_escaped(live: LiveServer) -> None:
    hostile = '</script><script>alert(1)</script>"><img src=x onerror=alert(2)>'
    with browser(live, live.admin_token) as c:
        r = c.get("/tasks/new", params={"clone": hostile})
        assert r.status_code == 200
        assert "<script>alert(1)" not in r.text and "<img src=x" not in r.text
        r = c.get(f"/tasks/{hostile}")
        assert r.status_code in (404, 303) and "<script>alert(1)" not in r.text


def test_language_from_accept_language_and_the_switchers_cookie(live: LiveServer) -> None:
    with browser(live, lang="zh-CN,zh;q=0.9") as c:
        assert '<html lang="zh-CN">' in c.get("/login").text and "登录" in c.get("/login").text
        c.cookies.set("argus_lang", "en")
        assert '<html lang="en">' in c.get("/login").text


def test_static_assets_are_served_from_the_package(live: LiveServer) -> None:
    with httpx.Client(base_url=live.url, timeout=slack(CLIENT_TIMEOUT_S)) as c:
        for path in ("/static/app.css", "/static/js/common.js", "/static/vendor/editor.js", "/static/vendor/charts.js",
                     "/static/vendor/uplot.css"):
            r = c.get(path)
            assert r.status_code == 200 and len(r.content) > 500, path
        assert c.get("/static/../pages.py").status_code == 404


def test_static_assets_go_out_compressed_and_cached_for_good_under_their_version(live: LiveServer) -> None:
    """A page links /static/v/<version>/… (immutable: a deploy changes the version, so no stale script);
    editor.js (431 KB) goes out brotli- or gzip-compressed, made once; the plain path revalidates."""
    with httpx.Client(base_url=live.url, timeout=slack(CLIENT_TIMEOUT_S)) as c:
        html = c.get("/login").text
        common = re.search(r'src="(/static/v/[0-9a-f]{12}/js/common\.js)"', html)
        assert common, html[:800]
        prefix = common.group(1).removesuffix("js/common.js")
        raw = (Path(argus.__file__).parent / "web/static/vendor/editor.js").read_bytes()
        for offered, enc in (("gzip, deflate", "gzip"), ("gzip, deflate, br", "br")):
            r = c.get(prefix + "vendor/editor.js", headers={"Accept-Encoding": offered})
            assert r.status_code == 200 and r.headers["content-encoding"] == enc, r.headers
            assert r.headers["cache-control"] == "public, max-age=31536000, immutable"
            assert r.headers["content-type"].startswith("text/javascript") and "Accept-Encoding" in r.headers["vary"]
            assert int(r.headers["content-length"]) < len(raw) // 2  # what went over the wire
            assert r.content == raw  # httpx decodes gzip and br
            again = c.get(prefix + "vendor/editor.js", headers={"Accept-Encoding": offered,
                                                                  "If-None-Match": r.headers["etag"]})
            assert again.status_code == 304
        r = c.get(prefix + "vendor/editor.js", headers={"Accept-Encoding": "identity"})
        assert "content-encoding" not in r.headers and r.content == raw
        r = c.get("/static/vendor/editor.js", headers={"Accept-Encoding": "gzip"})
        assert r.headers["cache-control"] == "no-cache" and r.content == raw
        r = c.get("/static/v/000000000000/js/common.js")  # an earlier deploy's page: today's file, not kept
        assert r.status_code == 200 and r.headers["cache-control"] == "no-cache"
        assert c.get(prefix + "nope.js").status_code == 404 and c.post(prefix + "js/common.js").status_code in (404, 405)
        docs = c.get("/docs").text
        bundle = re.search(r"'(/docs-assets/v/[0-9a-f]{12}/swagger-ui-bundle\.js)'|\"(/docs-assets/v/[0-9a-f]{12}/swagger-ui-bundle\.js)\"", docs)
        assert bundle, docs
        r = c.get(bundle.group(1) or bundle.group(2), headers={"Accept-Encoding": "gzip"})
        assert r.headers["content-encoding"] == "gzip" and "immutable" in r.headers["cache-control"]
        assert int(r.headers["content-length"]) < 600_000


def test_part_two_pages_render_and_admin_is_for_admins_only(live: LiveServer) -> None:
    alice = live.new_user("alice")
    alice_token = alice.headers["Authorization"].split()[1]
    with browser(live) as c:  # signed out: to sign-in, with the way back
        for path in ("/data", "/account", "/nodes", "/admin"):
            r = c.get(path)
            assert r.status_code == 303 and r.headers["location"].startswith("/login?next="), path
    with browser(live, alice_token) as c:
        for path in ("/data", "/data?path=%2Fcommon%2Fdatasets", "/account", "/nodes"):
            r = c.get(path)
            assert r.status_code == 200 and "script-src 'self'" in r.headers["content-security-policy"], path
        assert 'href="/admin"' not in c.get("/data").text  # no admin link for a user
        r = c.get("/admin")
        assert r.status_code == 404 and 'id="not-found"' in r.text
        assert "sftp -P" in c.get("/data").text
        r = c.get("/jobs/job-000001-abc/")  # the task page's folder link opens the Data page there
        assert r.status_code == 303 and r.headers["location"] == "/data?path=/jobs/job-000001-abc"
        r = c.get("/jobs/%3Cimg%20src=x%3E/")
        assert r.status_code == 303 and "<" not in r.headers["location"]
    with browser(live, live.admin_token) as c:
        r = c.get("/admin")
        assert r.status_code == 200 and 'href="/admin"' in r.text


def test_an_unknown_address_is_the_404_page_for_a_browser_and_json_for_the_api(live: LiveServer) -> None:
    alice_token = live.new_user("alice").headers["Authorization"].split()[1]
    html = {"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"}
    with browser(live, alice_token) as c:
        r = c.get("/no/such/page", headers=html)
        assert r.status_code == 404 and 'id="not-found"' in r.text and "alice" in r.text  # signed-in navigation
        assert "script-src 'self'" in r.headers["content-security-policy"]
        r = c.get("/%3Cscript%3Ealert(1)%3C/script%3E", headers=html)
        assert r.status_code == 404 and "<script>alert(1)" not in r.text
        for path in ("/api/v2/nope", "/static/nope.js", "/no/such/page"):  # the API, assets, or no HTML asked
            r = c.get(path, headers=html if path != "/no/such/page" else {"Accept": "application/json"})
            assert r.status_code == 404 and r.json()["detail"]["code"] == "not_found", path
        r = c.post("/no/such/page", headers=html)
        assert r.status_code in (404, 405) and r.headers["content-type"].startswith("application/json")
    with browser(live) as c:  # signed out: the same page, without a user
        r = c.get("/no/such/page", headers=html)
        assert r.status_code == 404 and 'id="not-found"' in r.text


def _page_data(html: str) -> dict:
    import json
    import re

    found = re.search(r'<script type="application/json" id="argus-page">(.*?)</script>', html, re.S)
    assert found, html[:500]
    return json.loads(found.group(1))


def test_new_task_opens_on_a_template_the_default_environment_runs(live: LiveServer) -> None:
    """Argus's own environment (a fresh argus up's default) has no rollout engine: New Task opens on SFT, the
    first-run guide offers SFT first, and the templates ask for GPUs (issue 34)."""
    with browser(live, live.admin_token) as c:
        data = _page_data(c.get("/tasks/new").text)
        assert data["start"] == "basic-sft" and "device:" not in data["templates"]["basic-sft"]
        assert _page_data(c.get("/tasks").text)["first_templates"][0] == "basic-sft"


def test_new_task_on_a_cpu_training_default_environment_asks_for_cpu(tmp_path) -> None:  # noqa: ANN001
    """The default environment trains on CPU with vLLM (verl-0.9.1-vllm-cpu): GRPO first, every basic template
    with device: cpu, in both languages (the environment's record is written here: its build is tests/envs')."""
    from argus.envs.registry import Environment, Registry
    from argus.settings import Settings
    from tests.helpers import live_server

    settings = Settings(state_dir=tmp_path / "state", sftp_enabled=False, verl_validation="off",
                        default_env="cpu-env")
    reg = Registry.for_settings(settings)
    Environment(name="cpu-env", python="/usr/bin/python3", prefix="/usr", source="catalog", templates=True,
                probe={"rollout_engines": ["vllm"], "cpu_platform": True, "problems": []}).dump(reg.cluster_dir / "cpu-env")
    with live_server(settings) as srv, browser(srv, srv.admin_token) as c:
        for lang in ("en", "zh"):
            c.cookies.set("argus_lang", lang)
            data = _page_data(c.get("/tasks/new", headers={"Accept-Language": lang}).text)
            assert data["start"] == "basic-grpo"
            for name in ("basic-grpo", "basic-ppo", "basic-sft"):
                assert "\ndevice: cpu " in data["templates"][name], (lang, name)
            assert "device:" not in data["templates"]["advanced"]
