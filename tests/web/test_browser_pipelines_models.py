"""The Pipelines and Models pages (issue 38), in a real Chromium against a real ``argus up``: a pipeline of two quick
runs (argus.jobs.steps: the second resumes from the first's checkpoint) and a gated registration; the page shows
each step's state and what it left; the model it registered is on the Models page, where an alias is moved."""

from __future__ import annotations

import yaml

from tests.waiting import wait_until
from tests.web.conftest import PASSWORDS, Pages, Up, shot

# A user of this module's own: the shared argus up's alice is in teams by then (test_browser_teams), and a task
# charged to a team registers into the team's registry, whose aliases only its admins move.
USER = "piper"

METRIC = "val-core/steps/score/mean@1"
STEPS = ("python3 -m argus.jobs.steps trainer.default_local_dir=ckpt trainer.test_freq=2 trainer.save_freq=2 "
         "step_seconds=0.2 trainer.total_training_steps=4")


def _job(command: str) -> dict:
    return {"kind": "advanced", "workload": "job", "nnodes": 1, "n_gpus_per_node": 0, "cpus_per_node": 0.5,
            "command": command}


PIPELINE = {"kind": "pipeline", "name": "web chain", "steps": {
    "first": {"spec": _job(f"{STEPS} val_per_step=0.5")},
    "second": {"needs": ["first"], "spec": _job(f"{STEPS.replace('=4', '=6')} val_per_step=0.5 "
                                                "trainer.resume_mode=resume_path "
                                                "trainer.resume_from_path={{ steps.first.checkpoint }}")},
    "keep": {"needs": ["second"], "register": {"from": "second", "name": "web-model", "alias": "candidate"},
             "when": {"step": "second", "metric": METRIC, "op": ">=", "value": 1.0}},
    "weak": {"needs": ["first"], "register": {"from": "first", "name": "web-weak"},
             "when": {"step": "first", "metric": METRIC, "op": ">=", "value": 9.0}}}}


def test_a_pipeline_page_shows_its_steps_and_the_model_page_moves_an_alias(up: Up, pages: Pages) -> None:
    if USER not in up.tokens:
        PASSWORDS[USER] = f"{USER}-pw-1234567"
        up.add_user(USER, PASSWORDS[USER])
    with up.api(USER) as c:
        r = c.post("/api/v2/pipelines", content=yaml.safe_dump(PIPELINE, sort_keys=False).encode(),
                   headers={"Content-Type": "application/yaml"})
        assert r.status_code == 201, r.text
        pid = r.json()["pipeline_id"]
        wait_until(lambda: c.get(f"/api/v2/pipelines/{pid}").json()["status"] != "RUNNING" or None, 300, every=1.0,
                   what=f"pipeline {pid} to end")
        out = c.get(f"/api/v2/pipelines/{pid}").json()
        assert out["status"] == "SUCCEEDED", out
    page = pages.new(user=USER)
    page.goto(f"{up.url}/pipelines")
    page.locator(f'tr[data-pipeline="{pid}"] a').click()
    page.wait_for_url(f"{up.url}/pipelines/{pid}")
    page.locator('#pipeline-one[data-loaded="1"]').wait_for()
    assert page.locator("#steps-body tr").count() == 4
    assert page.locator('#steps-body tr[data-step="first"]').get_attribute("data-status") == "succeeded"
    assert "checkpoint: $HOME/jobs/" in page.locator('#steps-body tr[data-step="first"]').inner_text()
    keep = page.locator('#steps-body tr[data-step="keep"]')
    assert keep.get_attribute("data-status") == "succeeded"
    weak = page.locator('#steps-body tr[data-step="weak"]')
    assert weak.get_attribute("data-status") == "skipped" and "gate not passed: first" in weak.inner_text()
    assert page.locator("#pipeline-cancel").is_hidden()
    shot(page, "pipeline-en")
    zh = pages.new(lang="zh", user=USER)  # the step's message from its code (issue 37), not the server's English
    zh.goto(f"{up.url}/pipelines/{pid}")
    zh.locator('#pipeline-one[data-loaded="1"]').wait_for()
    said = zh.locator('#steps-body tr[data-step="weak"] td.hint').inner_text()
    assert said.startswith("未通过门控：first 的 ") and "gate not passed" not in said, said
    shot(zh, "pipeline-zh")

    page.goto(f"{up.url}/models")
    page.locator('tr[data-model="web-model"] a').click()
    page.wait_for_url(f"{up.url}/models/web-model")
    page.locator('#model-one[data-loaded="1"]').wait_for()
    row = page.locator('#versions-body tr[data-version="1"]')
    assert "@candidate" in row.inner_text() and "/ckpt/global_step_6" in row.inner_text()
    page.fill("#alias-name", "production")
    page.click("#alias-move")
    page.locator('#model-result[data-ok="1"]').wait_for()
    assert page.locator("#model-result").inner_text() == "web-model@production → version 1."
    page.locator('#versions-body tr[data-version="1"] td.aliases', has_text="@production").wait_for()
    page.fill("#alias-name", "Not Valid!")
    page.click("#alias-move")
    page.locator('#model-result[data-ok="0"]').wait_for()
    assert "lower-case letters" in page.locator("#model-result").inner_text()
    shot(page, "model-en")
    with up.api(USER) as c:
        assert c.get("/api/v2/models/web-model@production").json()["versions"][0]["version"] == 1
    other = pages.new(user="bob")
    other.goto(f"{up.url}/pipelines/{pid}")
    assert other.locator("#pipeline-one").count() == 0  # the not-found page, not piper's pipeline

    # a team's model (issue 38, team registries): listed with its team, opened at /models/<team>/<name>; a member
    # who is not the team's admin is told who moves its aliases; someone outside the team finds no such model
    with up.api() as a:
        assert a.post("/api/v2/teams", json={"name": "webreg"}).status_code == 201
        assert a.post("/api/v2/teams/webreg/members", json={"user": USER}).status_code == 201
    try:
        with up.api(USER) as c:
            r = c.post("/api/v2/files/mkdir", json={"path": "/teams/webreg/models/m", "parents": True})
            assert r.status_code in (200, 201), r.text
            r = c.put("/api/v2/files/content", params={"path": "/teams/webreg/models/m/config.json"}, content=b"{}")
            assert r.status_code in (200, 201, 204), r.text
            r = c.post("/api/v2/models", json={"name": "web-model", "path": "$HOME/teams/webreg/models/m"})
            assert r.status_code == 201 and r.json()["ref"] == "webreg/web-model:1", r.text
        page.goto(f"{up.url}/models")
        team_row = page.locator('tr[data-model="webreg/web-model"]')
        assert team_row.locator("td").nth(1).inner_text() == "webreg"
        assert page.locator('tr[data-model="web-model"] td').nth(1).inner_text() == "yours"
        team_row.locator("a").click()
        page.wait_for_url(f"{up.url}/models/webreg/web-model")
        page.locator('#model-one[data-loaded="1"]').wait_for()
        assert page.locator("#model-title").inner_text() == "webreg/web-model"
        assert page.locator('#versions-body tr[data-version="1"] td[data-shared="1"]').count() == 1
        assert page.locator("#alias-move").is_disabled() and page.locator("#alias-admins").is_visible()
        shot(page, "model-team-en")
        other.goto(f"{up.url}/models/webreg/web-model")
        other.locator("#models-error").wait_for()
        assert "no model 'webreg/web-model'" in other.locator("#models-error").inner_text()
    finally:
        with up.api() as a:
            a.delete("/api/v2/teams/webreg")
