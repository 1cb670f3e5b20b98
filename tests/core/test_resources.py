"""A task's CPUs and memory per node (issue 15): the spec's fields, their errors, and the documented defaults."""

from __future__ import annotations

import pytest

from argus.core.admission import AdmissionPolicy, Admitted, admit, resolved_view
from argus.core.paths import DataLayout
from argus.core.resources import (
    NodeNeed,
    default_cpus,
    format_memory,
    parse_cpus,
    parse_memory,
    task_need,
)
from argus.core.taskspec import parse_taskspec
from argus.settings import DEFAULT_ENTRY_ALLOWLIST


@pytest.mark.parametrize(("text", "expected"), [
    ("64Gi", 64 * 2**30), ("512Mi", 512 * 2**20), ("16G", 16 * 10**9), ("1.5Ti", int(1.5 * 2**40)),
    ("2gib", 2 * 2**30), ("1024", 1024), (4096, 4096), (0, 0), ("10 Gi", 10 * 2**30),
])
def test_memory_sizes_read_as_bytes(text, expected) -> None:
    assert parse_memory(text) == expected


@pytest.mark.parametrize("bad", ["12 apples", "Gi", "-1Gi", -5, True, [1], "1e3Gi", "2Ei"])
def test_bad_memory_sizes_are_refused_with_the_fix(bad) -> None:
    with pytest.raises(ValueError, match="64Gi|larger than any node|≥ 0"):
        parse_memory(bad)


def test_cpus_are_numbers_within_bounds() -> None:
    assert parse_cpus(12) == 12.0 and parse_cpus("0.5") == 0.5
    for bad in ("many", -1, True, float("nan"), 10**6):
        with pytest.raises(ValueError, match="CPUs"):
            parse_cpus(bad)


def _spec(**extra):
    return parse_taskspec({"kind": "advanced", "workload": "job", "nnodes": 1, "n_gpus_per_node": 0,
                           "command": "python3 -m argus.jobs.doctor", **extra})


def test_spec_fields_are_optional_and_normalized() -> None:
    assert (_spec().cpus_per_node, _spec().memory_per_node) == (None, None)
    s = _spec(cpus_per_node=12, memory_per_node="64Gi")
    assert (s.cpus_per_node, s.memory_per_node) == (12.0, 64 * 2**30)


def test_spec_errors_name_field_value_and_fix() -> None:
    errors = _spec(cpus_per_node="lots", memory_per_node="12 apples")
    assert isinstance(errors, list)
    by_field = {e.field: e for e in errors}
    assert by_field["cpus_per_node"].value == "lots" and "e.g. 12" in by_field["cpus_per_node"].message
    assert by_field["memory_per_node"].value == "12 apples" and "'64Gi'" in by_field["memory_per_node"].message


def test_ppo_default_counts_verl_bundles_and_transferqueue_actors() -> None:
    # 3 CPUs per GPU bundle + TQ controller (1) + 8 storage units on 1 node + 1 actor headroom
    assert default_cpus("verl.trainer.main_ppo", 1, 8) == 3 * 8 + 1 + 8 + 1
    # the storage units spread over the task's nodes
    assert default_cpus("verl.trainer.main_ppo", 4, 8) == 3 * 8 + 1 + 2 + 1
    assert default_cpus("verl.trainer.main_ppo", 1, 1,
                        {"transfer_queue.backend.SimpleStorage.num_data_storage_units": "2"}) == 3 + 1 + 2 + 1
    # the legacy trainer starts no TransferQueue
    assert default_cpus("verl.trainer.main_ppo", 1, 2, {"trainer.use_v1": "False"}) == 3 * 2 + 1
    assert default_cpus("verl.trainer.main_ppo", 1, 2,
                        {"transfer_queue.backend.storage_backend": "MooncakeStore"}) == 3 * 2 + 1 + 1


def test_other_defaults() -> None:
    assert default_cpus("verl.trainer.sft_trainer", 1, 4) == 5
    assert default_cpus("verl.model_merger", 1, 0) == 1
    assert default_cpus("argus.jobs.doctor", 1, 0) == 0  # the platform's light probes reserve nothing
    assert default_cpus("my.trainer", 1, 2) == 3
    assert task_need("verl.model_merger", 1, 0, cpus_per_node=4, memory_per_node=2**30) == NodeNeed(4.0, 2**30)
    assert task_need("verl.model_merger", 1, 0) == NodeNeed(1.0, 0)


def test_resolved_spec_carries_the_need_the_scheduler_fits() -> None:
    layout = DataLayout.at("/private")
    spec = parse_taskspec({"kind": "advanced", "workload": "ppo", "nnodes": 2, "n_gpus_per_node": 8,
                           "memory_per_node": "100Gi",
                           "command": "python3 -m verl.trainer.main_ppo "
                                      "data.train_files=$HOME/t.parquet data.val_files=$HOME/v.parquet "
                                      "trainer.nnodes=2 trainer.n_gpus_per_node=8 "
                                      "transfer_queue.backend.SimpleStorage.num_data_storage_units=4"})
    policy = AdmissionPolicy(layout=layout, entry_allowlist=tuple(DEFAULT_ENTRY_ALLOWLIST))
    verdict = admit(spec, "alice", policy)
    assert isinstance(verdict, Admitted), verdict
    view = resolved_view(verdict, "alice", policy)
    assert view["resources_per_node"] == {"gpus": 8, "cpus": 3 * 8 + 1 + 2 + 1, "memory": 100 * 2**30}
    assert format_memory(view["resources_per_node"]["memory"]) == "100 GiB"


def test_basic_rl_templates_pin_transferqueue_to_workers_and_count_its_units() -> None:
    from argus.core.builders import PathView, basic_overrides

    spec = parse_taskspec({"workload": "grpo", "model_id": "m/x", "train_file": "$HOME/t.parquet",
                           "val_file": "$HOME/v.parquet", "nnodes": 1, "n_gpus_per_node": 1})
    ov = basic_overrides(spec, PathView.as_written("t"), "t")
    assert "+transfer_queue.backend.SimpleStorage.required_node_resource=worker_node" in ov
    assert "transfer_queue.backend.SimpleStorage.num_data_storage_units=2" in ov
    layout = DataLayout.at("/private")
    policy = AdmissionPolicy(layout=layout, entry_allowlist=tuple(DEFAULT_ENTRY_ALLOWLIST))
    verdict = admit(spec, "alice", policy)
    assert isinstance(verdict, Admitted)
    # 3 (the GPU bundle) + 1 (controller) + 2 (the template's storage units) + 1 (actor headroom)
    assert resolved_view(verdict, "alice", policy)["resources_per_node"]["cpus"] == 7
    tuned = parse_taskspec({**spec.model_dump(exclude_none=True),
                            "overrides": ["transfer_queue.backend.SimpleStorage.num_data_storage_units=6"]})
    verdict = admit(tuned, "alice", AdmissionPolicy(layout=layout, entry_allowlist=tuple(DEFAULT_ENTRY_ALLOWLIST)))
    assert isinstance(verdict, Admitted)
    assert resolved_view(verdict, "alice", policy)["resources_per_node"]["cpus"] == 3 + 1 + 6 + 1
    sft = parse_taskspec({"workload": "sft", "model_id": "m/x", "train_file": "$HOME/t.parquet", "nnodes": 1,
                          "n_gpus_per_node": 4})
    assert not any("transfer_queue" in o for o in basic_overrides(sft, PathView.as_written("t"), "t"))


def test_cpu_training_reserves_no_gpu_and_a_cpu_per_worker_plus_one() -> None:
    from argus.core.resources import default_cpus, reserved_gpus

    assert reserved_gpus(2, "cpu") == 0 and reserved_gpus(2, "gpu") == 2
    assert default_cpus("verl.trainer.main_ppo", 1, 1, device="cpu") == 2.0
    assert default_cpus("verl.trainer.sft_trainer", 1, 2, device="cpu") == 3.0
    assert default_cpus("argus.jobs.doctor", 1, 0, device="cpu") == 0.0


def test_training_device_counts_cpu_workers_from_the_spec_and_gpus_from_the_reservation() -> None:
    from argus.core.resources import training_device

    assert training_device({"device": "cpu", "n_gpus_per_node": 2}, 0) == ("cpu", 2)
    assert training_device({"device": "gpu", "n_gpus_per_node": 4}, 4) == ("gpu", 4)
    assert training_device(None, 1) == ("gpu", 1)  # a list row: no spec read


def test_the_cli_never_shows_a_cpu_training_task_as_zero_gpus() -> None:
    from argus.cli.tasks import workers_line

    assert workers_line({"nnodes": 1, "n_gpus_per_node": 0, "device": "cpu", "workers_per_node": 2}) == \
        "1×2 CPU training workers (device cpu)"
    assert workers_line({"nnodes": 2, "n_gpus_per_node": 8}) == "2×8 GPUs"
