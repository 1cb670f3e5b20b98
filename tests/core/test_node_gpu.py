"""core/node_gpu.py: a task's newest sample as per-GPU bars; stale or hostile samples never drawn."""

from __future__ import annotations

from argus.core.node_gpu import STALE_S, node_summary, task_gpus, telemetry_file_suffix


def test_fresh_sample_becomes_bars_and_a_mean():
    gpus = task_gpus({"t": 1000, "cpu": 1, "gpu": [[87, 30720, 250.0], [3, 1024, 60.0]]}, now=1010, task_id="t1")
    assert gpus == [{"util_pct": 87.0, "mem_mib": 30720.0, "task_id": "t1"},
                    {"util_pct": 3.0, "mem_mib": 1024.0, "task_id": "t1"}]
    assert node_summary(gpus)["util_mean_pct"] == 45.0


def test_stale_missing_cpu_only_and_hostile_samples():
    assert task_gpus({"t": 1000, "gpu": [[50, 1, 1]]}, now=1000 + STALE_S + 1) == []  # a driver gone quiet
    assert task_gpus(None, now=0) == [] and task_gpus({"t": 5, "cpu": 1}, now=5) == []  # CPU-only
    odd = task_gpus({"t": 5, "gpu": [[250, -4, 0], [None, None, None], ["x", True, 1]]}, now=5)
    assert [(g["util_pct"], g["mem_mib"]) for g in odd] == [(100.0, 0.0), (None, None), (None, None)]
    assert node_summary(odd[1:])["util_mean_pct"] is None


def test_which_file_each_planned_node_writes():
    assert [telemetry_file_suffix(i) for i in range(3)] == ["", ".node-2", ".node-3"]
