"""The WebUI in a real Chromium against a real ``argus up`` (issue 12, "How it is checked").

One server for the module (tests/web/conftest.py). Each test reads as what a user does in the
browser; the API is used only to set things up (users, uploads) and to check what the page did.
"""

from __future__ import annotations

import re
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from argus.web.templates_catalog import spec_templates
from tests.waiting import wait_until
from tests.web.conftest import Pages, Up, answer, shot, sign_in, sign_in_with_token

pytestmark = [pytest.mark.browser, pytest.mark.e2e]

DOCTOR = ("kind: advanced\nworkload: job\nname: doctor\nnnodes: 1\nn_gpus_per_node: 0\n"
          "command: python3 -m argus.jobs.doctor --home $HOME --shared $HOME/common/datasets --shared $HOME/common/hf\n")
HOSTILE = '<script>window.__xss=1</script><img src=x onerror="window.__xss=2">'


def set_editor(page, text: str) -> None:  # noqa: ANN001
    """Replace the editor's text as a user pasting it would."""
    page.click("#editor .cm-content")
    page.keyboard.press("Control+a")
    page.keyboard.press("Delete")
    page.keyboard.insert_text(text)


def submit_api(up: Up, user: str, body: str) -> str:
    with up.api(user) as c:
        r = c.post("/api/v2/tasks", content=body, headers={"Content-Type": "application/yaml"})
        assert r.status_code == 201, r.text
        return r.json()["task_id"]


def test_sign_in_with_password_lists_my_tasks(up: Up, pages: Pages) -> None:
    tid = submit_api(up, "alice", DOCTOR.replace("name: doctor", "name: listed"))
    page = pages.new(user="alice")
    row = page.locator(f'tr[data-task="{tid}"]')
    row.wait_for()
    assert "listed" in row.inner_text() and "0 × 0" not in row.inner_text()
    assert "1 × 0" in row.inner_text()
    assert page.locator("#who").inner_text().startswith("alice")
    cookies = {c["name"]: c for c in page.context.cookies()}
    assert cookies["argus_session"]["httpOnly"] and cookies["argus_session"]["sameSite"] == "Strict"
    assert page.evaluate("document.cookie").find("argus_session") < 0
    later = submit_api(up, "alice", DOCTOR.replace("name: doctor", "name: arrives later"))
    page.locator(f'tr[data-task="{later}"]').wait_for(timeout=15_000)  # the list refreshed by itself
    assert page.locator("#tasks-body tr").first.get_attribute("data-task") == later  # newest first
    shot(page, "tasks-en")
    page.click("#sign-out")
    page.wait_for_url(re.compile(r".*/login.*"))
    page.goto(f"{up.url}/tasks")
    assert "/login?next=%2Ftasks" in page.url


def test_signed_out_page_requests_redirect_to_sign_in(up: Up, pages: Pages) -> None:
    page = pages.new()
    for path in ("/tasks", "/tasks/new", "/tasks/job-000001"):
        page.goto(f"{up.url}{path}")
        assert page.url.startswith(f"{up.url}/login?next="), page.url
    shot(page, "login-en")
    page.fill("#login-user", "alice")
    page.fill("#login-password", "wrong")
    page.click("#login-submit")
    page.locator("#login-error").wait_for()
    page.fill("#login-password", "alice-pw-1234567")
    page.click("#login-submit")
    page.wait_for_url(f"{up.url}/tasks/job-000001")  # back where the user wanted to go


def test_sign_in_with_api_token(up: Up, pages: Pages) -> None:
    page = pages.new()
    sign_in_with_token(page, up.url, up.tokens["bob"])
    assert page.locator("#who").inner_text() == "bob"


def test_typo_in_advanced_template_shows_verls_did_you_mean_at_its_line(up: Up, pages: Pages) -> None:
    page = pages.new(user="alice")
    page.goto(f"{up.url}/tasks/new")
    page.click('[data-template="advanced"]')
    text = spec_templates("en")["advanced"].replace("data.train_batch_size=16", "data.train_batch_sz=16")
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if "data.train_batch_sz=16" in ln)
    set_editor(page, text)  # no click: the page checks by itself once typing pauses
    item = page.locator("#errors li", has_text="did you mean")
    item.first.wait_for(timeout=60_000)
    assert item.first.get_attribute("data-line") == str(line), item.first.inner_text()
    assert "data.train_batch_size" in item.first.inner_text()
    # the editor marks that very line
    page.locator(".cm-lintRange-error", has_text="data.train_batch_sz=16").wait_for()
    shot(page, "new-task-typo-en")
    with up.api("alice") as c:  # a check queues nothing
        assert all("advanced" not in (t["name"] or "") for t in c.get("/api/v2/tasks").json()["items"])


def test_doctor_job_log_arrives_live_and_status_reaches_succeeded_without_reload(up: Up, pages: Pages) -> None:
    page = pages.new(user="alice")
    page.goto(f"{up.url}/tasks/new")
    set_editor(page, DOCTOR)
    page.click("#check")
    page.locator("#ok").wait_for(timeout=60_000)
    page.click("#submit")
    page.wait_for_url(re.compile(rf"{re.escape(up.url)}/tasks/job-[0-9-]+$"))
    page.evaluate("window.__sameDocument = true")
    page.locator("#log .ln").first.wait_for(timeout=120_000)
    page.locator('#t-status [data-status="SUCCEEDED"]').wait_for(timeout=180_000)
    assert page.evaluate("window.__sameDocument") is True  # no reload happened
    log = page.locator("#log").inner_text()
    assert "doctor" in log.lower(), log[:2000]
    shot(page, "task-doctor-en")
    page.click('#tabs [data-tab="events"]')
    page.locator("#events li").nth(2).wait_for()
    page.click('#tabs [data-tab="spec"]')
    page.locator("#spec", has_text="argus.jobs.doctor").wait_for()
    page.click('#spec-tabs [data-spec="command_expanded"]')
    assert "$HOME" not in page.locator("#spec").inner_text()
    tid = page.url.rsplit("/", 1)[1]
    with up.api("alice") as c:
        created = c.get(f"/api/v2/tasks/{tid}").json()["created_at"]
    local = datetime.fromisoformat(created).astimezone(ZoneInfo("Asia/Shanghai"))  # the browser's zone
    assert f"{local:%H:%M:%S}" in page.locator("#s-created").inner_text() or \
        f"{local:%I:%M:%S}" in page.locator("#s-created").inner_text()
    download = page.locator("#download").get_attribute("href")
    got = page.request.get(up.url + download)  # the session cookie is enough to download
    assert got.ok and "doctor: all essential checks passed" in got.text()
    page.click("#clone")
    page.wait_for_url(f"{up.url}/tasks/new?clone={tid}")
    page.locator("#editor .cm-content", has_text="argus.jobs.doctor").wait_for()


def _tiny_inputs(up: Up, tmp: Path) -> None:
    subprocess.run([sys.executable, "scripts/smoke_tiny.py", str(tmp)], check=True, capture_output=True,
                   cwd=Path(__file__).resolve().parents[2])
    uploads = [(p, f"/models/tiny/{p.name}") for p in sorted((tmp / "model").iterdir())]
    uploads += [(tmp / "gsm8k" / n, f"/datasets/gsm8k/{n}") for n in ("train.parquet", "test.parquet")]
    with up.api("alice") as c:
        for folder in ("/models/tiny", "/datasets/gsm8k"):
            r = c.post("/api/v2/files/mkdir", json={"path": folder, "parents": True})
            assert r.status_code in (201, 409), r.text
        for src, dst in uploads:
            r = c.put("/api/v2/files/content", params={"path": dst}, content=src.read_bytes())
            assert r.status_code in (200, 201, 204), r.text


def test_basic_grpo_waits_for_gpus_and_a_queued_task_is_canceled(up: Up, pages: Pages, tmp_path: Path) -> None:
    _tiny_inputs(up, tmp_path)
    page = pages.new(user="alice")
    page.goto(f"{up.url}/tasks/new")
    page.click('[data-template="basic-grpo"]')
    page.click("#check")
    page.locator("#ok").wait_for(timeout=90_000)
    page.click("#submit")
    page.wait_for_url(re.compile(rf"{re.escape(up.url)}/tasks/grpo-[0-9-]+$"))
    page.locator("#s-message", has_text="GPU").wait_for(timeout=30_000)
    assert page.locator('#t-status [data-status="QUEUED"]').count() == 1
    shot(page, "task-queued-en")
    page.click("#cancel")
    answer(page, accept=False)  # "no": nothing happens
    assert page.locator('#t-status [data-status="QUEUED"]').count() == 1
    page.click("#cancel")
    answer(page)
    page.locator('#t-status [data-status="CANCELED"]').wait_for()
    assert page.locator("#cancel").is_hidden()


def test_chinese_ui(up: Up, pages: Pages) -> None:
    tid = submit_api(up, "alice", DOCTOR.replace("name: doctor", "name: 中文界面"))
    page = pages.new(lang="zh")
    page.goto(f"{up.url}/login")
    assert page.locator("h1").inner_text() == "登录"
    shot(page, "login-zh")
    sign_in(page, up, "alice")
    assert page.locator("nav a").all_inner_texts() == ["任务", "新建任务", "数据", "节点", "扫描", "流水线", "模型", "环境",
                                                       "团队", "账户"]
    assert page.locator("th").first.inner_text() == "ID"
    page.locator("#tasks-body tr").first.wait_for()
    shot(page, "tasks-zh")
    page.goto(f"{up.url}/tasks/new")
    assert page.locator("#check").inner_text() == "检查"
    page.click('[data-template="advanced"]')
    assert "资源(平台调度与预检查用;仍需要)" in page.locator("#editor .cm-content").inner_text()
    shot(page, "new-task-zh")
    page.goto(f"{up.url}/tasks/{tid}")
    page.locator("#t-status .badge").wait_for()
    assert page.locator('[data-tab="log"]').inner_text() == "日志"
    shot(page, "task-zh")
    resp = page.goto(f"{up.url}/tasks/job-00000000-0000")
    assert resp is not None and resp.status == 404 and page.locator("#not-found h1").inner_text() == "未找到"
    shot(page, "not-found-zh")
    # switch to English: remembered across pages
    with page.expect_navigation():  # the switcher reloads the page in the new language
        page.select_option("#lang-switch", "en")
    assert page.locator("#not-found h1").inner_text() == "Not found"
    page.goto(f"{up.url}/tasks")
    assert page.locator("nav a").all_inner_texts() == ["Tasks", "New task", "Data", "Nodes", "Sweeps", "Pipelines",
                                                       "Models", "Environments", "Teams", "Account"]


def test_bob_cannot_open_alices_task(up: Up, pages: Pages) -> None:
    tid = submit_api(up, "alice", DOCTOR)
    page = pages.new(user="bob")
    resp = page.goto(f"{up.url}/tasks/{tid}")
    assert resp is not None and resp.status == 404
    assert page.locator("#not-found h1").inner_text() == "Not found"
    assert "Traceback" not in page.content()
    shot(page, "not-found-en")
    page.goto(f"{up.url}/tasks/new?clone={tid}")
    page.locator("#check-state", has_text=tid).wait_for()
    assert "doctor" not in page.locator("#editor .cm-content").inner_text()


def test_hostile_names_and_log_lines_are_shown_as_text(up: Up, pages: Pages) -> None:
    name = HOSTILE.replace('"', "'")
    body = ("kind: advanced\nworkload: job\nnnodes: 1\nn_gpus_per_node: 1\n"
            f"name: \"{name}\"\ncommand: python3 -m argus.jobs.sleep 1\n")
    tid = submit_api(up, "alice", body)  # waits for a GPU: its log is written below as a task would
    log = up.root / "users" / "alice" / "jobs" / tid / "logs" / "attempt-1.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    metric_lines = [f"step:{s} - critic/score/mean:{s / 10} - actor/entropy:{1 - s / 20}" for s in range(1, 8)]
    log.write_text(f"{HOSTILE}\n" + "\n".join(metric_lines) + "\n")
    with up.api("alice") as c:  # ended: the page shows its log (a task still in its first wait shows why it waits)
        assert c.post(f"/api/v2/tasks/{tid}/cancel").status_code == 200
    page = pages.new(user="alice")
    page.locator(f'tr[data-task="{tid}"] td.name').wait_for()
    assert page.locator(f'tr[data-task="{tid}"] td.name').inner_text() == name
    page.goto(f"{up.url}/tasks/{tid}")
    page.locator("#log .ln", has_text="<script>").wait_for()
    assert page.locator("#t-name").inner_text() == name
    assert page.evaluate("window.__xss") is None
    assert page.locator("#log script, #log img, td script").count() == 0
    # the same log's verl metric lines become a chart with one point per step
    page.click('#tabs [data-tab="metrics"]')
    chart = page.locator('figure.chart[data-key="critic/score/mean"]')
    chart.wait_for()
    assert chart.get_attribute("data-points") == "7"
    assert page.locator("figure.chart canvas").count() >= 1
    shot(page, "task-metrics-en")


def test_search_finds_a_task_by_name_and_by_id(up: Up, pages: Pages) -> None:
    body = "kind: advanced\nworkload: job\nnnodes: 1\nn_gpus_per_node: 1\nname: {}\ncommand: python3 -m argus.jobs.sleep 1\n"
    wanted = submit_api(up, "alice", body.format("needle-run 50%_off"))
    other = submit_api(up, "alice", body.format("haystack"))
    page = pages.new(user="alice")
    page.locator(f'tr[data-task="{other}"]').wait_for()
    page.fill("#f-q", "NEEDLE-run 50%_")  # any case; % and _ are letters here, not wildcards
    page.locator(f'tr[data-task="{other}"]').wait_for(state="detached")
    assert page.locator("#tasks-body tr").count() == 1
    assert page.locator(f'tr[data-task="{wanted}"]').count() == 1
    assert "q=NEEDLE" in page.url
    page.fill("#f-q", other[:-1])  # an id prefix
    page.locator(f'tr[data-task="{other}"]').wait_for()
    with up.api("alice") as c:
        for tid in (wanted, other):
            assert c.post(f"/api/v2/tasks/{tid}/cancel").status_code == 200


def test_a_cross_site_post_is_refused(up: Up, pages: Pages) -> None:
    page = pages.new(user="alice")
    with up.api("alice") as c:
        before = c.get("/api/v2/tasks").json()["total"]
    evil = "http://evil.example/"
    form = (f'<form id=f method=post action="{up.url}/api/v2/tasks" enctype="text/plain">'
            f'<input name="kind: advanced\nworkload: job\nnnodes: 1\nn_gpus_per_node: 0\ncommand: python3 -m argus.jobs.sleep 0\n#" value="">'
            "</form><script>document.getElementById('f').submit()</script>")
    page.route(evil, lambda route: route.fulfill(status=200, content_type="text/html", body=form))
    with page.expect_navigation(url=re.compile(re.escape(up.url) + ".*")) as nav:
        page.goto(evil)
    resp = nav.value
    assert resp is not None and resp.status in (401, 403), resp.status
    with up.api("alice") as c:
        assert c.get("/api/v2/tasks").json()["total"] == before
    pages.requests[:] = [u for u in pages.requests if not u.startswith(evil)]  # the test's own fake site


def test_a_big_log_opens_at_its_end_and_keeps_a_bounded_window(up: Up, pages: Pages) -> None:
    tid = submit_api(up, "alice", "kind: advanced\nworkload: job\nnnodes: 1\nn_gpus_per_node: 0\n"
                                  "command: python3 -m argus.jobs.sleep 600\n")
    log = up.root / "users" / "alice" / "jobs" / tid / "logs" / "attempt-1.log"
    with up.api("alice") as c:  # running: its log is followed live (lines are added below as the task would)
        wait_until(lambda: c.get(f"/api/v2/tasks/{tid}").json()["status"] == "RUNNING" and log.exists(), 180,
                   every=0.5, what=f"{tid} running with a log")
    try:
        pad = "x" * 90
        with log.open("a") as f:
            f.write("".join(f"first {i} {pad}\n" for i in range(6000)))  # ~600 KB: more than the page loads
        page = pages.new(user="alice")
        page.goto(f"{up.url}/tasks/{tid}")
        page.locator("#log .ln", has_text="first 5999 ").wait_for()
        assert page.locator("#log-trimmed").is_visible()
        assert page.locator("#log .ln", has_text="first 0 ").count() == 0
        with log.open("a") as f:  # the task writes on: followed live, older lines leave the page
            f.write("".join(f"more {i} {pad}\n" for i in range(8000)))
        page.locator("#log .ln", has_text="more 7999 ").wait_for()
        # at most 5000 lines stay (whole received ranges leave: static/js/logpane.js); scrolling up brings them back
        assert 4000 <= page.locator("#log .ln").count() <= 5000
        assert page.locator("#log .ln").first.inner_text().startswith("more ")
    finally:
        with up.api("alice") as c:
            assert c.post(f"/api/v2/tasks/{tid}/cancel").status_code == 200


def test_admin_sees_every_users_tasks_and_filters_by_user(up: Up, pages: Pages) -> None:
    mine, theirs = submit_api(up, "alice", DOCTOR), submit_api(up, "bob", DOCTOR)
    page = pages.new()
    sign_in_with_token(page, up.url, up.admin_token)
    page.locator(f'tr[data-task="{mine}"]').wait_for()
    assert page.locator(f'tr[data-task="{theirs}"]').count() == 1
    page.fill("#f-user", "bob")
    page.press("#f-user", "Enter")
    page.locator(f'tr[data-task="{mine}"]').wait_for(state="detached")
    assert page.locator(f'tr[data-task="{theirs}"]').count() == 1
    assert "user=bob" in page.url
    shot(page, "tasks-admin-en")
    with up.api("bob") as c:  # and bob, no admin, does not get a user filter at all
        assert c.get("/api/v2/tasks", params={"user": "alice"}).json()["total"] == c.get("/api/v2/tasks").json()["total"]


def test_a_queued_task_shows_its_place_and_a_running_one_its_progress(up: Up, pages: Pages) -> None:
    """Issue 24: the list's line for a queued row, the task page's queue block and progress block."""
    gpu = submit_api(up, "alice", "kind: advanced\nworkload: job\nname: wants a GPU\nnnodes: 1\nn_gpus_per_node: 1\n"
                                  "command: python3 -m argus.jobs.sleep 1\n")
    steps = submit_api(up, "alice", "kind: advanced\nworkload: job\nname: counts steps\nnnodes: 1\nn_gpus_per_node: 0\n"
                                    "command: python3 -m argus.jobs.steps trainer.total_training_steps=60 "
                                    "step_seconds=1 trainer.save_freq=0\n")
    try:
        page = pages.new(user="alice")
        line = page.locator(f'tr[data-task="{gpu}"] .queue')
        line.wait_for()
        assert line.inner_text() == "#1 in the queue · start unknown"  # 0 GPUs in this cluster
        page.goto(f"{up.url}/tasks/{gpu}")
        page.locator("#queue-block").wait_for()
        assert page.locator("#q-position").inner_text() == "1 of 1 queued tasks competing for GPUs"
        assert page.locator("#q-eta").inner_text() == "unknown"
        assert "cannot hold this task even when empty" in page.locator("#q-reason").inner_text()
        assert page.locator("#progress-block").is_hidden()
        zh = pages.new(lang="zh", user="alice")  # the reason is a code: said in the page's language (issue 37)
        zh.goto(f"{up.url}/tasks/{gpu}")
        zh.locator("#q-reason", has_text="集群即使全空也放不下这个任务").wait_for()
        page.goto(f"{up.url}/tasks/{steps}")
        page.locator("#p-step", has_text=re.compile(r"^\d+ / 60$")).wait_for(timeout=120_000)
        page.locator("#p-eta-end", has_text="(in").wait_for(timeout=30_000)  # a time and how long until it
        assert page.locator("#queue-block").is_hidden()
        assert float(page.locator("#p-rate").inner_text()) > 0 and page.locator("#p-gpu-hours").inner_text() == "0.00"
        shot(page, "task-progress-en")
    finally:
        with up.api("alice") as c:
            for tid in (gpu, steps):
                c.post(f"/api/v2/tasks/{tid}/cancel")


def test_the_task_page_charts_what_the_task_uses(up: Up, pages: Pages) -> None:
    """Issue 24: the Resources tab charts the driver's samples of the task's own CPU and memory (no GPU chart on a
    CPU node: nothing is faked)."""
    tid = submit_api(up, "alice", "kind: advanced\nworkload: job\nname: uses a core\nnnodes: 1\nn_gpus_per_node: 0\n"
                                  "command: python3 -m argus.jobs.steps trainer.total_training_steps=60 step_seconds=1 "
                                  "trainer.save_freq=0 busy=1 hold_mib=100\n")
    try:
        page = pages.new(user="alice")
        page.goto(f"{up.url}/tasks/{tid}")
        page.locator('#tabs .tab[data-tab="resources"]').click()
        page.locator('#res-charts figure[data-key="cpu"]').wait_for(timeout=90_000)
        page.locator('#res-charts figure[data-key="rss"]').wait_for()
        assert int(page.locator('#res-charts figure[data-key="cpu"]').get_attribute("data-points")) >= 1
        assert page.locator('#res-charts figure[data-key="gpu"]').count() == 0
        assert "samples" in page.locator("#res-summary").inner_text()
        shot(page, "task-resources-en")
    finally:
        with up.api("alice") as c:
            c.post(f"/api/v2/tasks/{tid}/cancel")
