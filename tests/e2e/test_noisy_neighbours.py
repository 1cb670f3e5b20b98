"""Noisy neighbours (issue 36): a task that forks without end, outgrows its memory or fills its /tmp is
stopped in its own cgroup with its class and a hint; a CPU hog gets its weight, not the node.

Each runs through the API, the queue and the real Ray into the node agent's cgroup for the attempt
(nodes/agent.py, launcher/task_bounds.py). The processes limit and the /tmp size are the cluster's settings
(``task_pids_max``, ``task_tmp_mb``), set low here for the test's tasks only.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.e2e.stack import Stack, spec, submit, wait_status
from tests.e2e.test_jail import _put
from tests.waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.hostile]


@contextmanager
def _settings(stack: Stack, **values: object) -> Iterator[None]:
    """Cluster settings for the tasks submitted inside (their launcher flags are made when they start)."""
    old = {k: getattr(stack.settings, k) for k in values}
    for k, v in values.items():
        setattr(stack.settings, k, v)
    try:
        yield
    finally:
        for k, v in old.items():
            setattr(stack.settings, k, v)


def _run_code(client, name: str, code: str, extra: str = "") -> str:
    """Submit ``code`` as the user's own: a module of theirs that runs at import (how a reward function or a
    dataset script of theirs would run in a task); the task id."""
    _put(client, f"/code/{name}.py", code.encode())
    return submit(client, spec(f"python3 -m argus.jobs.reward_check --reward $HOME/code/{name}.py", name=name) + extra)


def _failed(client, tid: str) -> dict:
    task = wait_status(client, tid, {"FAILED", "SUCCEEDED"}, timeout=240)
    assert task["status"] == "FAILED", task
    return task


def test_a_fork_loop_ends_at_its_process_limit_as_pids_limit(stack: Stack) -> None:
    client = stack.user("noisy")
    with _settings(stack, task_pids_max=200):
        tid = _run_code(client, "forker", "import subprocess\nwhile True:\n    try:\n"
                        "        subprocess.Popen(['sleep', '300'])\n    except OSError:\n        pass\n")
        wait_status(client, tid, {"RUNNING", "FAILED"}, timeout=120)
    task = _failed(client, tid)
    assert task["failure_kind"] == "pids_limit", task
    assert "limit of 200 processes" in task["status_message"] and "task_pids_max" in task["failure_hint"]


def test_a_task_over_its_memory_is_stopped_as_a_host_oom(stack: Stack) -> None:
    client = stack.user("noisy")
    tid = _run_code(client, "hog", "import time\nx = [bytearray(32 << 20) for _ in range(32)]\ntime.sleep(60)\n",
                    "memory_per_node: 256Mi\n")
    task = _failed(client, tid)
    assert task["failure_kind"] == "host_oom", task
    assert "memory limit of 256 MiB" in task["status_message"], task


def test_a_task_that_fills_its_tmp_is_stopped_as_disk_full_and_the_node_disk_is_untouched(stack: Stack) -> None:
    client = stack.user("noisy")
    with _settings(stack, task_tmp_mb=32):
        tid = _run_code(client, "filler", "import time\ntry:\n    with open('/tmp/fill', 'wb') as f:\n"
                        "        for _ in range(200):\n            f.write(bytes(1 << 20))\nexcept OSError as e:\n"
                        "    print('refused:', e, flush=True)\ntime.sleep(120)\n")
        wait_status(client, tid, {"RUNNING", "FAILED"}, timeout=120)
    task = _failed(client, tid)
    assert task["failure_kind"] == "disk_full", task
    assert "/tmp (32 MiB)" in task["status_message"] and "$HOME" in task["failure_hint"]


def test_a_task_gets_the_cpu_weight_of_its_cpus(stack: Stack) -> None:
    client = stack.user("noisy")
    tid = _run_code(client, "weighed", "import re\ntext = open('/proc/self/cgroup').read()\n"
                    "v1 = re.search(r'^\\d+:(?:[^:]*,)?cpu(?:,[^:]*)?:(.*)$', text, re.M)\n"
                    "path = f'/sys/fs/cgroup/cpu{v1.group(1)}/cpu.shares' if v1 else "
                    "f'/sys/fs/cgroup{text.split(\"::\")[-1].strip()}/cpu.weight'\n"
                    "print('weight:', open(path).read().strip(), flush=True)\n"
                    "def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kw):\n"
                    "    return 1.0\n", "cpus_per_node: 2\n")
    task = wait_status(client, tid, {"SUCCEEDED", "FAILED"}, timeout=180)
    assert task["status"] == "SUCCEEDED", task
    log = client.get(f"/api/v2/tasks/{tid}/logs").text
    assert "bounds: memory" in log and "CPU weight of 2 CPUs" in log, log
    assert "weight: 2048" in log or "weight: 200" in log, log  # v1 cpu.shares 1024/CPU, v2 cpu.weight 100/CPU


ESCAPE = '''\
import re, socket
text = open('/proc/self/cgroup').read()
v1 = re.search(r'^\\d+:(?:[^:]*,)?memory(?:,[^:]*)?:(.*)$', text, re.M)
mine = f'/sys/fs/cgroup/memory{v1.group(1)}' if v1 else f'/sys/fs/cgroup{text.split("::")[-1].strip()}'
for label, action in [
    ("raise my memory limit", lambda: open(mine + ('/memory.limit_in_bytes' if v1 else '/memory.max'), 'w').write('-1' if v1 else 'max')),
    ("raise my pids limit", lambda: open(mine.replace('/memory', '/pids') + '/pids.max', 'w').write('max')),
    ("leave my cgroup", lambda: open(('/sys/fs/cgroup/memory' if v1 else '/sys/fs/cgroup') + '/cgroup.procs', 'w').write('0')),
    ("reach the node agent", lambda: socket.socket(socket.AF_UNIX).connect(SOCK_PATH)),
]:
    try:
        action()
        print('escape:', label, '-> DONE', flush=True)
    except OSError as exc:
        print('escape:', label, '-> refused:', type(exc).__name__, flush=True)

def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kw):
    return 1.0
'''


def test_a_task_can_neither_loosen_its_bounds_nor_leave_its_cgroup_nor_reach_the_agent(stack: Stack) -> None:
    client = stack.user("noisy")
    sock = str(stack.settings.state_dir / "agent" / "agent.sock")
    tid = _run_code(client, "escape", ESCAPE.replace("SOCK_PATH", repr(sock)))
    task = wait_status(client, tid, {"SUCCEEDED", "FAILED"}, timeout=180)
    log = client.get(f"/api/v2/tasks/{tid}/logs").text
    lines = [line for line in log.splitlines() if line.startswith("escape:")]
    assert len(lines) == 4, (task, log)
    assert all("-> refused:" in line for line in lines), lines


def _attempt_processes(tid: str, attempt: int = 1) -> dict[int, str]:
    """The processes (pid → name) in the cgroup of the task's attempt (the agent's ``…/<task>.<attempt>/``)."""
    found = {}
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and f"/{tid}.{attempt}/" in (entry / "cgroup").read_text():
                found[int(entry.name)] = (entry / "comm").read_text().strip()
        except OSError:
            continue
    return found


@pytest.mark.parametrize("victim", ["raylet", "gcs_server", "bwrap"])
def test_a_task_whose_private_ray_or_sandbox_dies_ends_at_once_naming_it(stack: Stack, victim: str) -> None:
    """Issue 36: a task's private raylet or GCS, or its sandbox, killed from outside: the task ends within seconds
    as task_runtime with what died, and leaves no process (before: RUNNING 180 s later with 11 processes, or a
    bare "exit code 1")."""
    client = stack.user("noisy")
    tid = submit(client, spec("python3 -m argus.jobs.ray_gpus --gpus 0 --hold 600", name=f"holder-{victim}"))
    wait_status(client, tid, {"RUNNING"}, timeout=300)  # a private Ray's start on a loaded machine takes minutes
    wait_until(lambda: "ray_gpus: holding" in client.get(f"/api/v2/tasks/{tid}/logs").text, 420,
               what="the Ray program")
    pids = sorted(pid for pid, name in _attempt_processes(tid).items() if name == victim)
    assert len(pids) == (2 if victim == "bwrap" else 1), _attempt_processes(tid)  # bwrap: the launcher's child,
    os.kill(pids[0], signal.SIGKILL)  # and the namespace's init below it
    killed = time.monotonic()
    task = _failed(client, tid)
    took = time.monotonic() - killed
    assert task["failure_kind"] == "task_runtime", task
    named = (f"the task's sandbox (bwrap, pid {pids[0]}) was killed by SIGKILL" if victim == "bwrap" else
             f"the task's private Ray died: its {'GCS' if victim == 'gcs_server' else 'raylet'} ({victim}, pid ")
    # how it ended is known when the launcher reaps the daemon itself; reaped first by another parent (measured once
    # in 3 CI runs for the raylet), it can only be said to be gone — what died is named either way
    how = ("SIGKILL",) if victim == "bwrap" else ("was killed by SIGKILL", ") is gone")
    assert named in task["status_message"] and any(h in task["status_message"] for h in how), task
    assert took < 60, f"ended {took:.0f} s after its {victim} died"
    wait_until(lambda: not _attempt_processes(tid), 60, what="no process of the attempt left")
    left = [p for box in stack.settings.state_dir.rglob("sandboxes") for p in box.glob(f"{tid}-*")]
    assert left == [], left
    print(f"{victim} killed: the task ended in {took:.1f} s")
