"""A task's bounds as the launcher applies them: a real driver, a real cgroup, the kernel's own counters.

Each limit hit ends the task promptly, says so in its log and writes ``limit_hit`` to ``status.json`` (the
monitor's failure kind); the launcher itself is outside the limited group and writes its last words.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from argus.core.launch import AttemptStatus, Limits, default_memory
from argus.nodes import cgroups
from argus.scheduler.monitor import Outcome, limit_hit

DRIVER = [sys.executable, "-m", "argus.launcher.driver"]
needs_cgroups = pytest.mark.skipif(os.geteuid() != 0 or cgroups.detect() is None, reason="needs root and cgroups")


def _run(job: Path, *flags: str, script: str) -> tuple[int, str, dict, float]:
    t0 = time.monotonic()
    done = subprocess.run([*DRIVER, "--job-dir", str(job), "--attempt", "1", *flags, "--", sys.executable, "-c",
                           script], capture_output=True, text=True, timeout=120)
    status = json.loads((job / "status.json").read_text())
    return done.returncode, done.stdout, status, time.monotonic() - t0


@needs_cgroups
def test_a_fork_loop_is_stopped_at_its_process_limit(tmp_path: Path) -> None:
    code, out, status, took = _run(
        tmp_path / "users" / "a" / "jobs" / "t-1", "--pids-max", "40",
        script="import os, time\nwhile True:\n    try:\n        os.fork() or time.sleep(60)\n"
               "    except OSError:\n        time.sleep(0.01)\n")
    assert code != 0 and took < 60, out
    assert status["limit_hit"]["kind"] == "pids" and status["limit_hit"]["limit"] == 40, status
    assert "limit of 40 processes and threads (pids.max)" in out and "stopping the task" in out


@needs_cgroups
def test_a_task_over_its_memory_is_stopped_and_the_launcher_survives_to_say_so(tmp_path: Path) -> None:
    code, out, status, _ = _run(
        tmp_path / "users" / "a" / "jobs" / "t-2", "--memory", str(96 << 20),
        script="import time\nx = [bytearray(16 << 20) for _ in range(20)]\ntime.sleep(60)\n")
    assert code != 0, out
    assert status["limit_hit"]["kind"] == "memory" and status["oom_kills"] >= 1, status
    assert "outgrew its memory limit of 96 MiB" in out
    assert status["finished_at"]  # the launcher, outside the limit, wrote the end


@needs_cgroups
def test_the_tasks_group_is_gone_after_it_ends(tmp_path: Path) -> None:
    job = tmp_path / "users" / "a" / "jobs" / "t-3"
    code, out, _, _ = _run(job, script="import subprocess\nsubprocess.Popen(['sleep', '300'], start_new_session=True)")
    assert code == 0, out
    layout = cgroups.detect()
    assert layout is not None
    group = cgroups.Group(layout, f"{cgroups.own_path(layout)}/argus-t-3-a1")
    assert not group.exists(), "the group (and the daemonised sleep in it) is gone"


def test_without_memory_per_node_a_task_gets_its_share_of_the_node() -> None:
    gib = 1 << 30
    assert default_memory(64 * gib, cpus=8, node_cpus=64, gpus=0, node_gpus=0) == int(64 * gib * 0.9 / 8)
    # a GPU task's share follows its GPUs when that is the larger
    assert default_memory(64 * gib, cpus=8, node_cpus=64, gpus=4, node_gpus=8) == int(64 * gib * 0.9 / 2)
    assert default_memory(64 * gib, cpus=0, node_cpus=0, gpus=0, node_gpus=0) == int(64 * gib * 0.9)
    assert Limits.from_dict({**Limits(pids_max=5).as_dict(), "unknown": 1}) == Limits(pids_max=5)


@pytest.mark.parametrize(("kind", "failure"), [("pids", "pids_limit"), ("disk", "disk_full"), ("memory", "host_oom")])
def test_a_limit_hit_is_the_failures_kind_with_its_hint(kind: str, failure: str) -> None:
    status = AttemptStatus.parse({"attempt": 1, "hostname": "gpu-3",
                                  "limit_hit": {"kind": kind, "limit": 1, "message": f"hit {kind}"}}, 1)
    assert status is not None and status.limit_hit is not None
    out = limit_hit(Outcome(None, None, exit_code=143), status, status.limit_hit)
    assert out.failure_kind == failure and out.message == f"exit code 143: hit {kind}"
    assert out.failure_hint is not None and out.failure_hint.startswith("on gpu-3: ")
