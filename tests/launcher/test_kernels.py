"""Attention kernel and rollout engine choices made on the worker, and who holds a task's GPUs."""

from __future__ import annotations

import pytest

from argus.core.builders import PathView, build_basic_argv
from argus.core.gpu_binding import entry_module, uses_ray
from argus.core.taskspec import BasicTaskSpec
from argus.launcher import kernels


def _basic(workload: str, **kw) -> list[str]:
    spec = BasicTaskSpec(workload=workload, model_id="$HOME/models/tiny", train_file="$HOME/d/train.parquet",
                         val_file="$HOME/d/val.parquet", nnodes=1, n_gpus_per_node=2, **kw)
    return build_basic_argv(spec, PathView.as_written("t-1"), "t-1")


def test_ray_programs_and_unknown_commands_get_a_private_ray_plain_programs_do_not() -> None:
    assert not uses_ray(_basic("sft"))  # torchrun: its ranks use the task's GPUs themselves
    assert entry_module(_basic("sft")) == "verl.trainer.sft_trainer"
    assert uses_ray(_basic("grpo"))  # main_ppo places its workers with Ray
    assert uses_ray(["bash", "-lc", "NCCL_DEBUG=WARN python3 -m verl.trainer.main_ppo a=1"])
    assert not uses_ray(["bash", "-lc", "python3 -m argus.jobs.gpus --hold 1"])
    assert uses_ray(["bash", "-lc", "python3 -m argus.jobs.ray_gpus --gpus 2"])
    assert uses_ray(["bash", "-lc", "python3 -m argus.jobs.gang_steps nodes=2"])  # an actor on each node
    assert not uses_ray(["bash", "-lc", "python3 -m argus.jobs.doctor"])
    assert uses_ray(["bash", "-lc", "python3 $HOME/code/train.py"])  # unknown: it may call ray.init()
    assert uses_ray(["bash", "-lc", "python3 -m mylab.train"])


@pytest.mark.parametrize("workload, prefixes", [
    ("sft", ["model"]),
    ("grpo", ["actor_rollout_ref.model"]),
    ("ppo", ["actor_rollout_ref.model", "critic.model"]),
])
def test_without_flash_attn_basic_templates_use_sdpa_and_keep_padding(workload: str, prefixes: list[str]) -> None:
    argv = _basic(workload)
    extra, note = kernels.attention_overrides(argv, None)
    want = [o for p in prefixes for o in (f"+{p}.override_config.attn_implementation=sdpa", f"{p}.use_remove_padding=False")]
    assert extra == want and note.startswith("attention: sdpa")
    out = kernels.insert_overrides(argv, extra)
    at = out.index(entry_module(argv))
    assert out[at + 1: at + 1 + len(extra)] == extra and out[at + 1 + len(extra):] == argv[at + 1:]  # before the rest
    assert kernels.attention_overrides(argv, "2.8.3") == ([], "attention: flash_attention_2 (flash-attn 2.8.3 on this worker)")


def test_a_users_own_attention_choice_is_left_alone() -> None:
    argv = _basic("sft", overrides=["+model.override_config.attn_implementation=eager"])
    extra, _ = kernels.attention_overrides(argv, None)
    assert extra == ["model.use_remove_padding=False"]
    assert kernels.attention_overrides(["bash", "-lc", "python3 -m argus.jobs.doctor"], None) == ([], "")


def test_a_missing_rollout_engine_is_named_before_anything_starts() -> None:
    argv = _basic("grpo")
    assert kernels.rollout_engine(argv) == "vllm"
    missing = kernels.missing_rollout_engine(argv)
    assert missing is not None and "'vllm' is not installed on this worker" in missing  # not in the CPU test env
    adv = ["bash", "-lc", "python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=sglang x=1"]
    assert "'sglang'" in kernels.missing_rollout_engine(adv)
    assert "not one verl supports" in kernels.missing_rollout_engine(
        ["bash", "-lc", "python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=hf"])
    assert kernels.missing_rollout_engine(_basic("sft")) is None


def test_the_attention_overrides_are_keys_verl_accepts() -> None:
    """Composed with verl's own Hydra config, as the trainer will: a wrong key would fail here, not on a GPU."""
    pytest.importorskip("verl")
    from hydra import compose, initialize_config_module

    with initialize_config_module(config_module="verl.trainer.config", version_base=None):
        for workload, name in (("sft", "sft_trainer_engine"), ("ppo", "ppo_trainer")):
            argv = _basic(workload)
            extra, _ = kernels.attention_overrides(argv, None)
            cfg = compose(config_name=name, overrides=extra)
            for prefix in {o.lstrip("+").rsplit(".", 2)[0] if "override_config" in o else o.rsplit(".", 1)[0]
                           for o in extra}:
                node = cfg
                for part in prefix.split("."):
                    node = node[part]
                assert node.override_config.attn_implementation == "sdpa" and node.use_remove_padding is False
