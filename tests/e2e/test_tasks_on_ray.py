"""Tasks through Argus on a real local Ray cluster: placement, failures, cancel, GPUs, fairness, logs."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from sqlalchemy import select

from argus.db.models import TaskEventModel
from tests.e2e.stack import Stack, spec, submit, wait_status
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_doctor_succeeds_on_a_worker_node_never_the_head(stack: Stack) -> None:
    alice = stack.user("alice")
    body = (EXAMPLES / "doctor.yaml").read_text()
    tid = submit(alice, body)
    t = wait_status(alice, tid, "SUCCEEDED", timeout=120)
    att = t["attempts"][-1]
    workers = {n["node_id"] for n in stack.server.admin().get("/api/v2/nodes").json()["nodes"]}
    assert att["node_id"] in workers and att["node_id"] != stack.head_node_id, (att, workers)
    assert att["exit_code"] == 0 and att["status"] == "SUCCEEDED"
    log = alice.get(f"/api/v2/tasks/{tid}/logs")
    assert log.status_code == 200 and len(log.content) > 0  # readable after the end, from the shared FS


def test_exit_code_3_is_failed_exit_nonzero_with_the_message(stack: Stack) -> None:
    alice = stack.user("alice")
    tid = submit(alice, spec("python3 -m argus.jobs.exit 3 --message boom"))
    t = _ended(alice, tid)
    assert (t["status"], t["termination_reason"]) == ("FAILED", "EXIT_NONZERO")
    assert "exit code 3" in t["status_message"]
    assert t["attempts"][-1]["exit_code"] == 3 and len(t["attempts"]) == 1  # user failures never retry
    assert b"boom" in alice.get(f"/api/v2/tasks/{tid}/logs").content


def _ended(c, tid: str) -> dict:
    seen: list[str] = []
    return wait_status(c, tid, {"SUCCEEDED", "FAILED", "CANCELED"}, timeout=60, seen=seen)


def _ray_job_end(stack: Stack, sid: str) -> str | None:
    """Ray's last word on a canceled task's job. CANCELED may come first (its record said the driver ended, and Ray
    notices the driver's exit a moment later); FAILED: the driver answered its stop file before Ray's stop came."""
    def ended() -> tuple[str | None] | None:
        status = {j.submission_id: j.status for j in stack.ray_jobs()}.get(sid)
        return None if status in ("PENDING", "RUNNING") else (status,)

    return wait_until(ended, 60, every=0.5, what=f"Ray's job {sid} to end")[0]


def test_cancel_queued_submitted_and_running(stack: Stack) -> None:
    alice = stack.user("alice")
    # QUEUED: more GPUs than exist, so it can only wait
    q = submit(alice, spec("python3 -m argus.jobs.sleep 30", gpus=64))
    wait_status(alice, q, "QUEUED")
    assert alice.post(f"/api/v2/tasks/{q}/cancel").json()["status"] == "CANCELED"
    # RUNNING
    r = submit(alice, spec("python3 -m argus.jobs.sleep 60 --lines 60"))
    wait_status(alice, r, "RUNNING", timeout=60)
    assert alice.post(f"/api/v2/tasks/{r}/cancel").json()["status"] == "CANCELING"
    t = wait_status(alice, r, "CANCELED", timeout=60)
    assert t["termination_reason"] == "USER_CANCELED"
    assert _ray_job_end(stack, f"{r}-a1") in (None, "STOPPED", "FAILED")
    # SUBMITTED: drive the loops by hand so the task is caught between Ray's accept and start
    with stack.manual() as runner:
        s = submit(alice, spec("python3 -m argus.jobs.sleep 60"))
        runner.submit.run_once()
        assert alice.get(f"/api/v2/tasks/{s}").json()["status"] == "SUBMITTED"
        assert alice.post(f"/api/v2/tasks/{s}/cancel").json()["status"] == "CANCELING"

        def canceled() -> bool:  # each look that finds it not yet CANCELED runs the cancel loop once more
            if alice.get(f"/api/v2/tasks/{s}").json()["status"] == "CANCELED":
                return True
            runner.cancel.run_once()
            return False

        wait_until(canceled, 60, every=0.3, what=f"{s} CANCELED")
    assert _ray_job_end(stack, f"{s}-a1") in (None, "STOPPED", "FAILED")  # Ray never runs it on its own


def test_task_waits_with_the_reason_and_runs_when_a_gpu_node_joins(stack: Stack) -> None:
    alice = stack.user("alice")
    tid = submit(alice, spec("python3 -m argus.jobs.sleep 1", gpus=4))

    def with_reason() -> dict | None:
        t = alice.get(f"/api/v2/tasks/{tid}").json()
        return t if t["pending_reason"] is not None else None

    t = wait_until(with_reason, 30, every=0.2, what=f"a pending reason on {tid}")
    assert t["status"] == "QUEUED" and t["pending_reason"] == "0 GPUs in the cluster"
    worker = stack.add_worker(gpus=4)
    try:
        t = wait_status(alice, tid, "SUCCEEDED", timeout=120)
        assert t["attempts"][-1]["status"] == "SUCCEEDED"
    finally:
        stack.kill_worker(worker)  # leave one worker so node-loss tests know where drivers run


def test_two_users_tasks_interleave_fairly(stack: Stack) -> None:
    # two users with no usage yet: fair share alone decides (others in this session have run tasks)
    a, b = stack.user("fsalice"), stack.user("fsbob")
    with stack.manual() as runner:
        mine = [submit(a, spec("python3 -m argus.jobs.sleep 0 --lines 1")) for _ in range(3)]
        theirs = [submit(b, spec("python3 -m argus.jobs.sleep 0 --lines 1")) for _ in range(3)]
        runner.submit.run_once()
    for tid in mine + theirs:
        wait_status(a if tid in mine else b, tid, "SUCCEEDED", timeout=120)
    with stack.server.ctx.db.session() as s:
        order = [e.task_id for e in s.scalars(select(TaskEventModel)
                                               .where(TaskEventModel.to_status == "SUBMITTED",
                                                      TaskEventModel.task_id.in_(mine + theirs))
                                               .order_by(TaskEventModel.id))]
    owner = ["a" if t in mine else "b" for t in order]
    # strictly alternating: equal usage, so the older task goes first, then the other user (fair share, issue 11)
    assert owner == ["a", "b"] * 3, order


def test_logs_stream_over_sse_while_running(stack: Stack) -> None:
    alice = stack.user("alice")
    tid = submit(alice, spec("python3 -m argus.jobs.sleep 4 --lines 4"))
    wait_status(alice, tid, "RUNNING", timeout=60)
    first_line_at = None
    t0 = time.monotonic()
    events = b""
    with alice.stream("GET", f"/api/v2/tasks/{tid}/logs", headers={"Accept": "text/event-stream"},
                      timeout=120) as r:
        for chunk in r.iter_bytes():
            events += chunk
            if first_line_at is None and b"sleep: 1/4" in events:
                first_line_at = time.monotonic() - t0
    text = events.decode()
    assert "data: sleep: 4/4" in text and "event: end" in text and '"status": "SUCCEEDED"' in text
    assert first_line_at is not None and first_line_at < time.monotonic() - t0 - 1.0  # live, not at the end


def test_worker_killed_mid_task_is_node_lost_then_retried_and_succeeds(stack: Stack) -> None:
    alice = stack.user("alice")
    tid = submit(alice, spec("python3 -m argus.jobs.sleep 6 --lines 6"))
    seen: list[str] = []
    wait_status(alice, tid, "RUNNING", timeout=60, seen=seen)
    wait_until(lambda: b"sleep: 1/6" in alice.get(f"/api/v2/tasks/{tid}/logs").content, 30,
               what="the payload's first line (mid-task)")
    worker = stack.main_worker
    stack.kill_worker(worker)
    # the retry is a new attempt; it may already be SUBMITTED elsewhere if another worker node is alive
    t = wait_status(alice, tid, "QUEUED", timeout=60, seen=seen, until=lambda t: t["attempt"] >= 2)
    first = t["attempts"][0]
    assert first["termination_reason"] == "NODE_LOST" and "retrying as attempt 2" in first["message"]
    # one line: which node, when, Ray's reason (Ray's multi-line actor dump goes to the timeline only)
    assert first["message"].startswith("the driver's node ") and "\n" not in first["message"], first
    print("NODE_LOST message:", first["message"])
    stack.restart_worker(worker)
    t = wait_status(alice, tid, "SUCCEEDED", timeout=120, seen=seen)
    assert [(a["attempt"], a["termination_reason"]) for a in t["attempts"]] == [(1, "NODE_LOST"), (2, "SUCCEEDED")]
    assert alice.get(f"/api/v2/tasks/{tid}/logs", params={"attempt": 1}).status_code == 200
