"""Issue 25, "ADMIN", in a real Chromium against a real ``argus up``: the Admin page (limits and quotas edited in
place with the API's own errors, GPU-hours per user, the audit log paged and filtered, the user-name pattern
valid and equal to the server's rule, no Disable button for oneself), the Nodes page's GPU bars from the tasks'
telemetry, the Account page's current-password field, and the sign-in page telling a disabled account so only
after right credentials."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from argus.core.paths import USER_NAME_RE, DataLayout
from argus.web import i18n
from tests.waiting import wait_until
from tests.web.conftest import PASSWORDS, Pages, Up, shot, sign_in_with_token
from tests.web.test_browser import submit_api

pytestmark = [pytest.mark.browser, pytest.mark.e2e]

NAMES = ["ab", "a", "alice", "a-b_c9", "Ab", "9a", "a b", "a-", "_a", "a" * 32, "a" * 33, "é", "a.b", "a$"]


def _errors_of(page) -> list[str]:  # noqa: ANN001
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    return errors


def test_admin_page_limits_gpu_hours_audit_and_name_pattern(up: Up, pages: Pages) -> None:
    page = pages.new()
    errors = _errors_of(page)
    sign_in_with_token(page, up.url, up.admin_token)
    errors.clear()  # this page's own console from here
    page.goto(f"{up.url}/admin")
    page.wait_for_function("() => document.body.dataset.loaded === '1'")
    page.locator('#audit-table[data-loaded="1"]').wait_for()
    assert errors == [], errors  # the pattern attribute compiles under Chromium's v flag: no console error

    # the user-name pattern: a valid v-flag regex that accepts exactly what the server accepts
    pattern = page.locator("#new-name").get_attribute("pattern")
    for name in NAMES:
        browser_ok = page.evaluate("([p, n]) => new RegExp(`^(?:${p})$`, 'v').test(n)", [pattern, name])
        assert browser_ok == bool(USER_NAME_RE.fullmatch(name)), name
    page.fill("#new-name", "Bad")
    assert page.locator("#new-name").evaluate("e => e.checkValidity()") is False
    page.fill("#new-name", "carol")
    assert page.locator("#new-name").evaluate("e => e.checkValidity()") is True
    page.click("#create-user")
    page.locator('tr[data-user="carol"]').wait_for()
    assert page.locator("#created-name").inner_text() == "carol"

    # no Disable for oneself (the API refuses it too: tests/api/test_account_rules_api.py); others have one
    assert page.locator('tr[data-user="admin"] button.disable').is_disabled()
    assert page.locator('tr[data-user="alice"] button.disable').is_enabled()

    # limits in place: the API's own message for a bad value, shown as it said it
    row = page.locator('tr[data-user="alice"]')
    with up.api() as a:
        said = a.patch("/api/v2/users/alice", json={"max_gpus": 0, "max_running_tasks": None, "quota_bytes": None})
        assert said.status_code == 400
        message = said.json()["detail"]["errors"][0]["message"]
    row.locator("input.max-gpus").fill("0")
    row.locator("button.save-limits").click()
    page.locator("#admin-error", has_text=f"max_gpus: {message}").wait_for()
    assert row.locator("input.max-gpus").get_attribute("aria-invalid") == "true"
    assert row.locator("input.quota").get_attribute("aria-invalid") == "false"
    with up.api() as a:  # text that is no number goes as typed: the API names the problem
        lots = a.patch("/api/v2/users/alice", json={"max_gpus": "lots"}).json()["detail"]["errors"][0]["message"]
    row.locator("input.max-gpus").fill("lots")
    row.locator("button.save-limits").click()
    page.locator("#admin-error", has_text=f"max_gpus: {lots}").wait_for()
    row.locator("input.max-gpus").fill("2")
    row.locator("input.max-running").fill("3")
    row.locator("input.quota").fill("1.5")
    row.locator("button.save-limits").click()
    page.locator("#admin-error").wait_for(state="hidden")
    with up.api() as a:
        alice = next(u for u in a.get("/api/v2/users").json() if u["name"] == "alice")
    assert (alice["max_gpus"], alice["max_running_tasks"], alice["quota_bytes"]) == (2, 3, int(1.5 * 2**30))
    page.locator('tr[data-user="alice"] input.quota[value="1.5"]').wait_for()
    page.locator('tr[data-user="alice"] input.max-gpus').fill("")
    page.locator('tr[data-user="alice"] button.save-limits').click()
    page.locator('tr[data-user="alice"] input.max-gpus[value=""]').wait_for()
    with up.api() as a:
        alice = next(u for u in a.get("/api/v2/users").json() if u["name"] == "alice")
        hours = {r["key"]: r["gpu_hours"] for r in a.get("/api/v2/usage", params={"group_by": "user"}).json()["rows"]}
    assert alice["max_gpus"] is None and alice["max_running_tasks"] == 3
    assert page.locator('tr[data-user="alice"] td.gpu-hours').inner_text() == f"{hours.get('alice', 0):.1f}"
    shot(page, "admin-limits-en")

    # the audit log: newest first, filtered by user (by or about them) and action, paged by the API's cursor
    with up.api() as a:
        for n in range(26):  # more than one page of events
            assert a.patch("/api/v2/users/bob", json={"max_running_tasks": n + 1}).status_code == 200
    page.fill("#audit-actor", "carol")
    page.click("#audit-apply")
    page.wait_for_function("""() => { const rows = [...document.querySelectorAll('#audit-body tr')];
        return rows.length > 0 && rows.every((r) => r.textContent.includes('carol')); }""")
    assert "user.created" in page.locator("#audit-body .audit-action").all_inner_texts()
    page.fill("#audit-actor", "bob")
    page.select_option("#audit-action", "user.limits_changed")
    page.click("#audit-apply")
    page.wait_for_function("() => document.querySelectorAll('#audit-body tr').length === 25")
    assert set(page.locator("#audit-body .audit-action").all_inner_texts()) == {"user.limits_changed"}
    assert "max_running_tasks=[25,26]" in page.locator("#audit-body tr").first.inner_text().replace(" ", "")
    page.click("#audit-more")
    page.wait_for_function("() => document.querySelectorAll('#audit-body tr').length === 26")
    assert page.locator("#audit-more").is_hidden()
    page.select_option("#audit-action", "team.created")
    page.click("#audit-apply")
    page.locator("#audit-empty").wait_for()
    shot(page, "admin-audit-en")
    assert not [e for e in errors if "pattern" in e.lower() or "uncaught" in e.lower()], errors

    # the admin has no password yet (signed in with the token): a first one needs no current one
    page.goto(f"{up.url}/account")
    page.locator("#me-name", has_text="admin").wait_for()
    page.wait_for_function("() => document.getElementById('pw-current').closest('label').hidden")

    # in Chinese: every new label translated (no raw catalog key on the page)
    zh = pages.new(lang="zh")
    sign_in_with_token(zh, up.url, up.admin_token)
    zh.goto(f"{up.url}/admin")
    zh.locator('#audit-table[data-loaded="1"]').wait_for()
    zh.locator('tr[data-user="alice"]').wait_for()
    text = zh.locator("main").inner_text()
    assert "GPU 小时(30 天)" in text and "审计日志" in text
    words = set(text.split())  # a raw key would stand as a word ("admin.token_reset" is an action name)
    assert [k for k in i18n.catalog("en") if k.startswith("admin.") and k in words] == []
    assert zh.locator('tr[data-user="admin"] button.disable').get_attribute("title") == "不能停用自己的账号;请由另一位管理员操作。"
    shot(zh, "admin-zh")


def test_nodes_page_draws_gpu_use_from_telemetry(up: Up, pages: Pages) -> None:
    tid = submit_api(up, "alice", "kind: advanced\nworkload: job\nname: holds a node\nnnodes: 1\nn_gpus_per_node: 0\n"
                                  "command: python3 -m argus.jobs.sleep 600 --lines 2\n")
    try:
        with up.api("alice") as c:
            wait_until(lambda: c.get(f"/api/v2/tasks/{tid}").json()["status"] == "RUNNING", 180, every=0.5,
                       what="the task never ran")
        page = pages.new(user="alice")
        page.goto(f"{up.url}/nodes")
        page.wait_for_function("() => document.body.dataset.loaded === '1'")
        page.locator(".nodes-cpu-only").first.wait_for()  # --gpus 0 and no GPU sample: the page says so

        # the task's driver sampled two GPUs (as NVML would on a GPU node): bars per GPU, memory in use
        path = Path(str(DataLayout.at(str(up.root)).job_dir("alice", tid))) / "telemetry" / "attempt-1.jsonl"
        wait_until(path.exists, 60, every=0.5, what=f"no telemetry file at {path}")
        with path.open("a") as fh:
            fh.write(json.dumps({"t": int(time.time()), "cpu": 0.1, "rss": 1 << 20,
                                 "gpu": [[87, 30720, 250.0], [3, 1024, 60.0]]}) + "\n")
        gpus = page.locator(".nodes-gpu")
        gpus.nth(1).wait_for(timeout=30_000)
        assert gpus.count() == 2 and page.locator(".nodes-gpu-mean").inner_text() == "mean 45 % busy"
        assert gpus.nth(0).locator(".nodes-gpu-label").inner_text() == "87 % · 30.0 GiB"
        assert gpus.nth(1).locator(".nodes-gpu-label").inner_text() == "3 % · 1.0 GiB"
        widths = [g.locator(".nodes-fill").evaluate("e => e.getBoundingClientRect().width / "
                                                    "e.parentElement.getBoundingClientRect().width")
                  for g in gpus.all()]
        assert abs(widths[0] - 0.87) < 0.02 and abs(widths[1] - 0.03) < 0.02, widths
        assert tid in gpus.nth(0).get_attribute("title")  # alice's own task is named
        assert page.locator(".nodes-cpu-only").count() == 0
        shot(page, "nodes-gpu-bars-en")
        other = pages.new(user="bob")  # bob sees the use, not whose task it is
        other.goto(f"{up.url}/nodes")
        other.locator(".nodes-gpu").nth(1).wait_for()
        assert tid not in other.locator(".nodes-gpu").first.get_attribute("title")
    finally:
        with up.api("alice") as c:
            c.post(f"/api/v2/tasks/{tid}/cancel")


def test_account_password_needs_current_and_disabled_sign_in_is_told(up: Up, pages: Pages) -> None:
    page = pages.new(user="alice")
    page.goto(f"{up.url}/account")
    page.locator("#pw-current").wait_for()  # alice has a password: the field shows
    assert "SFTP" in page.locator("#pw-form").locator("xpath=..").inner_text()
    page.fill("#pw-current", "not my password")
    page.fill("#pw-new", "a brand new password")
    page.fill("#pw-repeat", "a brand new password")
    page.click("#pw-save")
    page.locator("#pw-status.error", has_text="current_password: ").wait_for()
    page.fill("#pw-current", PASSWORDS["alice"])
    page.click("#pw-save")
    page.locator("#pw-status.ok").wait_for()
    with up.api("alice") as c:  # back to the module's password, with the current one
        r = c.post("/api/v2/me/password", json={"password": PASSWORDS["alice"], "current_password": "a brand new password"})
        assert r.status_code == 204, r.text

    # a disabled account: a wrong password says "wrong", only the right one says "disabled"
    with up.api() as a:
        assert a.post("/api/v2/users/bob/disable").status_code == 200
    try:
        login = pages.new()
        login.goto(f"{up.url}/login")
        login.fill("#login-user", "bob")
        login.fill("#login-password", "a wrong password")
        login.click("#login-submit")
        login.locator("#login-error", has_text="Wrong user name, password or token.").wait_for()
        login.fill("#login-password", PASSWORDS["bob"])
        login.click("#login-submit")
        login.locator("#login-error", has_text="This account is disabled — ask an administrator.").wait_for()
        login.click('.tab[data-mode="token"]')
        login.fill("#login-token", up.tokens["bob"])
        login.click("#login-submit")
        login.locator("#login-error", has_text="disabled").wait_for()
        assert login.url.startswith(f"{up.url}/login")
        shot(login, "login-disabled-en")
        zh = pages.new(lang="zh")
        zh.goto(f"{up.url}/login")
        zh.fill("#login-user", "bob")
        zh.fill("#login-password", PASSWORDS["bob"])
        zh.click("#login-submit")
        zh.locator("#login-error", has_text="该账号已停用").wait_for()
    finally:
        with up.api() as a:
            assert a.post("/api/v2/users/bob/enable").status_code == 200
