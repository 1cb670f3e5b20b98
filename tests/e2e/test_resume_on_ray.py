"""A task whose node dies continues from its latest complete checkpoint on the retry (real Ray, real worker kill).

The job is ``argus.jobs.steps``: a CPU job that writes verl-layout ``global_step_N`` folders and
the tracker in verl's order and resumes only from verl's ``resume_path`` overrides (its default is
``disable``), so a resume can only have come from Argus. A real verl checkpoint needs a GPU run.
"""

from __future__ import annotations

import pytest

from tests.e2e.stack import Stack, spec, submit, wait_status
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e


def test_node_lost_retry_resumes_from_the_latest_checkpoint(stack: Stack) -> None:
    alice = stack.user("alice")
    tid = submit(alice, spec("python3 -m argus.jobs.steps trainer.default_local_dir=ck trainer.total_training_steps=24 "
                             "trainer.save_freq=2 step_seconds=0.3"))
    seen: list[str] = []
    wait_status(alice, tid, "RUNNING", timeout=60, seen=seen)
    got: dict[str, dict] = {}

    def two_complete() -> dict | None:  # at least two complete steps on disk, then the node dies mid-run
        ck = got["ck"] = alice.get(f"/api/v2/tasks/{tid}/checkpoints").json()
        return ck if sum(s["complete"] for s in ck["steps"]) >= 2 else None

    ck = wait_until(two_complete, 60, every=0.2, what=lambda: f"two complete checkpoints; {got.get('ck')}")
    assert ck["folder"] == f"$HOME/jobs/{tid}/ck"  # relative default_local_dir: below the job folder
    worker = stack.main_worker
    stack.kill_worker(worker)
    t = wait_status(alice, tid, "QUEUED", timeout=60, seen=seen, until=lambda t: t["attempt"] >= 2)
    stack.restart_worker(worker)
    t = wait_status(alice, tid, "SUCCEEDED", timeout=120, seen=seen)
    assert [(a["attempt"], a["termination_reason"]) for a in t["attempts"]] == [(1, "NODE_LOST"), (2, "SUCCEEDED")]

    events = alice.get(f"/api/v2/tasks/{tid}/events").json()
    said = [e["message"] for e in events if "attempt 2 resumes from checkpoint global_step_" in (e["message"] or "")]
    assert len(said) == 1, [e["message"] for e in events]
    step = int(said[0].split("global_step_")[1].split(" ")[0])
    assert step >= 4 and step % 2 == 0
    log2 = alice.get(f"/api/v2/tasks/{tid}/logs", params={"attempt": 2}).text
    assert f"resumed from step {step} (" in log2 and "training from scratch" not in log2, log2[:500]
    assert "step:1 -" not in log2 and f"step:{step + 1} -" in log2  # continued, not started over
    assert "done at step 24, weight 24.0" in log2  # the state saved at the checkpoint was loaded
    argv = alice.get(f"/api/v2/tasks/{tid}/spec").json()["argv"]
    assert argv[-1].endswith(f"trainer.resume_mode=resume_path trainer.resume_from_path="
                             f"{stack.server.ctx.settings.root}/users/alice/jobs/{tid}/ck/global_step_{step}")
    ck = alice.get(f"/api/v2/tasks/{tid}/checkpoints").json()
    assert ck["latest"] == 24 and all(s["complete"] for s in ck["steps"])
