"""launcher.telemetry: a task's own process tree sampled (CPU, memory), GPUs only where NVML is (no fakes)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import psutil

from argus.core.resource_use import downsample, idle_since, summarize
from argus.launcher.telemetry import Nvml, Sampler
from tests.waiting import wait_until

BURN = "import time\nx = bytearray(64 * 2**20)\nfor i in range(0, len(x), 4096): x[i] = 1\nt = time.time()\n" \
       "while time.time() - t < 120: pass\n"


def test_the_tree_under_the_child_is_sampled_and_appended(tmp_path):
    # a parent that starts a busy child: both are the task's, the sampler's own process is not
    child = subprocess.Popen([sys.executable, "-c", f"import subprocess, sys; subprocess.run([sys.executable, '-c', {BURN!r}])"])
    try:
        path = tmp_path / "telemetry" / "attempt-1.jsonl"
        sampler = Sampler(child.pid, path, visible="", nvml=None)
        # a process counts from its first sample: take it once the grandchild has touched its 64 MiB
        def burning() -> bool:
            return any(p.memory_info().rss >= 64 * 2**20 for p in psutil.Process(child.pid).children())

        wait_until(burning, 30, ignore=(psutil.Error,), what="the busy grandchild")
        grandchild = next(p for p in psutil.Process(child.pid).children() if p.memory_info().rss >= 64 * 2**20)

        def used() -> float:
            return sum(grandchild.cpu_times()[:2])

        # the truth to compare with: what the grandchild used over the same window. It is not "one core": on a
        # loaded machine (the light lane of scripts/test.sh runs at nice 10) the busy loop gets less
        t0, c0 = time.monotonic(), used()
        sampler.record()
        wait_until(lambda: used() - c0 >= 0.5, 60, every=0.2, what="half a second of the grandchild's CPU")
        second = sampler.record()
        truth = (used() - c0) / (time.monotonic() - t0)
        assert second is not None and abs(second["cpu"] - truth) <= 0.05 + 0.2 * truth, (second, truth)
        assert second["rss"] >= 64 * 2**20 and "gpu" not in second
        lines = [json.loads(x) for x in path.read_text().splitlines()]
        assert len(lines) == 2 and lines[1] == second
    finally:
        for p in psutil.Process(child.pid).children(recursive=True):  # the busy loop would outlive its parent
            p.kill()
        child.kill()
        child.wait()


SHARED = """
import mmap, os, sys, time
m = mmap.mmap(-1, 128 << 20, flags=mmap.MAP_SHARED)  # anonymous shared memory, touched by both processes
m.write(b"x" * (128 << 20))
if os.fork() == 0:
    sum(m[i] for i in range(0, 128 << 20, 4096))
    open(sys.argv[1] + ".child", "w").close()
    time.sleep(300)
open(sys.argv[1], "w").close()
time.sleep(300)
"""


def test_memory_two_processes_share_counts_once(tmp_path):
    """128 MiB mapped and touched by a parent and its child: the tree holds 128 MiB, not 256 (PSS, not RSS)."""
    flag = tmp_path / "ready"
    parent = subprocess.Popen([sys.executable, "-c", SHARED, str(flag)])
    try:
        wait_until(lambda: flag.exists() and Path(f"{flag}.child").exists(), 60, every=0.1, what="both touched")
        tree = [psutil.Process(parent.pid), *psutil.Process(parent.pid).children()]
        assert sum(p.memory_info().rss for p in tree) >= 256 << 20  # what an RSS sum would say
        sample = Sampler(parent.pid, tmp_path / "t.jsonl", visible="", nvml=None).sample()
        assert 128 << 20 <= sample["rss"] < 200 << 20, sample
    finally:
        for p in psutil.Process(parent.pid).children():
            p.kill()
        parent.kill()
        parent.wait()


def test_no_nvml_here_means_no_gpu_figures():
    assert Nvml.open() is None  # CI machines have no NVIDIA driver: nothing is made up


def test_idle_gpus_and_summaries():
    busy = [{"t": t, "cpu": 1.0, "rss": 10, "gpu": [[90.0, 1000, 300.0], [80.0, 900, 290.0]]} for t in range(0, 300, 15)]
    idle = [{"t": t, "cpu": 0.1, "rss": 20, "gpu": [[1.0, 1000, 70.0], [0.0, 900, 60.0]]} for t in range(300, 1000, 15)]
    assert idle_since(busy + idle) == 300
    assert idle_since(busy + idle[:10]) is None  # idle, but not for 10 minutes yet
    assert idle_since(busy) is None and idle_since([{"t": 0, "cpu": 1.0, "rss": 1}]) is None  # CPU tasks never
    s = summarize(busy + idle)
    assert s.samples == len(busy + idle) and s.rss_max == 20 and s.gpu_mem_max_mib == [1000, 900]
    assert s.idle_since == 300
    assert len(downsample(busy + idle, points=10)) <= 10


def test_a_multi_node_tasks_samples_are_one_series():
    from argus.core.resource_use import merge_nodes

    first = [{"t": 15, "cpu": 1.0, "rss": 100, "gpu": [[90.0, 10, 300.0]]}, {"t": 30, "cpu": 2.0, "rss": 100}]
    second = [{"t": 16, "cpu": 0.5, "rss": 50, "gpu": [[80.0, 20, 250.0]]}]
    merged = merge_nodes([first, second])
    assert merged[0] == {"t": 16, "cpu": 1.5, "rss": 150, "gpu": [[90.0, 10, 300.0], [80.0, 20, 250.0]]}
    assert merged[1] == {"t": 30, "cpu": 2.0, "rss": 100}
    assert merge_nodes([first]) is first
