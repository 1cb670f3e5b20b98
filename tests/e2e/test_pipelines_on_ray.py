"""Issue 38 on a real Ray: a pipeline's steps run in order through the real scheduler — a run saves checkpoints, the
next resumes from the first one's ``{{ steps.first.checkpoint }}``, a gated step registers the second run's model —
with ``argus.jobs.steps`` as the runs (verl's console lines and checkpoint layout, in seconds). The same chain with
real SFT, export, GRPO and evaluation is examples/pipeline-cpu.yaml (checked whole in tests/verl/test_examples.py)."""

from __future__ import annotations

import time

import pytest
import yaml

from tests.e2e.stack import Stack
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e
METRIC = "val-core/steps/score/mean@1"
STEPS = ("python3 -m argus.jobs.steps trainer.default_local_dir=ckpt trainer.test_freq=2 trainer.save_freq=2 "
         "step_seconds=0.5 trainer.total_training_steps=4")


def job(command: str) -> dict:
    return {"kind": "advanced", "workload": "job", "nnodes": 1, "n_gpus_per_node": 0, "cpus_per_node": 1,
            "command": command}


PIPELINE = {
    "kind": "pipeline",
    "name": "e2e chain",
    "steps": {
        "first": {"spec": job(f"{STEPS} val_per_step=0.1")},
        "second": {"needs": ["first"], "spec": job(
            STEPS.replace("total_training_steps=4", "total_training_steps=8") + " val_per_step=0.3 "
            "trainer.resume_mode=resume_path trainer.resume_from_path={{ steps.first.checkpoint }}")},
        "keep": {"needs": ["second"], "register": {"from": "second", "name": "e2e-chain", "alias": "candidate"},
                 "when": {"step": "second", "metric": METRIC, "op": ">=", "value": 2.0}},
        "never": {"needs": ["first"], "register": {"from": "first", "name": "e2e-weak"},
                  "when": {"step": "first", "metric": METRIC, "op": ">=", "value": 2.0}},
    },
}


def test_a_pipeline_passes_a_checkpoint_down_the_chain_and_registers_behind_a_gate(stack: Stack) -> None:
    c = stack.user("piper")
    asked = time.monotonic()
    r = c.post("/api/v2/pipelines", content=yaml.safe_dump(PIPELINE, sort_keys=False).encode(),
               headers={"Content-Type": "application/yaml"})
    assert r.status_code == 201, r.text
    pid = r.json()["pipeline_id"]
    out = wait_until(lambda: (p := c.get(f"/api/v2/pipelines/{pid}").json())["status"] != "RUNNING" and p or None,
                     600, every=1.0, what=lambda: f"pipeline {pid} to end: {c.get(f'/api/v2/pipelines/{pid}').json()}")
    took = time.monotonic() - asked
    steps = {s["name"]: s for s in out["steps"]}
    assert out["status"] == "SUCCEEDED", out
    first, second = steps["first"]["task_id"], steps["second"]["task_id"]
    assert steps["first"]["artifacts"]["checkpoint"] == f"$HOME/jobs/{first}/ckpt/global_step_4"
    log = c.get(f"/api/v2/tasks/{second}/logs").text
    assert "resumed from step 4 ($" not in log and "resumed from step 4 (" in log, log[-2000:]  # real path, resumed
    metrics = c.get(f"/api/v2/tasks/{second}/metrics").json()["points"]
    assert [s for s, _ in metrics[METRIC]] == [6, 8]  # it continued from step 4
    assert steps["keep"]["status"] == "succeeded" and steps["keep"]["artifacts"]["model"] == "e2e-chain:1"
    assert steps["never"]["status"] == "skipped" and "gate not passed: first" in steps["never"]["message"]
    model = c.get("/api/v2/models/e2e-chain@candidate").json()["versions"][0]
    assert model["source_task"] == second and model["path"] == f"$HOME/jobs/{second}/ckpt/global_step_8"
    t1 = c.get(f"/api/v2/tasks/{first}").json()
    t2 = c.get(f"/api/v2/tasks/{second}").json()
    gap = (time.mktime(time.strptime(t2["created_at"][:19], "%Y-%m-%dT%H:%M:%S"))
           - time.mktime(time.strptime(t1["finished_at"][:19], "%Y-%m-%dT%H:%M:%S")))
    print(f"pipeline of 2 runs + 2 registrations: {took:.0f} s from submit to its end; the second run was queued "
          f"~{gap:.0f} s after the first ended")
