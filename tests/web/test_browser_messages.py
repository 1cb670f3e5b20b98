"""Issue 37 in a real Chromium against a real ``argus up``: server messages in the user's language.

A queued task's reason (the scheduler's ``queue.no_gpus``: the shared ``argus up`` has no GPU) shows in Chinese
in the tasks list and on the task page, and in English for an English page; a failed task's hint
(``failure.missing_file``) shows in Chinese while its cause (the log's text) stays as written; the task page
labels the queue reason 原因 and the failure's hint 失败原因 (both were 原因). A spec the New Task page's check
refuses (an unknown field, a bound) lists each field's coded refusal in Chinese, with the field's name as written,
and in English exactly the API's message.
"""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine, update

from argus.core import messages
from argus.core.failures import FailureKind, hint_for
from argus.core.messages import render
from argus.db.models import TaskModel
from argus.web import i18n
from tests.waiting import wait_until
from tests.web.conftest import Pages, Up, shot, sign_in_with_token, signed_in
from tests.web.test_browser import set_editor, submit_api

pytestmark = [pytest.mark.browser, pytest.mark.e2e]

GPU = "kind: advanced\nworkload: job\nname: {name}\nnnodes: 1\nn_gpus_per_node: 1\ncommand: python3 -m argus.jobs.sleep 1\n"
USER, PASSWORD = "lang37", "lang37-pw-123456789"
CAUSE = "exit code 1: FileNotFoundError: [Errno 2] No such file or directory: '/home/lang37/data/x.parquet'"


def _login(pages: Pages, up: Up, lang: str):  # noqa: ANN202
    return signed_in(pages, up, USER, PASSWORD, lang)


def test_a_queue_reason_and_a_failure_hint_in_chinese(up: Up, pages: Pages) -> None:
    up.add_user(USER, PASSWORD)
    queued = submit_api(up, USER, GPU.format(name="waits"))
    failed = submit_api(up, USER, GPU.format(name="fails"))
    with up.api(USER) as c:
        c.post(f"/api/v2/tasks/{failed}/cancel")

        def coded() -> bool:
            return c.get(f"/api/v2/tasks/{queued}").json()["pending_reason_code"] == "queue.no_gpus"

        wait_until(coded, 120, every=0.5, what="the scheduler's coded reason")
    engine = create_engine(f"sqlite:///{up.state / 'argus.db'}")
    with engine.begin() as conn:  # as the monitor leaves a task whose file was missing
        conn.execute(update(TaskModel).where(TaskModel.id == failed).values(
            status="FAILED", termination_reason="EXIT_NONZERO", failure_kind="missing_file",
            failure_hint=f"on gpu-7: {hint_for(FailureKind.MISSING_FILE)}", status_message=CAUSE))
    engine.dispose()

    page = _login(pages, up, "zh")
    reason = page.locator(f'tr[data-task="{queued}"] td.reason')
    reason.filter(has_text="集群中没有 GPU").wait_for(timeout=60_000)
    assert "0 GPUs in the cluster" not in reason.inner_text()
    shot(page, "tasks-reason-zh")

    page.goto(f"{up.url}/tasks/{queued}")
    page.locator("#s-message", has_text="集群中没有 GPU").wait_for(timeout=60_000)
    # the Nodes page's queue head and the admin's queue say the same code in Chinese (issue 37)
    page.goto(f"{up.url}/nodes")
    page.locator(f'#queue-body tr[data-task="{queued}"] td.reason', has_text="集群中没有 GPU").wait_for(timeout=60_000)
    admin = pages.new(lang="zh")
    sign_in_with_token(admin, up.url, up.admin_token)
    admin.goto(f"{up.url}/admin")
    admin.locator(f'#aq-body tr[data-task="{queued}"] td.reason', has_text="集群中没有 GPU").wait_for(timeout=60_000)

    page.goto(f"{up.url}/tasks/{failed}")
    hint = page.locator("#s-hint")
    hint.filter(has_text="任务读取的文件不存在").wait_for(timeout=60_000)
    assert hint.inner_text().startswith("文件缺失: on gpu-7: ")  # the kind said; the where stays as written
    assert "A file the task reads is not there" not in hint.inner_text()
    assert page.locator("#s-message").inner_text() == CAUSE  # the cause is the log's own text
    labels = page.locator("#summary dt").all_inner_texts()
    assert "原因" in labels and "失败原因" in labels and labels.count("原因") == 1
    shot(page, "task-failure-hint-zh")

    en = _login(pages, up, "en")
    en.locator(f'tr[data-task="{queued}"] td.reason', has_text="0 GPUs in the cluster").wait_for(timeout=60_000)
    en.goto(f"{up.url}/tasks/{failed}")
    en.locator("#s-hint", has_text="A file the task reads is not there").wait_for(timeout=60_000)
    assert en.locator("#s-hint").inner_text().startswith("missing_file: on gpu-7: ")  # English: the kind's name


def test_a_canceled_and_a_failed_tasks_status_message_in_chinese(up: Up, pages: Pages) -> None:
    """A task's status message (issue 37, item 7): "canceled by <user>" in the tasks list's reason, the Overview's
    message and the Events tab in Chinese; "exit code 1: <cause>" with its cause (the program's text) as written."""
    user, password = "cancel37", "cancel37-pw-123456789"
    up.add_user(user, password)
    canceled = submit_api(up, user, GPU.format(name="canceled"))
    failed = submit_api(up, user, GPU.format(name="exits"))
    with up.api(user) as c:
        for tid in (canceled, failed):
            assert c.post(f"/api/v2/tasks/{tid}/cancel").status_code == 200
        assert c.get(f"/api/v2/tasks/{canceled}").json()["status_message_code"] == "status.canceled_by"
    cause = "ValueError: train_batch_size (60) must be divisible by 8"
    said = messages.exit_message(1, cause)
    engine = create_engine(f"sqlite:///{up.state / 'argus.db'}")
    with engine.begin() as conn:  # as the monitor leaves a task that exited 1 with that exception
        conn.execute(update(TaskModel).where(TaskModel.id == failed).values(
            status="FAILED", termination_reason="EXIT_NONZERO", status_message=said.text,
            status_message_code=said.code, status_message_params=said.params))
    engine.dispose()

    page = signed_in(pages, up, user, password, "zh")
    reason = page.locator(f'#tasks-body tr[data-task="{canceled}"] td.reason')
    reason.filter(has_text=f"已被 {user} 取消").wait_for(timeout=60_000)
    assert "canceled by" not in reason.inner_text()
    page.locator(f'#tasks-body tr[data-task="{failed}"] td.reason', has_text=f"退出码 1：{cause}").wait_for(
        timeout=60_000)
    shot(page, "tasks-status-message-zh")

    page.goto(f"{up.url}/tasks/{canceled}")
    page.locator("dd#s-message", has_text=f"已被 {user} 取消").wait_for(timeout=60_000)
    assert "canceled by" not in page.locator("dd#s-message").inner_text()
    page.click('.tab[data-tab="events"]')
    page.locator("#events div.message", has_text=f"已被 {user} 取消").wait_for(timeout=60_000)
    shot(page, "task-events-canceled-zh")
    page.goto(f"{up.url}/tasks/{failed}")
    page.locator("dd#s-message", has_text=f"退出码 1：{cause}").wait_for(timeout=60_000)

    en = signed_in(pages, up, user, password, "en")
    en.goto(f"{up.url}/tasks/{canceled}")
    en.locator("dd#s-message", has_text=f"canceled by {user}").wait_for(timeout=60_000)


def _checked(pages: Pages, up: Up, lang: str, spec: str, said: dict):  # noqa: ANN202
    """New Task's check of ``spec`` on a page in ``lang``: each field's refusal as the API ``said`` it, in English,
    or rendered from its code with the zh catalog, and the field's name as written."""
    zh_catalog = {k.removeprefix("msg."): v for k, v in i18n.catalog("zh").items() if k.startswith("msg.")}
    page = pages.new(lang=lang, user="alice")
    page.goto(f"{up.url}/tasks/new")
    set_editor(page, spec)
    page.click("#check")
    for fld, e in said.items():
        item = page.locator(f'#errors li[data-field="{fld}"] .message')
        want = render(e["code"], e["params"], zh_catalog) if lang == "zh" else e["message"]
        wait_until(lambda item=item, want=want: item.count() == 1 and item.inner_text() == want, 60, every=0.1,
                   what=f"{lang} {fld}")
        assert page.locator(f'#errors li[data-field="{fld}"] code').inner_text() == fld
    return page


REFUSED = ("workload: grpo\nmodel_id: m\ntrain_file: $HOME/d/t.parquet\nnnodes: 0\nn_gpus_per_node: 1\n"
           "devise: cpu\n")


def test_a_refused_specs_field_errors_in_chinese_and_in_the_apis_english(up: Up, pages: Pages) -> None:
    with up.api("alice") as c:
        r = c.post("/api/v2/tasks?dry_run=true&checks=spec", content=REFUSED,
                   headers={"Content-Type": "application/yaml"})
    assert r.status_code == 400, r.text
    said = {e["field"]: e for e in r.json()["detail"]["errors"]}
    assert said["devise"]["code"] == "spec.unknown_field_did_you_mean" and said["devise"]["params"]["close"] == "device"
    assert said["nnodes"]["code"] == "spec.bound" and said["nnodes"]["message"] == "must be ≥ 1"
    for lang in ("zh", "en"):
        page = _checked(pages, up, lang, REFUSED, said)
        text = page.locator("#errors").inner_text()
        if lang == "zh":
            assert "未知字段；你是不是想写 'device'？" in text and "必须 ≥ 1" in text
            assert "unknown field" not in text and "must be" not in text
            shot(page, "new-task-refusals-zh")
        else:
            assert "unknown field; did you mean 'device'?" in text


# an advanced command's refusal (a module off the allowlist) and a resource's (above the platform's GPUs per node)
ADVANCED = "kind: advanced\nworkload: job\nnnodes: 1\nn_gpus_per_node: 100\ncommand: python3 -m os.path x=1\n"


def test_a_refused_command_and_resource_in_chinese_and_in_the_apis_english(up: Up, pages: Pages) -> None:
    with up.api("alice") as c:
        r = c.post("/api/v2/tasks?dry_run=true&checks=spec", content=ADVANCED,
                   headers={"Content-Type": "application/yaml"})
    assert r.status_code == 400, r.text
    said = {e["field"]: e for e in r.json()["detail"]["errors"]}
    assert said["command"]["code"] == "command.module_not_allowed", said
    assert said["command"]["message"].startswith("module is not on the allowlist; allowed: ")
    assert said["n_gpus_per_node"]["code"] == "spec.platform_limit"
    assert said["n_gpus_per_node"]["message"] == "must be ≤ 64 (the platform limit)"
    page = _checked(pages, up, "zh", ADVANCED, said)
    text = page.locator("#errors").inner_text()
    assert "模块不在允许列表中；允许的模块：" in text and "必须 ≤ 64（平台上限）" in text
    assert "allowlist" not in text and "platform limit" not in text
    shot(page, "new-task-command-refusals-zh")
    en = _checked(pages, up, "en", ADVANCED, said).locator("#errors").inner_text()
    assert "module is not on the allowlist" in en and "(the platform limit)" in en


# an advanced verl command whose trainer.nnodes disagrees with the spec's nnodes: admission's warn.gang_mismatch
MISMATCH = ("kind: advanced\nworkload: ppo\nnnodes: 1\nn_gpus_per_node: 1\ncommand: python3 -m verl.trainer.main_ppo "
            "trainer.nnodes=2 trainer.n_gpus_per_node=1\n")


def test_an_admission_warning_in_chinese_on_new_task(up: Up, pages: Pages) -> None:
    """Issue 37 item 7: New Task's warnings are said from their codes (warning_messages beside warnings)."""
    with up.api("alice") as c:
        r = c.post("/api/v2/tasks?dry_run=true&checks=spec", content=MISMATCH,
                   headers={"Content-Type": "application/yaml"})
    assert r.status_code == 200, r.text
    said = dict(zip(r.json()["warnings"], r.json()["warning_messages"], strict=True))
    english = next(w for w in said if w.startswith("spec nnodes=1 but command sets trainer.nnodes=2"))
    assert said[english] == {"code": "warn.gang_mismatch",
                             "params": {"field": "nnodes", "want": "1", "key": "trainer.nnodes", "value": "2"}}
    zh_catalog = {k.removeprefix("msg."): v for k, v in i18n.catalog("zh").items() if k.startswith("msg.")}
    chinese = render("warn.gang_mismatch", said[english]["params"], zh_catalog)
    assert chinese.startswith("spec 中 nnodes=1，但命令设置了 trainer.nnodes=2")
    for lang, want, not_want in (("zh", chinese, english), ("en", english, chinese)):
        page = pages.new(lang=lang, user="alice")
        page.goto(f"{up.url}/tasks/new")
        set_editor(page, MISMATCH)
        page.click("#check")
        box = page.locator("#warnings")
        wait_until(lambda box=box, want=want: box.is_visible() and want in box.inner_text(), 60, every=0.1,
                   what=f"{lang} warning")
        assert not_want not in box.inner_text()
        if lang == "zh":
            assert "make them agree" not in box.inner_text()
            shot(page, "new-task-warning-zh")


def test_a_stored_tasks_warnings_in_chinese_on_the_task_page(up: Up, pages: Pages) -> None:
    """A task's warnings as stored (English texts; here as a task admitted before the codes left them): the task page
    says each one a warn.* template makes in Chinese, and one no template makes as written."""
    tid = submit_api(up, "alice", GPU.format(name="warned"))
    english = messages.msg("warn.gang_mismatch", field="nnodes", want=1, key="trainer.nnodes", value="2").text
    own_words = "reward check: the function returned None for a sample"
    engine = create_engine(f"sqlite:///{up.state / 'argus.db'}")
    with engine.begin() as conn:
        conn.execute(update(TaskModel).where(TaskModel.id == tid).values(warnings=[english, own_words]))
    engine.dispose()
    with up.api("alice") as c:
        assert c.get(f"/api/v2/tasks/{tid}").json()["warning_messages"] == [
            {"code": "warn.gang_mismatch", "params": {"field": "nnodes", "want": "1", "key": "trainer.nnodes",
                                                      "value": "2"}}, None]
    page = pages.new(lang="zh", user="alice")
    page.goto(f"{up.url}/tasks/{tid}")
    items = page.locator("#s-warnings li")
    wait_until(lambda: items.count() == 2, 60, every=0.1, what="the task's warnings")
    assert items.nth(0).inner_text().startswith("spec 中 nnodes=1，但命令设置了 trainer.nnodes=2：Argus 按 spec")
    assert items.nth(1).inner_text() == own_words
    shot(page, "task-warnings-zh")
