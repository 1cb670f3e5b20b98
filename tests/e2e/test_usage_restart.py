"""Accounting on a real Ray: a CPU job that ends while `argus server` is SIGKILLed is billed to its real end.

The server is killed while the task runs; the job ends in Ray; the server comes back several
seconds later. The attempt must be closed with the end time Ray reports (not the restart's time),
its CPU-seconds must match, and `GET /api/v2/usage` must show them to the owner.
"""

from __future__ import annotations

import signal
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import select

from argus.db.models import TaskAttemptModel
from argus.db.session import Database
from tests.e2e.stack import Stack, spec, submit, wait_status
from tests.e2e.test_server_restart import TOKEN, start_server
from tests.helpers import free_port, new_user_client
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e


def test_usage_of_a_job_that_ended_while_the_server_was_down(stack: Stack, tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = start_server(state, port, stack)
    try:
        uma = new_user_client(url, TOKEN, "uma")
        # its own workload name: its own id sequence, never the session server's submission ids
        tid = submit(uma, spec("python3 -m argus.jobs.sleep 3", workload="ppo"))
        wait_status(uma, tid, "RUNNING", timeout=60)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        sid = f"{tid}-a1"
        seen = {}

        def ended_in_ray():  # the job ends in Ray while no server watches
            seen["job"] = job = next(j for j in stack.ray_jobs() if j.submission_id == sid)
            return job if job.end_time else None

        job = wait_until(ended_in_ray, 60, every=0.2, what=lambda: f"{sid} to end in Ray; {seen.get('job')}")
        # the server comes back well after the end: time passing is the input here, not a wait (billed to
        # the restart instead of Ray's end, the attempt would run seconds longer than the job did)
        time.sleep(4)
        proc = start_server(state, port, stack)
        wait_status(uma, tid, "SUCCEEDED", timeout=60)
        db = Database(f"sqlite:///{state / 'argus.db'}")
        with db.session() as s:
            a = s.scalars(select(TaskAttemptModel).where(TaskAttemptModel.submission_id == sid)).one()
        db.dispose()
        ray_end = datetime.fromtimestamp(job.end_time / 1000, UTC)
        assert a.finished_at == ray_end  # Ray's end time, not the restart's
        assert a.resource_kind == "cpu"
        ran = (a.finished_at - a.started_at).total_seconds()
        assert 2.5 < ran < 8 and a.resource_seconds == pytest.approx(ran)  # 1 node × 1 CPU × its running time
        usage = uma.get("/api/v2/usage", params={"group_by": "workload"}).json()
        assert [(r["key"], r["cpu_seconds"]) for r in usage["rows"]] == [("ppo", pytest.approx(ran, abs=0.01))]
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
