"""Issue 37 item 9 and item 3's second half, in a real Chromium against a real ``argus up``: no native
confirm/prompt/alert on any flow (an in-page dialog: Esc cancels, Enter confirms, focus stays inside, in the
page's language), a Copy button for a new API token, the admin queue paged by the server, each node's CPU and
memory with a half-hour sparkline, Data rows offering only what the server allows (a team's folder, the shared
areas' roots), and static files sent compressed and cached for good."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from argus.core.paths import DataLayout
from tests.waiting import wait_until
from tests.web.conftest import PASSWORDS, Pages, Up, answer, shot, sign_in_with_token
from tests.web.test_browser import submit_api

pytestmark = [pytest.mark.browser, pytest.mark.e2e]

QUEUED = "kind: advanced\nworkload: job\nnnodes: 1\nn_gpus_per_node: 1\nname: waits-{}\ncommand: python3 -m argus.jobs.sleep 1\n"


def _user(up: Up, name: str) -> None:
    if name not in up.tokens:
        PASSWORDS[name] = f"{name}-pw-1234567"
        up.add_user(name, PASSWORDS[name])


def _no_native_dialogs(page) -> list[str]:  # noqa: ANN001
    """Every native dialog the page opens (none may): recorded and dismissed."""
    opened: list[str] = []

    def on(d) -> None:  # noqa: ANN001
        opened.append(f"{d.type}: {d.message}")
        d.dismiss()

    page.on("dialog", on)
    return opened


def test_in_page_dialogs_replace_native_ones(up: Up, pages: Pages) -> None:
    _user(up, "dina")
    page = pages.new(user="dina")
    opened = _no_native_dialogs(page)
    page.goto(f"{up.url}/data?path=%2Fcode")
    page.wait_for_function("() => document.body.dataset.loaded === '/code'")

    # New folder: a prompt in the page, focus in its field; Esc cancels (nothing made)
    page.click("#mkdir")
    dlg = page.locator("dialog.argus-dialog[open]")
    dlg.wait_for()
    assert dlg.get_attribute("data-kind") == "prompt"
    assert page.evaluate("document.activeElement.classList.contains('dialog-input')")
    for _ in range(5):  # Tab never leaves the dialog
        page.keyboard.press("Tab")
        assert page.evaluate("!!document.activeElement.closest('dialog.argus-dialog')")
    page.keyboard.press("Escape")
    dlg.wait_for(state="detached")
    assert page.evaluate("document.activeElement.id") == "mkdir"  # focus back where it was
    assert not (Path(str(DataLayout.at(str(up.root)).home("dina"))) / "code" / "kept").exists()
    # ... Enter confirms what was typed
    page.click("#mkdir")
    dlg.wait_for()
    dlg.locator(".dialog-input").fill("kept")
    page.keyboard.press("Enter")
    page.locator('#files-body tr[data-name="kept"]').wait_for()
    # Delete asks in the page; Cancel keeps it, OK deletes
    page.click('#files-body tr[data-name="kept"] .delete')
    assert "kept" in answer(page, accept=False)
    assert page.locator('#files-body tr[data-name="kept"]').count() == 1
    page.click('#files-body tr[data-name="kept"] .delete')
    dlg.wait_for()
    assert page.evaluate("document.activeElement.classList.contains('dialog-ok')")
    page.keyboard.press("Enter")
    page.locator('#files-body tr[data-name="kept"]').wait_for(state="detached")

    # the task page's Cancel: the question in the page, the API's refusal in the page too
    tid = submit_api(up, "dina", QUEUED.format("cancel"))
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{up.url}/tasks/{tid}")
    page.locator("#t-status [data-status]").wait_for()
    assert page.locator("#t-status [data-status]").get_attribute("data-status") == "QUEUED", errors
    page.click("#cancel")
    page.locator("dialog.argus-dialog[open]").wait_for()
    shot(page, "dialog-confirm-en")
    page.keyboard.press("Escape")
    page.locator("dialog.argus-dialog").wait_for(state="detached")
    assert page.locator('#t-status [data-status="QUEUED"]').count() == 1
    page.click("#cancel")
    answer(page)
    page.locator('#t-status [data-status="CANCELED"]').wait_for()
    assert opened == [], opened

    # in Chinese: the dialog's buttons and question are translated
    zh = pages.new(lang="zh", user="dina")
    zh_opened = _no_native_dialogs(zh)
    zh.goto(f"{up.url}/data?path=%2Fcode")
    zh.wait_for_function("() => document.body.dataset.loaded === '/code'")
    zh.click("#mkdir")
    d = zh.locator("dialog.argus-dialog[open]")
    d.wait_for()
    assert d.locator(".dialog-ok").inner_text() == "确定" and d.locator(".dialog-cancel").inner_text() == "取消"
    assert re.search(r"[\u4e00-\u9fff]", d.locator(".dialog-message").inner_text())
    shot(zh, "dialog-prompt-zh")
    zh.keyboard.press("Escape")
    assert zh_opened == [], zh_opened


def test_a_new_token_has_a_copy_button(up: Up, pages: Pages) -> None:
    _user(up, "tomas")
    page = pages.new(user="tomas")
    opened = _no_native_dialogs(page)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=up.url)
    page.goto(f"{up.url}/account")
    page.wait_for_function("() => document.body.dataset.loaded === '1'")
    page.fill("#token-label", "laptop")
    page.click("#token-create")
    page.locator("#token-secret-box").wait_for()
    secret = page.locator("#token-secret").inner_text()
    page.click("#token-copy")
    page.locator("#token-copied", has_text="Copied").wait_for()
    assert page.evaluate("navigator.clipboard.readText()") == secret
    shot(page, "account-token-copied-en")
    # revoking it asks in the page
    page.locator("#tokens-body tr", has_text="laptop").locator(".token-revoke").click()
    answer(page)
    page.locator("#tokens-body tr", has_text="laptop").locator(".token-revoke").wait_for(state="detached")
    assert opened == [], opened


def test_admin_queue_is_paged_by_the_server(up: Up, pages: Pages) -> None:
    _user(up, "quinn")
    mine = [submit_api(up, "quinn", QUEUED.format(k)) for k in range(30)]
    try:
        page = pages.new()
        opened = _no_native_dialogs(page)
        sign_in_with_token(page, up.url, up.admin_token)
        page.goto(f"{up.url}/admin")
        page.locator("#aq-pager").wait_for()
        assert page.locator("#aq-range").inner_text().startswith("1–25 of ")
        assert page.locator("#aq-body tr").count() == 25 and page.locator("#aq-prev").is_disabled()
        seen: list[str] = []
        while True:
            rows = page.locator("#aq-body tr")
            assert 0 < rows.count() <= 25
            seen += [rows.nth(i).get_attribute("data-task") for i in range(rows.count())]
            if page.locator("#aq-next").is_disabled():
                break
            offset = page.locator("#aq-table").get_attribute("data-offset")
            page.click("#aq-next")
            page.wait_for_function(f"() => document.querySelector('#aq-table').dataset.offset !== '{offset}'")
        assert len(seen) == len(set(seen)) and set(mine) <= set(seen)  # every task on one page, none twice
        total = int(page.locator("#aq-range").inner_text().split(" of ")[1])
        assert total >= 30 and seen[-1] and page.locator("#aq-range").inner_text().endswith(f"–{total} of {total}")
        shot(page, "admin-queue-paged-en")
        page.click("#aq-prev")
        page.wait_for_function("() => Number(document.querySelector('#aq-table').dataset.offset) < "
                               f"{max(25, (total - 1) // 25 * 25)}")
        assert opened == [], opened
    finally:
        with up.api("quinn") as c:
            for tid in mine:
                c.post(f"/api/v2/tasks/{tid}/cancel")


def test_nodes_page_shows_cpu_and_memory_with_history(up: Up, pages: Pages) -> None:
    tid = submit_api(up, "alice", "kind: advanced\nworkload: job\nname: uses cpu\nnnodes: 1\nn_gpus_per_node: 0\n"
                                  "command: python3 -m argus.jobs.sleep 600 --lines 2\n")
    try:
        with up.api("alice") as c:
            wait_until(lambda: c.get(f"/api/v2/tasks/{tid}").json()["status"] == "RUNNING", 180, every=0.5,
                       what="the task never ran")
        path = Path(str(DataLayout.at(str(up.root)).job_dir("alice", tid))) / "telemetry" / "attempt-1.jsonl"
        wait_until(path.exists, 60, every=0.5, what=f"no telemetry file at {path}")
        now = int(time.time())
        with path.open("a") as fh:  # what the driver wrote over the last minutes (as on a busy node)
            for back in (600, 300, 120):
                fh.write(json.dumps({"t": now - back, "cpu": 1.5, "rss": 3 << 30}) + "\n")
        page = pages.new(user="bob")  # anyone sees the figures (no task named)
        page.goto(f"{up.url}/nodes")
        page.wait_for_function("() => document.body.dataset.loaded === '1'")
        cell = page.locator(".nodes-cpumem").first
        cell.wait_for(timeout=30_000)
        page.wait_for_function("() => Number(document.querySelector('.nodes-spark.cpu').dataset.points) >= 3",
                               timeout=30_000)
        assert re.fullmatch(r"\d+\.\d cores( \(\d+ %\))?", cell.locator(".nodes-cpu .nodes-use-val").inner_text())
        assert re.fullmatch(r"[\d.]+ (KiB|MiB|GiB)( \(\d+ %\))?", cell.locator(".nodes-mem .nodes-use-val").inner_text())
        assert page.locator(".nodes-spark.mem polyline").count() >= 1
        shot(page, "nodes-cpu-mem-en")
        zh = pages.new(lang="zh", user="bob")
        zh.goto(f"{up.url}/nodes")
        zh.locator(".nodes-cpumem").first.wait_for(timeout=30_000)
        assert "内存" in zh.locator(".nodes-cpumem").first.inner_text()
    finally:
        with up.api("alice") as c:
            c.post(f"/api/v2/tasks/{tid}/cancel")


def test_data_rows_offer_only_what_the_server_allows(up: Up, pages: Pages) -> None:
    _user(up, "tess")
    with up.api() as a:
        r = a.post("/api/v2/teams", json={"name": "polish"})
        assert r.status_code in (201, 409), r.text
        r = a.post("/api/v2/teams/polish/members", json={"user": "tess"})
        assert r.status_code in (201, 409), r.text
    with up.api("tess") as c:
        assert c.put("/api/v2/files/content", params={"path": "/teams/polish/notes.txt"}, content=b"x").status_code == 201
    page = pages.new(user="tess")
    page.goto(f"{up.url}/data?path=%2Fteams")
    page.wait_for_function("() => document.body.dataset.loaded === '/teams'")
    row = page.locator('#files-body tr[data-name="polish"]')
    row.wait_for()
    assert row.locator(".rename").count() == 0 and row.locator(".delete").count() == 0  # the server refuses both
    page.goto(f"{up.url}/data?path=%2Fteams%2Fpolish")
    page.wait_for_function("() => document.body.dataset.loaded === '/teams/polish'")
    inside = page.locator('#files-body tr[data-name="notes.txt"]')
    inside.wait_for()
    assert inside.locator(".rename").count() == 1 and inside.locator(".delete").count() == 1
    admin = pages.new()  # an admin may write inside /common/datasets, not rename or delete the area itself
    sign_in_with_token(admin, up.url, up.admin_token)
    admin.goto(f"{up.url}/data?path=%2Fcommon")
    admin.wait_for_function("() => document.body.dataset.loaded === '/common'")
    ds = admin.locator('#files-body tr[data-name="datasets"]')
    ds.wait_for()
    assert ds.locator(".rename").count() == 0 and ds.locator(".delete").count() == 0


def test_static_files_go_out_compressed_and_immutable(up: Up, pages: Pages) -> None:
    page = pages.new(user="alice")
    with page.expect_response(lambda r: r.url.endswith("/vendor/editor.js")) as got:
        page.goto(f"{up.url}/tasks/new")
    r = got.value
    assert "/static/v/" in r.url, r.url
    headers = r.all_headers()
    assert headers.get("content-encoding") in ("gzip", "br"), headers
    assert headers.get("cache-control") == "public, max-age=31536000, immutable", headers
    size = int(headers["content-length"])
    raw = (Path(__file__).resolve().parents[2] / "src/argus/web/static/vendor/editor.js").stat().st_size
    print(f"\neditor.js: {raw} bytes on disk, {size} bytes sent ({headers['content-encoding']})")
    assert size < raw // 2
    page.locator("#editor .cm-content").wait_for()  # and the page works from it
