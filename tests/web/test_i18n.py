"""Both catalogs have the same keys, every key is used, every used key exists (issue 12)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from argus.core import messages
from argus.core.failures import FailureKind
from argus.core.states import TaskStatus
from argus.web import i18n

WEB = Path(i18n.__file__).parent
# t('key') / t("key") in templates and scripts; title_key="key" in the page routes
USE = re.compile(r"""\bt\(\s*['"]([a-z_]+\.[A-Za-z_]+)['"]|title_key=['"]([a-z_]+\.[A-Za-z_]+)['"]""")


def used_keys() -> set[str]:
    files = [*WEB.glob("templates/*.html"), *WEB.glob("static/js/*.js"), WEB / "pages.py"]
    found = {a or b for f in files for a, b in USE.findall(f.read_text(encoding="utf-8"))}
    js = (WEB / "static/js/common.js").read_text(encoding="utf-8")
    found |= set(re.findall(r'"(status\.[A-Z]+)"', js))  # the status badge's table
    # server messages (issue 37): static/js/messages.js looks up msg.<code> for every code the server sends
    found |= {f"msg.{code}" for code in messages.EN}
    found |= {f"msg.{messages.FAILURE_PREFIX}{kind.value}" for kind in FailureKind}
    found |= {f"failure_kind.{kind.value}" for kind in FailureKind}  # messages.js failureKind: the kind's name
    return found


def test_catalogs_have_the_same_keys() -> None:
    en, zh = i18n.catalog("en"), i18n.catalog("zh")
    assert sorted(set(en) - set(zh)) == [], "missing in zh.json"
    assert sorted(set(zh) - set(en)) == [], "missing in en.json"
    assert all(v.strip() for v in [*en.values(), *zh.values()])


def test_every_used_key_exists_and_every_key_is_used() -> None:
    used, keys = used_keys(), set(i18n.catalog("en"))
    assert sorted(used - keys) == [], "used but not in the catalogs"
    assert sorted(keys - used) == [], "in the catalogs but used nowhere"


def test_every_status_has_a_label() -> None:
    for lang in i18n.LANGUAGES:
        assert {f"status.{s}" for s in TaskStatus.__members__} <= set(i18n.catalog(lang))


def test_chinese_catalog_is_chinese() -> None:
    zh = i18n.catalog("zh")
    assert re.search(r"[\u4e00-\u9fff]", zh["nav.tasks"]) and re.search(r"[\u4e00-\u9fff]", zh["new.check"])


def test_placeholders_match_between_languages() -> None:
    en, zh = i18n.catalog("en"), i18n.catalog("zh")
    for k in en:
        assert set(re.findall(r"\{\w+\}", en[k])) == set(re.findall(r"\{\w+\}", zh[k])), k


def test_language_choice() -> None:
    pick = i18n.pick_language
    assert pick(None, "zh-CN,zh;q=0.9,en;q=0.8") == "zh"
    assert pick(None, "en-US,en;q=0.9,zh;q=0.8") == "en"
    assert pick(None, "fr-FR, zh;q=0.5") == "zh"
    assert pick(None, "fr-FR") == "en"
    assert pick(None, None) == "en"
    assert pick(None, "zh;q=0, en;q=0.1") == "en"
    assert pick("zh", "en") == "zh"  # the switcher's cookie wins
    assert pick("xx", "zh") == "zh"  # a bad cookie is ignored


def test_catalogs_are_valid_json_objects_of_strings() -> None:
    for lang in i18n.LANGUAGES:
        data = json.loads((WEB / "i18n" / f"{lang}.json").read_text(encoding="utf-8"))
        assert all(isinstance(v, str) for v in data.values())
