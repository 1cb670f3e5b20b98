"""Checkpoints, resume and export through real HTTP against a real SQLite file (no Ray: tasks stay queued)."""

from pathlib import Path

import yaml

from tests.envs_fixtures import lm_eval_env
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
    assert [(e["message_code"], e["message_params"]) for e in events][:2] == [  # issue 37: coded, English unchanged
        ("status.accepted", {}),
        ("status.resumes", {"task": tid, "checkpoint": "global_step_4", "path": "$HOME/runs/ck/global_step_4"})]
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
    said = [(e["message"], e["message_code"], e["message_params"]) for e in alice.get(f"/api/v2/tasks/{exp}/events").json()]
    assert (f"exports {tid} global_step_4 (fsdp) to $HOME/models/my-model", "status.exports",
            {"task": tid, "checkpoint": "global_step_4", "backend": "fsdp", "target": "$HOME/models/my-model"}) in said
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


PPO = """\
kind: advanced
workload: ppo
name: my run
nnodes: 1
n_gpus_per_node: 2
command: >-
  python3 -m verl.trainer.main_ppo data.train_files=$HOME/datasets/gsm8k/train.parquet
  data.val_files=$HOME/datasets/gsm8k/test.parquet trainer.nnodes=1 trainer.n_gpus_per_node=2
  trainer.default_local_dir=$HOME/runs/ppo
"""
ACC = "val-core/openai/gsm8k/acc/mean@1"


def _succeed_with_log(live, tid: str, text: str) -> None:
    """What the monitor leaves after a run that logged ``text``: the row SUCCEEDED with one attempt."""
    from argus.db.models import TaskModel

    log = Path(live.ctx.settings.root) / "users" / "alice" / "jobs" / tid / "logs" / "attempt-1.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(text)
    with live.ctx.db.session() as s:
        row = s.get(TaskModel, tid)
        row.status, row.attempts = "SUCCEEDED", 1


def test_evaluate_checkpoints_attach_scores_and_pick_the_best(live) -> None:
    alice, bob = live.new_user("alice"), live.new_user("bob")
    tid = submit(alice, PPO)
    folder = Path(live.ctx.settings.root) / "users" / "alice" / "runs" / "ppo"
    write_step(folder, 2)
    write_step(folder, 4)
    assert bob.post(f"/api/v2/tasks/{tid}/evaluate", json={}).status_code == 404
    assert bob.get(f"/api/v2/tasks/{tid}/evaluations").status_code == 404

    r = alice.post(f"/api/v2/tasks/{tid}/evaluate", json={})  # a running task's complete step may be evaluated
    assert r.status_code == 201, r.text
    latest = r.json()["task_id"]
    assert r.json()["info"]["evaluates_task"] == tid and r.json()["info"]["step"] == 4
    t = alice.get(f"/api/v2/tasks/{latest}").json()
    assert (t["evaluates_task"], t["evaluates_step"], t["name"], t["scores"]) == (tid, 4, f"eval {tid} step 4", None)
    cmd = alice.get(f"/api/v2/tasks/{latest}/spec").json()["command_raw"]
    assert cmd.endswith("trainer.resume_mode=resume_path trainer.resume_from_path=$HOME/runs/ppo/global_step_4 "
                        "trainer.val_only=True trainer.val_before_train=True"), cmd
    r = alice.post(f"/api/v2/tasks/{tid}/evaluate",
                   json={"step": 2, "val_file": "$HOME/datasets/math/test.parquet", "reward_path": "$HOME/code/r.py"})
    assert r.status_code == 201, r.text
    second = r.json()["task_id"]
    cmd = alice.get(f"/api/v2/tasks/{second}/spec").json()["command_raw"]
    assert cmd.endswith("data.val_files=$HOME/datasets/math/test.parquet "
                        "reward.custom_reward_function.path=$HOME/code/r.py"), cmd
    events = alice.get(f"/api/v2/tasks/{second}/events").json()
    assert any(f"evaluates {tid} checkpoint global_step_2" in (e["message"] or "") for e in events)
    assert {"task": tid, "checkpoint": "global_step_2", "path": "$HOME/runs/ppo/global_step_2"} in [
        e["message_params"] for e in events if e["message_code"] == "status.evaluates"]
    for bad, field in (({"step": 3}, "step"), ({"val_file": "/etc/passwd"}, None), ({"nope": 1}, None)):
        r = alice.post(f"/api/v2/tasks/{tid}/evaluate", json=bad)
        assert r.status_code in (400, 422), (bad, r.text)
        if field:
            assert r.json()["detail"]["errors"][0]["field"] == field, r.text

    r = alice.get(f"/api/v2/tasks/{tid}/checkpoints/best", params={"metric": ACC})
    assert r.status_code == 400 and r.json()["detail"]["code"] == "no_scores", r.text
    _succeed_with_log(live, latest, f"Initial validation metrics: {{...}}\nstep:4 - {ACC}:0.25 - val-aux/len:9.0\n")
    _succeed_with_log(live, second, f"step:2 - {ACC}:0.5 - val-aux/len:7.0 - val-aux/bad:nan\n")
    assert alice.get(f"/api/v2/tasks/{latest}").json()["scores"] == {ACC: 0.25, "val-aux/len": 9.0}
    steps = alice.get(f"/api/v2/tasks/{tid}/checkpoints").json()["steps"]
    assert [[(e["task_id"], e["scores"]) for e in s["evaluations"]] for s in steps] == [
        [(second, {ACC: 0.5, "val-aux/len": 7.0})], [(latest, {ACC: 0.25, "val-aux/len": 9.0})]]
    assert [e["step"] for e in alice.get(f"/api/v2/tasks/{tid}/evaluations").json()] == [4, 2]
    assert alice.get(f"/api/v2/tasks/{tid}/checkpoints/best", params={"metric": ACC}).json()["step"] == 2
    best_min = alice.get(f"/api/v2/tasks/{tid}/checkpoints/best", params={"metric": "val-aux/len", "mode": "min"})
    assert best_min.json()["step"] == 2
    r = alice.get(f"/api/v2/tasks/{tid}/checkpoints/best", params={"metric": "val-core/x"})
    assert r.status_code == 400 and ACC in r.json()["detail"]["errors"][0]["message"], r.text

    alice.post(f"/api/v2/tasks/{tid}/cancel")
    r = alice.post(f"/api/v2/tasks/{tid}/export", json={"best": ACC, "to": "best"})
    assert r.status_code == 201 and r.json()["info"]["step"] == 2, r.text
    r = alice.post(f"/api/v2/tasks/{tid}/resume", json={"best": ACC, "step": 4})
    assert r.status_code == 400 and r.json()["detail"]["errors"][0]["field"] == "best", r.text
    r = alice.post(f"/api/v2/tasks/{tid}/resume", json={"best": ACC, "mode": "min"})
    assert r.status_code == 201 and r.json()["info"]["step"] == 4, r.text


def test_only_a_ppo_or_grpo_checkpoint_is_evaluated(live) -> None:
    alice = live.new_user("alice")
    tid = submit(alice, SPEC)
    write_step(Path(live.ctx.settings.root) / "users" / "alice" / "runs" / "ck", 2)
    r = alice.post(f"/api/v2/tasks/{tid}/evaluate", json={})
    assert r.status_code == 409 and r.json()["detail"]["code"] == "not_evaluable", r.text
    assert "trainer.val_only" in r.json()["detail"]["message"]


def test_any_checkpoint_is_evaluated_with_lm_eval_and_scored_on_its_step(live) -> None:
    alice = live.new_user("alice")
    env = lm_eval_env(live.ctx.settings.root)  # an evaluation runs in its run's environment
    tid = submit(alice, SPEC + f"env: {env}\n")  # no ppo/grpo run: lm-eval merges any verl checkpoint first
    write_step(Path(live.ctx.settings.root) / "users" / "alice" / "runs" / "ck", 2)
    lm = {"tasks": ["tiny_arith"], "include_path": "$HOME/code/lm_tasks", "limit": 8}
    r = alice.post(f"/api/v2/tasks/{tid}/evaluate", json={"lm_eval": lm})
    assert r.status_code == 201, r.text
    eid = r.json()["task_id"]
    spec = alice.get(f"/api/v2/tasks/{eid}/spec").json()
    assert spec["command_raw"] == ("python3 -m argus.jobs.lm_eval --checkpoint '$HOME/runs/ck/global_step_2' --tasks "
                                   "tiny_arith --include-path '$HOME/code/lm_tasks' --limit 8 --device cuda"), spec
    events = alice.get(f"/api/v2/tasks/{eid}/events").json()
    assert any(f"evaluates {tid} checkpoint global_step_2" in (e["message"] or "") and "lm-eval" in e["message"]
               and e["message_code"] == "status.evaluates_lm_eval" for e in events), events
    _succeed_with_log(live, eid, "|tiny_arith| 1|none| 0|acc|↑|0.5|\nstep:2 - lm-eval/tiny_arith/acc:0.5\n")
    step2 = alice.get(f"/api/v2/tasks/{tid}/checkpoints").json()["steps"][0]
    assert [(e["task_id"], e["scores"]) for e in step2["evaluations"]] == [(eid, {"lm-eval/tiny_arith/acc": 0.5})]
    best = alice.get(f"/api/v2/tasks/{tid}/checkpoints/best", params={"metric": "lm-eval/tiny_arith/acc"})
    assert best.status_code == 200 and best.json()["step"] == 2, best.text

    for body, field in (({"lm_eval": lm, "val_file": "$HOME/d/t.parquet"}, "val_file"),
                        ({"lm_eval": {"tasks": ["a b"]}}, "lm_eval.tasks"),
                        ({"lm_eval": {**lm, "include_path": f"{live.ctx.settings.root}/users/bob/code"}}, None)):
        r = alice.post(f"/api/v2/tasks/{tid}/evaluate", json=body)
        assert r.status_code == 400, (body, r.text)
        errors = r.json()["detail"]["errors"]
        if field:
            assert [e["field"] for e in errors] == [field], errors
        else:  # another user's folder is refused by admission, as in any command
            assert "another user's home" in r.text, errors
