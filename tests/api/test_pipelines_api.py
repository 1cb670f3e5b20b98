"""Pipelines through real HTTP against a real SQLite file (no Ray: the test plays the runs' ends, the scheduler's
look is services.pipelines.tick). What a Ray run adds is in tests/e2e/test_pipelines_on_ray.py."""

from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from argus.db.models import TaskModel
from argus.services import pipelines as svc
from tests.api.test_checkpoints_api import _succeed_with_log
from tests.services.test_checkpoints import write_step

METRIC = "val-core/steps/score/mean@1"
STEPS = "python3 -m argus.jobs.steps trainer.default_local_dir=ckpt trainer.test_freq=2 step_seconds=0"


def job(command: str) -> dict:
    return {"kind": "advanced", "workload": "job", "nnodes": 1, "n_gpus_per_node": 0, "command": command}


PIPELINE = {
    "kind": "pipeline",
    "name": "chain",
    "steps": {
        "first": {"spec": job(f"{STEPS} val_per_step=0.1")},
        "second": {"needs": ["first"], "spec": job(
            f"{STEPS} val_per_step=0.3 trainer.resume_mode=resume_path "
            "trainer.resume_from_path={{ steps.first.checkpoint }}")},
        "flaky": {"needs": ["first"], "retries": 1, "spec": job(f"{STEPS} val_per_step=0.2")},
        "keep": {"needs": ["second"], "register": {"from": "second", "name": "chained", "alias": "candidate"},
                 "when": {"step": "second", "metric": METRIC, "op": ">=", "value": 1.0}},
    },
}


def _post(client, doc, **params):
    return client.post("/api/v2/pipelines", content=yaml.safe_dump(doc, sort_keys=False).encode(), params=params,
                       headers={"Content-Type": "application/yaml"})


def _tick(live) -> int:
    with live.ctx.db.session() as s:
        admission = svc.Admission(live.ctx.policy, (), live.ctx.settings.max_spec_bytes)
        return svc.tick(s, live.ctx.layout, admission, datetime.now(UTC))


def _steps(client, pid) -> dict:
    return {s["name"]: s for s in client.get(f"/api/v2/pipelines/{pid}").json()["steps"]}


def _fail(live, tid: str) -> None:
    with live.ctx.db.session() as s:
        row = s.get(TaskModel, tid)
        row.status, row.status_message, row.attempts = "FAILED", "exit 1", 1


def test_a_pipeline_runs_its_steps_in_order_passes_artifacts_retries_and_gates(live) -> None:
    alice, bob = live.new_user("alice"), live.new_user("bob")
    assert _post(alice, PIPELINE, dry_run="true").status_code == 201
    bad = {**PIPELINE, "steps": {**PIPELINE["steps"], "second": {**PIPELINE["steps"]["second"], "needs": []}}}
    r = _post(alice, bad)
    assert r.status_code == 400 and "does not need" in r.text, r.text
    r = _post(alice, {**PIPELINE, "steps": {"only": {"spec": {**job("python3 -m argus.jobs.steps"), "nnodes": 0}}}})
    assert r.status_code == 400 and r.json()["detail"]["errors"][0]["field"] == "steps.only.nnodes", r.text
    assert alice.get("/api/v2/tasks").json()["total"] == 0

    r = _post(alice, PIPELINE)
    assert r.status_code == 201, r.text
    pid = r.json()["pipeline_id"]
    assert {n: s["status"] for n, s in _steps(alice, pid).items()} == dict.fromkeys(PIPELINE["steps"], "waiting")
    assert bob.get(f"/api/v2/pipelines/{pid}").status_code == 404

    assert _tick(live) == 1
    first = _steps(alice, pid)["first"]["task_id"]
    t = alice.get(f"/api/v2/tasks/{first}").json()
    assert t["status"] == "QUEUED"
    home = Path(live.ctx.settings.root) / "users" / "alice"
    write_step(home / "jobs" / first / "ckpt", 4)
    _succeed_with_log(live, first, f"step:4 - {METRIC}:0.4\n")
    assert _tick(live) == 2  # second and flaky
    steps = _steps(alice, pid)
    assert steps["first"]["artifacts"]["checkpoint"] == f"$HOME/jobs/{first}/ckpt/global_step_4"
    second = steps["second"]["task_id"]
    expanded = alice.get(f"/api/v2/tasks/{second}/spec").json()["command_expanded"]
    assert f"trainer.resume_from_path={home}/jobs/{first}/ckpt/global_step_4" in expanded, expanded

    flaky = steps["flaky"]["task_id"]
    _fail(live, flaky)
    _tick(live)
    steps = _steps(alice, pid)
    assert steps["flaky"]["status"] == "running" and steps["flaky"]["tries"] == 2 and steps["flaky"]["task_id"] != flaky
    _fail(live, steps["flaky"]["task_id"])

    write_step(home / "jobs" / second / "ckpt", 6)
    _succeed_with_log(live, second, f"step:6 - {METRIC}:1.8\n")
    _tick(live)
    out = alice.get(f"/api/v2/pipelines/{pid}").json()
    steps = {s["name"]: s for s in out["steps"]}
    assert steps["flaky"]["status"] == "failed" and "exit 1" in steps["flaky"]["message"]
    assert steps["keep"]["status"] == "succeeded" and steps["keep"]["gate"].startswith("gate passed: second")
    assert steps["keep"]["artifacts"] == {"model": "chained:1", "path": f"$HOME/jobs/{second}/ckpt/global_step_6"}
    assert alice.get("/api/v2/models/chained@candidate").json()["versions"][0]["source_task"] == second
    assert out["status"] == "FAILED" and out["message"].startswith("step flaky failed")


def test_a_look_rolled_back_after_it_queued_a_step_leaves_no_task_and_the_next_look_queues_it_once(live) -> None:
    """A look whose transaction rolls back after it queued a step (a later pipeline's failure, a failed commit)
    leaves nothing behind. On SQLite the step's savepoint was the transaction's first write, and its RELEASE
    committed the task on its own: queued, in no pipeline, with the step still waiting — queued again next look."""
    alice = live.new_user("alice")
    pid = _post(alice, {**PIPELINE, "steps": {"first": PIPELINE["steps"]["first"]}}).json()["pipeline_id"]
    with pytest.raises(RuntimeError), live.ctx.db.session() as s:
        admission = svc.Admission(live.ctx.policy, (), live.ctx.settings.max_spec_bytes)
        assert svc.tick(s, live.ctx.layout, admission, datetime.now(UTC)) == 1
        raise RuntimeError("a later failure in the same transaction")
    assert alice.get("/api/v2/tasks").json()["total"] == 0
    assert _steps(alice, pid)["first"]["status"] == "waiting"
    assert _tick(live) == 1
    tasks = alice.get("/api/v2/tasks").json()
    assert [t["task_id"] for t in tasks["items"]] == [_steps(alice, pid)["first"]["task_id"]], tasks


def test_a_gate_that_fails_skips_and_cancel_stops_the_running_step(live) -> None:
    alice = live.new_user("alice")
    pid = _post(alice, PIPELINE).json()["pipeline_id"]
    _tick(live)
    first = _steps(alice, pid)["first"]["task_id"]
    write_step(Path(live.ctx.settings.root) / "users" / "alice" / "jobs" / first / "ckpt", 2)
    _succeed_with_log(live, first, "")
    _tick(live)
    second = _steps(alice, pid)["second"]["task_id"]
    _succeed_with_log(live, second, f"step:2 - {METRIC}:0.6\n")
    _tick(live)
    steps = _steps(alice, pid)
    assert steps["keep"]["status"] == "skipped" and steps["keep"]["message"] == (
        f"gate not passed: second {METRIC} = 0.6, needs >= 1")
    assert (steps["keep"]["message_code"], steps["keep"]["message_params"]) == (  # issue 37: known from the text
        "pipeline.gate_not_passed", {"step": "second", "metric": METRIC, "value": "0.6", "op": ">=", "limit": "1"})
    r = alice.post(f"/api/v2/pipelines/{pid}/cancel")
    assert r.status_code == 200 and r.json()["status"] == "CANCELED", r.text
    steps = {s["name"]: s for s in r.json()["steps"]}
    assert steps["flaky"]["status"] == "canceled"
    assert (steps["flaky"]["message_code"], r.json()["message_code"]) == ("pipeline.canceled_by", "pipeline.canceled_by")
    assert alice.get(f"/api/v2/tasks/{steps['flaky']['task_id']}").json()["status"] == "CANCELED"
    assert alice.post(f"/api/v2/pipelines/{pid}/cancel").status_code == 409
    assert [p["pipeline_id"] for p in alice.get("/api/v2/pipelines").json()] == [pid]



def _export(to: str) -> dict:
    return {"kind": "pipeline", "name": f"export to {to}", "steps": {
        "train": {"spec": job(f"{STEPS} val_per_step=0.1")},
        "export": {"needs": ["train"], "retries": 2, "export": {"from": "train", "to": to}}}}


def _trained(live, alice, to: str) -> tuple[str, Path]:
    """A pipeline exporting to ``to`` whose train step ended with a checkpoint at step 4: its id and alice's home."""
    pid = _post(alice, _export(to)).json()["pipeline_id"]
    assert _tick(live) == 1
    home = Path(live.ctx.settings.root) / "users" / "alice"
    train = _steps(alice, pid)["train"]["task_id"]
    write_step(home / "jobs" / train / "ckpt", 4)
    _succeed_with_log(live, train, "")
    return pid, home


def _refused(alice, pid: str, why: str) -> None:
    step = _steps(alice, pid)["export"]
    assert step["status"] == "failed", step
    assert step["message"] == f"refused when it was to start: {why}: choose another --to or remove it", step


def test_a_retried_export_step_writes_again_into_the_folder_its_own_earlier_tries_left(live) -> None:
    alice = live.new_user("alice")
    pid, home = _trained(live, alice, "merged")
    assert _tick(live) == 1
    first = _steps(alice, pid)["export"]["task_id"]
    (home / "models" / "merged").mkdir(parents=True)  # the first try got this far, then failed
    (home / "models" / "merged" / "config.json").write_text("{}")
    _fail(live, first)
    assert _tick(live) == 1
    step = _steps(alice, pid)["export"]
    assert (step["status"], step["tries"]) == ("running", 2) and step["task_id"] != first, step
    spec = alice.get(f"/api/v2/tasks/{step['task_id']}/spec").json()
    assert spec["command_expanded"].endswith(f"--target_dir '{home}/models/merged'"), spec
    _fail(live, step["task_id"])  # and again: the folder is still the step's own
    assert _tick(live) == 1
    assert _steps(alice, pid)["export"]["tries"] == 3


def test_an_export_step_never_takes_over_a_folder_that_is_not_its_own(live) -> None:
    alice = live.new_user("alice")
    home = Path(live.ctx.settings.root) / "users" / "alice"
    (home / "models" / "before").mkdir(parents=True)  # there before the pipeline: its first try is refused
    pid, _ = _trained(live, alice, "before")
    assert _tick(live) == 0
    _refused(alice, pid, "$HOME/models/before already exists")
    assert _steps(alice, pid)["export"]["tries"] == 0

    pid, _ = _trained(live, alice, "unran")  # its first try failed before it ran: it made nothing
    _tick(live)
    first = _steps(alice, pid)["export"]["task_id"]
    with live.ctx.db.session() as s:
        s.get(TaskModel, first).status = "FAILED"
    (home / "models" / "unran").mkdir()
    _tick(live)
    _refused(alice, pid, "$HOME/models/unran already exists, and the earlier try of this step never ran, so it did "
             "not make it")

    pid, _ = _trained(live, alice, "shared")  # another export to the folder, queued while the first try was
    _tick(live)
    steps = _steps(alice, pid)
    r = alice.post(f"/api/v2/tasks/{steps['train']['task_id']}/export", json={"to": "shared"})
    assert r.status_code == 201, r.text
    (home / "models" / "shared").mkdir()
    _fail(live, steps["export"]["task_id"])
    _tick(live)
    _refused(alice, pid, f"$HOME/models/shared already exists and task {r.json()['task_id']} also exports to it")

    pid, _ = _trained(live, alice, "linked")  # a link is never a folder a try made
    _tick(live)
    (home / "models" / "linked").symlink_to(home / "jobs")
    _fail(live, _steps(alice, pid)["export"]["task_id"])
    _tick(live)
    _refused(alice, pid, "$HOME/models/linked exists and is not a folder (a link or a file): an earlier try of this "
             "step cannot have made it")
    assert (home / "jobs").is_dir() and (home / "models" / "linked").is_symlink()


def test_a_register_step_of_a_team_task_uses_the_teams_registry(live) -> None:
    """A pipeline's task charged to a team registers into the team's registry (issue 38); moving the team's alias
    needs its admin role, so a plain member's step fails saying so, and a team admin's succeeds."""
    admin = live.admin()
    alice, bob = live.new_user("alice"), live.new_user("bob")
    admin.post("/api/v2/teams", json={"name": "nlp"})
    admin.post("/api/v2/teams/nlp/members", json={"user": "alice"})
    admin.post("/api/v2/teams/nlp/members", json={"user": "bob", "role": "admin"})
    doc = {"kind": "pipeline", "name": "team", "steps": {
        "run": {"spec": job(f"{STEPS} val_per_step=0.1")},
        "keep": {"needs": ["run"], "register": {"from": "run", "name": "m", "alias": "candidate"}}}}
    ids = {}
    for who, client in (("alice", alice), ("bob", bob)):
        pid = _post(client, doc).json()["pipeline_id"]
        _tick(live)
        tid = _steps(client, pid)["run"]["task_id"]
        write_step(Path(live.ctx.settings.root) / "users" / who / "jobs" / tid / "ckpt", 2)
        with live.ctx.db.session() as s:
            row = s.get(TaskModel, tid)
            row.status, row.attempts = "SUCCEEDED", 1
        _tick(live)
        ids[who] = (pid, tid)
    keep = _steps(alice, ids["alice"][0])["keep"]
    assert keep["status"] == "failed" and "needs the team's admin role" in keep["message"], keep
    keep = _steps(bob, ids["bob"][0])["keep"]
    assert keep["status"] == "succeeded", keep
    assert keep["message"] == f"registered nlp/m:1 as @candidate (task {ids['bob'][1]} is charged to team nlp)"
    assert keep["artifacts"]["model"] == "nlp/m:1"
    assert alice.get("/api/v2/models/nlp/m@candidate").json()["versions"][0]["source_task"] == ids["bob"][1]


def test_an_export_steps_hf_path_is_shown_as_the_owner_writes_it(live) -> None:
    alice = live.new_user("alice")
    pid, home = _trained(live, alice, "merged")
    assert _tick(live) == 1
    _succeed_with_log(live, _steps(alice, pid)["export"]["task_id"], "")
    _tick(live)
    step = _steps(alice, pid)["export"]
    assert step["status"] == "succeeded" and step["artifacts"]["hf_path"] == "$HOME/models/merged", step
    assert str(home) not in str(alice.get(f"/api/v2/pipelines/{pid}").json())  # no server path in the answer
