"""Training outlives the platform (issue 36): a real verl trainer, the platform killed under it, one attempt.

`argus up` runs a real SFT (verl's trainer under torchrun, CPU) in the CPU training environment. Once it has
logged a step, `argus up` and **every process of its Ray** (head, raylet, dashboard, job supervisor, the Ray
job's entry point) are killed with SIGKILL — the worst case of a head restart. The node agent owns the
attempt's processes (nodes/agent.py), so:

* while nothing of the platform runs, the trainer's steps keep coming in its log (read from disk);
* a new `argus up` on the same state dir starts a fresh Ray (nothing to adopt), reattaches through the
  attempt's record, and the task ends SUCCEEDED with **one** attempt, its launcher the same PID throughout;
* its log has every step once, in order: no gap and no step done twice.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import psutil
import pytest

from tests.e2e.stack import submit, wait_status
from tests.e2e.test_two_up import processes_of
from tests.e2e.test_up_restart import _token, up, wait_healthy
from tests.envs_fixtures import install_env
from tests.helpers import free_port
from tests.waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1500)]
REPO = Path(__file__).resolve().parents[2]
ENV = "verl-0.9.1-vllm-cpu"
STEPS = 40
STEP_RE = re.compile(rb"step:(\d+) - (?!val/)")  # a training step; the final validation repeats the last


def _sft_spec() -> str:
    spec = (REPO / "examples" / "sft-cpu.yaml").read_text()
    return spec.replace("total_training_steps: 4", f"total_training_steps: {STEPS}").replace(
        "save_freq: 4", f"save_freq: {STEPS}").replace("train_batch_size: 8", "train_batch_size: 2") \
        + "cpus_per_node: 1\n"


def _steps(log: Path) -> list[int]:
    try:
        return [int(m.group(1)) for m in STEP_RE.finditer(log.read_bytes())]
    except OSError:
        return []


def _kill_platform(state: Path, up_pid: int, keep: set[int]) -> int:
    """SIGKILL `argus up` and every process of its Ray (not the agent's: ``keep``); how many were killed."""
    record = json.loads((state / "embedded-ray.json").read_text())
    sessions = {n["pid"] for n in record["nodes"]}
    victims = [up_pid]
    for p in psutil.process_iter():
        try:
            if p.pid in keep:
                continue
            if os.getsid(p.pid) in sessions or p.pid in sessions:
                victims.append(p.pid)
        except (psutil.Error, ProcessLookupError):
            continue
    for pid in victims:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return len(victims)


def test_a_real_trainer_keeps_training_through_a_killed_platform_in_one_attempt(tmp_path: Path) -> None:
    state, port = tmp_path / "state", free_port()
    first = up(state, port, "out1.log")
    second = None
    try:
        token = _token(state, first, port)
        client = httpx.Client(base_url=f"http://127.0.0.1:{port}", headers={"Authorization": f"Bearer {token}"},
                              timeout=30)
        root = state / "private"
        install_env(root, ENV)
        me = client.get("/api/v2/me").json()["name"]
        home = root / "users" / me
        tiny = tmp_path / "tiny"
        subprocess.run([sys.executable, str(REPO / "scripts" / "smoke_tiny.py"), str(tiny)], check=True,
                       capture_output=True, timeout=600)
        shutil.copytree(tiny / "model", home / "models" / "tiny")
        shutil.copytree(tiny / "sft", home / "datasets" / "sft")
        tid = submit(client, _sft_spec())
        log = home / "jobs" / tid / "logs" / "attempt-1.log"
        wait_until(lambda: len(_steps(log)) >= 2, 900, every=1,
                   what=lambda: f"two SFT steps in {log}: {log.read_text()[-3000:] if log.exists() else 'no log'}")
        driver_pid = json.loads((home / "jobs" / tid / "status.json").read_text())["driver_pid"]
        agent_pid = int((state / "agent" / "agent.pid").read_text())
        training = {driver_pid, agent_pid, *(c.pid for c in psutil.Process(driver_pid).children(recursive=True))}

        killed = _kill_platform(state, first.pid, keep=training)
        first.wait(10)
        before = _steps(log)
        outage_start = time.monotonic()
        assert psutil.pid_exists(driver_pid), "the launcher outlives the platform"
        # with no server and no Ray, the trainer goes on: steps keep coming in its log
        wait_until(lambda: len(_steps(log)) > len(before) + 1, 300, every=0.5,
                   what=lambda: f"steps past {before[-1]} with the platform down")
        during = len(_steps(log)) - len(before)

        second = up(state, port, "out2.log")
        wait_healthy(second, port, state / "out2.log")
        outage_s = time.monotonic() - outage_start
        assert "embedded Ray: adopted" not in (state / "out2.log").read_text()  # a fresh Ray: the old one is gone
        task = wait_status(client, tid, "SUCCEEDED", timeout=900)
        assert len(task["attempts"]) == 1, task["attempts"]
        status = json.loads((home / "jobs" / tid / "status.json").read_text())
        assert status["driver_pid"] == driver_pid and status["exit_code"] == 0
        steps = _steps(log)
        assert steps == list(range(1, STEPS + 1)), steps  # every step once, in order: no gap, none redone
        events = [f"{e['to_status']}: {e['message']}" for e in client.get(f"/api/v2/tasks/{tid}/events").json()]
        assert any("followed through its attempt record" in e for e in events), events  # the recovery's source
        print(f"\ncontinuity: killed {killed} platform processes at step {before[-1]}; {during}+ steps while "
              f"nothing of the platform ran; platform back after {outage_s:.1f} s; events {events}")
    finally:
        for proc in (second, first):
            if proc is not None and proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in (second, first):
            if proc is not None:
                proc.wait(120)
    wait_until(lambda: not processes_of(state), 60, every=0.5,
               what=lambda: f"no process of the state dir left; {processes_of(state)}")
