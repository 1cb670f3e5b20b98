"""Sweeps through real HTTP against a real SQLite file (no Ray: trials stay queued until the test moves them).

What a Ray run adds (trials really running two at a time, one stopped early) is in tests/e2e/test_sweeps_on_ray.py.
"""

from datetime import UTC, datetime, timedelta
from pathlib import Path

import yaml

from argus.core.paths import DataLayout
from argus.db.models import SweepModel, TaskAttemptModel, TaskModel
from argus.services import sweeps as svc

METRIC = "val-core/steps/score/mean@1"
SWEEP = {
    "name": "steps sweep",
    "base": {"kind": "advanced", "workload": "job", "nnodes": 1, "n_gpus_per_node": 0,
             "command": "python3 -m argus.jobs.steps trainer.total_training_steps=6 trainer.test_freq=2 "
                        "trainer.save_freq=0 step_seconds=1"},
    "parameters": {"val_per_step": [0.4, 0.3, 0.2, 0.1]},
    "max_concurrent": 2,
    "budget_gpu_hours": 1.0,
    "metric": METRIC,
    "early_stop": {"rungs": [2], "keep": 0.5},
}


def _post(client, doc, **params):
    return client.post("/api/v2/sweeps", content=yaml.safe_dump(doc, sort_keys=False).encode(), params=params,
                       headers={"Content-Type": "application/yaml"})


def test_a_sweep_is_checked_whole_then_every_trial_is_a_queued_task(live) -> None:
    alice, bob = live.new_user("alice"), live.new_user("bob")
    r = _post(alice, SWEEP, dry_run="true")
    assert r.status_code == 201 and r.json()["sweep_id"] is None, r.text
    trials = r.json()["trials"]
    assert [t["params"] for t in trials] == [{"val_per_step": v} for v in (0.4, 0.3, 0.2, 0.1)]
    assert trials[3]["spec"]["command"].endswith("val_per_step=0.1") and trials[3]["task_id"] is None
    assert alice.get("/api/v2/tasks").json()["total"] == 0  # a dry run queues nothing

    bad = {**SWEEP, "parameters": {"val_per_step": [0.1], "n_gpus_per_node": [0, -1]}}
    r = _post(alice, bad)
    assert r.status_code == 400, r.text
    fields = [e["field"] for e in r.json()["detail"]["errors"]]
    assert fields == ["trials[1].n_gpus_per_node"] and "nothing was queued" in r.json()["detail"]["message"], r.text
    assert "(trial 1: val_per_step=0.1, n_gpus_per_node=-1)" in r.json()["detail"]["errors"][0]["message"]
    r = _post(alice, {**SWEEP, "base": {**SWEEP["base"], "command": "python3 -m argus.jobs.steps"}})
    assert r.status_code == 400 and r.json()["detail"]["errors"][0]["field"] == "early_stop", r.text
    r = _post(alice, {**SWEEP, "early_stop": {"rungs": [3]}})
    assert r.status_code == 400 and "multiples of 2" in r.json()["detail"]["errors"][0]["message"], r.text
    r = _post(alice, {**SWEEP, "metric": "critic/score/mean"})
    assert r.status_code == 400 and r.json()["detail"]["errors"][0]["field"] == "metric", r.text
    assert alice.get("/api/v2/tasks").json()["total"] == 0

    r = _post(alice, SWEEP)
    assert r.status_code == 201, r.text
    sid = r.json()["sweep_id"]
    ids = [t["task_id"] for t in r.json()["trials"]]
    assert sid.startswith("sweep-") and len(ids) == 4
    t = alice.get(f"/api/v2/tasks/{ids[1]}").json()
    assert (t["sweep_id"], t["sweep_trial"], t["sweep_params"], t["name"]) == (
        sid, 1, {"val_per_step": 0.3}, "steps sweep #1: val_per_step=0.3")
    out = alice.get(f"/api/v2/sweeps/{sid}").json()
    assert out["status"] == "RUNNING" and [x["status"] for x in out["trials"]] == ["QUEUED"] * 4
    assert (out["max_concurrent"], out["budget_gpu_hours"], out["hours_used"], out["best_task"]) == (2, 1.0, 0.0, None)
    assert [s["sweep_id"] for s in alice.get("/api/v2/sweeps").json()] == [sid]
    assert bob.get(f"/api/v2/sweeps/{sid}").status_code == 404 and bob.get("/api/v2/sweeps").json() == []
    assert bob.post(f"/api/v2/sweeps/{sid}/cancel").status_code == 404

    r = alice.post(f"/api/v2/sweeps/{sid}/cancel")
    assert r.status_code == 200 and r.json()["status"] == "CANCELED", r.text
    assert {x["status"] for x in r.json()["trials"]} == {"CANCELED"}
    assert alice.post(f"/api/v2/sweeps/{sid}/cancel").status_code == 409


def _run(live, tid: str, log: str = "", *, hours: float = 0.0, status: str = "RUNNING") -> None:
    """What the scheduler and the monitor leave for a trial that ran (``hours`` of one CPU) and logged ``log``."""
    root = Path(live.ctx.settings.root)
    path = root / "users" / "alice" / "jobs" / tid / "logs" / "attempt-1.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(log)
    now = datetime.now(UTC)
    with live.ctx.db.session() as s:
        row = s.get(TaskModel, tid)
        row.status, row.attempts = status, 1
        s.add(TaskAttemptModel(task_id=tid, attempt=1, submission_id=f"sid-{tid}", status=status,
                               started_at=now - timedelta(hours=hours),
                               finished_at=None if status == "RUNNING" else now,
                               resource_seconds=None if status == "RUNNING" else hours * 3600))


def _tick(live) -> int:
    with live.ctx.db.session() as s:
        return svc.tick(s, DataLayout.at(str(live.ctx.settings.root)), datetime.now(UTC))


def test_trials_behind_at_a_rung_are_stopped_and_the_budget_stops_the_rest(live) -> None:
    alice = live.new_user("alice")
    sid = _post(alice, SWEEP).json()["sweep_id"]
    ids = [t["task_id"] for t in alice.get(f"/api/v2/sweeps/{sid}").json()["trials"]]
    _run(live, ids[0], f"step:2 - loss:0.5 - {METRIC}:0.8\n")
    assert _tick(live) == 0  # alone at the rung
    _run(live, ids[1], f"step:1 - loss:1\nstep:2 - loss:0.5 - {METRIC}:0.6\n")
    assert _tick(live) == 1
    t1 = alice.get(f"/api/v2/tasks/{ids[1]}").json()
    assert (t1["status"], t1["termination_reason"]) == ("CANCELING", "SWEEP_STOPPED")
    assert t1["status_message"] == (f"early-stopped by its sweep at step 2: {METRIC} = 0.6, ranked 2 of the 2 "
                                    "trials that reached that step; the best 1 go on")
    assert (t1["status_message_code"], t1["status_message_params"]["rank"]) == ("status.early_stopped", 2)  # issue 37
    out = alice.get(f"/api/v2/sweeps/{sid}").json()
    assert out["best_task"] == ids[0] and out["trials"][0]["metric"] == [[2, 0.8]]

    _run(live, ids[2], f"step:2 - {METRIC}:0.4\n", hours=0.7, status="SUCCEEDED")  # ended trials count for the budget
    _run(live, ids[3], "", hours=0.4)  # and a running one, up to now
    assert _tick(live) == 2  # the running trials 0 and 3 (1 is already being stopped)
    out = alice.get(f"/api/v2/sweeps/{sid}").json()
    assert out["hours_used"] >= 1.1 and out["message"].startswith("budget reached: the trials used 1.1")
    assert out["message_code"] == "sweep.budget_reached" and out["message_params"]["used"].startswith("1.1")
    stopped = alice.get(f"/api/v2/tasks/{ids[3]}").json()
    assert stopped["status_message"] == "stopped by its sweep: " + out["message"]
    assert stopped["status_message_code"] == "status.sweep_stopped"
    assert out["trials"][3]["status_message_code"] == "status.sweep_stopped"
    assert [x["status"] for x in out["trials"]] == ["CANCELING", "CANCELING", "SUCCEEDED", "CANCELING"]
    assert all(x["termination_reason"] == "SWEEP_STOPPED" for x in out["trials"] if x["status"] == "CANCELING")

    with live.ctx.db.session() as s:  # the cancel loop stops them
        for tid in (ids[0], ids[1], ids[3]):
            s.get(TaskModel, tid).status = "CANCELED"
    _tick(live)
    out = alice.get(f"/api/v2/sweeps/{sid}").json()
    assert out["status"] == "SUCCEEDED" and out["finished_at"], out
    with live.ctx.db.session() as s:
        assert s.get(SweepModel, sid).status == "SUCCEEDED"
