"""The model registry through real HTTP against a real SQLite file: versions from a checkpoint (the best by its
evaluation), from an export folder in the home; lineage with file hashes; aliases audited and notified."""

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
        {"name": "gsm8k-ppo", "versions": 2, "latest": 2, "aliases": {"production": 2}}]
    assert bob.get("/api/v2/models").json() == [] and bob.get("/api/v2/models/gsm8k-ppo").status_code == 404
    with live.ctx.db.session() as s:
        moves = s.scalars(select(AuditEventModel.detail).where(AuditEventModel.action == "model.alias_moved")).all()
        assert [(m["from"], m["to"]) for m in moves] == [(None, 1), (1, 2)]
        sent = s.scalars(select(NotificationOutboxModel.payload).where(NotificationOutboxModel.event == "MODEL_ALIAS")).all()
        # version 1 came from a task: its moves are sent with that task; version 2 (a folder) has no task to send with
        assert len(sent) == 1 and "gsm8k-ppo@production → version 1" in str(sent[0]), sent
