"""issue 36: the node agent asks the driver whether an ended attempt's GPUs are free — here a fake ``nvidia-smi``
on PATH that prints what the real one prints (``--format=csv,noheader,nounits``): nothing, a process that goes
away after two polls, a process that stays; a pid of the attempt is killed; a GPU left busy is held back and
released by a later look; a node without nvidia-smi is not checked and nothing fails."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from argus.core.gpu_free import HeldGpu
from argus.launcher import attempt_record
from argus.nodes import agent_client, cgroups, gpu_check
from argus.nodes.agent import NODE_ID_ENV
from argus.nodes.paths import AgentPaths
from tests.waiting import wait_until

U0, U1 = "GPU-5d7f3a1e-0000-1111-2222-333344445555", "GPU-9a8b7c6d-aaaa-bbbb-cccc-ddddeeeeffff"
FAST = (0.01,) * 5
needs_cgroups = pytest.mark.skipif(os.geteuid() != 0 or cgroups.detect() is None, reason="needs root and cgroups")

FAKE = '''#!{python}
"""A fake nvidia-smi: two GPUs, and the compute processes of {scenario} (each listed while its pid lives, and for
its first `polls` compute-app queries when it has that many)."""
import json, os, sys
scenario = json.load(open({scenario!r}))
query = sys.argv[1]
if query == "--query-gpu=index,uuid":
    print("0, {u0}")
    print("1, {u1}")
    sys.exit(0)
if query != "--query-compute-apps=pid,gpu_uuid,used_memory" or sys.argv[2:] != ["--format=csv,noheader,nounits"]:
    print("Invalid combination of input arguments.", file=sys.stderr)
    sys.exit(2)
count_file = {scenario!r} + ".polls"
polls = int(open(count_file).read()) if os.path.exists(count_file) else 0
open(count_file, "w").write(str(polls + 1))
def alive(pid):
    try:
        return open(f"/proc/{{pid}}/stat").read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
for app in scenario["apps"]:
    if app.get("polls") is not None and polls >= app["polls"]:
        continue
    if app.get("while_alive") and not alive(app["pid"]):
        continue
    print(f"{{app['pid']}}, {{app['uuid']}}, {{app['mib']}}")
'''


def fake_smi(folder: Path, apps: list[dict]) -> Path:
    """``folder/bin/nvidia-smi`` answering from ``folder/scenario.json`` (rewritten by :func:`scenario`)."""
    scenario_file = folder / "scenario.json"
    folder.mkdir(parents=True, exist_ok=True)
    scenario(scenario_file, apps)
    bin_dir = folder / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    smi = bin_dir / "nvidia-smi"
    smi.write_text(FAKE.format(python=sys.executable, scenario=str(scenario_file), u0=U0, u1=U1))
    smi.chmod(0o755)
    return smi


def scenario(path: Path, apps: list[dict]) -> None:
    path.write_text(json.dumps({"apps": apps}))
    Path(f"{path}.polls").unlink(missing_ok=True)


def polls(folder: Path) -> int:
    return int((folder / "scenario.json.polls").read_text())


def never(_pid: int) -> bool:
    return False


# ------------------------------------------------------------------ the check itself


def test_nothing_on_the_gpus_is_free_at_the_first_poll(tmp_path: Path) -> None:
    smi = gpu_check.Smi(str(fake_smi(tmp_path, [{"pid": 4242, "uuid": U0, "mib": 100}])))  # another GPU's process
    out = gpu_check.check("1", smi, never, waits=FAST)
    assert out.gpus_free is True and out.polls == 1 and [g.uuid for g in out.gpus] == [U1]


def test_a_process_the_driver_releases_after_two_polls_is_waited_for(tmp_path: Path) -> None:
    smi = gpu_check.Smi(str(fake_smi(tmp_path, [{"pid": 4242, "uuid": U1, "mib": 2048, "polls": 2}])))
    out = gpu_check.check(U1, smi, never, waits=FAST)
    assert out.gpus_free is True and out.polls == 3 and out.killed == ()


def test_a_process_that_stays_is_reported_after_the_bounded_wait(tmp_path: Path) -> None:
    smi = gpu_check.Smi(str(fake_smi(tmp_path, [{"pid": 4242, "uuid": U1, "mib": 2048}])))
    out = gpu_check.check("0,1", smi, never, waits=FAST)
    assert out.gpus_free is False and out.polls == 6 and out.killed == ()
    assert [(b.index, b.uuid, b.pid, b.used_mib) for b in out.busy] == [(1, U1, 4242, 2048)]
    held = gpu_check.held_gpus(out, "grpo-7.2", "node-a", "gpu-host", "now")
    assert held == [HeldGpu("node-a", U1, 1, "gpu-host", "grpo-7", 2, (4242,), 2048, "now")]
    assert held[0].event().startswith(f"GPU 1 ({U1}) on gpu-host still has pid 4242 using 2 GiB after the task "
                                      "ended; held back")


def test_no_nvidia_smi_no_gpu_or_a_failing_one_is_not_checked(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no nvidia-smi here
    assert gpu_check.check("0", gpu_check.Smi(), never).note == "no nvidia-smi on this node"
    assert gpu_check.check("", gpu_check.Smi(), never).gpus_free is None
    broken = tmp_path / "nvidia-smi"
    broken.write_text("#!/bin/sh\necho 'NVIDIA-SMI has failed because it could not communicate with the NVIDIA "
                      "driver.' >&2\nexit 9\n")
    broken.chmod(0o755)
    out = gpu_check.check("0", gpu_check.Smi(str(broken)), never)
    assert out.gpus_free is None and "exited 9: NVIDIA-SMI has failed" in (out.note or "")


@needs_cgroups
def test_a_pid_of_the_attempts_cgroup_still_on_a_gpu_is_killed_then_the_gpu_is_free(tmp_path: Path) -> None:
    layout = cgroups.detect()
    assert layout is not None
    group = cgroups.Group(layout, f"argus-test-gpu-{os.getpid()}")
    group.create()
    try:
        proc = subprocess.Popen(["sleep", "300"], preexec_fn=group.join)
        assert proc.pid in group.pids()
        smi = gpu_check.Smi(str(fake_smi(tmp_path, [{"pid": proc.pid, "uuid": U1, "mib": 4096, "while_alive": True}])))
        out = gpu_check.check("1", smi, gpu_check.attempt_member(group.pids, 0, 0.0), waits=FAST)
        assert out.gpus_free is True and out.killed == (proc.pid,) and out.polls == 7, out
        assert proc.wait(timeout=10) == -9
    finally:
        group.kill()
        group.remove()


# ------------------------------------------------------------------ through the agent (a real process)


def _start(sock: Path, key: str, script: str, env: dict[str, str]) -> dict:
    return agent_client.request(sock, "start", key=key, argv=[sys.executable, "-c", script],
                                env={**os.environ, **env}, cwd="/")


def _node_env(tmp_path: Path, gpus: str) -> dict[str, str]:
    config = tmp_path / "node.json"
    config.write_text(json.dumps({"data_root": str(tmp_path / "root")}))
    return {"CUDA_VISIBLE_DEVICES": gpus, gpu_check.CONFIG_ENV: str(config), NODE_ID_ENV: "node-a"}


ESCAPER = """
import json, os, time
for procs in {roots!r}:  # out of the attempt's cgroup (root may), still in the launcher's session
    open(procs, "w").write(str(os.getpid()))
json.dump({{"apps": [{{"pid": os.getpid(), "uuid": {uuid!r}, "mib": 2048, "while_alive": True}}]}}, open({scenario!r}, "w"))
open({pid_file!r} + ".tmp", "w").write(str(os.getpid()))
os.rename({pid_file!r} + ".tmp", {pid_file!r})
time.sleep(300)
"""


@needs_cgroups
def test_the_agent_kills_a_process_of_the_attempt_left_on_its_gpu_and_records_the_gpus_free(tmp_path, monkeypatch):
    """A process of the attempt that left its cgroup (it is root: it can) survives the group's kill; it is still in
    the launcher's session, so the GPU check kills it, and the attempt ends with ``gpus_free: true``."""
    layout = cgroups.detect()
    assert layout is not None
    roots = [str(f / "cgroup.procs") for f in layout.folders("")]
    pid_file = tmp_path / "escaped.pid"
    fake = fake_smi(tmp_path / "smi", [])
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    keeper = subprocess.Popen(["sleep", "600"])
    sock = agent_client.ensure_running(tmp_path / "state", keeper=keeper.pid)
    try:
        escaper = ESCAPER.format(roots=roots, pid_file=str(pid_file), scenario=str(fake.parent.parent / "scenario.json"),
                                 uuid=U1)
        script = (f"import subprocess, sys, os, time\nsubprocess.Popen([sys.executable, '-c', {escaper!r}])\n"
                  f"while not os.path.exists({str(pid_file)!r}): time.sleep(0.05)\n")
        _start(sock, "gk.1", script, _node_env(tmp_path, "1"))
        done = agent_client.request(sock, "wait", key="gk.1", wait_s=60, timeout_s=90)
        escaped = int(pid_file.read_text())
        assert done["exit_code"] == 0 and done["emptied"] is True, done
        assert done["gpus_free"] is True and done["gpu_check"]["killed"] == [escaped], done
        wait_until(lambda: not _alive(escaped), 10, what="the escaped process killed")
        record = json.loads(attempt_record.gpu_check_path(tmp_path / "root", "gk.1").read_text())
        assert record["gpus_free"] is True and record["node_id"] == "node-a" and record["killed"] == [escaped]
        assert attempt_record.read_held(tmp_path / "root") == []
    finally:
        keeper.kill()
        agent_client.release(tmp_path / "state", stop_tasks=True)


@needs_cgroups
def test_the_agent_holds_back_a_gpu_a_stranger_keeps_and_releases_it_at_the_next_start(tmp_path, monkeypatch):
    stranger = subprocess.Popen(["sleep", "600"])  # not the attempt's: not in its group, not in its session
    fake = fake_smi(tmp_path / "smi", [{"pid": stranger.pid, "uuid": U1, "mib": 2048, "while_alive": True}])
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    keeper = subprocess.Popen(["sleep", "600"])
    state = tmp_path / "state"
    sock = agent_client.ensure_running(state, keeper=keeper.pid)
    root = tmp_path / "root"
    try:
        _start(sock, "gh.1", "print('done')", _node_env(tmp_path, "1"))
        done = agent_client.request(sock, "wait", key="gh.1", wait_s=60, timeout_s=90)
        assert done["gpus_free"] is False and done["gpu_check"]["killed"] == [], done
        assert done["gpu_check"]["busy"] == [{"index": 1, "uuid": U1, "pid": stranger.pid, "used_mib": 2048}]
        assert stranger.poll() is None, "a process that is not the attempt's is never killed"
        held = [HeldGpu.parse(d) for d in attempt_record.read_held(root)]
        assert held == [HeldGpu("node-a", U1, 1, held[0].hostname, "gh", 1, (stranger.pid,), 2048, held[0].since)]
        assert json.loads(attempt_record.gpu_check_path(root, "gh.1").read_text())["gpus_free"] is False
        stranger.kill()
        stranger.wait()
        _start(sock, "gh.2", "print('next')", _node_env(tmp_path, ""))  # a start looks at held GPUs again first
        assert attempt_record.read_held(root) == []
        later = agent_client.request(sock, "wait", key="gh.2", wait_s=60, timeout_s=90)
        assert later["gpus_free"] is None and not attempt_record.gpu_check_path(root, "gh.2").exists()  # no GPU
        assert json.loads((AgentPaths(state).dir / "gpus-held.json").read_text()) == []
    finally:
        stranger.kill()
        keeper.kill()
        agent_client.release(state, stop_tasks=True)


@needs_cgroups
def test_a_node_without_nvidia_smi_is_not_checked_and_says_so_once(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no nvidia-smi there on this machine
    if any(Path(d, "nvidia-smi").exists() for d in ("/usr/bin", "/bin")):
        pytest.skip("this machine has an nvidia-smi")
    keeper = subprocess.Popen(["sleep", "600"])
    state = tmp_path / "state"
    sock = agent_client.ensure_running(state, keeper=keeper.pid)
    try:
        for key in ("gn.1", "gn.2"):
            _start(sock, key, "print('ok')", _node_env(tmp_path, "0"))
            done = agent_client.request(sock, "wait", key=key, wait_s=60, timeout_s=90)
            assert done["exit_code"] == 0 and done["gpus_free"] is None, done
            assert done["gpu_check"]["note"] == "no nvidia-smi on this node"
        record = json.loads(attempt_record.gpu_check_path(tmp_path / "root", "gn.1").read_text())
        assert record["gpus_free"] is None
    finally:
        keeper.kill()
        agent_client.release(state, stop_tasks=True)
    logged = AgentPaths(state).log_file.read_text()
    assert logged.count("not checked here: no nvidia-smi on this node") == 1


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
