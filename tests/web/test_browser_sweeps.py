"""The Sweeps pages (issue 38), in a real Chromium against a real ``argus up``: a sweep of three quick trials
(argus.jobs.steps, a validation every 2 steps) runs two at a time, one is stopped at its rung; the page draws the
trials' metric on one chart, marks the best trial and says why the others were stopped."""

from __future__ import annotations

import yaml

from tests.waiting import wait_until
from tests.web.conftest import Pages, Up, shot, sign_in

SWEEP = {
    "kind": "sweep",
    "name": "web sweep",
    "base": {"kind": "advanced", "workload": "job", "nnodes": 1, "n_gpus_per_node": 0, "cpus_per_node": 0.5,
             "command": "python3 -m argus.jobs.steps trainer.total_training_steps=6 trainer.test_freq=2 "
                        "trainer.save_freq=0 step_seconds=1.5"},
    "parameters": {"val_per_step": [0.3, 0.2, 0.1]},
    "max_concurrent": 2,
    "metric": "val-core/steps/score/mean@1",
    "early_stop": {"rungs": [2], "keep": 0.5},
}


def test_a_sweep_page_charts_its_trials_and_names_the_best(up: Up, pages: Pages) -> None:
    with up.api("alice") as c:
        r = c.post("/api/v2/sweeps", content=yaml.safe_dump(SWEEP, sort_keys=False).encode(),
                   headers={"Content-Type": "application/yaml"})
        assert r.status_code == 201, r.text
        sid, ids = r.json()["sweep_id"], [t["task_id"] for t in r.json()["trials"]]
        wait_until(lambda: c.get(f"/api/v2/sweeps/{sid}").json()["status"] != "RUNNING" or None, 300, every=1.0,
                   what=f"sweep {sid} to end")
    page = pages.new(user="alice")
    page.goto(f"{up.url}/sweeps")
    row = page.locator(f'tr[data-sweep="{sid}"]')
    row.wait_for()
    assert "web sweep" in row.inner_text() and ids[0] in row.inner_text()  # its best trial
    row.locator("a").first.click()
    page.wait_for_url(f"{up.url}/sweeps/{sid}")
    page.locator('#sweep-one[data-loaded="1"]').wait_for()
    assert page.locator("#sweep-title").inner_text() == f"web sweep ({sid})"
    assert page.locator("#trials-body tr").count() == 3
    best = page.locator('#trials-body tr[data-best="1"]')
    assert best.get_attribute("data-task") == ids[0] and "best" in best.inner_text()
    stopped = page.locator('#trials-body tr[data-stopped="1"]')
    assert stopped.count() >= 1 and "early-stopped by its sweep at step 2" in stopped.first.inner_text()
    assert int(page.locator("#sweep-chart").get_attribute("data-lines")) == 3  # every trial validated at step 2
    assert page.locator("#sweep-chart canvas").count() >= 1
    assert "rungs 2" in page.locator("#sweep-metric").inner_text()
    assert page.locator("#sweep-cancel").is_hidden()  # it ended: nothing to cancel
    shot(page, "sweep-en")
    zh = pages.new(lang="zh", user="alice")  # the stopped trial's message from its code (issue 37)
    zh.goto(f"{up.url}/sweeps/{sid}")
    zh.locator('#sweep-one[data-loaded="1"]').wait_for()
    said = zh.locator('#trials-body tr[data-stopped="1"] td.hint').first.inner_text()
    assert said.startswith("在第 2 步被其扫参提前停止：") and "early-stopped" not in said, said
    assert zh.locator("#sweep-message").inner_text() == "所有试验均已结束" or zh.locator("#sweep-message").is_hidden()

    # a phone (issue 37's walk: the chart's canvas was 753 px wide at 390 — without uPlot's stylesheet a canvas is
    # as wide as its device pixels, twice its CSS width at a phone's pixel ratio 2): the chart fits the viewport,
    # the page does not scroll sideways (the trials' table scrolls in its own box)
    ctx = pages.browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True,
                                    device_scale_factor=2)  # as a phone lays it out (bench/web_walk.py's phone)
    pages.contexts.append(ctx)
    phone = ctx.new_page()
    sign_in(phone, up, "alice")
    phone.goto(f"{up.url}/sweeps/{sid}")
    phone.locator('#sweep-one[data-loaded="1"]').wait_for()
    phone.locator("#sweep-chart canvas").first.wait_for()
    fit = phone.evaluate("""() => ({page: document.documentElement.scrollWidth,
        width: document.documentElement.clientWidth,
        chart: Math.max(...[...document.querySelectorAll("#sweep-chart, #sweep-chart canvas")]
                        .map((e) => e.getBoundingClientRect().right))})""")
    assert fit["width"] <= 390 and fit["page"] <= fit["width"], fit
    assert fit["chart"] <= fit["width"], fit
    shot(phone, "sweep-phone")

    other = pages.new(user="bob")  # another user's sweep does not exist for them
    other.goto(f"{up.url}/sweeps/{sid}")
    assert other.locator("h1").inner_text() != f"web sweep ({sid})"
    with up.api("bob") as b:
        assert b.get(f"/api/v2/sweeps/{sid}").status_code == 404
