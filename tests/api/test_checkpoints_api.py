"""Checkpoints, resume and export through real HTTP against a real SQLite file (no Ray: tasks stay queued)."""

from pathlib import Path

import yaml

from tests.helpers import submit_spec
from tests.services.test_checkpoints import write_step

SPEC = """\
kind: advanced
workload: job
name: steps
nnodes: 1
n_gpus_per_node: 0
command: python3 -m argus.jobs.steps trainer.default_local_dir=$HOME/runs/ck step_seconds=0
"""


submit = submit_spec


def test_list_resume_export(live) -> None:
    alice, bob = live.new_user("alice"), live.new_user("bob")
    tid = submit(alice, SPEC)
    r = alice.get(f"/api/v2/tasks/{tid}/checkpoints")
    assert r.status_code == 200 and r.json() == {"task_id": tid, "folder": "$HOME/runs/ck", "latest": None, "steps": []}
    folder = Path(live.ctx.settings.root) / "users" / "alice" / "runs" / "ck"
    write_step(folder, 2)
    write_step(folder, 4)
    write_step(folder, 6, tracker=False)
    out = alice.get(f"/api/v2/tasks/{tid}/checkpoints").json()
    assert out["latest"] == 4
    assert [(s["step"], s["state"], s["complete"]) for s in out["steps"]] == [
        (2, "complete", True), (4, "complete", True), (6, "writing", False)]
    assert out["steps"][1]["path"] == "$HOME/runs/ck/global_step_4"
    assert [c["kind"] for c in out["steps"][1]["components"]] == ["actor", "critic", "dataloader"]
    assert bob.get(f"/api/v2/tasks/{tid}/checkpoints").status_code == 404  # another user's task does not exist
    assert bob.post(f"/api/v2/tasks/{tid}/resume", json={}).status_code == 404

    r = alice.post(f"/api/v2/tasks/{tid}/resume", json={})
    assert r.status_code == 409 and r.json()["detail"]["code"] == "task_active"
    assert alice.post(f"/api/v2/tasks/{tid}/cancel").json()["status"] == "CANCELED"
    r = alice.post(f"/api/v2/tasks/{tid}/resume", json={"step": 6})
    assert r.status_code == 400 and r.json()["detail"]["errors"][0]["field"] == "step", r.text
    r = alice.post(f"/api/v2/tasks/{tid}/resume", json={"step": "x"})
    assert r.status_code == 400

    r = alice.post(f"/api/v2/tasks/{tid}/resume", json={})
    assert r.status_code == 201, r.text
    new = r.json()["task_id"]
    assert r.json()["info"] == {"resumed_from": tid, "step": 4, "env": "argus (verl 0.9.1)"}
    t_new = alice.get(f"/api/v2/tasks/{new}").json()
    assert t_new["resumed_from"] == tid and t_new["status"] == "QUEUED"
    assert alice.get(f"/api/v2/tasks/{tid}").json()["resumed_by"] == [new]
    spec = alice.get(f"/api/v2/tasks/{new}/spec").json()
    assert spec["command_raw"].endswith(
        "trainer.resume_mode=resume_path trainer.resume_from_path=$HOME/runs/ck/global_step_4")
    assert f"trainer.resume_from_path={folder}/global_step_4" in spec["command_expanded"]
    events = alice.get(f"/api/v2/tasks/{new}/events").json()
    assert any(f"resumes {tid} from checkpoint global_step_4" in (e["message"] or "") for e in events)
    # resuming the resumed task replaces the overrides instead of adding a second pair
    alice.post(f"/api/v2/tasks/{new}/cancel")
    write_step(folder, 8)
    again = alice.post(f"/api/v2/tasks/{new}/resume", json={"step": 8}).json()["task_id"]
    cmd = alice.get(f"/api/v2/tasks/{again}/spec").json()["command_raw"]
    assert cmd.count("trainer.resume_from_path=") == 1 and cmd.endswith("global_step_8")

    r = alice.post(f"/api/v2/tasks/{tid}/export", json={"step": 4, "to": "my-model"})
    assert r.status_code == 201, r.text
    exp = r.json()["task_id"]
    assert r.json()["info"]["target"] == "$HOME/models/my-model" and r.json()["info"]["backend"] == "fsdp"
    t = alice.get(f"/api/v2/tasks/{exp}").json()
    assert t["n_gpus_per_node"] == 0 and t["status"] == "QUEUED" and t["workload"] == "job"
    cmd = alice.get(f"/api/v2/tasks/{exp}/spec").json()["command_raw"]
    assert cmd == ("python3 -m verl.model_merger merge --backend fsdp --local_dir "
                   "'$HOME/runs/ck/global_step_4/actor' --target_dir '$HOME/models/my-model'")
    for bad in ("../../bob/models/x", "/etc/x", "$HOME/../bob/x", "a b"):
        r = alice.post(f"/api/v2/tasks/{tid}/export", json={"to": bad})
        assert r.status_code == 400 and r.json()["detail"]["errors"][0]["field"] == "to", (bad, r.text)
    (Path(live.ctx.settings.root) / "users" / "alice" / "models" / "taken").mkdir(parents=True)
    r = alice.post(f"/api/v2/tasks/{tid}/export", json={"to": "taken"})
    assert r.status_code == 409 and r.json()["detail"]["code"] == "exists"


def test_no_checkpoint_and_admin(live) -> None:
    alice = live.new_user("alice")
    tid = submit(alice, SPEC.replace("$HOME/runs/ck", "$HOME/runs/none"))
    alice.post(f"/api/v2/tasks/{tid}/cancel")
    r = alice.post(f"/api/v2/tasks/{tid}/resume")
    assert r.status_code == 409 and r.json()["detail"]["code"] == "no_checkpoint"
    with live.admin() as admin:
        assert admin.get(f"/api/v2/tasks/{tid}/checkpoints").status_code == 200  # an admin may look
        r = admin.post(f"/api/v2/tasks/{tid}/resume")  # but a resume would be the admin's own task
        assert r.status_code == 404
    body = yaml.safe_load(SPEC)
    assert body["n_gpus_per_node"] == 0
