"""Issue 38 on a real Ray: a 4-trial sweep runs two trials at a time, stops the ones behind at its rung, and ends
naming its best trial. The trials are ``argus.jobs.steps`` runs (verl's console lines, a validation every
``trainer.test_freq`` steps whose score is ``val_per_step`` × step), so the outcome is known in advance; the
sweep's budget stopping trials is in tests/api/test_sweeps_api.py."""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

import pytest
import yaml

from tests.e2e.stack import Stack
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e
METRIC = "val-core/steps/score/mean@1"
SWEEP = {
    "name": "e2e sweep",
    "base": {"kind": "advanced", "workload": "job", "nnodes": 1, "n_gpus_per_node": 0, "cpus_per_node": 1,
             "command": "python3 -m argus.jobs.steps trainer.total_training_steps=8 trainer.test_freq=2 "
                        "trainer.save_freq=0 step_seconds=2"},
    "parameters": {"val_per_step": [0.4, 0.3, 0.2, 0.1]},
    "max_concurrent": 2,
    "budget_gpu_hours": 1.0,
    "metric": METRIC,
    "early_stop": {"rungs": [2], "keep": 0.5},
}


def _at(value: str | None) -> float | None:
    return datetime.fromisoformat(value).timestamp() if value else None


def test_a_sweep_runs_two_trials_at_a_time_stops_the_weak_and_names_the_best(stack: Stack) -> None:
    c = stack.user("sweeper")
    asked = time.monotonic()
    r = c.post("/api/v2/sweeps", content=yaml.safe_dump(SWEEP, sort_keys=False).encode(),
               headers={"Content-Type": "application/yaml"})
    assert r.status_code == 201, r.text
    sid, ids = r.json()["sweep_id"], [t["task_id"] for t in r.json()["trials"]]
    waiting = wait_until(lambda: (c.get(f"/api/v2/tasks/{ids[3]}").json()["pending_reason"] or "")
                         .startswith("sweep limit") or None, 60, every=0.3, what="the last trial to say why it waits")
    assert waiting
    out: dict[str, Any] = wait_until(
        lambda: (s := c.get(f"/api/v2/sweeps/{sid}").json())["status"] != "RUNNING" and s or None, 900, every=1.0,
        what=lambda: f"sweep {sid} to end: {c.get(f'/api/v2/sweeps/{sid}').json()}")
    took = time.monotonic() - asked
    assert out["status"] == "SUCCEEDED", out
    trials = out["trials"]
    assert trials[0]["status"] == "SUCCEEDED" and out["best_task"] == ids[0], out
    assert [p for p, _ in trials[0]["metric"]] == [2, 4, 6, 8]
    stopped = [t for t in trials if t["termination_reason"] == "SWEEP_STOPPED"]
    assert stopped and all(t["status"] == "CANCELED" for t in stopped), trials
    assert all(f"early-stopped by its sweep at step 2: {METRIC}" in t["status_message"] for t in stopped), stopped
    assert all(t["metric"][-1][0] < 8 for t in stopped)  # stopped before their end

    # never more than max_concurrent at once: the trials' attempts as Ray ran them
    spans = []
    for tid in ids:
        for a in c.get(f"/api/v2/tasks/{tid}").json()["attempts"]:
            if a["started_at"]:
                spans.append((_at(a["started_at"]), _at(a["finished_at"]) or time.time()))
    edges = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans], key=lambda x: (x[0], x[1]))
    running = peak = 0
    for _, step in edges:
        running += step
        peak = max(peak, running)
    assert len(spans) == 4 and peak <= 2, spans
    first = c.get(f"/api/v2/tasks/{ids[0]}").json()  # ran its 8 steps of 2 s: the rest is per-trial overhead
    ran = _at(first["finished_at"]) - _at(first["created_at"])  # type: ignore[operator]
    first_start = min(s for s, _ in spans)
    created = _at(c.get(f"/api/v2/tasks/{ids[0]}").json()["created_at"])
    print(f"sweep of 4 trials: {took:.0f} s from submit to its end; first trial running "
          f"{first_start - created:.1f} s after submit; {len(stopped)} stopped early; peak {peak} at once; "
          f"the full trial took {ran:.1f} s for 16 s of steps: {ran - 16:.1f} s of overhead (queue, Ray job, sandbox, "
          "python start, log)")
