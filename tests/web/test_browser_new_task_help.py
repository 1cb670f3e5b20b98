"""The New task editor helps (issue 25), in a real Chromium against a real ``argus up`` with verl validation:

* a new user with an empty home is greeted by one to-do pointing at the Data page, not an error wall;
* verl's keys complete as they are typed (arrows, Enter, Tab, Esc), from the config verl composes;
* a did-you-mean has a one-click fix, applied at its line, undone with Ctrl+Z.
"""

from __future__ import annotations

import time

import pytest

from argus.web.templates_catalog import spec_templates
from tests.waiting import wait_until
from tests.web.conftest import Pages, Up, shot
from tests.web.test_browser import set_editor

pytestmark = [pytest.mark.browser, pytest.mark.e2e]

POPUP = ".cm-tooltip-autocomplete"


def lines(page) -> list[str]:  # noqa: ANN001
    return page.locator("#editor .cm-line").all_inner_texts()


def verdict(page, after: str | None = None, timeout_s: float = 60) -> str:  # noqa: ANN001
    """Wait for a verdict newer than ``after`` (new_task.js numbers them in #check-state[data-verdict])."""
    def newer() -> str | None:
        now = page.get_attribute("#check-state", "data-verdict")
        return now if now is not None and now != after else None

    return wait_until(newer, timeout_s, every=0.05,
                      what=lambda: f"no verdict after {after!r}: {page.inner_text('#check-state')!r}")


def open_new(page, up: Up, template: str = "basic-grpo") -> str:  # noqa: ANN001
    page.goto(f"{up.url}/tasks/new?template={template}")
    page.locator("#editor .cm-content", has_text="workload").wait_for()
    return verdict(page)


def test_a_new_user_meets_one_to_do_with_the_data_page_not_an_error_wall(up: Up, pages: Pages) -> None:
    page = pages.new(user="bob")  # bob's home is empty: none of the template's example files exist
    page.goto(f"{up.url}/tasks/new")
    page.locator("#editor .cm-content", has_text="workload").wait_for()
    verdict(page)
    # the default environment (Argus's own: no rollout engine) runs SFT: the page opens there (issue 34)
    assert page.locator("#editor .cm-content").inner_text().strip() == spec_templates("en")["basic-sft"].strip()
    items = page.locator("#errors li")
    assert items.count() == 1, items.all_inner_texts()
    todo = items.first
    assert "newtask-todo" in (todo.get_attribute("class") or "")
    assert "not in your home yet" in todo.inner_text() and "$HOME/datasets/sft/train.parquet" in todo.inner_text()
    link = todo.locator("a.newtask-link")
    assert link.inner_text() == "Open the Data page" and link.get_attribute("href") == "/data"
    shot(page, "new-task-first-run")
    link.click()
    page.wait_for_url(f"{up.url}/data")

    zh = pages.new(lang="zh", user="bob")
    zh.goto(f"{up.url}/tasks/new")
    verdict(zh)
    assert zh.locator("#errors li a.newtask-link").inner_text() == "打开数据页面"


def test_verl_keys_complete_as_they_are_typed(up: Up, pages: Pages) -> None:
    page = pages.new(user="alice")
    open_new(page, up)
    page.click("#editor .cm-content")
    page.keyboard.press("Control+End")
    page.keyboard.type("\noverrides:\n- actor_rollout_ref.actor.ppo_mi")
    popup = page.locator(POPUP)
    try:
        popup.wait_for(timeout=30_000)
    except Exception:
        keys = page.request.get(f"{up.url}/api/v2/verl/keys?workload=grpo")
        raise AssertionError(f"no completion; lines {lines(page)[-3:]}; keys: {keys.status} {keys.text()[:300]}") from None
    offered = popup.locator("li").all_inner_texts()
    assert any(o.startswith("actor_rollout_ref.actor.ppo_mini_batch_size") and "= 256" in o for o in offered), offered
    assert not any("ppo_epochs" in o for o in offered)  # only what matches the typed text
    shot(page, "new-task-completion")
    for _ in range(len(offered)):  # arrows move through the list to the key wanted
        if popup.locator("li[aria-selected]").inner_text().startswith("actor_rollout_ref.actor.ppo_mini_batch_size"):
            break
        page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    assert lines(page)[-1].strip() == "- actor_rollout_ref.actor.ppo_mini_batch_size"
    assert popup.count() == 0

    page.keyboard.type("=4\n- data.train_batch_si")
    popup.wait_for()
    page.keyboard.press("Escape")  # closes, leaves the text as typed
    popup.wait_for(state="detached")
    assert lines(page)[-1].strip() == "- data.train_batch_si"
    page.keyboard.type("z")  # typing again offers again; Tab takes the first
    popup.wait_for()
    assert popup.locator("li[aria-selected]").inner_text().startswith("data.train_batch_size")
    page.keyboard.press("Tab")
    assert lines(page)[-1].strip() == "- data.train_batch_size"
    assert page.evaluate("document.activeElement.classList.contains('cm-content')")  # Tab stayed in the editor

    page.keyboard.type("=16\nname_typed_at_top")  # an undotted word is YAML's, not verl's: nothing offered
    time.sleep(0.5)  # an absence is checked: time for a popup to come, were one offered (not a wait)
    assert popup.count() == 0


def test_a_did_you_mean_is_fixed_in_one_click_and_undone_with_ctrl_z(up: Up, pages: Pages) -> None:
    page = pages.new(user="alice")
    seen = open_new(page, up)
    text = spec_templates("en")["basic-grpo"] + "overrides:\n  - data.train_batch_sz=8\n  - +trainer.nnodes=1\n"
    set_editor(page, text)
    seen = verdict(page, seen)
    typo = page.locator('#errors li[data-field="overrides[0]"]')
    assert "did you mean `data.train_batch_size`" in typo.inner_text()
    button = typo.locator("button.newtask-fix")
    assert button.inner_text() == "Fix: write data.train_batch_size"
    shot(page, "new-task-fix")
    button.click()
    assert "  - data.train_batch_size=8" in lines(page)
    assert "write data.train_batch_size" not in page.inner_text("#check-state")  # the state says what was done
    assert "Replaced data.train_batch_sz with data.train_batch_size" in page.inner_text("#check-state")
    seen = verdict(page, seen)
    after = page.locator('#errors li[data-field="overrides[0]"]').all_inner_texts()
    assert not any("unknown key" in t for t in after), after  # fixed: checked again, the typo is gone

    plus = page.locator('#errors li[data-field="overrides[1]"] button.newtask-fix')
    assert plus.inner_text() == "Fix: write trainer.nnodes"
    plus.click()
    assert "  - trainer.nnodes=1" in lines(page)
    verdict(page, seen)

    page.keyboard.press("Control+z")
    assert "  - +trainer.nnodes=1" in lines(page)
    page.keyboard.press("Control+z")
    assert "  - data.train_batch_sz=8" in lines(page)  # each fix is one undoable edit
