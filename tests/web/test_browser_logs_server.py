"""The log pane over the whole log on the server (issue 37, "Logs"), in a real Chromium against a real `argus up`.

A log larger than the loaded window (its tail is shown) whose first error is an upper-case ``ERROR`` line of a
Ray worker near its start, with look-alikes (``val/error_rate``) on every line and a later traceback: "First
error" must land on that line (the server's answer over the whole log, never the window's), name its line and
worker, in English and Chinese; lines carry their numbers in a gutter; and Enter at the end of the log finds a
match earlier in it (the search wraps around) rather than answering "No match".
"""

from __future__ import annotations

import pytest

from tests.waiting import wait_until
from tests.web.conftest import Pages, Up, shot
from tests.web.test_browser import submit_api
from tests.web.test_browser_logs import ECHO, in_view

pytestmark = [pytest.mark.browser, pytest.mark.e2e]

LINES = 40_000
ERROR_AT = 150  # line numbers, from 1
NEEDLE_AT = 200
T0, T1 = 1_700_000_000.5, 1_700_003_600.25  # clock stamps (unix time), an hour apart
ERROR = "\x1b[31m(WorkerDict pid=71, ip=10.0.0.3)\x1b[0m ERROR 11-21 14:02:11 [reward.py:12] reward server down"


def _log() -> str:
    out = []
    for n in range(1, LINES + 1):
        if n == ERROR_AT:
            out.append(ERROR)
        elif n == NEEDLE_AT:
            out.append("WRAPNEEDLE only near the start")
        elif n == 30_000:
            out.append("Traceback (most recent call last):\n  File \"train.py\", line 9, in step\nValueError: later")
        elif n == LINES:
            out.append("LAST LINE of the log")
        else:
            out.append(f"\x1b[36m(TaskRunner pid=42)\x1b[0m step:{n} - actor/pg_loss:0.5 - val/error_rate:0.0")
    return "\n".join(out) + "\n"


def test_first_error_line_numbers_and_wrap_over_the_whole_log(up: Up, pages: Pages) -> None:
    tid = submit_api(up, "alice", ECHO.replace("name: echo", "name: firsterr").replace(" --pad 300", ""))
    with up.api("alice") as c:
        wait_until(lambda: c.get(f"/api/v2/tasks/{tid}").json()["status"] == "SUCCEEDED", 240, every=0.05,
                   what="the echo task ends")
    log = up.root / "users" / "alice" / "jobs" / tid / "logs" / "attempt-1.log"
    text = _log()
    log.write_text(text)
    total = text.count("\n")  # the traceback adds two lines
    # the driver's clock: the log had reached the end of line ERROR_AT at T0, its end at T1
    error_end = len("\n".join(text.split("\n")[:ERROR_AT]).encode()) + 1
    log.with_suffix(".clock").write_text(f"{error_end} {T0}\n{len(text.encode())} {T1}\n")
    page = pages.new(user="alice")
    page.goto(f"{up.url}/tasks/{tid}")
    last = page.locator("#log .ln", has_text="LAST LINE of the log")
    last.wait_for(timeout=60_000)
    assert page.locator("#log").evaluate("e => Number(e.dataset.start)") > 0  # only the tail is loaded
    assert page.locator("#log .ln", has_text=f"step:{ERROR_AT + 1} ").count() == 0

    # line numbers: in a gutter, the server's count over the whole file; never part of the line's text
    wait_until(lambda: last.get_attribute("data-n") == str(total), 30, every=0.1, what="the last line numbered")
    assert last.evaluate("e => getComputedStyle(e, '::before').content") == f'"{total}"'
    assert last.inner_text() == "LAST LINE of the log"
    before = page.locator("#log .ln").nth(0)
    n0 = int(before.get_attribute("data-n"))
    assert before.inner_text().endswith(f"step:{n0 - 2} - actor/pg_loss:0.5 - val/error_rate:0.0")  # 2: the traceback

    # the filter over the whole log: the server lists the matching lines, numbered; one click shows one there
    page.fill("#log-filter", "wrapneedle")
    page.locator("#log-fcount", has_text="0 of").wait_for()
    page.click("#log-filter-all")
    page.locator("#log-hits", has_text="Matching lines in the whole log: 1.").wait_for(timeout=60_000)
    hit = page.locator("#log-hits .log-hit")
    assert hit.count() == 1 and page.locator("#log-hits .log-hit-n").inner_text() == str(NEEDLE_AT)
    assert "WRAPNEEDLE only near the start" in hit.inner_text()
    hit.click()
    cur = page.locator("#log .ln.cur")
    cur.wait_for(timeout=60_000)
    assert cur.inner_text() == "WRAPNEEDLE only near the start" and cur.get_attribute("data-n") == str(NEEDLE_AT)
    assert in_view(page, "#log .ln.cur")
    page.fill("#log-filter", "")
    assert page.locator("#log-hits").is_hidden() and page.locator("#log-filter-all").is_hidden()
    page.click("#jump")
    last.wait_for()

    # Enter at the end finds a match earlier in the log: the search goes around
    page.fill("#log-q", "wrapneedle")
    page.locator("#log-count", has_text="No match in the loaded lines").wait_for()
    page.press("#log-q", "Enter")
    cur = page.locator("#log .ln.cur")
    cur.wait_for(timeout=60_000)
    assert cur.inner_text() == "WRAPNEEDLE only near the start" and cur.get_attribute("data-n") == str(NEEDLE_AT)
    assert in_view(page, "#log .ln.cur")
    page.fill("#log-q", "")
    page.click("#jump")
    last.wait_for()

    # first error: the upper-case ERROR line near the start (not the later traceback, not error_rate), named
    page.click("#log-error")
    err = page.locator("#log .ln.err")
    err.wait_for(timeout=60_000)
    assert err.inner_text() == ERROR.replace("\x1b[31m", "").replace("\x1b[0m", "")
    assert err.get_attribute("data-n") == str(ERROR_AT)
    assert in_view(page, "#log .ln.err")
    # each line's time, from the clock, on hover: the error line by T0, the lines after it by T1
    when = page.evaluate("""(ms) => new Intl.DateTimeFormat('en', {year: 'numeric', month: '2-digit', day: '2-digit',
        hour: '2-digit', minute: '2-digit', second: '2-digit'}).format(new Date(ms))""", [T0 * 1000, T1 * 1000][0])
    wait_until(lambda: err.get_attribute("title") == f"In the log by {when}", 30, every=0.1, what="the line's time")
    later = page.locator(f'#log .ln[data-n="{ERROR_AT + 1}"]')
    wait_until(lambda: (later.get_attribute("title") or "").startswith("In the log by ")
               and later.get_attribute("title") != err.get_attribute("title"), 30, every=0.1, what="the next line's time")
    info = page.locator("#log-errinfo")
    assert info.inner_text() == f"First error: line {ERROR_AT}, (WorkerDict pid=71, ip=10.0.0.3)"
    shot(page, "task-log-first-error-en")

    zh = pages.new(lang="zh", user="alice")
    zh.goto(f"{up.url}/tasks/{tid}")
    zh.locator("#log .ln", has_text="LAST LINE of the log").wait_for(timeout=60_000)
    zh.click("#log-error")
    zh.locator("#log .ln.err").wait_for(timeout=60_000)
    assert zh.locator("#log-errinfo").inner_text() == f"第一个错误：第 {ERROR_AT} 行，(WorkerDict pid=71, ip=10.0.0.3)"
    shot(zh, "task-log-first-error-zh")


def test_no_error_line_is_said_only_when_the_whole_log_has_none(up: Up, pages: Pages) -> None:
    tid = submit_api(up, "alice", ECHO.replace("name: echo", "name: noerr").replace(" --pad 300", ""))
    with up.api("alice") as c:
        wait_until(lambda: c.get(f"/api/v2/tasks/{tid}").json()["status"] == "SUCCEEDED", 240, every=0.05,
                   what="the echo task ends")
    log = up.root / "users" / "alice" / "jobs" / tid / "logs" / "attempt-1.log"
    log.write_text("".join(f"step:{n} - val/error_rate:0.0 - 0 errors\n" for n in range(20_000)))
    page = pages.new(user="alice")
    page.goto(f"{up.url}/tasks/{tid}")
    page.locator("#log .ln", has_text="step:19999 ").wait_for(timeout=60_000)
    page.click("#log-error")
    page.locator("#log-errinfo", has_text="No error line in the whole log").wait_for(timeout=60_000)
    assert page.locator("#log .ln.err").count() == 0
    # an error appended later is found (the index goes on from where it stopped)
    with log.open("a") as f:
        f.write("Error: the reward function raised\n")
    page.click("#log-error")
    page.locator("#log-errinfo", has_text="First error: line 20001").wait_for(timeout=60_000)


def test_a_multi_node_tasks_log_pane_switches_node_and_first_error_goes_to_the_node_that_has_it(
        up: Up, pages: Pages) -> None:
    """Issue 37: "the log pane can switch node". A 2-node task: node 1's log is clean, node 2's has the error.
    The pane offers both nodes; "First error" switches it to node 2 and marks the line there; the selector, the
    download link and the search follow the node shown."""
    body = ("kind: advanced\nworkload: job\nname: two-nodes\nnnodes: 2\nn_gpus_per_node: 1\n"
            "command: python3 -m argus.jobs.sleep 1\n")
    tid = submit_api(up, "alice", body)  # waits for GPUs: its logs are written below as its two nodes would
    logs = up.root / "users" / "alice" / "jobs" / tid / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    (logs / "attempt-1.log").write_text("".join(f"step:{n} - actor/pg_loss:0.5\n" for n in range(1, 50))
                                        + "NODE ONE LAST\n")
    (logs / "attempt-1.node-2.log").write_text("[argus] node 2 of the task\nnode two fine\n"
                                               "(WorkerDict pid=9, ip=10.0.0.2) RuntimeError: NODE TWO BROKE\n"
                                               "NODE TWO LAST\n")
    with up.api("alice") as c:  # ended: the page shows its log (a task still in its first wait shows why it waits)
        assert c.post(f"/api/v2/tasks/{tid}/cancel").status_code == 200
    page = pages.new(user="alice")
    page.goto(f"{up.url}/tasks/{tid}")
    page.locator("#log .ln", has_text="NODE ONE LAST").wait_for(timeout=60_000)
    assert page.locator("#log-node-label").is_visible()
    assert page.locator("#log-node option").all_inner_texts() == ["1 (the first: the launcher's)", "2"]

    page.click("#log-error")
    err = page.locator("#log .ln.err")
    err.wait_for(timeout=60_000)
    assert err.inner_text() == "(WorkerDict pid=9, ip=10.0.0.2) RuntimeError: NODE TWO BROKE"
    assert err.get_attribute("data-n") == "3"
    assert page.locator("#log-node").input_value() == "2"
    assert page.locator("#log .ln", has_text="NODE ONE LAST").count() == 0  # the pane shows node 2's log
    assert "node=2" in (page.locator("#download").get_attribute("href") or "")
    assert "node 2" in page.locator("#log-errinfo").inner_text()

    # the search asks the node shown; back on node 1, its own log
    page.fill("#log-q", "node two fine")
    page.locator("#log .ln.cur", has_text="node two fine").wait_for(timeout=30_000)
    page.fill("#log-q", "")
    page.select_option("#log-node", "1")
    page.locator("#log .ln", has_text="NODE ONE LAST").wait_for(timeout=60_000)
    assert page.locator("#log .ln", has_text="NODE TWO LAST").count() == 0
    assert "node=" not in (page.locator("#download").get_attribute("href") or "")
