"""New Task, issue 37, in a real Chromium against a real ``argus up`` with verl validation:

* the spec's own checks (``checks=spec``, no verl) answer first and the page shows their problems at once,
  while verl's full check (held back here by 3 s) is still running; its verdict then replaces them;
* a template switch clears the previous text's verdict ("Rejected: …") at once;
* long lines wrap in the editor (nothing to scroll sideways);
* an error is pinned to the line where its key or operator is written, not to a comment line naming it.
"""

from __future__ import annotations

import pytest

from tests.waiting import wait_until
from tests.web.conftest import Pages, Up, shot
from tests.web.test_browser import set_editor
from tests.web.test_browser_new_task_help import open_new, verdict

pytestmark = [pytest.mark.browser, pytest.mark.e2e]

# Holds back the full dry run (not the spec-only one) in the page's fetch: the quick answer must show alone.
HOLD_FULL = """(() => {
  const real = window.fetch;
  window.fetch = async (url, opts) => {
    const u = String(url);
    if (u.includes("dry_run=true") && !u.includes("checks=spec")) await new Promise((r) => setTimeout(r, 3000));
    return real(url, opts);
  };
})()"""

TWO_STAGES = """kind: advanced
workload: grpo
nnodes: 1
n_gpus_per_node: 65
command: |
  python3 -m verl.trainer.main_ppo \\
    data.train_batch_sz=8 \\
    trainer.nnodes=1
"""


def test_the_spec_checks_answer_first_and_verl_adds_its_own(up: Up, pages: Pages) -> None:
    page = pages.new(user="alice")
    page.add_init_script(HOLD_FULL)
    before = open_new(page, up)
    set_editor(page, TWO_STAGES)
    # the spec's own problem (the platform's GPU limit) within 2 s, with the full verdict still held back
    wait_until(lambda: page.locator('#errors li[data-field="n_gpus_per_node"]').count() == 1, 10, every=0.05,
               what=lambda: f"no quick answer: {page.inner_text('#check-state')!r}")
    assert page.get_attribute("#check-state", "data-verdict") == before  # verl's is not in yet
    assert "verl is still checking" in page.inner_text("#check-state")
    assert page.locator('#errors li[data-field="n_gpus_per_node"]').get_attribute("data-line") == "4"
    assert page.locator("#ok").is_hidden()
    shot(page, "new-task-quick-answer")
    verdict(page, before)
    fields = page.locator("#errors li").evaluate_all("els => els.map((e) => e.dataset.field)")
    assert "n_gpus_per_node" in fields and "command: data.train_batch_sz" in fields, fields
    assert page.inner_text("#check-state").startswith("Rejected")

    zh = pages.new(lang="zh", user="alice")
    zh.add_init_script(HOLD_FULL)
    open_new(zh, up)
    set_editor(zh, TWO_STAGES)
    wait_until(lambda: "verl 仍在检查" in zh.inner_text("#check-state"), 10, every=0.05,
               what=lambda: f"no quick answer: {zh.inner_text('#check-state')!r}")


def test_a_template_switch_clears_the_last_verdict(up: Up, pages: Pages) -> None:
    page = pages.new(user="alice")
    before = open_new(page, up)
    set_editor(page, "workload: grpo\nnnodes: 0\n")
    verdict(page, before)
    assert page.inner_text("#check-state").startswith("Rejected")
    # the click and the state line read in one task of the page: before any new answer could arrive
    shown = page.evaluate("""() => {
      document.querySelector('[data-template="basic-sft"]').click();
      return document.getElementById('check-state').textContent;
    }""")
    assert "Rejected" not in shown, shown
    assert page.locator("#errors").is_hidden()


def test_long_lines_wrap_in_the_editor(up: Up, pages: Pages) -> None:
    page = pages.new(user="alice")
    open_new(page, up, "advanced")
    long = "    " + " ".join(f"+trainer.extra_{i}=value_{i}" for i in range(30)) + " \\"
    page.click("#editor .cm-content")
    page.keyboard.press("Control+End")
    page.keyboard.insert_text("\n" + long)
    scroller = page.locator("#editor .cm-scroller")
    width = scroller.evaluate("e => [e.scrollWidth, e.clientWidth]")
    assert width[0] <= width[1] + 1, f"the editor scrolls sideways: {width}"
    assert "cm-lineWrapping" in (page.locator("#editor .cm-content").get_attribute("class") or "")
    # the long line is one line of the document, shown on several rows
    last = page.locator("#editor .cm-line").last
    assert last.evaluate("e => e.getBoundingClientRect().height") > 2 * page.locator("#editor .cm-line").first.evaluate(
        "e => e.getBoundingClientRect().height")


COMMENTED = """kind: advanced
workload: grpo
nnodes: 1
n_gpus_per_node: 1
command: |
  # an older try: data.train_batch_size=4 && echo done
  python3 -m verl.trainer.main_ppo \\
    data.train_batch_size=8 \\
    trainer.nnodes=1 && echo done
"""


def test_an_error_is_pinned_to_its_line_not_to_a_comment_naming_it(up: Up, pages: Pages) -> None:
    page = pages.new(user="alice")
    before = open_new(page, up)
    set_editor(page, COMMENTED)
    verdict(page, before)
    op = page.locator('#errors li[data-field="command"]', has_text="&&")
    assert op.count() == 1, page.locator("#errors li").all_inner_texts()
    assert op.get_attribute("data-line") == "9"  # `trainer.nnodes=1 && echo done`, not the comment on line 6
    op.click()  # the cursor goes to that line
    wait_until(lambda: "cm-activeLine" in (page.locator("#editor .cm-line").nth(8).get_attribute("class") or ""), 10,
               what="the cursor on line 9")
