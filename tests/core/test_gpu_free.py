"""issue 36: nvidia-smi's CSV read, an attempt's GPUs found, the outcome typed, and the scheduler's rule for GPUs
left busy (one fewer free on their node; the plan places no task on them)."""

from __future__ import annotations

from argus.core.gpu_free import (
    BusyGpu,
    Gpu,
    GpuCheck,
    GpuProcess,
    HeldEvents,
    HeldGpu,
    attempt_gpus,
    held_by_node,
    on_gpus,
    parse_compute_apps,
    parse_gpu_list,
    still_held,
)
from argus.core.scheduling.policy import Limits, NodeState, QueuedTask, free_gpus, plan

U0, U1 = "GPU-5d7f3a1e-0000-1111-2222-333344445555", "GPU-9a8b7c6d-aaaa-bbbb-cccc-ddddeeeeffff"
NODE = [Gpu(0, U0), Gpu(1, U1)]


def test_nvidia_smi_csv_without_header_or_units_is_read_line_by_line() -> None:
    assert parse_gpu_list(f"0, {U0}\n1, {U1}\n") == NODE
    apps = parse_compute_apps(f"4242, {U1}, 2048\n4300, {U0}, [N/A]\n\n")
    assert apps == [GpuProcess(4242, U1, 2048), GpuProcess(4300, U0, None)]
    assert parse_compute_apps("") == [] and parse_compute_apps("No running processes found\n") == []


def test_the_attempts_gpus_are_named_by_index_or_uuid() -> None:
    assert attempt_gpus("1", NODE) == ([Gpu(1, U1)], [])
    assert attempt_gpus(f"{U0},7", NODE) == ([Gpu(0, U0)], ["7"])
    assert attempt_gpus("GPU-9a8b", NODE) == ([Gpu(1, U1)], [])  # a prefix, as CUDA accepts it
    assert attempt_gpus("", NODE) == ([], [])


def test_only_processes_on_the_attempts_gpus_count_and_the_event_names_gpu_pid_and_memory() -> None:
    apps = [GpuProcess(4242, U1, 2048), GpuProcess(99, U0, 512)]
    assert on_gpus(apps, [Gpu(1, U1)]) == [BusyGpu(1, U1, 4242, 2048)]
    held = HeldGpu("node-a", U1, 1, "gpu-host", "grpo-1", 2, (4242,), 2048, "now")
    assert held.event().startswith(f"GPU 1 ({U1}) on gpu-host still has pid 4242 using 2 GiB after the task ended; "
                                   "held back")
    assert still_held(held, apps) and not still_held(held, [GpuProcess(5000, U1, 100)])  # a new task's is not ours


def test_the_outcome_round_trips_and_a_forged_one_is_bounded() -> None:
    check = GpuCheck(False, (Gpu(1, U1),), (BusyGpu(1, U1, 4242, 2048),), (17,), 6, None)
    assert GpuCheck.parse(check.as_dict()) == check
    assert GpuCheck.parse({"gpus_free": "yes"}) is None
    odd = GpuCheck.parse({"gpus_free": None, "busy": [{"uuid": 3, "pid": "x"}] * 1000, "killed": list(range(1000))})
    assert odd is not None and odd.busy == () and len(odd.killed) == 64
    held = HeldGpu("node-a", U1, 1, pids=(4242,))
    assert HeldGpu.parse(held.as_dict()) == held and HeldGpu.parse({"uuid": U1}) is None


def test_held_gpus_count_once_per_gpu_and_their_event_is_said_once() -> None:
    a = HeldGpu("n1", U0, 0, task_id="t1", attempt=1, pids=(1,))
    b = HeldGpu("n1", U0, 0, task_id="t2", attempt=1, pids=(2,))  # the same GPU, reported again
    c = HeldGpu("n2", U1, 1, task_id="t1", attempt=1, pids=(3,))
    assert held_by_node([a, b, c]) == {"n1": 1, "n2": 1}
    events = HeldEvents()
    assert events.new([a, c]) == [a, c] and events.new([a, b, c]) == [b]


def test_the_plan_does_not_place_a_task_on_a_held_back_gpu() -> None:
    nodes = [NodeState("n1", True, 2, 2, gpus_held_back=1), NodeState("n2", True, 2, 2)]
    assert free_gpus(nodes, []) == {"n1": 1, "n2": 2}
    two = QueuedTask("t2", "alice", 0, 1, 1, 2)
    one = QueuedTask("t1", "bob", 0, 2, 1, 1)
    out = plan([two, one], [], nodes, Limits(10, 0))
    placed = {p.task_id: p.nodes for p in out.placements}
    assert placed == {"t2": ("n2",), "t1": ("n1",)}  # n1's held GPU takes no task; its other one does
    busy = [NodeState("n1", True, 2, 2, gpus_held_back=2)]
    waits = plan([QueuedTask("t3", "carol", 0, 1, 1, 1)], [], busy, Limits(10, 0))
    assert not waits.placements and "t3" in waits.reasons
