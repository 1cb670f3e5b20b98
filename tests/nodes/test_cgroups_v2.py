"""The cgroup v2 side of nodes/cgroups.py, against a v2 tree laid out in a folder (issue 36).

The machines this suite runs on are v1/hybrid (memory, pids and cpu in v1 hierarchies, an empty v2 tree at
``/sys/fs/cgroup/unified``), so the real-kernel tests (tests/launcher/test_task_bounds.py, tests/nodes/
test_agent.py) go through the v1 path. What differs on a v2 host — which layout is found, the controllers
enabled down the path, the files and units of each limit, where the kernel counts a hit, ``cgroup.kill`` — is
checked here on the files a v2 kernel offers; the kernel's own behaviour behind those files is not.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from argus.core.launch import Limits
from argus.nodes import cgroups


def _v2(root: Path, controllers: str = "cpuset cpu io memory hugetlb pids rdma misc") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "cgroup.controllers").write_text(controllers + "\n")
    (root / "cgroup.procs").write_text("")
    return root


def test_a_v2_root_with_our_controllers_is_one_tree(tmp_path: Path) -> None:
    layout = cgroups.detect(_v2(tmp_path / "cg"))
    assert layout is not None and layout.version == "v2"
    assert layout.dirs == dict.fromkeys(("memory", "pids", "cpu"), tmp_path / "cg") and layout.unified == tmp_path / "cg"
    assert layout.folders("argus/t-1.1") == [tmp_path / "cg" / "argus" / "t-1.1"]  # one tree: one folder
    assert cgroups.detect(_v2(tmp_path / "bare", "cpuset io")) is None  # none of ours delegated: not bounded


def test_creating_a_group_enables_the_controllers_on_every_ancestor_not_on_itself(tmp_path: Path) -> None:
    root = _v2(tmp_path / "cg")
    layout = cgroups.detect(root)
    task = cgroups.Group(layout, "argus/t-1.1/task")
    task.create()
    assert task.exists() and (root / "argus" / "t-1.1" / "task").is_dir()
    for parent in (root, root / "argus", root / "argus" / "t-1.1"):  # v2: a parent hands its controllers down
        assert (parent / "cgroup.subtree_control").read_text() == "+memory +pids +cpu", parent
    assert not (root / "argus" / "t-1.1" / "task" / "cgroup.subtree_control").exists()  # it holds processes


def test_limits_are_written_in_v2_files_and_units(tmp_path: Path) -> None:
    root = _v2(tmp_path / "cg")
    task = cgroups.Group(cgroups.detect(root), "argus/t-1.1/task")
    task.create()
    folder = root / "argus" / "t-1.1" / "task"
    (folder / "memory.swap.max").write_text("max\n")  # the kernel offers it where swap accounting is on
    missing = task.limit(Limits(memory_bytes=3 << 30, pids_max=512, cpus=2.5, cpu_quota=True))
    assert missing == []
    assert (folder / "memory.max").read_text() == str(3 << 30)
    assert (folder / "memory.swap.max").read_text() == "0"  # swap would hide an overrun
    assert (folder / "pids.max").read_text() == "512"
    assert (folder / "cpu.weight").read_text() == "250"  # v2's weight: 100 a CPU (v1's shares: 1024)
    assert (folder / "cpu.max").read_text() == "250000 100000"  # 2.5 CPUs a 100 ms period
    assert not (folder / "memory.limit_in_bytes").exists() and not (folder / "cpu.shares").exists()


def test_a_limit_without_its_controller_is_named_not_dropped(tmp_path: Path) -> None:
    root = _v2(tmp_path / "cg", "cpuset io memory")  # pids and cpu not delegated to this tree
    task = cgroups.Group(cgroups.detect(root), "argus/t-1.1/task")
    task.create()
    missing = task.limit(Limits(memory_bytes=1 << 30, pids_max=64, cpus=1))
    assert [m.split(" (")[0] for m in missing] == ["processes", "CPU weight"], missing
    assert (root / "argus" / "t-1.1" / "task" / "memory.max").read_text() == str(1 << 30)


def test_hits_are_read_from_the_v2_event_files(tmp_path: Path) -> None:
    root = _v2(tmp_path / "cg")
    task = cgroups.Group(cgroups.detect(root), "argus/t-1.1/task")
    task.create()
    folder = root / "argus" / "t-1.1" / "task"
    assert task.counters() == cgroups.Counters(0, 0)  # nothing counted yet (no event file)
    (folder / "memory.events").write_text("low 0\nhigh 0\nmax 12\noom 2\noom_kill 2\noom_group_kill 0\n")
    (folder / "pids.events").write_text("max 7\n")
    assert task.counters() == cgroups.Counters(oom_kills=2, pids_refused=7)


def test_kill_asks_cgroup_kill_and_signals_every_member_of_the_subtree(tmp_path: Path) -> None:
    root = _v2(tmp_path / "cg")
    attempt = cgroups.Group(cgroups.detect(root), "argus/t-1.1")
    task = attempt.child("task")
    task.create()
    attempt.child("launcher").create()
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        (root / "argus" / "t-1.1" / "task" / "cgroup.procs").write_text(f"{sleeper.pid}\n")
        (root / "argus" / "t-1.1" / "cgroup.kill").write_text("0")
        assert attempt.pids() == {sleeper.pid}  # found below the attempt's group, not only in it
        # the folder is not a kernel's: its member list never empties, so kill() reports it did not
        assert attempt.kill(timeout_s=0.3) is False
        assert sleeper.wait(timeout=10) == -9
        assert (root / "argus" / "t-1.1" / "cgroup.kill").read_text() == "1"
    finally:
        if sleeper.poll() is None:
            sleeper.kill()
