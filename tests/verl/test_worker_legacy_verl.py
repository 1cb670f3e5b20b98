"""The validator child under an older verl (0.4.1): a task is judged by its training environment's verl.

The same worker module runs under the platform's verl (0.9.1, the ``validator`` fixture) and
under a training environment holding verl 0.4.1 (``verl041_python``, built from Argus's lock).
What differs between them is found from what each verl has, never from its version string; these
tests drive both children over their JSON-lines protocol, as the server does.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

import argus
from argus.verl.validator import VerlValidator

# A launch command in the style of verl 0.3/0.4's example PPO (GAE) scripts. The keys in OLD_KEYS
# exist in verl 0.4.1's ppo_trainer and were removed or moved by 0.9 (critic.model.fsdp_config ->
# critic.fsdp, ray_init -> ray_kwargs.ray_init, ...): 0.9.1 refuses them, 0.4.1 accepts the whole command.
OLD_KEYS = {
    "actor_rollout_ref.rollout.engine_kwargs.vllm.swap_space": "4",
    "critic.model.fsdp_config.param_offload": "False",
    "critic.model.fsdp_config.optimizer_offload": "False",
    "reward_model.launch_reward_fn_async": "False",
    "ray_init.num_cpus": "null",
}
OLD_SCRIPT = [
    "algorithm.adv_estimator=gae",
    "data.train_files=/data/gsm8k/train.parquet",
    "data.val_files=/data/gsm8k/test.parquet",
    "data.train_batch_size=512",
    "data.max_prompt_length=512",
    "data.max_response_length=512",
    "data.filter_overlong_prompts=True",
    "data.truncation=error",
    "actor_rollout_ref.model.path=Qwen/Qwen2.5-0.5B-Instruct",
    "actor_rollout_ref.model.use_remove_padding=True",
    "actor_rollout_ref.model.enable_gradient_checkpointing=True",
    "actor_rollout_ref.actor.optim.lr=1e-6",
    "actor_rollout_ref.actor.ppo_mini_batch_size=128",
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=8",
    "actor_rollout_ref.actor.use_kl_loss=False",
    "actor_rollout_ref.actor.fsdp_config.param_offload=False",
    "actor_rollout_ref.actor.fsdp_config.optimizer_offload=False",
    "actor_rollout_ref.rollout.name=vllm",
    "actor_rollout_ref.rollout.tensor_model_parallel_size=1",
    "actor_rollout_ref.rollout.gpu_memory_utilization=0.5",
    "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=16",
    "critic.optim.lr=1e-5",
    "critic.model.path=Qwen/Qwen2.5-0.5B-Instruct",
    "critic.model.use_remove_padding=True",
    "critic.model.enable_gradient_checkpointing=True",
    "critic.ppo_micro_batch_size_per_gpu=16",
    "reward_model.reward_manager=naive",
    "custom_reward_function.path=/code/reward.py",
    "algorithm.use_kl_in_reward=False",
    "trainer.critic_warmup=0",
    "trainer.logger=['console']",
    "trainer.project_name=verl_example_gsm8k",
    "trainer.experiment_name=qwen2.5_0.5b_ppo",
    "trainer.n_gpus_per_node=8",
    "trainer.nnodes=1",
    "trainer.save_freq=20",
    "trainer.test_freq=5",
    "trainer.total_epochs=15",
    *(f"{k}={v}" for k, v in OLD_KEYS.items()),
]
# A GRPO command 0.4.1 accepts as is; the batch-size tests break one rule of it at a time.
GRPO = [
    "algorithm.adv_estimator=grpo",
    "data.train_batch_size=256",
    "actor_rollout_ref.rollout.n=4",
    "actor_rollout_ref.actor.ppo_mini_batch_size=64",
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4",
    "actor_rollout_ref.actor.use_kl_loss=True",
    "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=8",
    "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=8",
    "trainer.n_gpus_per_node=8",
    "trainer.nnodes=1",
]


@pytest.fixture(scope="module")
def v041(verl041_python: str) -> Iterator[VerlValidator]:
    v = VerlValidator(verl041_python, timeout_s=120, start_timeout_s=180)
    v.start_background()
    yield v
    v.stop()


def _validate(v: VerlValidator, config: str, overrides: list[str], kind: str | None = None) -> dict:
    req = {"op": "validate", "config": config, "overrides": overrides}
    if kind:
        req["kind"] = kind
    return v.request(req)


def _with(base: list[str], **changes: str) -> list[str]:
    """``base`` with some keys set to other values (``a__b`` stands for ``a.b``)."""
    new = {k.replace("__", "."): v for k, v in changes.items()}
    return [o for o in base if o.split("=", 1)[0] not in new] + [f"{k}={v}" for k, v in new.items()]


def test_info_describes_the_old_verl(v041):
    info = v041.request({"op": "info"})
    assert info["verl_version"] == "0.4.1"
    assert info["reward_moved"] is False  # 0.4.1 reads the top-level custom_reward_function.*
    assert {"gae", "grpo"} <= set(info["estimators"])
    assert info["entries"] == {"verl.trainer.main_ppo": "ppo_trainer", "verl.trainer.fsdp_sft_trainer": "sft_trainer"}
    assert "sft_trainer" in info["configs"] and "sft_trainer_engine" not in info["configs"]


def test_info_entries_of_the_platform_verl(validator):
    assert validator.request({"op": "info"})["entries"] == {
        "verl.trainer.main_ppo": "ppo_trainer", "verl.trainer.sft_trainer": "sft_trainer_engine"}


def test_an_old_launch_script_is_refused_by_091_and_accepted_by_041(validator, v041):
    new = _validate(validator, "ppo_trainer", OLD_SCRIPT)
    refused = {e["key"]: e["message"] for e in new["errors"]}
    assert set(refused) == set(OLD_KEYS), new["errors"]
    # verl's history (the rename table) says where each went, or that it was removed
    assert all(any(w in m for w in ("unknown key", "since verl", "removed it")) for m in refused.values()), refused
    assert "critic.fsdp.param_offload" in refused["critic.model.fsdp_config.param_offload"]  # where it went

    old = _validate(v041, "ppo_trainer", OLD_SCRIPT)
    assert old["errors"] == [] and old["warnings"] == []  # warnings: verl's start-up checks did run


def test_a_grpo_command_passes_verl_041s_checks(v041):
    resp = _validate(v041, "ppo_trainer", GRPO)
    assert resp["errors"] == [] and resp["warnings"] == []


@pytest.mark.parametrize(("changes", "key", "says"), [
    # RayPPOTrainer._validate_config's bare `assert`: its condition (config. dropped) and the values.
    ({"data__train_batch_size": "32"}, "data.train_batch_size",
     "assertion failed: data.train_batch_size >= actor_rollout_ref.actor.ppo_mini_batch_size "
     "(data.train_batch_size=32, actor_rollout_ref.actor.ppo_mini_batch_size=64)"),
    # The deprecated micro batch size beside its *_per_gpu successor: 0.4.1's own message.
    ({"actor_rollout_ref__actor__ppo_micro_batch_size": "8"}, "actor_rollout_ref.actor",
     "verl: [actor_rollout_ref.actor] You have set both"),
    # real_train_batch_size = 100 × 1 does not split over 8 GPUs (explained with the keys behind it).
    ({"data__train_batch_size": "100", "actor_rollout_ref__rollout__n": "1",
      "actor_rollout_ref__actor__ppo_mini_batch_size": "50"}, "data.train_batch_size",
     "= 100 × 1 = 100 prompts' responses per step must divide evenly by 8"),
])
def test_batch_size_rules_are_verl_041s(v041, changes, key, says):
    resp = _validate(v041, "ppo_trainer", _with(GRPO, **changes))
    assert [e["key"] for e in resp["errors"]] == [key], resp["errors"]
    assert says in resp["errors"][0]["message"]


def test_a_critic_needs_a_micro_batch_size_under_041_only_with_gae(v041):
    gae = _validate(v041, "ppo_trainer", _with(GRPO, algorithm__adv_estimator="gae"))
    assert [e["message"] for e in gae["errors"]] == [
        "verl: [critic] Please set at least one of 'critic.micro_batch_size' or 'critic.micro_batch_size_per_gpu'."]


def test_sft_under_041_uses_the_fsdp_trainers_rules(v041):
    good = ["data.train_batch_size=64", "data.micro_batch_size_per_gpu=4", "trainer.n_gpus_per_node=8"]
    resp = _validate(v041, "sft_trainer", good)  # kind "sft" follows from the config's name
    assert resp["errors"] == [] and resp["warnings"] == []
    uneven = _validate(v041, "sft_trainer", _with(good, data__train_batch_size="60"))
    assert [e["key"] for e in uneven["errors"]] == ["data.train_batch_size"]
    sp = _validate(v041, "sft_trainer", [*good, "ulysses_sequence_parallel_size=3"])
    assert [e["key"] for e in sp["errors"]] == ["ulysses_sequence_parallel_size"]


def test_find_module_is_answered_by_the_old_environment(v041):
    kept = v041.request({"op": "find_module", "module": "verl.trainer.fsdp_sft_trainer"})
    assert kept["found"] is True and kept["replacement"] is None  # not "replaced": this verl still has it
    missing = v041.request({"op": "find_module", "module": "verl.trainer.sft_trainer"})
    assert missing["found"] is False and missing["replacement"] is None


def test_estimators_fall_back_to_the_trainers_enum(verl041_python):
    """A verl without core_algos.ADV_ESTIMATOR_REGISTRY: the names come from ray_trainer.AdvantageEstimator."""
    src = str(Path(argus.__file__).resolve().parents[1])
    code = ("import json, warnings; warnings.filterwarnings('ignore')\n"
            "import verl.trainer.ppo.core_algos as c\n"
            "names = sorted(c.ADV_ESTIMATOR_REGISTRY); del c.ADV_ESTIMATOR_REGISTRY\n"
            "from argus.verl.worker import advantage_estimators\n"
            "print(json.dumps([names, advantage_estimators()]))")
    out = subprocess.run([verl041_python, "-c", code], capture_output=True, text=True, timeout=600, check=True,  # noqa: S603
                         env={**os.environ, "PYTHONPATH": src})
    registry, fallback = json.loads(out.stdout.strip().splitlines()[-1])
    assert fallback == registry and "grpo" in fallback
