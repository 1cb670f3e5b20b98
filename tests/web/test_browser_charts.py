"""The task page's charts and the Compare page (issue 25, "Charts"), in a real Chromium over a real ``argus up``.

A CPU job (``argus.jobs.curves``) prints noisy verl PPO-style metric lines through the real driver,
so the driver's clock gives every step a wall time. The charts must keep a drag-zoom across a live
refresh, smooth with the EMA slider, switch the x axis and log scale, filter ~a dozen keys by
search, export CSV/PNG, follow the window's width and put the whole view in a link; Compare must
overlay two runs and highlight where their specs differ. Issue 37: several metrics on one chart (a
unit the server names gets its own axis), one cursor shared by every chart of a page (and so by
every run on Compare), a chart full screen (Esc leaves), and a Compare link with an id that cannot
be shown still compares the others and names that id.
"""

from __future__ import annotations

import csv
import io
import time

import pytest

from tests.waiting import wait_until
from tests.web.conftest import Pages, Up, shot
from tests.web.test_browser import submit_api

pytestmark = [pytest.mark.browser, pytest.mark.e2e]

CURVES = ("kind: advanced\nworkload: job\nname: {name}\nnnodes: 1\nn_gpus_per_node: 0\n"
          "command: python3 -m argus.jobs.curves steps={steps} step_seconds={pace} seed={seed} lr={lr}\n")
KEY = "critic/score/mean"


def ema(ys: list[float], w: float) -> list[float]:
    """TensorBoard's debiased exponential moving average, written out independently of the page's."""
    out, last = [], 0.0
    for k, y in enumerate(ys, 1):
        last = last * w + (1 - w) * y
        out.append(last / (1 - w ** k))
    return out


def plot(page, key: str, expr: str):  # noqa: ANN001, ANN201
    """Evaluate ``expr`` with ``p`` = the uPlot instance of the chart of ``key``."""
    return page.locator(f'figure.chart[data-key="{key}"]').evaluate(f"(f) => {{ const p = f._chart.plot; return {expr}; }}")


def points(page, key: str) -> int:  # noqa: ANN001
    return int(page.locator(f'figure.chart[data-key="{key}"]').get_attribute("data-points"))


def refresh(page) -> None:  # noqa: ANN001
    page.evaluate("document.getElementById('charts')._refresh()")


def set_range(page, value: str) -> None:  # noqa: ANN001
    page.locator("#chart-smooth").evaluate(
        "(e, v) => { e.value = v; e.dispatchEvent(new Event('input', {bubbles: true})); }", value)


def legend_x(page, key: str) -> str:  # noqa: ANN001
    """The legend's x value (the hovered step) of the chart of ``key``."""
    return page.locator(f'figure.chart[data-key="{key}"] .u-legend .u-series').first.locator(".u-value").inner_text()


def hover(page, key: str, at: float) -> None:  # noqa: ANN001
    """Move the mouse over the plot of ``key``'s chart, ``at`` of its width from the left."""
    over = page.locator(f'figure.chart[data-key="{key}"] .u-over')
    over.scroll_into_view_if_needed()
    box = over.bounding_box()
    page.mouse.move(box["x"] + box["width"] * at, box["y"] + box["height"] / 2)


def download(page, click: str) -> bytes:  # noqa: ANN001
    with page.expect_download() as info:
        page.locator(click).first.click()
    path = info.value.path()
    with open(path, "rb") as f:
        return f.read()


def test_task_charts_zoom_smoothing_axes_search_exports_and_link(up: Up, pages: Pages) -> None:
    live = submit_api(up, "alice", CURVES.format(name="live-run", steps=70, pace=0.5, seed=1, lr="1e-6"))
    page = pages.new(user="alice")
    page.goto(f"{up.url}/tasks/{live}")
    page.click('#tabs [data-tab="metrics"]')
    chart = page.locator(f'figure.chart[data-key="{KEY}"]')
    chart.wait_for(timeout=180_000)

    def twelve() -> bool:  # each look that finds too few refreshes the charts
        if points(page, KEY) >= 12:
            return True
        refresh(page)
        return False

    wait_until(twelve, 120, every=0.5, what=lambda: f"12 points; {points(page, KEY)}")
    # the defaults: reward/score, KL, entropy, response length first
    assert page.locator("figure.chart").count() == 4

    # zoom: drag across the middle of the plot; a refresh with new points keeps the x range
    over = chart.locator(".u-over").bounding_box()
    y = over["y"] + over["height"] / 2
    page.mouse.move(over["x"] + over["width"] * 0.25, y)
    page.mouse.down()
    page.mouse.move(over["x"] + over["width"] * 0.5, y, steps=5)
    page.mouse.up()
    zoomed = plot(page, KEY, "[p.scales.x.min, p.scales.x.max]")
    before = points(page, KEY)
    assert zoomed[0] > 1 and zoomed[1] < before

    def more() -> bool:  # each look that finds none new refreshes the charts
        if points(page, KEY) > before:
            return True
        refresh(page)
        return False

    wait_until(more, 60, every=0.7, what="the task printed no new step")
    assert plot(page, KEY, "[p.scales.x.min, p.scales.x.max]") == zoomed
    set_range(page, "0.3")  # smoothing redraws the lines, the zoom stays
    assert plot(page, KEY, "[p.scales.x.min, p.scales.x.max]") == zoomed
    set_range(page, "0.6")
    chart.locator(".u-over").dblclick()
    assert plot(page, KEY, "p.scales.x.max") == plot(page, KEY, "p.data[0][p.data[0].length - 1]")
    refresh(page)
    assert plot(page, KEY, "p.scales.x.max") == plot(page, KEY, "p.data[0][p.data[0].length - 1]")

    # EMA: the smoothed line follows the slider, the raw one stays; at 0 only the raw line is drawn
    raw = plot(page, KEY, "p.data[1].slice(0, 10)")
    smooth_default = plot(page, KEY, "p.data[2].slice(0, 10)")
    assert smooth_default[0] == pytest.approx(raw[0])  # debiased: the first point is the value itself
    set_range(page, "0.95")
    assert page.locator("#chart-smooth-value").inner_text() == "0.95"
    smooth_high = plot(page, KEY, "p.data[2].slice(0, 10)")
    assert plot(page, KEY, "p.data[1].slice(0, 10)") == raw
    assert smooth_high != smooth_default and smooth_high[9] != pytest.approx(raw[9])
    assert smooth_high == pytest.approx(ema(raw, 0.95)) and smooth_default == pytest.approx(ema(raw, 0.6))
    set_range(page, "0")
    assert plot(page, KEY, "p.series[1].show") is False and plot(page, KEY, "p.data[2].slice(0, 10)") == raw
    set_range(page, "0.9")

    # key search: over every key, grouped by prefix
    page.fill("#chart-search", "entropy")
    visible = page.locator(".charts-key:visible")
    assert visible.count() == 1 and visible.first.get_attribute("data-key") == "actor/entropy"
    assert page.locator('.charts-group[data-group="critic"]').is_hidden()
    page.fill("#chart-search", "timing")
    assert sorted(page.locator(".charts-key:visible").evaluate_all("ls => ls.map(l => l.dataset.key)")) == [
        "timing_s/gen", "timing_s/step"]
    page.locator('.charts-key[data-key="timing_s/gen"] input').check()
    page.locator('figure.chart[data-key="timing_s/gen"]').wait_for()
    page.wait_for_function("""() => +document.querySelector('figure.chart[data-key="timing_s/gen"]').dataset.points > 0""")
    page.fill("#chart-search", "")
    assert page.locator(".charts-key:visible").count() == 12
    assert page.locator('.charts-group[data-group="perf"] summary').inner_text().startswith("perf/")

    # CSV of every chart: header, one row per step, the clock's wall time, values as logged
    body = download(page, "#chart-csv").decode()
    rows = list(csv.reader(io.StringIO(body)))
    assert rows[0][:3] == ["task_id", "step", "unix_time"] and KEY in rows[0] and "timing_s/gen" in rows[0]
    assert len(rows) - 1 >= points(page, KEY) and {r[0] for r in rows[1:]} == {live}
    times = [float(r[2]) for r in rows[1:]]
    assert times == sorted(times) and times[-1] - times[0] > 3 and abs(times[-1] - time.time()) < 600
    assert float(rows[1][rows[0].index(KEY)]) == pytest.approx(raw[0], rel=1e-5)
    png = download(page, f'figure.chart[data-key="{KEY}"] .chart-png')
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 2000

    # x axis: wall time (the clock's unix seconds), relative time (from the first step), log scale
    page.select_option("#chart-x", "wall")
    assert plot(page, KEY, "p.scales.x.time") is True and plot(page, KEY, "p.data[0][0]") == pytest.approx(times[0])
    page.select_option("#chart-x", "rel")
    assert plot(page, KEY, "p.data[0][0]") == 0 and plot(page, KEY, "p.scales.x.time") is False
    page.check("#chart-log")
    assert plot(page, KEY, "p.scales.y.distr") == 3
    assert page.locator("#chart-hint").inner_text() == ""

    # width follows the window
    wide = plot(page, KEY, "p.width")
    page.set_viewport_size({"width": 800, "height": 900})
    page.wait_for_function(f"""() => document.querySelector('figure.chart[data-key="{KEY}"]')._chart.plot.width < {wide}""")
    page.set_viewport_size({"width": 1360, "height": 900})
    shot(page, "task-charts-en")

    # the view is in the link: a new page (another browser profile) shows the same charts and settings
    url = page.url
    assert "#metrics&" in url and "timing_s/gen" in url and "smooth=0.9" in url and "x=rel" in url
    other = pages.new(user="alice")
    other.goto(url)
    other.locator('figure.chart[data-key="timing_s/gen"]').wait_for()
    assert other.locator("#chart-smooth").input_value() == "0.9"
    assert other.locator("#chart-x").input_value() == "rel" and other.locator("#chart-log").is_checked()
    assert sorted(other.locator("figure.chart").evaluate_all("fs => fs.map(f => f.dataset.key)")) == sorted(
        page.locator("figure.chart").evaluate_all("fs => fs.map(f => f.dataset.key)"))
    # …and the user's own choice is remembered without the hash
    page.goto(f"{up.url}/tasks/{live}")
    page.click('#tabs [data-tab="metrics"]')
    page.locator('figure.chart[data-key="timing_s/gen"]').wait_for()
    with up.api("alice") as c:
        c.post(f"/api/v2/tasks/{live}/cancel")


def test_compare_two_runs_overlays_metrics_and_highlights_spec_differences(up: Up, pages: Pages) -> None:
    a = submit_api(up, "alice", CURVES.format(name="lr-small", steps=10, pace=0.1, seed=1, lr="1e-6"))
    b = submit_api(up, "alice", CURVES.format(name="lr-big", steps=10, pace=0.1, seed=2, lr="3e-5"))
    hidden = submit_api(up, "bob", CURVES.format(name="bobs", steps=1, pace=0, seed=0, lr="1e-6"))
    with up.api("alice") as c:
        done: list[str] = []

        def both_succeeded() -> bool:
            done[:] = [c.get(f"/api/v2/tasks/{t}").json()["status"] for t in (a, b)]
            return done == ["SUCCEEDED", "SUCCEEDED"]

        wait_until(both_succeeded, 240, every=1, what=lambda: f"both runs SUCCEEDED; {done}")

    # from the task page: "Compare with…" by name
    page = pages.new(user="alice")
    page.goto(f"{up.url}/tasks/{a}")
    page.click('#tabs [data-tab="metrics"]')
    page.fill("#compare-with", "lr-big")
    page.locator(f'#compare-options option[value="{b}"]').wait_for(state="attached")
    page.click("#compare-form button[type=submit]")
    page.wait_for_url(f"{up.url}/compare?tasks={a},{b}")

    # both runs on the same chart, one colour each, named in the legend
    chart = page.locator(f'figure.chart[data-key="{KEY}"]')
    chart.wait_for()
    assert points(page, KEY) == 20
    labels = plot(page, KEY, "p.series.map(s => s.label)")
    assert labels[2] == f"lr-small ({a})" and labels[4] == f"lr-big ({b})"
    assert plot(page, KEY, "p.series[2].stroke()") != plot(page, KEY, "p.series[4].stroke()")
    assert plot(page, KEY, "p.data[2].filter(v => v != null).length") == 10
    assert plot(page, KEY, "p.data[4].filter(v => v != null).length") == 10
    assert page.locator("#compare-tasks li").count() == 2
    # the page asks only for the drawn keys; a key picked later is fetched (both runs are over: no polling)
    page.locator('.charts-key[data-key="perf/throughput"] input').check()
    page.wait_for_function("""() => +document.querySelector('figure.chart[data-key="perf/throughput"]').dataset.points === 20""")

    # spec diff: lr and seed differ (highlighted), identical rows folded until asked for
    lr = page.locator('#compare-body tr[data-section="override"][data-key="lr"]')
    assert "compare-differs" in lr.get_attribute("class")
    assert lr.locator("td").evaluate_all("ts => ts.map(t => t.textContent)") == ["lr", "1e-6", "3e-5"]
    assert lr.locator("td").nth(1).evaluate("e => getComputedStyle(e).backgroundColor") not in ("rgba(0, 0, 0, 0)", "")
    steps_row = page.locator('#compare-body tr[data-key="steps"]')
    assert "compare-same" in steps_row.get_attribute("class") and steps_row.is_hidden()
    page.check("#compare-same")
    assert steps_row.is_visible()
    assert page.locator("#compare-diff-count").inner_text().startswith("3 of ")  # lr, seed, name
    page.evaluate("scrollTo(0, 0)")  # the key picker is sticky: a full-page shot taken scrolled shows it mid-page
    shot(page, "compare-runs-en")

    # one cursor for every chart and run: hovering a step on one chart shows that step, with both runs'
    # values, in the other chart's legend
    hover(page, KEY, 0.7)
    step = legend_x(page, KEY)
    assert step.isdigit() and 1 < int(step) <= 10
    assert legend_x(page, "perf/throughput") == step
    values = page.locator('figure.chart[data-key="perf/throughput"] .u-legend .u-series:not([hidden]) .u-value')
    assert values.count() == 3 and all(v not in ("", "—", "--") for v in values.all_inner_texts()[1:])
    hover(page, "perf/throughput", 0.1)
    assert legend_x(page, KEY) == legend_x(page, "perf/throughput") != step

    # the link is the view: the same URL in another session shows the same tasks; an id that cannot be
    # shown (someone else's task, a stale id) is named with why, in the page's language, and the other run
    # is still compared (issue 37: it blanked the page)
    other = pages.new(lang="zh", user="alice")
    other.goto(f"{up.url}/compare?tasks={a},{hidden},t-nope")
    other.locator(f'figure.chart[data-key="{KEY}"]').wait_for()
    other.wait_for_function(f"""() => +document.querySelector('figure.chart[data-key="{KEY}"]').dataset.points === 10""")
    assert other.locator("#compare-tasks li").evaluate_all("ls => ls.map(l => l.dataset.task)") == [a]
    assert other.locator("#compare-problem").is_hidden()
    notice = other.locator("#compare-notice")
    assert notice.is_visible()
    assert other.locator(f'.compare-missing[data-value="{hidden}"]').count() == 1
    nope = other.locator('.compare-missing[data-value="t-nope"]')
    assert "t-nope" in nope.inner_text() and "无权查看" in nope.inner_text()
    assert "bobs" not in notice.inner_text()
    assert "compare-differs" not in (other.locator("#compare-body tr").first.get_attribute("class") or "")
    shot(other, "compare-missing-zh")
    other.click("#compare-drop-missing")
    other.wait_for_url(lambda url: url.startswith(f"{up.url}/compare?tasks={a}#") or url == f"{up.url}/compare?tasks={a}")
    other.locator(f'#compare-tasks li[data-task="{a}"]').wait_for()
    assert other.locator("#compare-notice").is_hidden()
    # none of the ids can be shown, or none given: the problem, named
    other.goto(f"{up.url}/compare?tasks={hidden},t-nope")
    other.locator('#compare-problem .compare-missing[data-value="t-nope"]').wait_for()
    other.goto(f"{up.url}/compare")
    assert "tasks" in other.locator("#compare-problem .compare-missing").inner_text()
    other = pages.new(user="alice")
    # the Compare page adds a task by id
    other.goto(f"{up.url}/compare?tasks={b}")
    other.locator(f'#compare-tasks li[data-task="{b}"]').wait_for()
    other.fill("#compare-with", a)
    other.click("#compare-form button[type=submit]")
    other.wait_for_url(f"{up.url}/compare?tasks={b},{a}")
    other.locator(f'#compare-tasks li[data-task="{a}"]').wait_for()


def test_a_log_without_clock_charts_steps_and_says_why_time_axes_are_empty(up: Up, pages: Pages) -> None:
    """A log written before the driver kept a clock (or whose clock could not be written): steps only, said so."""
    body = ("kind: advanced\nworkload: job\nname: old-log\nnnodes: 1\nn_gpus_per_node: 1\n"
            "command: python3 -m argus.jobs.sleep 1\n")
    tid = submit_api(up, "alice", body)  # waits for a GPU that never comes: its log is written here
    log = up.root / "users" / "alice" / "jobs" / tid / "logs" / "attempt-1.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("".join(f"step:{s} - {KEY}:{s / 10} - actor/entropy:nan\n" for s in range(1, 6)))
    page = pages.new(lang="zh", user="alice")
    page.goto(f"{up.url}/tasks/{tid}#metrics&keys={KEY},actor/entropy&smooth=0&x=wall&log=0")
    chart = page.locator(f'figure.chart[data-key="{KEY}"]')
    chart.wait_for()
    page.locator("#chart-hint", has_text="步数").wait_for()  # the Chinese hint: pick "step"
    assert points(page, KEY) == 0 and page.locator("#chart-x").input_value() == "wall"
    assert "平滑" in page.locator("#chart-tools").inner_text()
    page.select_option("#chart-x", "step")
    assert points(page, KEY) == 5 and page.locator("#chart-hint").inner_text() == ""
    # nan is a gap, not a zero: the entropy chart has its points but nothing to draw
    assert plot(page, "actor/entropy", "p.data[1].every(v => v === null)") is True
    with up.api("alice") as c:
        c.post(f"/api/v2/tasks/{tid}/cancel")


def test_several_metrics_on_one_chart_a_shared_cursor_and_full_screen(up: Up, pages: Pages) -> None:
    """Issue 37: two or more keys on one chart (each unit on its own axis), the cursor shared by every chart
    of the page, a chart full screen that Esc leaves; the view (which keys share a chart) is in the link."""
    tid = submit_api(up, "alice", CURVES.format(name="multi", steps=12, pace=0.05, seed=3, lr="1e-5"))
    with up.api("alice") as c:
        wait_until(lambda: c.get(f"/api/v2/tasks/{tid}").json()["status"] == "SUCCEEDED", 240, every=1,
                   what="the curves run SUCCEEDED")
    page = pages.new(user="alice")
    page.goto(f"{up.url}/tasks/{tid}#metrics&keys={KEY},actor/entropy&smooth=0.6&x=step&log=0")
    chart = page.locator(f'figure.chart[data-key="{KEY}"]')
    chart.wait_for()
    page.wait_for_function(f"""() => +document.querySelector('figure.chart[data-key="{KEY}"]').dataset.points === 12""")
    assert page.locator("figure.chart").count() == 2

    # a second metric on the same chart: its own series; seconds get their own axis, labelled
    chart.locator("select.chart-add").select_option("timing_s/gen")
    page.wait_for_function(f"""() => +document.querySelector('figure.chart[data-key="{KEY}"]').dataset.points === 24""")
    assert page.locator("figure.chart").count() == 2 and chart.get_attribute("data-keys") == f"{KEY}|timing_s/gen"
    labels = plot(page, KEY, "p.series.map(s => s.label)")
    assert labels[2] == KEY and labels[4] == "timing_s/gen [seconds]"
    assert plot(page, KEY, "p.series.map(s => s.scale)")[1:] == ["y", "y", "y1", "y1"]
    assert plot(page, KEY, "p.axes.map(a => a.label || '')")[1:] == ["", "seconds"]
    assert plot(page, KEY, "p.data[2].filter(v => v != null).length") == 12
    assert plot(page, KEY, "p.data[4].filter(v => v != null).length") == 12
    assert plot(page, KEY, "p.scales.y1.max") > plot(page, KEY, "p.scales.y.max")  # seconds are not squashed
    assert plot(page, KEY, "p.series[2].stroke()") != plot(page, KEY, "p.series[4].stroke()")
    # a third, a plain number like the score: shares the left axis
    chart.locator("select.chart-add").select_option("actor/pg_loss")
    page.wait_for_function(f"""() => +document.querySelector('figure.chart[data-key="{KEY}"]').dataset.points === 36""")
    assert plot(page, KEY, "p.series.map(s => s.scale)")[5:] == ["y", "y"] and plot(page, KEY, "p.axes.length") == 3
    assert page.locator('.charts-key[data-key="actor/pg_loss"] input').is_checked()
    chart.locator('.chart-key[data-key="actor/pg_loss"] .chart-drop-key').click()
    page.locator(f'figure.chart[data-key="{KEY}"][data-keys="{KEY}|timing_s/gen"]').wait_for()
    assert not page.locator('.charts-key[data-key="actor/pg_loss"] input').is_checked()
    # the view is in the link: which keys share a chart
    assert f"keys={KEY}|timing_s/gen,actor/entropy" in page.url

    # one cursor: hovering a step on one chart shows that step, and the values, on the other
    hover(page, KEY, 0.5)
    step = legend_x(page, KEY)
    assert step.isdigit() and legend_x(page, "actor/entropy") == step
    assert plot(page, "actor/entropy", "p.cursor.idx") == plot(page, KEY, "p.cursor.idx")
    entropy = page.locator('figure.chart[data-key="actor/entropy"] .u-legend .u-series:not([hidden]) .u-value')
    assert entropy.nth(1).inner_text() not in ("", "—", "--")
    hover(page, "actor/entropy", 0.99)
    assert legend_x(page, KEY) == legend_x(page, "actor/entropy") == "12"

    # full screen: the chart covers the window; Esc puts it back
    small = plot(page, KEY, "[p.width, p.height]")
    chart.locator(".chart-full").click()
    assert "chart-fullscreen" in chart.get_attribute("class")
    full = plot(page, KEY, "[p.width, p.height]")
    assert full[0] > 1200 and full[1] > 500 and full[1] > small[1]
    box = chart.bounding_box()
    assert box["x"] == 0 and box["y"] == 0 and box["width"] == 1360
    shot(page, "task-chart-fullscreen-en")
    page.keyboard.press("Escape")
    assert "chart-fullscreen" not in chart.get_attribute("class")
    assert plot(page, KEY, "[p.width, p.height]") == small
    # a phone: the button and Esc alike
    page.set_viewport_size({"width": 390, "height": 800})
    chart.locator(".chart-full").click()
    assert plot(page, KEY, "p.width") <= 390 and chart.bounding_box()["width"] == 390
    page.keyboard.press("Escape")
    assert "chart-fullscreen" not in chart.get_attribute("class")
    page.set_viewport_size({"width": 1360, "height": 900})

    # the link shows the same charts elsewhere; in Chinese the axis says its unit in Chinese
    other = pages.new(lang="zh", user="alice")
    other.goto(page.url)
    other.locator(f'figure.chart[data-key="{KEY}"][data-keys="{KEY}|timing_s/gen"]').wait_for()
    other.wait_for_function(f"""() => +document.querySelector('figure.chart[data-key="{KEY}"]').dataset.points === 24""")
    assert plot(other, KEY, "p.axes[2].label") == "秒"
