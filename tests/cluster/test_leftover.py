"""The Ray an earlier `argus up` left: a record that is stale, names a reused pid, or is not ours; the state lock."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from argus.nodes import leftover
from argus.nodes.local import LocalCluster
from argus.settings import Settings
from argus.state_lock import StateDirBusy, StateLock
from tests.helpers import free_port
from tests.waiting import wait_until


def settings(state: Path, **fields: object) -> Settings:
    return Settings(state_dir=state, task_jail="off", sftp_enabled=False, verl_validation="off", worker_gpus=0,
                    **fields)


def spawn(*argv: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(list(argv), start_new_session=True)


def node_of(proc: subprocess.Popen[bytes], name: str = "head") -> leftover.NodeRecord:
    p = psutil.Process(proc.pid)
    return leftover.NodeRecord(name, proc.pid, p.create_time(), p.cmdline(), cmdline=p.cmdline())


def record_with(state: Path, nodes: list[leftover.NodeRecord], **fields: object) -> leftover.RayRecord:
    base: dict[str, object] = dict(owner_pid=999999, state_dir=str(state), mode="embedded", host="127.0.0.1",
                                   ports={}, temp_dir="", session_dir=None, jail_digest="", jail_env={},
                                   worker_gpus=0, ray_version="0")
    base.update(fields)
    return leftover.RayRecord(**base, nodes=nodes)  # type: ignore[arg-type]


def test_a_reused_pid_is_never_taken_for_the_recorded_process_nor_signalled(tmp_path: Path) -> None:
    other = spawn("sleep", "60")
    try:
        real = node_of(other)
        assert leftover.process_of(real) is not None
        reused = leftover.NodeRecord("head", other.pid, real.created - 5, real.argv)  # same pid, other start
        also = leftover.NodeRecord("head", other.pid, real.created, ["ray", "start", "--head"],
                                   cmdline=["ray", "start", "--head"])  # another command
        assert leftover.process_of(reused) is None and leftover.process_of(also) is None
        assert leftover.stop_leftover(record_with(tmp_path, [reused, also]), grace_s=1) == 0
        assert other.poll() is None
    finally:
        other.kill()
        other.wait()


def test_stop_leftover_ends_the_recorded_node_and_its_children(tmp_path: Path) -> None:
    script = "import subprocess,time; subprocess.Popen(['sleep','60']); time.sleep(60)"
    node = spawn(sys.executable, "-c", script)
    child = wait_until(lambda: psutil.Process(node.pid).children(), 10, what="the node's child process")[0]
    assert leftover.stop_leftover(record_with(tmp_path, [node_of(node)]), grace_s=5) == 2
    assert node.wait(5) is not None
    assert leftover.wait_exit([child], 5) == []


def test_a_stale_record_whose_ray_is_dead_is_dropped_and_a_fresh_start_follows(tmp_path: Path) -> None:
    gone = spawn("true")
    gone.wait()
    cluster = LocalCluster(settings(tmp_path))
    ports = {n: getattr(cluster.settings, n) for n in ("ray_head_port", "ray_dashboard_port")}
    nodes = [leftover.NodeRecord("head", gone.pid, 1.0, ["ray", "start"]),
             leftover.NodeRecord("worker-1", gone.pid, 1.0, ["ray", "start"])]
    leftover.save(cluster.record_path, record_with(tmp_path, nodes, temp_dir=str(cluster.temp_dir),
                                                   jail_digest=leftover.jail_digest(cluster.node_env),
                                                   jail_env=cluster.node_env,
                                                   ray_version=leftover_version()))
    line = cluster.take_over_leftover()
    assert line is not None and "not adopting the cluster left by pid 999999" in line
    assert "is gone or the pid is another process now" in line and "starting a fresh one" in line
    assert not cluster.adopted and not cluster.record_path.exists()
    assert {n: getattr(cluster.settings, n) for n in ports} == ports  # the freshly picked ports stay
    assert cluster.take_over_leftover() is None  # nothing left now


def test_an_unreadable_record_is_ignored(tmp_path: Path) -> None:
    cluster = LocalCluster(settings(tmp_path))
    cluster.record_path.write_text("{not json")
    assert cluster.take_over_leftover() is None


def leftover_version() -> str:
    from importlib.metadata import version

    return version("ray")


HOLD = """
import sys, time
from pathlib import Path
from argus.state_lock import StateLock
StateLock(Path(sys.argv[1])).acquire()
print("held", flush=True)
time.sleep(60)
"""


def test_one_server_per_state_dir_and_a_killed_owner_frees_it(tmp_path: Path) -> None:
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(StateDirBusy, match=f"another Argus server \\(pid {holder.pid}\\) is running with "
                                               f"--state-dir {tmp_path}; stop it first"):
            StateLock(tmp_path).acquire()
        os.kill(holder.pid, signal.SIGKILL)  # no clean-up: the kernel drops the lock
        holder.wait(10)
        lock = StateLock(tmp_path)
        lock.acquire()
        assert (tmp_path / "argus.lock").read_text().strip() == str(os.getpid())
        lock.release()
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()


@pytest.mark.e2e
def test_a_leftover_ray_that_is_not_ours_is_stopped_and_a_fresh_one_started(tmp_path: Path) -> None:
    """A cluster left running (as after kill -9) but recorded with another jail setup: stopped, not adopted."""
    state = tmp_path / "state"
    first = LocalCluster(settings(state, ray_head_port=free_port(), ray_dashboard_port=free_port(),
                                  ray_client_server_port=free_port()))
    second = None
    try:
        first.start()
        record = leftover.load(first.record_path)
        assert record is not None and [n.name for n in record.nodes] == ["head", "worker-1"]
        assert record.session_dir and Path(record.session_dir).is_dir()
        pids = [n.pid for n in record.nodes]
        record.jail_digest = "tampered"  # e.g. the sandbox config changed since
        leftover.save(first.record_path, record)
        # the "killed" owner is this process: a new cluster object in the same state dir takes over
        second = LocalCluster(settings(state))
        line = second.take_over_leftover()
        assert line is not None and "its node setup (token auth, sandbox) differs" in line and "starting a fresh one" in line
        left = [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
        assert not left, line
        second.start()
        assert second.head is not None and second.head.running and second.head.pid not in pids
    finally:
        first.stop()
        if second is not None:
            second.stop()
