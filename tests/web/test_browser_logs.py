"""The task page's log viewer for verl/Ray output (issue 25, "Logs"), in a real Chromium.

A CPU job (``argus.jobs.echo``) prints Ray-style ANSI-coloured lines, a tqdm bar redrawn with
carriage returns, a traceback and a line that would be HTML; the page must show colours as styled
text, never raw escapes, the bar as one line in its final state, find text, jump to the first
error, toggle wrapping, and never turn a log line into markup.
"""

from __future__ import annotations

import pytest

from tests.waiting import wait_until
from tests.web.conftest import Pages, Up, shot
from tests.web.test_browser import submit_api

pytestmark = [pytest.mark.browser, pytest.mark.e2e]

ECHO = ("kind: advanced\nworkload: job\nname: echo\nnnodes: 1\nn_gpus_per_node: 0\n"
        "command: python3 -m argus.jobs.echo --ansi --tqdm --pad 300\n")


def in_view(page, selector: str) -> bool:  # noqa: ANN001
    """Whether the (first) element is inside the log's visible box."""
    return page.locator(selector).first.evaluate("""(e) => {
        const box = document.getElementById('log').getBoundingClientRect();
        const r = e.getBoundingClientRect();
        return r.top >= box.top - 1 && r.bottom <= box.bottom + 1;
    }""")


def test_ansi_tqdm_search_first_error_and_wrap(up: Up, pages: Pages) -> None:
    tid = submit_api(up, "alice", ECHO)
    page = pages.new(user="alice")
    page.goto(f"{up.url}/tasks/{tid}")
    page.locator("#log .ln", has_text="echo: done").wait_for(timeout=180_000)
    page.locator('#t-status [data-status="SUCCEEDED"]').wait_for(timeout=120_000)

    # colours: Ray's prefix is a styled span with the terminal's colour, bold is bold
    prefix = page.locator("#log .ln span", has_text="(TaskRunner pid=4242)").first
    assert "ansi-fg6" in prefix.get_attribute("class")
    assert prefix.evaluate("e => getComputedStyle(e).color") != page.locator("#log").evaluate(
        "e => getComputedStyle(e).color")
    assert page.locator("#log span.ansi-b", has_text="warming up").count() == 1
    assert page.locator("#log span.ansi-bg4", has_text="blue background").count() == 1
    text = page.locator("#log").evaluate("e => e.textContent")
    assert "\x1b" not in text and "\u241b" not in text and "[32m" not in text and "[2K" not in text
    assert page.locator("#log .ln", has_text="cursor moves dropped").inner_text().endswith("cursor moves dropped")

    # tqdm: one line, only its final state
    bars = page.locator("#log .ln", has_text="Training:")
    assert bars.count() == 1
    assert bars.inner_text() == "Training: 100%|########| 4/4 done"

    # a log line is text, never markup
    assert page.locator("#log .ln", has_text="<img src=x onerror=alert(1)> not markup").count() == 1
    assert page.locator("#log img, #log script").count() == 0

    # search: plain text, counter, next/previous move the current match
    page.fill("#log-q", "NEEDLE")
    page.locator("#log-count", has_text="1 of 3").wait_for()
    assert page.locator("#log .ln.cur").inner_text() == "needle 0"
    page.click("#log-next")
    page.locator("#log-count", has_text="2 of 3").wait_for()
    assert page.locator("#log .ln.cur").inner_text() == "needle 1"
    page.click("#log-prev")
    page.click("#log-prev")
    page.locator("#log-count", has_text="3 of 3").wait_for()
    assert page.locator("#log .ln.cur").inner_text() == "needle 2"
    assert in_view(page, "#log .ln.cur")
    # regex: filler lines 10–19; a bad expression is marked, not thrown
    page.check("#log-re")
    page.fill("#log-q", r"^filler 1\d$")
    page.locator("#log-count", has_text="1 of 10").wait_for()
    assert in_view(page, "#log .ln.cur")
    page.fill("#log-q", "(")
    page.locator("#log-q.invalid").wait_for()
    page.uncheck("#log-re")
    page.fill("#log-q", "")

    # first error: scrolled to the traceback, which starts off screen
    page.locator("#log").evaluate("e => { e.scrollTop = 0; }")
    assert not in_view(page, "#log .ln:has-text('Traceback')")
    page.click("#log-error")
    err = page.locator("#log .ln.err")
    assert err.inner_text().startswith("Traceback (most recent call last)")
    assert in_view(page, "#log .ln.err")
    shot(page, "task-log-viewer-en")

    # wrap on/off
    assert page.locator("#log").evaluate("e => getComputedStyle(e).whiteSpace") == "pre-wrap"
    page.click("#log-wrap")
    assert page.locator("#log").evaluate("e => getComputedStyle(e).whiteSpace") == "pre"
    assert page.locator("#log-wrap").get_attribute("aria-pressed") == "false"
    page.click("#log-wrap")
    assert page.locator("#log").evaluate("e => getComputedStyle(e).whiteSpace") == "pre-wrap"


BIG_MAX_LINES = 5000  # static/js/logpane.js MAX_LINES


def _block(n: int) -> str:
    """~1 MiB of verl/Ray-like output: coloured actor prefixes, levels, a traceback; 'block N' marks it."""
    out = [f"block {n}\n"]
    for k in range(11_000):
        if k % 50 == 0:
            out.append(f"(WorkerDict pid=7{k % 3}) WARNING slow rollout {n}.{k}\n")
        elif k % 4000 == 1999:
            out.append("Traceback (most recent call last):\n  File \"train.py\", line 9, in step\n"
                       f"ValueError: boom {n}.{k}\n")
        else:
            out.append(f"\x1b[36m(TaskRunner pid=42)\x1b[0m step:{k} INFO loss:0.5\n")
    out.append("Traceback (most recent call last):\n  File \"train.py\", line 9, in step\n"
               f"ValueError: boom {n}\n")
    return "".join(out)


def _big_log(path, mb: int) -> int:  # noqa: ANN001
    """Write a ``mb`` MiB log fast (one block repeated), FIRST LINE … LAST LINE; its size."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as f:
        f.write("FIRST LINE of the big log\n")
        done = 0
        n = 0
        while done < mb * 1048576:
            chunk = _block(n) if n < 3 else _block(n).replace(f"block {n}\n", f"block {n} of the middle\n")
            f.write(chunk)
            done += len(chunk)
            n += 1
        f.write("LAST LINE of the big log\n")
    return path.stat().st_size


def _window(page) -> tuple[int, int]:  # noqa: ANN001
    d = page.locator("#log").evaluate("e => [Number(e.dataset.start), Number(e.dataset.end)]")
    return d[0], d[1]


def _lines(page) -> int:  # noqa: ANN001
    return page.evaluate("document.querySelectorAll('#log .ln').length")


def _heap_mb(cdp) -> float:  # noqa: ANN001
    """The page's live JS heap after a full garbage collection (Chromium's own Performance metrics), in MiB."""
    cdp.send("HeapProfiler.collectGarbage")
    metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
    return metrics["JSHeapUsedSize"] / 1048576


def test_a_1gb_log_opens_at_its_end_pages_on_scroll_filters_and_searches(up: Up, pages: Pages) -> None:
    """The whole of a 1 GiB log is reachable without downloading it, with the page's DOM kept bounded."""
    tid = submit_api(up, "alice", ECHO.replace("name: echo", "name: biglog").replace(" --pad 300", ""))
    with up.api("alice") as c:
        wait_until(lambda: c.get(f"/api/v2/tasks/{tid}").json()["status"] == "SUCCEEDED", 240, every=0.05,
                   what="the echo task ends")
    log = up.root / "users" / "alice" / "jobs" / tid / "logs" / "attempt-1.log"
    size = _big_log(log, 1024)
    try:
        page = pages.new(user="alice")
        page.goto(f"{up.url}/tasks/{tid}")
        # opens at the end: the last line, a window far into the file, the position said
        page.locator("#log .ln", has_text="LAST LINE of the big log").wait_for()
        start, end = _window(page)
        assert end == size and start > size - 1048576
        assert "of 1024 MB" in page.inner_text("#log-trimmed")
        assert page.locator("#log .ln", has_text="FIRST LINE").count() == 0
        assert _lines(page) < BIG_MAX_LINES
        cdp = page.context.new_cdp_session(page)
        cdp.send("Performance.enable")
        heap0 = _heap_mb(cdp)

        # scrolling up fetches earlier ranges; what the user looks at does not jump
        page.locator("#log").hover()
        page.mouse.wheel(0, -100_000)
        wait_until(lambda: _window(page)[0] < start, 30, every=0.05,
                   what="an earlier range is fetched on scrolling up")
        before = _window(page)[0]
        # reach the top (the next range comes in above it) and note where a line on screen is
        top = page.locator("#log").evaluate("""e => { e.scrollTop = 0; window.__anchor = e.querySelectorAll('.ln')[3];
                                                      return window.__anchor.getBoundingClientRect().top; }""")
        wait_until(lambda: _window(page)[0] < before, 30, every=0.05, what="another earlier range")
        moved = page.evaluate("window.__anchor.isConnected ? window.__anchor.getBoundingClientRect().top : null")
        assert moved is not None and abs(moved - top) < 3, (top, moved)  # stable under the prepend
        peak = 0
        for _ in range(12):  # keep going up: lines come in above, lines far below leave
            s0 = _window(page)[0]
            page.locator("#log").evaluate("e => { e.scrollTop = 0; }")
            wait_until(lambda s0=s0: _window(page)[0] < s0, 30, every=0.05,
                       what="scrolling up keeps fetching")
            peak = max(peak, _lines(page))
        assert peak <= BIG_MAX_LINES + 2000, peak  # the cap gives way only to what is on screen
        # memory stays flat: the farthest chunks leave the page and nothing keeps them (the heap, after a GC)
        heap1 = _heap_mb(cdp)
        print(f"\n1 GiB log: JS heap {heap0:.1f} MiB at the end, {heap1:.1f} MiB after paging up 14 ranges, {peak} lines at most")
        assert heap1 < heap0 + 1.5, (heap0, heap1)  # measured +0.1 MiB; the 14 ranges' text alone is ~1.3 MiB
        s, e = _window(page)
        assert e < size and s < e

        # jump to start and back; scrolling down from the start fetches later ranges
        page.click("#log-start")
        page.locator("#log .ln", has_text="FIRST LINE of the big log").wait_for()
        assert _window(page)[0] == 0
        e0 = _window(page)[1]
        page.locator("#log").evaluate("e => { e.scrollTop = e.scrollHeight; }")
        wait_until(lambda: _window(page)[1] > e0, 30, every=0.05,
                   what="a later range is fetched on scrolling down")

        # filter by level: only errors (the whole traceback), counted; applies to lines fetched later
        e1 = _window(page)[1]
        page.select_option("#log-level", "error")
        shown = page.locator("#log .ln:not(.log-hide)")
        wait_until(lambda: shown.count() > 0, 30, every=0.05, what="error lines shown")
        texts = shown.all_inner_texts()
        assert texts[0] == "Traceback (most recent call last):" and texts[2].startswith("ValueError: boom 0.")
        assert all(x.startswith(("Traceback", "  File", "ValueError")) for x in texts)
        assert page.locator("#log .ln.log-hide").count() > 0
        assert "loaded lines shown" in page.inner_text("#log-fcount")
        # so few lines left to see: the pane fetches later ranges by itself, and filters them too
        wait_until(lambda: _window(page)[1] > e1, 30, every=0.05, what="more lines fetched while filtered")
        assert all(x.startswith(("Traceback", "  File", "ValueError")) for x in shown.all_inner_texts())
        page.select_option("#log-level", "")

        # filter by actor prefix: the prefixes seen so far are offered
        values = page.locator("#log-prefix option").evaluate_all("os => os.map(o => o.value)")
        assert {"n:TaskRunner", "n:WorkerDict", "p:WorkerDict pid=71", "p:TaskRunner pid=42"} <= set(values)
        page.select_option("#log-prefix", "p:WorkerDict pid=71")
        texts = shown.all_inner_texts()
        assert texts and all(x.startswith("(WorkerDict pid=71) WARNING") for x in texts)
        page.select_option("#log-prefix", "")
        page.select_option("#log-level", "warning")
        assert all("WARNING" in x for x in shown.all_inner_texts())
        page.select_option("#log-level", "")
        page.fill("#log-filter", "boom")  # plain text
        assert shown.all_inner_texts() and all("boom" in x for x in shown.all_inner_texts())
        page.check("#log-filter-re")
        page.fill("#log-filter", "(")
        page.locator("#log-filter.invalid").wait_for()
        page.fill("#log-filter", "")
        page.uncheck("#log-filter-re")
        assert page.locator("#log .ln.log-hide").count() == 0
        shot(page, "task-log-1gb-filter")

        # search beyond the window: the server finds it, the page opens the file there
        page.fill("#log-q", "LAST LINE of the big")
        page.locator("#log-count", has_text="No match").wait_for()
        page.press("#log-q", "Enter")
        page.locator("#log .ln.cur", has_text="LAST LINE of the big log").wait_for(timeout=60_000)
        assert in_view(page, "#log .ln.cur")
        page.fill("#log-q", "")
        # first error: the file's first traceback, found from the end
        page.click("#log-error")
        page.locator("#log .ln.err").wait_for(timeout=60_000)
        assert page.locator("#log .ln.err").inner_text().startswith("Traceback")
        assert _window(page)[0] < 2 * 1048576
        page.click("#jump")
        page.locator("#log .ln", has_text="LAST LINE of the big log").wait_for()
        assert _window(page)[1] == size
        assert _lines(page) <= BIG_MAX_LINES + 2000
    finally:
        log.unlink(missing_ok=True)
