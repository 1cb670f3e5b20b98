"""The model registries through real HTTP against a real SQLite file: versions from a checkpoint (the best by its
evaluation), from an export folder in the home; lineage with file hashes; aliases audited and notified; a team's
registry (issue 38's team registries): what its members see, resolve and may move, and what others do not see."""

import hashlib
import os
from pathlib import Path

from sqlalchemy import select

from argus.db.models import AuditEventModel, NotificationChannelModel, NotificationOutboxModel, UserModel
from tests.api.test_checkpoints_api import ACC, PPO, _succeed_with_log, submit
from tests.services.test_checkpoints import write_step


def test_register_versions_with_lineage_and_move_aliases(live) -> None:
    alice, bob = live.new_user("alice"), live.new_user("bob")
    home = Path(live.ctx.settings.root) / "users" / "alice"
    (home / "datasets" / "gsm8k").mkdir(parents=True)
    (home / "datasets" / "gsm8k" / "train.parquet").write_bytes(b"train rows")
    (home / "datasets" / "gsm8k" / "test.parquet").write_bytes(b"test rows")
    tid = submit(alice, PPO)
    write_step(home / "runs" / "ppo", 2)
    write_step(home / "runs" / "ppo", 4)
    evals = [alice.post(f"/api/v2/tasks/{tid}/evaluate", json={"step": s}).json()["task_id"] for s in (2, 4)]
    _succeed_with_log(live, evals[0], f"step:2 - {ACC}:0.7\n")
    _succeed_with_log(live, evals[1], f"step:4 - {ACC}:0.4\n")

    r = alice.post("/api/v2/models", json={"name": "gsm8k-ppo", "task_id": tid, "best": ACC})
    assert r.status_code == 201, r.text
    v1 = r.json()
    assert (v1["version"], v1["kind"], v1["step"], v1["path"], v1["scores"]) == (
        1, "checkpoint", 2, "$HOME/runs/ppo/global_step_2", {ACC: 0.7})
    lineage = v1["lineage"]
    assert lineage["task"] == tid and lineage["workload"] == "ppo" and lineage["env"]
    files = {f["path"]: f for f in lineage["files"]}
    assert files["$HOME/datasets/gsm8k/train.parquet"]["sha256"] == hashlib.sha256(b"train rows").hexdigest()
    assert files["$HOME/datasets/gsm8k/test.parquet"]["bytes"] == len(b"test rows")

    (home / "models" / "exported").mkdir(parents=True)
    (home / "models" / "exported" / "config.json").write_text("{}")
    r = alice.post("/api/v2/models", json={"name": "gsm8k-ppo", "path": "$HOME/models/exported"})
    assert r.status_code == 201 and (r.json()["version"], r.json()["kind"]) == (2, "hf"), r.text
    os.symlink(home / "models" / "exported", home / "models" / "linked")
    for bad, field in (({"name": "x", "path": "/etc"}, "path"), ({"name": "x", "path": "$HOME/models/linked"}, "path"),
                       ({"name": "x", "path": "$HOME/datasets"}, "path"), ({"name": "../x", "path": "$HOME/m"}, "name"),
                       ({"name": "x", "task_id": tid, "path": "$HOME/m"}, "task_id"),
                       ({"name": "x", "task_id": tid, "best": "val-core/none"}, "best")):
        r = alice.post("/api/v2/models", json=bad)
        assert r.status_code == 400 and r.json()["detail"]["errors"][0]["field"] == field, (bad, r.text)
    assert bob.post("/api/v2/models", json={"name": "x", "task_id": tid}).status_code == 404

    with live.ctx.db.session() as s:  # alice listens for alias moves
        uid = s.scalar(select(UserModel.id).where(UserModel.name == "alice"))
        s.add(NotificationChannelModel(user_id=uid, kind="webhook", target="https://hooks.example.org/a",
                                       events=["MODEL_ALIAS"], enabled=True))
    r = alice.put("/api/v2/models/gsm8k-ppo/aliases/production", json={"version": 1})
    assert r.status_code == 200 and r.json()["aliases"] == {"production": 1}, r.text
    r = alice.put("/api/v2/models/gsm8k-ppo/aliases/production", json={"version": 2})
    assert r.json()["aliases"] == {"production": 2}
    assert alice.put("/api/v2/models/gsm8k-ppo/aliases/production", json={"version": 9}).status_code == 400
    assert alice.put("/api/v2/models/gsm8k-ppo/aliases/Prod!", json={"version": 1}).status_code == 400
    got = alice.get("/api/v2/models/gsm8k-ppo@production").json()
    assert [v["version"] for v in got["versions"]] == [2] and got["versions"][0]["aliases"] == ["production"]
    assert alice.get("/api/v2/models/gsm8k-ppo:1").json()["versions"][0]["path"] == "$HOME/runs/ppo/global_step_2"
    assert alice.get("/api/v2/models").json() == [
        {"name": "gsm8k-ppo", "team": None, "ref": "gsm8k-ppo", "versions": 2, "latest": 2,
         "aliases": {"production": 2}}]
    assert bob.get("/api/v2/models").json() == [] and bob.get("/api/v2/models/gsm8k-ppo").status_code == 404
    with live.ctx.db.session() as s:
        moves = s.scalars(select(AuditEventModel.detail).where(AuditEventModel.action == "model.alias_moved")).all()
        assert [(m["from"], m["to"]) for m in moves] == [(None, 1), (1, 2)]
        sent = s.scalars(select(NotificationOutboxModel.payload).where(NotificationOutboxModel.event == "MODEL_ALIAS")).all()
        # version 1 came from a task: its moves are sent with that task; version 2 (a folder) has no task to send with
        assert len(sent) == 1 and "gsm8k-ppo@production → version 1" in str(sent[0]), sent


def _team_nlp(live):  # noqa: ANN001, ANN202
    """alice (member, nlp her default team), bob (nlp's admin), carol (in no team); each with a MODEL_ALIAS
    webhook."""
    admin = live.admin()
    people = {n: live.new_user(n) for n in ("alice", "bob", "carol")}
    assert admin.post("/api/v2/teams", json={"name": "nlp"}).status_code == 201
    assert admin.post("/api/v2/teams/nlp/members", json={"user": "alice"}).json()["is_default"] is True
    assert admin.post("/api/v2/teams/nlp/members", json={"user": "bob", "role": "admin"}).status_code == 201
    with live.ctx.db.session() as s:
        for uid in s.scalars(select(UserModel.id).where(UserModel.name.in_(list(people)))):
            s.add(NotificationChannelModel(user_id=uid, kind="webhook", target=f"https://hooks.example.org/{uid}",
                                           events=["MODEL_ALIAS"], enabled=True))
    return admin, people["alice"], people["bob"], people["carol"]


def test_a_team_registry_is_its_members_and_only_its_admins_move_aliases(live) -> None:
    admin, alice, bob, carol = _team_nlp(live)
    root = Path(live.ctx.settings.root)
    tid = submit(alice, PPO)
    assert alice.get(f"/api/v2/tasks/{tid}").json()["team"] == "nlp"
    write_step(root / "users" / "alice" / "runs" / "ppo", 2)

    r = alice.post("/api/v2/models", json={"name": "tiny", "task_id": tid})  # the task's team decides
    assert r.status_code == 201, r.text
    v = r.json()
    assert (v["team"], v["ref"], v["registered_by"], v["shared"]) == ("nlp", "nlp/tiny:1", "alice", False)
    assert v["why"] == f"task {tid} is charged to team nlp"
    assert f"argus export {tid} --step 2 --to $HOME/teams/nlp/models/tiny" in v["hint"], v["hint"]
    (root / "users" / "alice" / "models" / "mine").mkdir(parents=True)
    (root / "users" / "alice" / "models" / "mine" / "config.json").write_text("{}")
    r = alice.post("/api/v2/models", json={"name": "tiny", "path": "$HOME/models/mine"})  # her own tiny:1 too
    assert r.status_code == 201 and (r.json()["ref"], r.json()["team"], r.json()["why"]) == ("tiny:1", None, None)
    # a folder in the team's folder is the team's, readable by every member: shared, no hint
    (root / "teams" / "nlp" / "models" / "tiny").mkdir(parents=True)
    (root / "teams" / "nlp" / "models" / "tiny" / "config.json").write_text("{}")
    r = bob.post("/api/v2/models", json={"name": "tiny", "path": "$HOME/teams/nlp/models/tiny"})
    assert r.status_code == 201, r.text
    assert (r.json()["ref"], r.json()["shared"], r.json()["hint"]) == ("nlp/tiny:2", True, None)
    assert r.json()["why"] == "the folder is in team nlp's folder"

    assert alice.get("/api/v2/models").json() == [
        {"name": "tiny", "team": None, "ref": "tiny", "versions": 1, "latest": 1, "aliases": {}},
        {"name": "tiny", "team": "nlp", "ref": "nlp/tiny", "versions": 2, "latest": 2, "aliases": {}}]
    assert [m["ref"] for m in bob.get("/api/v2/models").json()] == ["nlp/tiny"]
    got = bob.get("/api/v2/models/nlp/tiny").json()
    assert [(x["ref"], x["registered_by"], x["path"]) for x in got["versions"]] == [
        ("nlp/tiny:1", "alice", "$HOME/runs/ppo/global_step_2"), ("nlp/tiny:2", "bob", "$HOME/teams/nlp/models/tiny")]
    assert got["can_move_aliases"] is True and alice.get("/api/v2/models/nlp/tiny").json()["can_move_aliases"] is False
    for ref, version in (("nlp/tiny:1", 1), ("nlp%2Ftiny:2", 2), ("nlp/tiny", 2)):
        r = alice.get(f"/api/v2/models/{ref}")
        assert r.status_code == 200 and r.json()["versions"][-1]["version"] == version, (ref, r.text)
    assert alice.get("/api/v2/models/tiny").json()["versions"][0]["path"] == "$HOME/models/mine"

    # a member registers but does not move the team's aliases; its admin does, audited and sent to every member
    r = alice.put("/api/v2/models/nlp/tiny/aliases/production", json={"version": 2})
    assert r.status_code == 403 and r.json()["detail"]["code"] == "team_admin_required", r.text
    assert "needs the team's admin role (you are a member of it)" in r.json()["detail"]["message"]
    r = bob.put("/api/v2/models/nlp/tiny/aliases/production", json={"version": 2})
    assert r.status_code == 200 and r.json()["aliases"] == {"production": 2}, r.text
    assert alice.put("/api/v2/models/tiny/aliases/production", json={"version": 1}).status_code == 200  # her own
    r = alice.get("/api/v2/models/nlp/tiny@production")
    assert [x["ref"] for x in r.json()["versions"]] == ["nlp/tiny:2"] and r.json()["versions"][0]["aliases"] == [
        "production"]
    assert alice.get("/api/v2/models/tiny@production").json()["versions"][0]["version"] == 1
    with live.ctx.db.session() as s:
        moves = s.execute(select(AuditEventModel.actor, AuditEventModel.target, AuditEventModel.detail).where(
            AuditEventModel.action == "model.alias_moved").order_by(AuditEventModel.id)).all()
        assert [(a, t, d["team"], d["to"]) for a, t, d in moves] == [
            ("bob", "nlp/tiny@production", "nlp", 2), ("alice", "tiny@production", None, 1)]
        sent = s.execute(select(NotificationChannelModel.target, NotificationOutboxModel.payload).join(
            NotificationChannelModel, NotificationChannelModel.id == NotificationOutboxModel.channel_id).where(
            NotificationOutboxModel.event == "MODEL_ALIAS")).all()
        team_sent = sorted(t for t, p in sent if p.get("model") == "nlp/tiny@production")
        uids = dict(s.execute(select(UserModel.name, UserModel.id)).all())
        assert team_sent == sorted(f"https://hooks.example.org/{uids[n]}" for n in ("alice", "bob")), sent
        assert all(p["moved_by"] == "bob" for t, p in sent if p.get("model"))

    # carol, in no team, sees nothing of it: the answers of a team that does not exist
    assert carol.get("/api/v2/models").json() == []
    for path in ("/api/v2/models/nlp/tiny", "/api/v2/models/nlp/tiny:1", "/api/v2/models/nlp/tiny@production"):
        r, ghost = carol.get(path), carol.get(path.replace("nlp/", "ghost/"))
        assert r.status_code == ghost.status_code == 404 and r.json()["detail"]["code"] == "model_not_found"
        assert r.json()["detail"]["message"].replace("nlp", "ghost") == ghost.json()["detail"]["message"]
    assert carol.put("/api/v2/models/nlp/tiny/aliases/production", json={"version": 1}).status_code == 404
    r = carol.post("/api/v2/models", json={"name": "x", "path": "$HOME/teams/nlp/models/tiny"})
    assert r.status_code == 400 and r.json()["detail"]["errors"][0]["field"] == "path", r.text
    r = carol.post("/api/v2/models", json={"name": "x", "path": "$HOME/models/x", "team": "nlp"})
    assert r.status_code == 404 and r.json()["detail"]["code"] == "team_not_found", r.text

    # a task charged to nlp cannot go to another registry; a site admin reads every team's registry
    assert admin.post("/api/v2/teams", json={"name": "cv"}).status_code == 201
    assert admin.post("/api/v2/teams/cv/members", json={"user": "alice"}).status_code == 201
    r = alice.post("/api/v2/models", json={"name": "tiny", "task_id": tid, "team": "cv"})
    assert r.status_code == 400 and r.json()["detail"]["errors"][0]["field"] == "team", r.text
    assert "charged to team nlp" in r.json()["detail"]["errors"][0]["message"]
    assert admin.get("/api/v2/models/nlp/tiny").status_code == 200

    # an export may write into a team's folder of yours (teammates read it there), not another's
    r = alice.post(f"/api/v2/tasks/{tid}/export", json={"to": "$HOME/teams/nlp/models/tiny-2"})
    assert r.status_code == 201 and r.json()["info"]["target"] == "$HOME/teams/nlp/models/tiny-2", r.text
    r = carol.post("/api/v2/models", json={"name": "x", "task_id": tid})
    assert r.status_code == 404

    # alice leaves nlp: her task's versions still belong to nlp, which she can no longer register into
    assert alice.delete("/api/v2/teams/nlp/members/alice").status_code in (200, 204)
    r = alice.post("/api/v2/models", json={"name": "tiny", "task_id": tid})
    assert r.status_code == 403 and r.json()["detail"]["code"] == "not_in_team", r.text
    assert alice.get("/api/v2/models/nlp/tiny").status_code == 404
    # a deleted team's registry goes with it; nobody's own models do
    assert admin.delete("/api/v2/teams/nlp").status_code in (200, 204)
    assert bob.get("/api/v2/models").json() == [] and [m["ref"] for m in alice.get("/api/v2/models").json()] == ["tiny"]


def test_an_export_tasks_folder_is_registered_as_the_owner_writes_it(live) -> None:
    alice = live.new_user("alice")
    home = Path(live.ctx.settings.root) / "users" / "alice"
    tid = submit(alice, PPO)
    write_step(home / "runs" / "ppo", 2)
    alice.post(f"/api/v2/tasks/{tid}/cancel")
    r = alice.post(f"/api/v2/tasks/{tid}/export", json={"step": 2, "to": "merged"})
    assert r.status_code == 201, r.text
    export = r.json()["task_id"]
    (home / "models" / "merged").mkdir(parents=True)
    (home / "models" / "merged" / "config.json").write_text("{}")
    _succeed_with_log(live, export, "")
    r = alice.post("/api/v2/models", json={"name": "merged", "task_id": export})
    assert r.status_code == 201, r.text
    assert (r.json()["kind"], r.json()["path"]) == ("hf", "$HOME/models/merged"), r.json()  # not the server's path
