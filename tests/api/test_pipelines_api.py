"""Pipelines through real HTTP against a real SQLite file (no Ray: the test plays the runs' ends, the scheduler's
look is services.pipelines.tick). What a Ray run adds is in tests/e2e/test_pipelines_on_ray.py."""

from datetime import UTC, datetime
from pathlib import Path

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
    r = alice.post(f"/api/v2/pipelines/{pid}/cancel")
    assert r.status_code == 200 and r.json()["status"] == "CANCELED", r.text
    steps = {s["name"]: s for s in r.json()["steps"]}
    assert steps["flaky"]["status"] == "canceled"
    assert alice.get(f"/api/v2/tasks/{steps['flaky']['task_id']}").json()["status"] == "CANCELED"
    assert alice.post(f"/api/v2/pipelines/{pid}/cancel").status_code == 409
    assert [p["pipeline_id"] for p in alice.get("/api/v2/pipelines").json()] == [pid]
