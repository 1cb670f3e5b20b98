"""The UI's two languages: catalogs ``i18n/en.json`` and ``i18n/zh.json`` with the same keys.

The language is the ``argus_lang`` cookie the page's switcher sets (also kept in
localStorage), else the browser's ``Accept-Language``. Templates get ``t(key)``; scripts get
the whole catalog embedded in the page and look keys up with the same names.
tests/web/test_i18n.py fails when a key is missing from one catalog or used nowhere.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

LANGUAGES = ("en", "zh")
DEFAULT = "en"
COOKIE = "argus_lang"
CATALOG_DIR = Path(__file__).parent / "i18n"


@cache
def catalog(lang: str) -> dict[str, str]:
    return json.loads((CATALOG_DIR / f"{lang}.json").read_text(encoding="utf-8"))


def pick_language(cookie: str | None, accept_language: str | None) -> str:
    """The cookie wins; else the first supported language by the header's q-values."""
    if cookie in LANGUAGES:
        return cookie
    ranked: list[tuple[float, int, str]] = []
    for i, part in enumerate((accept_language or "").split(",")):
        tag, _, params = part.strip().partition(";")
        q = 1.0
        if params.strip().startswith("q="):
            try:
                q = float(params.strip()[2:])
            except ValueError:
                q = 0.0
        base = tag.strip().lower().split("-")[0]
        if base in LANGUAGES and q > 0:
            ranked.append((-q, i, base))
    return min(ranked)[2] if ranked else DEFAULT


def translator(lang: str):  # noqa: ANN201 - a plain callable for templates
    cat = catalog(lang)

    def t(key: str) -> str:
        return cat.get(key, key)

    return t
