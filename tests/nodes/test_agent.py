"""The node agent as a real process: it starts attempts in their own cgroup, outlives its keeper while they
run, hands them over to its successor (same PIDs), and leaves nothing of an attempt behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from argus.nodes import agent_client, cgroups
from argus.nodes.paths import AgentPaths
from tests.waiting import wait_until

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or cgroups.detect() is None, reason="needs root and cgroups")


def _keeper() -> subprocess.Popen[bytes]:
    return subprocess.Popen(["sleep", "600"])


def _start(sock: Path, key: str, script: str) -> dict:
    return agent_client.request(sock, "start", key=key, argv=[sys.executable, "-c", script], env=dict(os.environ),
                                cwd="/")


def test_an_attempt_runs_in_its_cgroup_and_its_group_is_emptied_at_its_end(tmp_path: Path) -> None:
    keeper = _keeper()
    sock = agent_client.ensure_running(tmp_path, keeper=keeper.pid)
    try:
        # the launcher leaves a daemonised grandchild behind, as a private Ray's raylet would
        started = _start(sock, "t1.1", "import subprocess, os\n"
                         "subprocess.Popen(['sleep', '300'], start_new_session=True)\nprint('bye')")
        assert started["new"] and started["cgroup"].endswith("/t1.1")
        again = _start(sock, "t1.1", "print('a second start of one attempt starts nothing')")
        assert not again["new"] and again["pid"] == started["pid"]
        done = agent_client.request(sock, "wait", key="t1.1", wait_s=30, timeout_s=60)
        assert done["exit_code"] == 0 and done["emptied"] is True, done
        assert not any(p.info["cmdline"] == ["sleep", "300"] and p.info["ppid"] in (1, os.getpid())
                       for p in psutil.process_iter(["cmdline", "ppid"])
                       if p.info["cmdline"] == ["sleep", "300"] and _group_of(p.pid).endswith("t1.1/launcher"))
        layout = cgroups.detect()
        assert layout is not None
        assert not cgroups.Group(layout, started["cgroup"]).exists()
        assert (AgentPaths(tmp_path).out_file("t1.1")).read_text().strip() == "bye"
    finally:
        keeper.kill()
        agent_client.release(tmp_path, stop_tasks=True)


def test_stop_ends_the_attempt_and_everything_it_started(tmp_path: Path) -> None:
    keeper = _keeper()
    sock = agent_client.ensure_running(tmp_path, keeper=keeper.pid)
    try:
        started = _start(sock, "t2.1", "import subprocess, time\n"
                         "subprocess.Popen(['sleep', '301'], start_new_session=True)\ntime.sleep(300)")
        layout = cgroups.detect()
        assert layout is not None
        group = cgroups.Group(layout, started["cgroup"])
        wait_until(lambda: len(group.pids()) >= 2, 30, what="launcher and grandchild in the group")
        t0 = time.monotonic()
        done = agent_client.request(sock, "stop", key="t2.1", grace_s=5, timeout_s=60)
        assert time.monotonic() - t0 < 8
        assert done["running"] is False and done["exit_code"] == 128 + signal.SIGTERM and done["emptied"], done
        assert not group.exists()
    finally:
        keeper.kill()
        agent_client.release(tmp_path, stop_tasks=True)


def test_the_agent_outlives_its_keeper_while_an_attempt_runs_then_exits(tmp_path: Path) -> None:
    keeper = _keeper()
    sock = agent_client.ensure_running(tmp_path, keeper=keeper.pid)
    agent_pid = agent_client.request(sock, "list")["pid"]
    started = _start(sock, "t3.1", "import time; time.sleep(4)")
    keeper.kill()
    keeper.wait()
    time.sleep(1.5)
    assert psutil.pid_exists(agent_pid) and psutil.pid_exists(started["pid"])
    wait_until(lambda: not psutil.pid_exists(agent_pid), 30, what="the agent exits once idle and unkept")
    layout = cgroups.detect()
    assert layout is not None and not cgroups.Group(layout, AgentPaths(tmp_path).cgroup_base).exists()
    record = json.loads(AgentPaths(tmp_path).attempt_file("t3.1").read_text())
    assert record["exit_code"] == 0 and record["finished_at"]


def _gone(pid: int) -> bool:
    """Exited or a zombie (checked in one step: a pid can vanish between two looks)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_a_new_agent_takes_up_the_attempts_of_one_that_died(tmp_path: Path) -> None:
    keeper = _keeper()
    sock = agent_client.ensure_running(tmp_path, keeper=keeper.pid)
    try:
        first = agent_client.request(sock, "list")["pid"]
        exit_file = AgentPaths(tmp_path).exit_file("t4.1")
        go = tmp_path / "go"  # the attempt ends when told: a loaded machine may start the next agent slowly
        started = _start(sock, "t4.1", f"import time, os\nwhile not os.path.exists({str(go)!r}): time.sleep(0.05)\n"
                                       f"open({str(exit_file)!r}, 'w').write('7')")
        os.kill(first, signal.SIGKILL)
        wait_until(lambda: _gone(first), 10, what="the first agent gone")
        assert psutil.pid_exists(started["pid"]), "the attempt outlives its agent"
        sock = agent_client.ensure_running(tmp_path, keeper=keeper.pid)
        attempts = {a["key"]: a for a in agent_client.request(sock, "list")["attempts"]}
        assert attempts["t4.1"]["pid"] == started["pid"] and attempts["t4.1"]["running"]
        go.touch()
        done = agent_client.request(sock, "wait", key="t4.1", wait_s=30, timeout_s=60)
        assert done["exit_code"] == 7 and not done["running"], done
    finally:
        keeper.kill()
        agent_client.release(tmp_path, stop_tasks=True)


def test_a_bad_key_is_refused(tmp_path: Path) -> None:
    keeper = _keeper()
    sock = agent_client.ensure_running(tmp_path, keeper=keeper.pid)
    try:
        with pytest.raises(agent_client.AgentError, match="bad attempt key"):
            _start(sock, "../../etc", "print(1)")
    finally:
        keeper.kill()
        agent_client.release(tmp_path, stop_tasks=True)


def _group_of(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cgroup").read_text()
    except OSError:
        return ""


def test_release_stops_every_attempt_or_leaves_them_training(tmp_path: Path) -> None:
    keeper = _keeper()
    sock = agent_client.ensure_running(tmp_path, keeper=keeper.pid)
    try:
        a = _start(sock, "t5.1", "import time; time.sleep(300)")
        b = _start(sock, "t6.1", "import time; time.sleep(300)")
        # keep_training_on_stop: the keeper goes, the attempts train on under the agent
        assert agent_client.release(tmp_path, stop_tasks=False) == {"stopped": 0, "running": 2}
        keeper.kill()
        time.sleep(2)
        assert psutil.pid_exists(a["pid"]) and psutil.pid_exists(b["pid"])
        # the next start says hello, then stops gracefully: both stopped, confirmed, and the agent goes
        keeper2 = _keeper()
        agent_client.ensure_running(tmp_path, keeper=keeper2.pid)
        assert agent_client.release(tmp_path, stop_tasks=True) == {"stopped": 2, "running": 0}
        keeper2.kill()
        for key in ("t5.1", "t6.1"):
            record = json.loads(AgentPaths(tmp_path).attempt_file(key).read_text())
            assert record["exit_code"] == 128 + signal.SIGTERM and record["emptied"], record
        wait_until(lambda: not agent_client.answers(sock), 30, what="the released agent exits")
    finally:
        keeper.kill()
        agent_client.release(tmp_path, stop_tasks=True)
