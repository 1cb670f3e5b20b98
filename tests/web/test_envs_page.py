"""Training environments in the WebUI (issue 22): the Environments page and the New Task form's
Environment select, in a real Chromium against a real ``argus up`` (tests/web/conftest.py).

Besides Argus's built-in ``argus`` environment (verl 0.9, the basic templates' one), the server
gets the catalog's ``verl-0.4.1-cpu`` (advanced specs only), registered by writing its manifest.
"""

from __future__ import annotations

import re

import pytest

from tests.web.conftest import Pages, Up, shot

pytestmark = [pytest.mark.browser, pytest.mark.e2e]

OLD = "verl-0.4.1-cpu"
WAITS = ("kind: advanced\nworkload: job\nname: in an environment\nnnodes: 1\nn_gpus_per_node: 1\n"
         "command: python3 -m argus.jobs.sleep 1\n")  # no GPU on this server: it waits, queued


@pytest.fixture(scope="module")
def old_env(up: Up) -> str:
    from tests.envs_fixtures import install_env

    install_env(up.root, OLD)
    return OLD


def set_editor(page, text: str) -> None:  # noqa: ANN001
    """Replace the editor's text as a user pasting it would."""
    page.click("#editor .cm-content")
    page.keyboard.press("Control+a")
    page.keyboard.press("Delete")
    page.keyboard.insert_text(text)


def editor_text(page) -> str:  # noqa: ANN001
    return page.locator("#editor .cm-content").inner_text()


def offered(page) -> list[str]:  # noqa: ANN001
    return page.locator("#env-select option").evaluate_all("os => os.map(o => o.value)")


def test_environments_page_lists_the_builtin_and_a_registered_one(up: Up, pages: Pages, old_env: str) -> None:
    with up.api("alice") as c:
        listed = c.get("/api/v2/envs").json()
    builtin = next(e for e in listed["environments"] if e["name"] == "argus")
    assert listed["default"] == "argus" and builtin["verl"]
    page = pages.new(user="alice")
    page.click('nav a[data-nav="envs"]')
    page.wait_for_url(f"{up.url}/envs")
    row = page.locator('tr[data-env="argus"]')
    row.wait_for()
    assert row.locator("td.verl").inner_text() == builtin["verl"]
    assert row.locator(".default-badge").inner_text() == "default"
    assert row.locator("td.templates").get_attribute("data-templates") == "1"
    assert row.locator("td.status [data-ok]").get_attribute("data-ok") == ("1" if builtin["ok"] else "0")
    assert builtin["torch"] in row.inner_text()
    assert "argus" in page.locator("#envs-default").inner_text()
    assert page.locator("nav a.current").get_attribute("data-nav") == "envs"
    old = page.locator(f'tr[data-env="{old_env}"]')
    assert old.locator("td.verl").inner_text() == "0.4.1"
    assert old.locator("td.templates").get_attribute("data-templates") == "0"
    assert old.locator(".default-badge").count() == 0
    assert "CPU" in old.inner_text() and old_env in old.inner_text()  # CPU torch; built from that catalog entry
    assert page.locator("#envs-error").is_hidden() and page.locator("#envs-empty").is_hidden()
    shot(page, "envs-en")
    zh = pages.new(lang="zh", user="alice")
    zh.goto(f"{up.url}/envs")
    assert zh.locator("h1").inner_text() == "训练环境"
    zh.locator('tr[data-env="argus"] .default-badge').wait_for()
    assert zh.locator('tr[data-env="argus"] .default-badge').inner_text() == "默认"
    # issue 37: Argus's own description and its probe's note (no rollout engine here) in Chinese, from their codes
    assert builtin["description_code"] == "env.server_description"
    assert {"code": "env.no_rollout_engine", "params": {}} in builtin["note_messages"]
    desc = zh.locator('tr[data-env="argus"] td.desc').inner_text()
    assert "Argus 自身的环境（服务器的解释器）" in desc and "没有 rollout 引擎" in desc, desc
    assert "no build needed" not in desc and "PPO/GRPO cannot run here" not in desc
    assert "no rollout engine (vllm" in row.locator("td.desc").inner_text()  # the English page says the API's text
    shot(zh, "envs-zh")


def test_the_form_writes_the_chosen_environment_into_the_stored_spec(up: Up, pages: Pages, old_env: str) -> None:
    page = pages.new(user="alice")
    page.goto(f"{up.url}/tasks/new")  # opens on the Basic GRPO template
    page.locator('#env-select option[value="argus"]').wait_for(state="attached")
    assert offered(page) == ["", "argus"]  # a basic spec: only the template environments
    assert page.locator('#env-select option[value=""]').inner_text() == "default (argus)"
    page.select_option("#env-select", "argus")
    assert re.search(r"^env: argus$", editor_text(page), re.M)
    page.select_option("#env-select", "")  # back to the default: no env line at all
    assert "env:" not in editor_text(page)

    set_editor(page, WAITS)  # an advanced spec: every environment is offered
    page.locator(f'#env-select option[value="{old_env}"]').wait_for(state="attached")
    assert offered(page) == ["", "argus", old_env]
    page.select_option("#env-select", old_env)
    assert f"name: in an environment\nenv: {old_env}\nnnodes: 1" in editor_text(page)
    shot(page, "new-task-env-en")
    page.click("#check")
    page.locator("#ok").wait_for(timeout=60_000)
    page.click("#submit")
    page.wait_for_url(re.compile(rf"{re.escape(up.url)}/tasks/job-[0-9-]+$"))
    tid = page.url.rsplit("/", 1)[1]
    with up.api("alice") as c:
        spec = c.get(f"/api/v2/tasks/{tid}/spec").json()
        assert spec["resolved"]["env"] == old_env
        assert f"env: {old_env}\n" in spec["raw"]
        assert c.post(f"/api/v2/tasks/{tid}/cancel").status_code == 200


def test_a_typed_environment_follows_the_select_and_the_servers_refusal_is_shown(up: Up, pages: Pages,
                                                                                   old_env: str) -> None:
    page = pages.new(user="alice")
    page.goto(f"{up.url}/tasks/new")
    page.locator('#env-select option[value="argus"]').wait_for(state="attached")
    text = page.evaluate("JSON.parse(document.getElementById('argus-page').textContent).templates['basic-sft']")
    set_editor(page, text.replace("workload: sft\n", f"workload: sft\nenv: {old_env}   # typed by hand\n"))
    # not offered for a basic spec, but shown as written; the server says why it is refused
    page.locator(f'#env-select option[value="{old_env}"]').wait_for(state="attached")
    assert page.locator("#env-select").input_value() == old_env
    assert "not offered" in page.locator(f'#env-select option[value="{old_env}"]').inner_text()
    page.click("#check")
    item = page.locator('#errors li[data-field="env"]')
    item.wait_for(timeout=60_000)
    assert "0.4.1" in item.inner_text() and "advanced" in item.inner_text()
    shot(page, "new-task-env-refused-en")
    page.select_option("#env-select", "")  # the default removes the typed line
    assert "env:" not in editor_text(page)
    with up.api("alice") as c:  # a check queues nothing
        assert all(t["workload"] != "sft" for t in c.get("/api/v2/tasks").json()["items"])
