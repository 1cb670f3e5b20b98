"""Issue 37 in a real Chromium against a real ``argus up``: the tasks list and honest task states.

* the tasks list draws every row of its view at the first paint (it drew a dozen, the rest blank until
  the next poll 5 s later), and a row opens its task: a click on a cell, Enter on the focused row; its
  link and its checkbox keep doing what they do;
* a queued task's page says why it waits and that its log starts when it runs, instead of an empty log box;
* a plain member of a task's team is not offered Cancel (the server's ``can_cancel``); its owner is;
* a stalled run says "Stalled" with how long it has been without a step, and no "Estimated end: now";
* the Data page offers no Delete/Rename for a live task's folder and log (the server's ``actions``), and
  the files API refuses them (tests/api/test_files_task_guard_api.py has every case).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import create_engine, insert, select

from argus.db.models import TaskModel, UserModel
from tests.web.conftest import Pages, Up, shot
from tests.web.test_browser import submit_api
from tests.web.test_browser_tasks_list import wait_status

pytestmark = [pytest.mark.browser, pytest.mark.e2e]

GPU = "kind: advanced\nworkload: job\nname: {name}\nnnodes: 1\nn_gpus_per_node: 1\n{extra}command: python3 -m argus.jobs.sleep 1\n"
HANGS = ("kind: advanced\nworkload: job\nname: hangs\nnnodes: 1\nn_gpus_per_node: 0\nstall_after: 4\n"
         "command: python3 -m argus.jobs.steps trainer.total_training_steps=40 step_seconds=0.3 hang_at=3\n")


def _login(pages: Pages, up: Up, user: str, password: str, lang: str = "en"):  # noqa: ANN202
    page = pages.new(lang=lang)
    page.goto(f"{up.url}/login")
    page.fill("#login-user", user)
    page.fill("#login-password", password)
    page.click("#login-submit")
    page.wait_for_url(f"{up.url}/tasks")
    return page


def test_the_list_draws_every_row_in_view_at_once_and_a_row_opens_its_task(up: Up, pages: Pages) -> None:
    up.add_user("rowy", "rowy-pw-123456789")
    first = submit_api(up, "rowy", GPU.format(name="template", extra=""))
    with up.api("rowy") as c:
        c.post(f"/api/v2/tasks/{first}/cancel")
    engine = create_engine(f"sqlite:///{up.state / 'argus.db'}")
    with engine.begin() as conn:
        row = conn.execute(select(*TaskModel.__table__.columns).where(TaskModel.id == first)).mappings().one()
        uid = conn.execute(select(UserModel.id).where(UserModel.name == "rowy")).scalar_one()
        t0 = datetime.now(UTC) - timedelta(hours=2)
        conn.execute(insert(TaskModel), [{**row, "id": f"job-row-{i:03d}", "user_id": uid, "status": "SUCCEEDED",
                                          "name": f"row {i}", "created_at": t0 - timedelta(seconds=i),
                                          "updated_at": t0} for i in range(70)])
    engine.dispose()
    page = _login(pages, up, "rowy", "rowy-pw-123456789")
    page.locator('body[data-loaded="1"]').wait_for()
    # right after the first load: every row the view can show is a task's row (not a dozen and blank space)
    drawn = page.evaluate("""() => {
      const s = document.getElementById('tasks-scroll'), head = s.querySelector('thead').offsetHeight;
      const rows = [...document.querySelectorAll('#tasks-body tr')];
      const h = rows[0].getBoundingClientRect().height;
      const box = s.getBoundingClientRect();
      const bottom = document.elementFromPoint(box.left + 60, box.bottom - h / 2);
      return {fit: Math.floor((s.clientHeight - head) / h), tasks: rows.filter(r => r.dataset.task).length,
              loading: rows.filter(r => !r.dataset.task).length, bottom: bottom && bottom.closest('tr[data-task]')
                ? bottom.closest('tr[data-task]').dataset.task : null};
    }""")
    assert drawn["fit"] > 14, drawn  # a 900 px window shows more than the dozen drawn before
    assert drawn["tasks"] >= drawn["fit"] and drawn["loading"] == 0, drawn
    assert drawn["bottom"] is not None, drawn  # the last row in view is drawn, not blank
    assert page.locator("#range").inner_text().startswith("1–") and page.locator("#range").inner_text().endswith(
        "of 71")
    shot(page, "tasks-first-paint-en")

    # a click on a cell (not a link) opens the task
    page.locator('tr[data-task="job-row-005"] td.name').click()
    page.wait_for_url(f"{up.url}/tasks/job-row-005")
    page.go_back()
    page.locator('tr[data-task="job-row-007"]').wait_for()
    # the checkbox selects, it does not navigate
    page.locator('tr[data-task="job-row-007"] .tasks-pick').click()
    assert page.locator("#sel-count").inner_text() == "1 selected" and page.url.endswith("/tasks")
    # the keyboard: Tab reaches a row, Enter opens it
    page.locator('tr[data-task="job-row-003"]').focus()
    page.keyboard.press("Enter")
    page.wait_for_url(f"{up.url}/tasks/job-row-003")
    page.go_back()
    # the id link still works as a link
    page.locator('tr[data-task="job-row-002"] td.tasks-sel a').click()
    page.wait_for_url(f"{up.url}/tasks/job-row-002")


def test_a_queued_task_says_why_its_log_is_empty_and_a_plain_member_gets_no_cancel(up: Up, pages: Pages) -> None:
    up.add_user("owner37", "owner37-pw-12345678")
    up.add_user("mate37", "mate37-pw-123456789")
    with up.api() as a:
        assert a.post("/api/v2/teams", json={"name": "crew37"}).status_code == 201
        for who in ("owner37", "mate37"):
            assert a.post("/api/v2/teams/crew37/members", json={"user": who}).status_code == 201
    tid = submit_api(up, "owner37", GPU.format(name="waits for a GPU", extra="team: crew37\n"))  # 0 GPUs: queued
    try:
        owner = _login(pages, up, "owner37", "owner37-pw-12345678")
        owner.goto(f"{up.url}/tasks/{tid}")
        waiting = owner.locator("#log-waiting")
        waiting.wait_for()
        assert re.match(r"^Queued: .+\. Its log starts when it runs\.$", waiting.inner_text()), waiting.inner_text()
        assert owner.locator("#log").is_hidden()  # no empty black box
        assert owner.locator("#cancel").is_visible()  # the owner may cancel
        shot(owner, "task-queued-en")

        mate = _login(pages, up, "mate37", "mate37-pw-123456789", lang="zh")
        mate.goto(f"{up.url}/tasks/{tid}")
        mate.locator("#log-waiting").wait_for()
        said = mate.locator("#log-waiting").inner_text()
        with up.api("mate37") as c:
            english = c.get(f"/api/v2/tasks/{tid}").json()["pending_reason"]
        # the reason in Chinese too (static/js/messages.js renders its code), not the server's English
        assert said.startswith("排队中：") and said.endswith("任务开始运行后才有日志。") and english not in said, said
        assert mate.locator("#t-status .badge").is_visible()  # the summary is drawn: can_cancel was read
        assert mate.locator("#cancel").is_hidden()  # a plain member sees the task, is not offered Cancel
        with up.api("mate37") as c:  # and the server would refuse it anyway
            assert c.post(f"/api/v2/tasks/{tid}/cancel").status_code == 403
        shot(mate, "task-queued-member-zh")
    finally:
        with up.api("owner37") as c:
            c.post(f"/api/v2/tasks/{tid}/cancel")


def test_a_stalled_run_says_stalled_and_no_estimated_end(up: Up, pages: Pages) -> None:
    up.add_user("staller", "staller-pw-1234567")
    tid = submit_api(up, "staller", HANGS)
    try:
        wait_status(up, "staller", tid, {"RUNNING"})
        page = _login(pages, up, "staller", "staller-pw-1234567")
        page.goto(f"{up.url}/tasks/{tid}")
        page.locator("#t-stalled").wait_for(timeout=120_000)  # stall_after: 4 s, then the monitor's pass
        assert page.locator("#t-stalled").inner_text() == "Stalled"
        note = page.locator("#p-stalled")
        assert re.match(r"^Stalled: no new step for .+ \(last step 3\) and no output\.$", note.inner_text()), \
            note.inner_text()
        assert page.locator("#p-eta-end").inner_text() != "now"
        assert page.locator("#p-step").inner_text().startswith("3 / 40")
        shot(page, "task-stalled-en")
        zh = _login(pages, up, "staller", "staller-pw-1234567", lang="zh")
        zh.goto(f"{up.url}/tasks/{tid}")
        zh.locator("#t-stalled").wait_for()
        assert zh.locator("#t-stalled").inner_text() == "已停滞"
        assert zh.locator("#p-stalled").inner_text().startswith("已停滞：")
    finally:
        with up.api("staller") as c:
            c.post(f"/api/v2/tasks/{tid}/cancel")


def test_the_data_page_offers_no_delete_for_a_live_tasks_folder(up: Up, pages: Pages) -> None:
    up.add_user("keeper", "keeper-pw-12345678")
    live = submit_api(up, "keeper", HANGS.replace("hang_at=3", "hang_at=1000").replace("stall_after: 4\n", ""))
    wait_status(up, "keeper", live, {"RUNNING"})
    try:
        page = _login(pages, up, "keeper", "keeper-pw-12345678")
        page.goto(f"{up.url}/data?path=/jobs/{live}")
        logs = page.locator('tr[data-name="logs"]')
        logs.wait_for()
        assert logs.locator("button.delete").count() == 0 and logs.locator("button.rename").count() == 0
        page.goto(f"{up.url}/data?path=/jobs")
        folder = page.locator(f'tr[data-name="{live}"]')
        folder.wait_for()
        assert folder.locator("button.delete").count() == 0 and folder.locator(".data-pick").count() == 0
        shot(page, "data-live-task-en")
        with up.api("keeper") as c:
            r = c.delete("/api/v2/files", params={"path": f"/jobs/{live}/logs", "recursive": True})
            assert r.status_code == 409 and r.json()["detail"]["code"] == "task_active"
            c.post(f"/api/v2/tasks/{live}/cancel")
        wait_status(up, "keeper", live, {"CANCELED"}, timeout=120)
        page.reload()  # over: the folder is the owner's again
        page.locator(f'tr[data-name="{live}"] button.delete').wait_for()
    finally:
        with up.api("keeper") as c:
            c.post(f"/api/v2/tasks/{live}/cancel")
