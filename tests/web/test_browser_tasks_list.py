"""The tasks list that scales and a run's checkpoints (issue 25), in a real Chromium against a real ``argus up``.

* a new user's empty list is a first-run guide: the doctor in one click (it lands on the doctor's page),
  then Data, then a template;
* sorting by a column header (the server sorts: the URL and ``aria-sort`` follow), GPU-hours column,
  a running task's reason says where it runs (not a Ray job id);
* selection: checkboxes, shift-click ranges, Compare → ``/compare?tasks=a,b``, bulk Cancel reporting each
  task's own answer (a finished one is refused with the API's message);
* virtual scrolling: 3 000 tasks, only the rows in view in the DOM, the last one reachable by scrolling;
* the task page's Checkpoints tab on a real run of ``argus.jobs.steps`` (verl's folder layout): delete
  refused while it runs, then resume, export, delete one step, the latest refused, GPU-hours shown;
  lm-eval on a step from a small form (the new task linked, a refusal naming the API's fields).
"""

from __future__ import annotations

import re
import shutil
import sys
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import create_engine, insert, select

from argus.db.models import TaskModel, UserModel
from tests.services.test_checkpoints import write_step
from tests.waiting import wait_until
from tests.web.conftest import Pages, Up, answer, shot
from tests.web.test_browser import submit_api

pytestmark = [pytest.mark.browser, pytest.mark.e2e]


def sleep_spec(name: str, seconds: int = 600) -> str:
    return (f"kind: advanced\nworkload: job\nname: {name}\nnnodes: 1\nn_gpus_per_node: 0\n"
            f"command: python3 -m argus.jobs.sleep {seconds} --lines 2\n")


STEPS = ("kind: advanced\nworkload: job\nname: checkpointed\nnnodes: 1\nn_gpus_per_node: 0\n"
         "command: python3 -m argus.jobs.steps trainer.total_training_steps=30 trainer.save_freq=2 step_seconds=0.6\n")


def status_of(up: Up, user: str, tid: str) -> str:
    with up.api(user) as c:
        return c.get(f"/api/v2/tasks/{tid}").json()["status"]


def wait_status(up: Up, user: str, tid: str, want: set[str], timeout: float = 240) -> str:
    seen: list[str] = []

    def arrived() -> str | None:
        seen[:] = [s := status_of(up, user, tid)]
        return s if s in want else None

    return wait_until(arrived, timeout, every=0.5, what=lambda: f"{tid} stayed {seen[-1]}, wanted {want}")


def ids_in_table(page) -> list[str]:  # noqa: ANN001
    return page.locator("#tasks-body tr[data-task]").evaluate_all("rs => rs.map(r => r.dataset.task)")


def lm_eval_form(page, step: int, shot_as: str | None = None, **typed: str) -> dict[str, str]:  # noqa: ANN001
    """Open a step's lm-eval form, type into the named fields, submit; returns what the fields showed first."""
    page.locator(f'#ckpt-body tr[data-step="{step}"] [data-act=lm-eval]').click()
    dlg = page.locator('dialog.argus-dialog[data-kind="form"][open]')
    dlg.wait_for(timeout=30_000)
    shown = dict(zip(dlg.locator(".dialog-input").evaluate_all("xs => xs.map(x => x.name)"),
                     dlg.locator(".dialog-input").evaluate_all("xs => xs.map(x => x.value)"), strict=True))
    for name, text in typed.items():
        dlg.locator(f'.dialog-input[data-field="{name}"]').fill(text)
    if shot_as:
        shot(page, shot_as)
    dlg.locator(".dialog-ok").click()
    dlg.wait_for(state="detached", timeout=30_000)
    return shown


def test_first_run_guide_for_a_new_user(up: Up, pages: Pages) -> None:
    up.add_user("newcomer", "newcomer-pw-123456")
    page = pages.new()
    page.goto(f"{up.url}/login")
    page.fill("#login-user", "newcomer")
    page.fill("#login-password", "newcomer-pw-123456")
    page.click("#login-submit")
    page.wait_for_url(f"{up.url}/tasks")
    guide = page.locator("#first-run")
    guide.wait_for()
    assert page.locator("#tasks-empty").is_hidden() and page.locator("#tasks-scroll").is_hidden()
    assert page.locator("#bulk").is_hidden()  # nothing to select yet
    assert page.locator("#first-data").get_attribute("href") == "/data"
    assert page.locator("[data-first-template]").evaluate_all("as => as.map(a => a.getAttribute('href'))") == [
        "/tasks/new?template=basic-sft", "/tasks/new?template=basic-grpo", "/tasks/new?template=basic-ppo"]
    shot(page, "tasks-first-run-en")
    # a filter that matches nothing is not a first run: it says so instead
    page.goto(f"{up.url}/tasks?q=nothing-like-this")
    page.locator("#tasks-empty").wait_for()
    assert page.locator("#first-run").is_hidden()
    assert page.locator("#tasks-empty").inner_text() == "No task matches these filters."
    page.goto(f"{up.url}/tasks")
    page.click("#run-doctor")
    page.wait_for_url(re.compile(r".*/tasks/job-[\d-]+$"))
    tid = page.url.rsplit("/", 1)[1]
    page.locator("#t-status .badge").wait_for()
    with up.api("newcomer") as c:
        spec = c.get(f"/api/v2/tasks/{tid}/spec").json()
    assert "argus.jobs.doctor" in spec["raw"]
    # with a task, the guide is gone
    page.goto(f"{up.url}/tasks")
    page.locator(f'tr[data-task="{tid}"]').wait_for()
    assert page.locator("#first-run").is_hidden()
    zh = pages.new(lang="zh")
    up.add_user("newcomer2", "newcomer2-pw-12345")
    zh.goto(f"{up.url}/login")
    zh.fill("#login-user", "newcomer2")
    zh.fill("#login-password", "newcomer2-pw-12345")
    zh.click("#login-submit")
    zh.locator("#first-run").wait_for()
    assert zh.locator("#run-doctor").inner_text() == "运行 doctor"
    shot(zh, "tasks-first-run-zh")


def test_sort_select_compare_bulk_cancel_and_virtual_scroll(up: Up, pages: Pages) -> None:
    # a user of this test's own: the table's whole order is asserted, and the browser modules share one
    # server (tests/web/conftest.py), so bob has tasks of other modules
    up.add_user("sorty", "sorty-pw-1234567")
    done = submit_api(up, "sorty", "kind: advanced\nworkload: job\nname: ends at once\nnnodes: 1\nn_gpus_per_node: 0\n"
                                 "command: python3 -m argus.jobs.exit 0\n")
    names = ["sort-b", "Sort-A", "sort-c"]
    tids = [submit_api(up, "sorty", sleep_spec(n)) for n in names]
    wait_status(up, "sorty", done, {"SUCCEEDED"})
    page = pages.new()
    page.goto(f"{up.url}/login")
    page.fill("#login-user", "sorty")
    page.fill("#login-password", "sorty-pw-1234567")
    page.click("#login-submit")
    page.wait_for_url(f"{up.url}/tasks")
    page.locator(f'tr[data-task="{tids[0]}"]').wait_for()
    assert page.locator("th").first.inner_text() == "ID"
    assert ids_in_table(page)[:4] == [tids[2], tids[1], tids[0], done]  # newest first

    # sort by name: ascending (any case), again: descending; the URL and aria-sort say so
    page.click('.tasks-sort[data-sort="name"]')
    page.wait_for_url(re.compile(r".*[?&]sort=name$"))
    page.locator(f'#tasks-body tr[data-task="{done}"]:first-child').wait_for()  # "ends at once" < "sort-…"
    assert ids_in_table(page) == [done, tids[1], tids[0], tids[2]]
    assert page.locator('th:has(.tasks-sort[data-sort="name"])').get_attribute("aria-sort") == "ascending"
    page.click('.tasks-sort[data-sort="name"]')
    page.wait_for_url(re.compile(r".*[?&]sort=-name$"))
    page.locator(f'#tasks-body tr[data-task="{tids[2]}"]:first-child').wait_for()
    assert ids_in_table(page) == [tids[2], tids[0], tids[1], done]
    page.reload()  # the order is in the URL: a reload keeps it
    page.locator(f'#tasks-body tr[data-task="{tids[2]}"]:first-child').wait_for()
    assert page.locator('th:has(.tasks-sort[data-sort="name"])').get_attribute("aria-sort") == "descending"
    page.click('.tasks-sort[data-sort="gpu_hours"]')  # every head sorts (the API test checks each order)
    page.wait_for_url(re.compile(r".*[?&]sort=-gpu_hours$"))
    assert page.locator('[data-task] td[data-gpu-hours]').first.inner_text() in ("0", "0.00")

    # a running task's reason: where and since when, never a Ray job id
    wait_status(up, "sorty", tids[0], {"RUNNING"})
    page.goto(f"{up.url}/tasks")
    reason = page.locator(f'tr[data-task="{tids[0]}"] td.reason')
    reason.filter(has_text="since").wait_for(timeout=15_000)
    assert reason.inner_text().startswith("on ") and "Ray job" not in reason.inner_text()
    with up.api("sorty") as c:  # the record still says how it was submitted; the list says where it runs
        assert "Ray job" in c.get(f"/api/v2/tasks/{tids[0]}").json()["status_message"]

    # selection: a box, shift-click for a range; Compare with the ids in the URL
    page.locator(f'tr[data-task="{tids[2]}"] .tasks-pick').click()
    page.locator(f'tr[data-task="{done}"] .tasks-pick').click(modifiers=["Shift"])
    assert page.locator("#sel-count").inner_text() == "4 selected"
    page.click("#sel-clear")
    assert page.locator("#sel-count").inner_text() == "None selected" and page.locator("#bulk-compare").is_disabled()
    page.locator(f'tr[data-task="{tids[1]}"] .tasks-pick').click()
    assert page.locator("#bulk-compare").is_disabled()  # one task is no comparison
    page.locator(f'tr[data-task="{tids[0]}"] .tasks-pick').click()
    assert page.locator(f'tr[data-task="{tids[0]}"]').get_attribute("class") == "picked"
    shot(page, "tasks-selected-en")
    page.click("#bulk-compare")
    page.wait_for_url(f"{up.url}/compare?tasks={tids[1]},{tids[0]}")
    page.goto(f"{up.url}/tasks")

    # bulk cancel: two live ones and a finished one; each task's answer is reported
    for tid in (tids[0], tids[1], done):
        page.locator(f'tr[data-task="{tid}"] .tasks-pick').click()
    page.click("#bulk-cancel")
    answer(page)
    page.locator("#bulk-result .tasks-bulk-sum").wait_for()
    assert page.locator("#bulk-result .tasks-bulk-sum").inner_text() == "2 of 3 canceled."
    assert page.locator(f'#bulk-result li[data-task="{done}"]').get_attribute("data-ok") == "0"
    assert "already ended with SUCCEEDED" in page.locator(f'#bulk-result li[data-task="{done}"]').inner_text()
    for tid in (tids[0], tids[1]):
        assert page.locator(f'#bulk-result li[data-task="{tid}"]').get_attribute("data-ok") == "1"
        assert wait_status(up, "sorty", tid, {"CANCELED"}, timeout=120) == "CANCELED"
    assert page.locator("#sel-count").inner_text() == "1 selected"  # the refused one stays selected
    assert status_of(up, "sorty", tids[2]) in ("QUEUED", "SUBMITTED", "RUNNING")  # not selected: untouched
    shot(page, "tasks-bulk-cancel-en")
    with up.api("sorty") as c:
        c.post(f"/api/v2/tasks/{tids[2]}/cancel")

    # virtual scrolling: 3 000 tasks, a few dozen rows in the DOM, the oldest reachable at the bottom
    up.add_user("many", "many-pw-123456789")
    first = submit_api(up, "many", sleep_spec("template", 1))
    engine = create_engine(f"sqlite:///{up.state / 'argus.db'}")
    with engine.begin() as conn:
        row = conn.execute(select(*TaskModel.__table__.columns).where(TaskModel.id == first)).mappings().one()
        uid = conn.execute(select(UserModel.id).where(UserModel.name == "many")).scalar_one()
        t0 = datetime.now(UTC) - timedelta(days=1)
        conn.execute(insert(TaskModel), [{**row, "id": f"job-bulk-{i:05d}", "user_id": uid, "status": "SUCCEEDED",
                                          "name": f"bulk {i}", "created_at": t0 - timedelta(seconds=i),
                                          "updated_at": t0} for i in range(3000)])
    engine.dispose()
    page = pages.new()
    page.goto(f"{up.url}/login")
    page.fill("#login-user", "many")
    page.fill("#login-password", "many-pw-123456789")
    page.click("#login-submit")
    page.wait_for_url(f"{up.url}/tasks")
    page.locator(f'tr[data-task="{first}"]').wait_for()
    assert page.locator("#range").inner_text().endswith("of 3001")
    assert page.locator("#tasks-body tr").count() < 60
    page.locator("#tasks-scroll").evaluate("e => { e.scrollTop = e.scrollHeight; }")
    page.locator('tr[data-task="job-bulk-02999"]').wait_for()
    assert page.locator("#tasks-body tr").count() < 60
    assert page.locator(f'tr[data-task="{first}"]').count() == 0  # scrolled out: gone from the DOM
    assert re.match(r"^\d+–3001 of 3001$", page.locator("#range").inner_text())
    page.locator("#tasks-scroll").evaluate("e => { e.scrollTop = e.scrollHeight / 2; }")
    page.locator('tr[data-task="job-bulk-01500"]').wait_for()
    shot(page, "tasks-virtual-en")


def test_checkpoints_tab(up: Up, pages: Pages) -> None:
    tid = submit_api(up, "alice", STEPS)
    page = pages.new(user="alice")
    page.goto(f"{up.url}/tasks/{tid}")
    page.click('.tab[data-tab="checkpoints"]')
    wait_status(up, "alice", tid, {"RUNNING"})
    page.locator("#ckpt-body tr[data-step]").first.wait_for(timeout=120_000)  # the first save, while it runs
    if status_of(up, "alice", tid) == "RUNNING":
        page.locator("#ckpt-body tr[data-step] [data-act=delete]").last.click()
        answer(page)  # the in-page confirmation
        page.locator('#ckpt-result[data-ok="0"]').wait_for()
        assert "once it has ended" in page.locator("#ckpt-result").inner_text()
    wait_status(up, "alice", tid, {"SUCCEEDED"})
    page.locator('#ckpt-body tr[data-step="30"]').wait_for(timeout=30_000)
    assert page.locator("#ckpt-body tr[data-step]").count() == 15
    assert page.locator("#ckpt-body tr").first.get_attribute("data-step") == "30"  # newest first
    assert page.locator('#ckpt-body tr[data-step="4"] td').nth(1).inner_text() == "complete"
    assert page.locator("#ckpt-folder").inner_text() == \
        f"Saved in $HOME/jobs/{tid}/checkpoints; latest complete step: 30."
    assert float(page.locator("#s-gpu-hours").inner_text()) == 0.0  # a CPU job holds no GPU
    shot(page, "task-checkpoints-en")

    # delete one step; the latest is refused with the API's reason
    page.locator('#ckpt-body tr[data-step="4"] [data-act=delete]').click()
    answer(page)
    page.locator('#ckpt-result[data-ok="1"]').wait_for()
    assert page.locator("#ckpt-result").inner_text() == f"Deleted $HOME/jobs/{tid}/checkpoints/global_step_4."
    page.locator('#ckpt-body tr[data-step="4"]').wait_for(state="detached")
    assert not (up.root / "users" / "alice" / "jobs" / tid / "checkpoints" / "global_step_4").exists()
    page.locator('#ckpt-body tr[data-step="30"] [data-act=delete]').click()
    answer(page)
    page.locator('#ckpt-result[data-ok="0"]').wait_for()
    assert "latest checkpoint" in page.locator("#ckpt-result").inner_text()

    # resume from step 10: a new task, linked, resuming from that folder
    page.locator('#ckpt-body tr[data-step="10"] [data-act=resume]').click()
    link = page.locator("#ckpt-result a[data-new-task]")
    link.wait_for()
    resumed = link.get_attribute("data-new-task")
    with up.api("alice") as c:
        r = c.get(f"/api/v2/tasks/{resumed}").json()
        assert r["resumed_from"] == tid
        assert "global_step_10" in c.get(f"/api/v2/tasks/{resumed}/spec").json()["command_raw"]
        c.post(f"/api/v2/tasks/{resumed}/cancel")

    # export step 10 to a Hugging Face folder: a task of its own, linked
    page.locator('#ckpt-body tr[data-step="10"] [data-act=export]').click()
    answer(page, text="")  # the export prompt's default destination
    page.locator('#ckpt-result[data-ok="1"]', has_text="Export submitted").wait_for()
    exported = page.locator("#ckpt-result a[data-new-task]").get_attribute("data-new-task")
    assert exported != resumed
    with up.api("alice") as c:
        assert "model_merger" in c.get(f"/api/v2/tasks/{exported}/spec").json()["command_raw"]
        c.post(f"/api/v2/tasks/{exported}/cancel")
    page.locator("#ckpt-result a[data-new-task]").click()
    page.wait_for_url(f"{up.url}/tasks/{exported}")

    # delete them all
    page.goto(f"{up.url}/tasks/{tid}")
    page.click('.tab[data-tab="checkpoints"]')
    page.locator("#ckpt-body tr[data-step]").first.wait_for()
    # evaluate (issue 38): a utility job's checkpoint has no verl validation to run; the API's reason is shown
    page.locator('#ckpt-body tr[data-step="10"] [data-act=evaluate]').click()
    page.locator('#ckpt-result[data-ok="0"]', has_text="trainer.val_only").wait_for()
    assert page.locator('#ckpt-body tr[data-step="10"] td.ckpt-scores').inner_text() == ""
    page.click("#ckpt-delete-all")
    answer(page)
    page.locator("#ckpt-empty").wait_for()
    assert page.locator("#ckpt-result").inner_text() == f"Deleted $HOME/jobs/{tid}/checkpoints."



LM_ENV = "lm-eval-ready"
WAITS_IN_LM_ENV = (f"kind: advanced\nworkload: job\nname: to evaluate\nenv: {LM_ENV}\nnnodes: 1\n"
                   "n_gpus_per_node: 1\ncommand: python3 -m argus.jobs.sleep 1\n")  # no GPU here: it waits


def test_checkpoints_tab_evaluates_a_step_with_lm_eval(up: Up, pages: Pages) -> None:
    """lm-eval on any run's step from a small form: its fields sent as typed, the new task linked; a refusal
    shows the API's message and each field it named (nothing is checked in the page).

    Admission lets lm-eval run only in an environment with the lm_eval package, which the server's own has
    not: ``lm-eval-ready`` is Argus's own interpreter recorded as having it (its record written here, as
    tests/web/test_pages.py does). No task of it ever starts: this server has no GPU, lm-eval asks for one."""
    from argus.envs.registry import Environment, Registry

    builtin = Registry(up.root, sys.executable).builtin()
    folder = up.root / "envs" / LM_ENV
    Environment(name=LM_ENV, python=builtin.python, prefix=builtin.prefix, source="registered",
                checked_at=builtin.checked_at, probe={**builtin.probe, "lm_eval": True}).dump(folder)
    try:
        _lm_eval_from_the_checkpoints_tab(up, pages)
    finally:  # the other pages' tests list the environments: this one is gone again
        shutil.rmtree(folder)


def _lm_eval_from_the_checkpoints_tab(up: Up, pages: Pages) -> None:
    tid = submit_api(up, "alice", WAITS_IN_LM_ENV)
    ckpts = up.root / "users" / "alice" / "jobs" / tid / "checkpoints"
    for step in (2, 4):
        write_step(ckpts, step)
    with up.api("alice") as c:
        assert c.post(f"/api/v2/tasks/{tid}/cancel").status_code in (200, 202)
    wait_status(up, "alice", tid, {"CANCELED"})
    page = pages.new(user="alice")
    page.goto(f"{up.url}/tasks/{tid}")
    page.click('.tab[data-tab="checkpoints"]')
    page.locator('#ckpt-body tr[data-step="2"] [data-act=lm-eval]').wait_for()

    form = lm_eval_form(page, 2, "task-checkpoints-lm-eval", tasks=" tiny_arith, other.task ", limit="8",
                        num_fewshot="2")
    assert form == {"tasks": "", "include_path": "$HOME/code/lm_tasks", "limit": "", "num_fewshot": ""}
    page.locator("#ckpt-result[data-ok]", has_text="Evaluation submitted").or_(
        page.locator('#ckpt-result[data-ok="0"]')).wait_for()
    link = page.locator('#ckpt-result[data-ok="1"] a[data-new-task]')
    assert link.count() == 1, page.locator("#ckpt-result").inner_text()
    evaluation = link.get_attribute("data-new-task")
    with up.api("alice") as c:
        command = c.get(f"/api/v2/tasks/{evaluation}/spec").json()["command_raw"]
        assert command == (f"python3 -m argus.jobs.lm_eval --checkpoint '$HOME/jobs/{tid}/checkpoints/global_step_2' "
                           "--tasks tiny_arith,other.task --include-path '$HOME/code/lm_tasks' --num-fewshot 2 "
                           "--limit 8 --device cuda"), command
        assert c.get(f"/api/v2/tasks/{evaluation}").json()["evaluates_step"] == 2
        c.post(f"/api/v2/tasks/{evaluation}/cancel")
    # the step shows its evaluation (linked) once the tab has reloaded
    page.locator(f'#ckpt-body tr[data-step="2"] td.ckpt-scores a[data-new-task="{evaluation}"]').wait_for()

    # refused: the API's message, then each field it named with its own message
    form = lm_eval_form(page, 4, tasks="tiny arith;rm", limit="lots")
    assert form["tasks"] == " tiny_arith, other.task "  # the last answer is offered again
    page.locator('#ckpt-result[data-ok="0"]').wait_for()
    said = page.locator("#ckpt-result").inner_text()
    assert "lm_eval.tasks: must name one or more lm-eval tasks" in said, said
    assert "lm_eval.limit: must be a number of examples per task" in said, said
    assert page.locator('#ckpt-body tr[data-step="4"] td.ckpt-scores').inner_text() == ""
    shot(page, "task-checkpoints-lm-eval-refused")

    # cancelled: nothing is sent
    page.locator('#ckpt-body tr[data-step="4"] [data-act=lm-eval]').click()
    answer(page, accept=False)
    assert page.locator("#ckpt-result").inner_text() == said
    with up.api("alice") as c:
        assert [e["task_id"] for e in c.get(f"/api/v2/tasks/{tid}/evaluations").json()] == [evaluation]

    # on a phone, in Chinese: the form fits the width, its buttons in reach
    zh = pages.new(lang="zh", user="alice")
    zh.set_viewport_size({"width": 390, "height": 844})
    zh.goto(f"{up.url}/tasks/{tid}")
    zh.click('.tab[data-tab="checkpoints"]')
    zh.locator('#ckpt-body tr[data-step="4"] [data-act=lm-eval]').click()
    dlg = zh.locator('dialog.argus-dialog[data-kind="form"][open]')
    dlg.wait_for()
    assert dlg.locator(".dialog-message").inner_text().startswith("用 EleutherAI lm-eval 评估")
    for part in (dlg, dlg.locator('.dialog-input[data-field="num_fewshot"]'), dlg.locator(".dialog-ok")):
        box = part.bounding_box()
        assert box and box["x"] >= 0 and box["x"] + box["width"] <= 390, box
    shot(zh, "task-checkpoints-lm-eval-phone-zh")
    dlg.locator(".dialog-cancel").click()
    dlg.wait_for(state="detached")

def test_rerun_in_another_environment_from_the_spec_tab(up: Up, pages: Pages) -> None:
    """Issue 35: the Spec tab previews a re-run (the API's diff: env: set, keys moved) and submits it, linked."""
    tid = submit_api(up, "alice", sleep_spec("rerun-me", 1))
    page = pages.new(user="alice")
    page.goto(f"{up.url}/tasks/{tid}")
    page.click('.tab[data-tab="spec"]')
    page.locator('#rerun-env option[value="argus"]').wait_for(state="attached")
    page.click("#rerun-preview")
    page.locator("#rerun-diff:not([hidden])").wait_for()
    assert "+env: argus" in page.locator("#rerun-diff").inner_text()
    assert page.locator("#rerun-problems").is_hidden()
    page.click("#rerun-submit")
    link = page.locator("#rerun-result a[data-new-task]")
    link.wait_for()
    new = link.get_attribute("data-new-task")
    with up.api("alice") as c:
        assert "env: argus" in c.get(f"/api/v2/tasks/{new}/spec").json()["raw"]
        events = c.get(f"/api/v2/tasks/{new}/events").json()
    assert any(f"re-run of {tid}" in (e.get("message") or "") for e in events), events
