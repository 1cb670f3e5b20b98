"""Issue 37 item 7 in a real Chromium against a real ``argus up``: what the Account, Teams and Admin pages are refused
reads in the page's language. In Chinese: a wrong current password, a password rule, a bad SSH key and a webhook with
no URL on the Account page, team rules on the Teams page, a taken user name and a limit the API's schema refuses on
the Admin page — each the API's coded refusal (detail.message_code and each field's code) said with zh.json, none of
its English left; in English the same refusal reads exactly as the API wrote it."""

from __future__ import annotations

import re

import pytest

from tests.web.conftest import Pages, Up, shot, sign_in_with_token, signed_in

pytestmark = [pytest.mark.browser, pytest.mark.e2e]

USER, PASSWORD = "acct37", "acct37-pw-123456789"
CJK = re.compile(r"[\u4e00-\u9fff]")


def _login(pages: Pages, up: Up, lang: str):  # noqa: ANN202
    return signed_in(pages, up, USER, PASSWORD, lang)


def _said(locator, *chinese: str, english: tuple[str, ...]) -> str:  # noqa: ANN001
    """The refusal shown, once it holds every Chinese piece; none of the English pieces is left in it."""
    locator.filter(has_text=chinese[0]).wait_for()
    text = locator.inner_text()
    for piece in chinese:
        assert piece in text, (piece, text)
    for piece in english:
        assert piece not in text, (piece, text)
    return text


def test_account_teams_and_admin_refusals_in_chinese(up: Up, pages: Pages) -> None:
    up.add_user(USER, PASSWORD)

    # Account: a wrong current password, then a new password the rule refuses
    page = _login(pages, up, "zh")
    page.goto(f"{up.url}/account")
    page.wait_for_function("() => document.body.dataset.loaded === '1'")
    page.fill("#pw-current", "not-my-password")
    page.fill("#pw-new", "a new long password")
    page.fill("#pw-repeat", "a new long password")
    page.click("#pw-save")
    _said(page.locator("#pw-status"), "当前密码错误", "current_password: 不是你的当前密码",
          english=("wrong current password", "is not your current password"))
    page.fill("#pw-current", PASSWORD)
    page.fill("#pw-new", "short")
    page.fill("#pw-repeat", "short")
    page.click("#pw-save")
    _said(page.locator("#pw-status"), "密码太短", "password: 必须是至少 8 个字符的字符串",
          english=("password too short", "must be a string"))
    page.fill("#key-text", "ssh-rsa nonsense")
    page.click("#key-add")
    _said(page.locator("#key-status"), "公钥无效", "不是 OpenSSH 公钥", english=("invalid public key",))
    page.wait_for_function("() => document.body.dataset.notifyLoaded === '1'")
    page.click("#notify-add")  # a webhook with no URL
    _said(page.locator("#notify-status"), "通知渠道无效", "target: 请填写 Webhook 的 URL 或电子邮件地址",
          english=("invalid notification channel", "give the webhook's URL"))
    shot(page, "account-refusals-zh")

    # Teams (a site admin): a name that is taken, a weight out of range
    with up.api() as a:
        assert a.post("/api/v2/teams", json={"name": "t37"}).status_code == 201
    admin = pages.new(lang="zh")
    sign_in_with_token(admin, up.url, up.admin_token)
    admin.goto(f"{up.url}/teams")
    admin.locator('#teams-list[data-loaded="1"]').wait_for(state="attached")
    admin.fill("#team-name", "t37")
    admin.click("#team-create-button")
    _said(admin.locator("#teams-error"), "团队 't37' 已存在", "name: 名称已被占用",
          english=("already exists", "is taken"))
    admin.fill("#team-name", "t37b")
    admin.fill("#team-weight", "-1")
    admin.click("#team-create-button")
    _said(admin.locator("#teams-error"), "团队设置无效", "weight: 必须是大于 0 且不超过 1000 的数",
          english=("invalid team settings", "must be a number"))
    assert admin.locator("#team-weight").get_attribute("aria-invalid") == "true"
    card = admin.locator('section.team[data-team="t37"]')
    card.locator("input.add-user").fill("nobody37")
    card.locator("button.add-member-button").click()
    _said(admin.locator("#teams-error"), "没有名为 'nobody37' 的用户", english=("no user named",))
    shot(admin, "teams-refusals-zh")

    # Admin: a user name that is taken, then a limit the API's schema refuses
    admin.goto(f"{up.url}/admin")
    admin.wait_for_function("() => document.body.dataset.loaded === '1'")
    admin.fill("#new-name", USER)
    admin.click("#create-user")
    _said(admin.locator("#admin-error"), f"用户 '{USER}' 已存在", english=("already exists",))
    row = admin.locator(f'tr[data-user="{USER}"]')
    row.locator("input.max-gpus").fill("0")
    row.locator("button.save-limits").click()
    _said(admin.locator("#admin-error"), "请求无效", "max_gpus: 应大于或等于 1",
          english=("request is invalid", "Input should be"))
    shot(admin, "admin-refusals-zh")

    # in English the same refusal reads as the API wrote it
    with up.api() as a:
        detail = a.post("/api/v2/users", json={"name": USER}).json()["detail"]
    en = pages.new(lang="en")
    sign_in_with_token(en, up.url, up.admin_token)
    en.goto(f"{up.url}/admin")
    en.wait_for_function("() => document.body.dataset.loaded === '1'")
    en.fill("#new-name", USER)
    en.click("#create-user")
    en.locator("#admin-error", has_text=detail["message"]).wait_for()
    assert en.locator("#admin-error").inner_text() == detail["message"] == f"user '{USER}' already exists"
    assert not CJK.search(en.locator("#admin-error").inner_text())
