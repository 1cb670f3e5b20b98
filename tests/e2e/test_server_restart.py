"""`argus server` SIGKILLed right after a submission and restarted: exactly one Ray job per attempt."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from argus.db.models import TaskModel
from argus.db.session import Database
from tests.e2e.stack import Stack, spec, submit, wait_status
from tests.helpers import free_port, new_user_client
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e
TOKEN = "e2e-admin-token-0123456789abcdef"


def start_server(state: Path, port: int, stack: Stack) -> subprocess.Popen[bytes]:
    env = {**os.environ, "ARGUS_ADMIN_TOKEN": TOKEN, "ARGUS_SFTP_ENABLED": "false",
           "ARGUS_VERL_VALIDATION": "off", "ARGUS_SCHEDULER_TICK_S": "0.5",
           "ARGUS_RAY_DASHBOARD_URL": stack.dashboard_url,
           # the data root the cluster's nodes show in sandboxes, and whose .argus holds the Ray token
           "ARGUS_DATA_ROOT": str(stack.settings.root)}
    proc = subprocess.Popen([sys.executable, "-m", "argus.cli.main", "server", "--state-dir", str(state),
                             "--port", str(port), "--ray-address", stack.gcs_address],
                            env=env, stdout=subprocess.DEVNULL, stderr=open(state / "server.log", "ab"))  # noqa: SIM115

    def healthy() -> bool:
        assert proc.poll() is None, (state / "server.log").read_text()[-3000:]
        return httpx.get(f"http://127.0.0.1:{port}/api/v2/health", timeout=1).status_code == 200

    wait_until(healthy, 60, ignore=(httpx.TransportError,), what="server did not become healthy")
    return proc


def test_sigkill_after_submission_then_restart_runs_the_attempt_once(stack: Stack, tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = start_server(state, port, stack)
    try:
        erin = new_user_client(url, TOKEN, "erin")
        # another workload than the session server's tasks: its own id sequence, so the two databases
        # sharing this Ray cluster never derive the same submission id
        tid = submit(erin, spec("python3 -m argus.jobs.sleep 6 --lines 6", workload="sft"))
        db = Database(f"sqlite:///{state / 'argus.db'}")
        # the id is stored just before Ray is called: kill right there
        wait_until(lambda: _stored(db, tid), 30, every=0.005, what=f"{tid}'s submission id stored")
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        proc = start_server(state, port, stack)
        t = wait_status(erin, tid, "RUNNING", timeout=60)
        ours = [j for j in stack.ray_jobs() if (j.submission_id or "").startswith(f"{tid}-")]
        assert [j.submission_id for j in ours] == [f"{tid}-a1"], ours
        assert len(t["attempts"]) == 1
        t = wait_status(erin, tid, "SUCCEEDED", timeout=60)
        assert [a["submission_id"] for a in t["attempts"]] == [f"{tid}-a1"]
        db.dispose()
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()


def _stored(db: Database, tid: str) -> Any:
    with db.session() as s:
        t = s.get(TaskModel, tid)
        return t is not None and t.submission_id is not None
