"""The WebUI's assets: all served from the package, the committed bundles match their sources.

``scripts/build-web.sh`` (needs Node) rebuilds ``static/vendor/``; these tests need no Node: they
recompute the digests recorded in BUILD-INFO.json, so a changed lockfile or entry file without a
rebuild, or a hand-edited bundle, fails here.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from argus.core.taskspec import load_spec_document, parse_taskspec
from argus.web import buildinfo, i18n
from argus.web.templates_catalog import NAMES, spec_templates

REPO = Path(__file__).resolve().parents[2]
WEB = Path(buildinfo.__file__).parent
VENDOR = WEB / "static" / "vendor"
FRONTEND = REPO / "web" / "frontend"


def test_committed_bundles_are_built_from_the_locked_sources() -> None:
    info = json.loads((VENDOR / buildinfo.INFO).read_text())
    assert info["sources"] == buildinfo.source_digest(FRONTEND), "run scripts/build-web.sh and commit the result"
    assert info["files"] == buildinfo.built_digests(VENDOR), "a bundle differs from what the build wrote"
    assert info["packages"] == buildinfo.bundled_packages(FRONTEND)


def test_every_bundled_package_has_a_recorded_version_and_license() -> None:
    notice = (VENDOR / buildinfo.NOTICE).read_text()
    pkgs = buildinfo.bundled_packages(FRONTEND)
    assert {"codemirror", "@codemirror/lang-yaml", "@codemirror/lint", "uplot"} <= {p["name"] for p in pkgs}
    for p in pkgs:
        assert p["version"] != "?" and p["license"] != "?", p
        assert f"| {p['name']} | {p['version']} | {p['license']} |" in notice


def test_no_asset_comes_from_outside() -> None:
    """No URL with a host in the pages or our scripts: the UI works on an air-gapped cluster."""
    for f in [*WEB.glob("templates/*.html"), *WEB.glob("static/js/*.js"), WEB / "static" / "app.css"]:
        text = f.read_text(encoding="utf-8")
        assert not re.search(r"(?:src|href|url)\s*[=(]\s*['\"]?(?:https?:)?//", text), f
        assert "@import" not in text and "fonts.googleapis" not in text, f


def test_every_referenced_static_file_exists() -> None:
    refs = set()
    for f in [*WEB.glob("templates/*.html"), *WEB.glob("static/js/*.js")]:
        refs |= set(re.findall(r"/static/([\w./-]+\.(?:js|css))", f.read_text(encoding="utf-8")))
        refs |= {f"js/{m}" for m in re.findall(r"from \"\./([\w-]+\.js)\"", f.read_text(encoding="utf-8"))}
        refs |= set(re.findall(r"from \"\.\./(vendor/[\w-]+\.js)\"", f.read_text(encoding="utf-8")))
    assert refs and all((WEB / "static" / r).is_file() for r in refs), [r for r in refs if not (WEB / "static" / r).is_file()]


def test_pages_link_assets_by_version() -> None:
    """Every page links /static through ``asset()`` (/static/v/<version>/…) and scripts import one another
    relatively: a plain /static/js/x.js beside the versioned one would load common.js twice."""
    for f in WEB.glob("templates/*.html"):
        assert not re.search(r"(?:src|href)=\"/static/", f.read_text(encoding="utf-8")), f
    for f in WEB.glob("static/js/*.js"):
        assert not re.search(r"from \"/static/", f.read_text(encoding="utf-8")), f


def test_no_script_opens_a_native_dialog() -> None:
    """confirm/prompt/alert block the tab, cannot be translated or styled: pages ask through common.js ``ask``
    (the browser tests also fail on any native dialog a flow opens)."""
    for f in WEB.glob("static/js/*.js"):
        text = f.read_text(encoding="utf-8")
        assert not re.search(r"(?<![\w.])(?:window\.)?(?:confirm|prompt|alert)\s*\(", text), f


def test_spec_templates_parse_in_both_languages() -> None:
    for lang in i18n.LANGUAGES:
        texts = spec_templates(lang)
        assert set(texts) == set(NAMES)
        for name, text in texts.items():
            spec = parse_taskspec(load_spec_document(text, "application/yaml"))
            assert not isinstance(spec, list), (lang, name, spec)
        for name, text in spec_templates(lang, "cpu").items():  # the default environment trains on CPU
            spec = parse_taskspec(load_spec_document(text, "application/yaml"))
            assert spec.device == ("cpu" if name.startswith("basic-") else "gpu"), (lang, name)
    zh = spec_templates("zh")["advanced"]
    assert "资源(平台调度与预检查用;仍需要)" in zh and "平台会对 $HOME 做宏替换" in zh
    en_lines = [ln for ln in spec_templates("en")["advanced"].splitlines() if not ln.lstrip().startswith("#")]
    zh_lines = [ln for ln in zh.splitlines() if not ln.lstrip().startswith("#")]
    assert en_lines == zh_lines  # the same spec; only the comments are translated
