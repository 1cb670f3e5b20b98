"""Issue 25: every page usable on a phone, 390 × 844 CSS px, in a real Chromium against a real ``argus up``.

For each page (signed out: sign-in; as alice and as admin: tasks, new task, the task page and each of its
tabs, compare, data, environments, nodes, account with its notifications, admin) the page itself never
scrolls sideways (``document.scrollingElement.scrollWidth <= innerWidth``: wide tables scroll inside
their own box), and its key controls lie inside the viewport's width and are not covered by anything
(the element at their centre is them). A failure names the elements that stick out.
"""

from __future__ import annotations

import pytest

from tests.web.conftest import Pages, Up, shot, sign_in, sign_in_with_token
from tests.web.test_browser import set_editor, submit_api

pytestmark = [pytest.mark.browser, pytest.mark.e2e]

PHONE = {"width": 390, "height": 844}
NAV = ['a[data-nav="tasks"]', 'a[data-nav="new"]', 'a[data-nav="data"]', 'a[data-nav="nodes"]',
       'a[data-nav="envs"]', 'a[data-nav="account"]', "#sign-out", "#lang-switch"]
ECHO = "kind: advanced\nworkload: job\nname: phone\nnnodes: 1\nn_gpus_per_node: 0\ncommand: python3 -m argus.jobs.echo\n"
LONG = ECHO.replace("argus.jobs.echo", "argus.jobs.echo " + " ".join(f"--pad{i}=$HOME/datasets/gsm8k/train.parquet"
                                                                      for i in range(12)))

# Elements sticking out to the right, outside any box that scrolls or clips sideways: what makes the page
# scroll sideways (or would, were the body to clip it).
_OFFENDERS = """() => {
  const w = innerWidth, out = [];
  const clipped = (e) => { for (let p = e.parentElement; p && p !== document.body; p = p.parentElement) {
      const ox = getComputedStyle(p).overflowX; if (ox !== "visible") return true; } return false; };
  for (const e of document.body.querySelectorAll("*")) {
    const r = e.getBoundingClientRect();
    if (r.width && r.right > w + 1 && !clipped(e))
      out.push(`${e.tagName.toLowerCase()}${e.id ? "#" + e.id : ""}${e.className && typeof e.className === "string"
        ? "." + e.className.trim().split(/\\s+/).join(".") : ""} right=${Math.round(r.right)}`);
  }
  return out.slice(0, 12);
}"""

_USABLE = """(e) => {
  e.scrollIntoView({block: "center", inline: "nearest"});
  const r = e.getBoundingClientRect();
  if (!r.width || !r.height) return "not shown";
  if (r.left < -1 || r.right > innerWidth + 1) return `outside the width: ${Math.round(r.left)}..${Math.round(r.right)}`;
  const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
  if (hit && hit !== e && !e.contains(hit) && !hit.contains(e)) return `covered by ${hit.tagName} ${hit.id || hit.className}`;
  return "";
}"""


PROBLEMS: list[str] = []  # every page's problems, reported together at the end of the test


def check(page, name: str, controls: list[str]) -> None:  # noqa: ANN001
    """No sideways scrolling of the page, and each control (first match) visible, in the width, uncovered."""
    page.wait_for_timeout(300)  # let a page's first render settle (fonts, data)
    widths = page.evaluate("() => [document.scrollingElement.scrollWidth, innerWidth]")
    if widths[0] > widths[1]:
        PROBLEMS.append(f"{name}: the page scrolls sideways {widths}: {page.evaluate(_OFFENDERS)}")
    for sel in controls:
        loc = page.locator(sel).first
        loc.wait_for(state="attached")
        problem = loc.evaluate(_USABLE)
        if problem:
            PROBLEMS.append(f"{name}: {sel} is {problem}")
    shot(page, f"phone-{name}")


def _phone(pages: Pages):  # noqa: ANN202
    page = pages.new()
    page.set_viewport_size(PHONE)
    return page


def _loaded(page) -> None:  # noqa: ANN001
    page.wait_for_function("() => document.body.dataset.loaded === '1'", timeout=30_000)


def _visit_all(page, up: Up, who: str, tid: str) -> None:  # noqa: ANN001
    page.goto(f"{up.url}/tasks")
    page.locator(f'tr[data-task="{tid}"]').first.wait_for()
    check(page, f"{who}-tasks", [*NAV, "#f-q"])
    page.goto(f"{up.url}/tasks/new")
    page.locator("#editor .cm-editor").wait_for()
    check(page, f"{who}-new-task", ["#check", "#submit", "#editor"])
    # a checked spec shows its command after $HOME expansion: one long line that must wrap, not widen the page
    set_editor(page, LONG)
    page.locator("#expanded pre", has_text="--pad11=").wait_for(timeout=60_000)
    page.on("dialog", lambda d: d.accept())  # leaving with an edited draft asks first: yes
    check(page, f"{who}-new-task-checked", ["#check", "#submit", "#expanded pre"])
    page.goto(f"{up.url}/tasks/{tid}")
    page.locator("#t-status [data-status]").wait_for()
    tabs = page.locator("#tabs .tab").evaluate_all("(ts) => ts.map((t) => t.dataset.tab)")
    assert len(tabs) >= 6, tabs
    for tab in tabs:
        page.locator(f'#tabs .tab[data-tab="{tab}"]').click()
        check(page, f"{who}-task-{tab}", [f'#tabs .tab[data-tab="{tab}"]', "#t-status", "#clone"])
    page.goto(f"{up.url}/compare?tasks={tid}")
    page.locator("#compare-tasks").wait_for()
    check(page, f"{who}-compare", ["#compare-tasks"])
    page.goto(f"{up.url}/data")
    page.locator("#files-body tr").first.wait_for()
    check(page, f"{who}-data", ["#mkdir", "#pick-files", "#data-filter"])
    page.goto(f"{up.url}/envs")
    page.locator("#envs-body tr, #envs-empty:not([hidden])").first.wait_for()
    check(page, f"{who}-envs", ['a[data-nav="envs"]'])
    page.goto(f"{up.url}/nodes")
    _loaded(page)
    check(page, f"{who}-nodes", ["#nodes-total"])
    page.goto(f"{up.url}/account")
    page.locator("#me-name").filter(has_text=who).wait_for()
    check(page, f"{who}-account", ["#pw-save", "#pw-new"])


def test_every_page_fits_a_phone(up: Up, pages: Pages) -> None:
    PROBLEMS.clear()
    tid = submit_api(up, "alice", ECHO)
    page = _phone(pages)
    page.goto(f"{up.url}/login")
    check(page, "login", ["#login-user", "#login-password", "#login-submit", '.tab[data-mode="token"]'])
    page.locator('.tab[data-mode="token"]').click()
    check(page, "login-token", ["#login-token", "#login-submit"])
    sign_in(page, up, "alice")
    _visit_all(page, up, "alice", tid)

    admin = _phone(pages)
    sign_in_with_token(admin, up.url, up.admin_token)
    _visit_all(admin, up, "admin", tid)
    admin.goto(f"{up.url}/admin")
    _loaded(admin)
    admin.locator('#audit-table[data-loaded="1"]').wait_for()
    check(admin, "admin-admin", ["#new-name", "#new-password", "#create-user", "#audit-actor", "#audit-action",
                                 "#audit-apply", 'a[data-nav="admin"]'])
    # a wide table scrolls inside its own box; its controls are reachable by scrolling that box
    box = admin.locator("#users-table").locator("xpath=..")
    assert box.evaluate("e => getComputedStyle(e).overflowX") == "auto"
    save = admin.locator('tr[data-user="alice"] button.save-limits')
    save.scroll_into_view_if_needed()
    assert save.evaluate(_USABLE) == ""
    assert PROBLEMS == [], "\n".join(PROBLEMS)
