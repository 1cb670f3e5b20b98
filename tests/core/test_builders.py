import pytest

from argus.core.builders import PathView, build_advanced_argv, build_basic_argv, display_command, plan_batches
from argus.core.paths import DataLayout
from argus.core.taskspec import parse_taskspec

L = DataLayout.at("/private")


def spec(**kw):
    doc = {"workload": "grpo", "model_id": "Qwen/Qwen2.5-0.5B-Instruct", "train_file": "$HOME/datasets/t.parquet",
           "val_file": "$HOME/common/datasets/v.parquet", "nnodes": 1, "n_gpus_per_node": 4, **kw}
    return parse_taskspec(doc)


def argv_of(s, task_id="grpo-20261122-0001"):
    return build_basic_argv(s, PathView.real(L, "alice", task_id), task_id)


def test_grpo_template():
    argv = argv_of(spec())
    assert argv[:3] == ["python3", "-m", "verl.trainer.main_ppo"]
    assert "algorithm.adv_estimator=grpo" in argv
    assert "data.train_files=/private/users/alice/datasets/t.parquet" in argv
    assert "data.val_files=/private/datasets/v.parquet" in argv
    assert "trainer.default_local_dir=/private/users/alice/jobs/grpo-20261122-0001/checkpoints" in argv
    assert "trainer.n_gpus_per_node=4" in argv and "trainer.nnodes=1" in argv


def test_values_are_arguments_not_shell():
    # A hostile value stays one argv element; there is no shell between the driver and verl.
    s = spec(overrides=["trainer.experiment_name=x; rm -rf /"])
    argv = argv_of(s)
    assert "trainer.experiment_name=x; rm -rf /" in argv
    assert argv[0] == "python3" and "bash" not in argv
    # the display form quotes it so a copy-paste is safe too
    assert "'trainer.experiment_name=x; rm -rf /'" in display_command(argv)


def test_model_id_hostile_value_is_one_argument():
    s = spec()
    s.model_id = "x; rm -rf /"  # admission rejects this; the builder must still never interpret it
    argv = argv_of(s)
    assert "actor_rollout_ref.model.path=x; rm -rf /" in argv


def test_ppo_has_critic_and_reward():
    argv = argv_of(spec(workload="ppo", reward_path="$HOME/code/r.py"))
    assert "algorithm.adv_estimator=gae" in argv
    assert any(a.startswith("critic.model.path=") for a in argv)
    assert "reward.custom_reward_function.path=/private/users/alice/code/r.py" in argv
    assert "reward.custom_reward_function.name=compute_score" in argv


def test_sft_uses_torchrun():
    argv = argv_of(spec(workload="sft", val_file=None, n_gpus_per_node=8))
    assert argv[:3] == ["python3", "-m", "torch.distributed.run"]
    assert "--nproc_per_node=8" in argv and "verl.trainer.sft_trainer" in argv


def test_user_overrides_come_last():
    argv = argv_of(spec(overrides=["data.train_batch_size=7"]))
    assert argv[-1] == "data.train_batch_size=7"


def test_as_written_view_keeps_home():
    s = spec()
    argv = build_basic_argv(s, PathView.as_written("t1"), "t1")
    assert "data.train_files=$HOME/datasets/t.parquet" in argv
    assert "trainer.default_local_dir=$HOME/jobs/t1/checkpoints" in argv


def test_advanced():
    assert build_advanced_argv("python3 -m x") == ["bash", "-lc", "python3 -m x"]
    assert display_command(["bash", "-lc", "python3 -m x"]) == "python3 -m x"


@pytest.mark.parametrize("nnodes", [1, 2, 3, 4, 16])
@pytest.mark.parametrize("gpus", [1, 2, 3, 4, 6, 8])
@pytest.mark.parametrize("n", [1, 5, 8])
def test_batch_plan_divides_for_any_gang(nnodes, gpus, n):
    world = nnodes * gpus
    p = plan_batches(world, n)
    assert p.train_batch_size >= p.ppo_mini_batch_size
    assert p.ppo_mini_batch_size % world == 0
    assert (p.ppo_mini_batch_size * n // world) % p.micro_batch_size_per_gpu == 0
    assert p.train_batch_size % p.ppo_mini_batch_size == 0


def test_cpu_training_template_adds_the_cpu_settings_and_user_overrides_win():
    """Issue 34: device: cpu adds what verl 0.9.1 on CPU needs; the user's overrides still come last."""
    s = spec(device="cpu", n_gpus_per_node=1, max_prompt_length=128, max_response_length=32,
             overrides=["actor_rollout_ref.rollout.enforce_eager=False"])
    argv = argv_of(s)
    for setting in ("trainer.device=cpu", "actor_rollout_ref.actor.strategy=fsdp2",
                    "+actor_rollout_ref.rollout.enable_sleep_mode=False", "actor_rollout_ref.rollout.max_model_len=160",
                    "actor_rollout_ref.rollout.checkpoint_engine.update_weights_bucket_megabytes=64",
                    "reward.num_workers=1", "transfer_queue.backend.SimpleStorage.num_data_storage_units=1"):
        assert setting in argv, setting
    assert "transfer_queue.backend.SimpleStorage.num_data_storage_units=2" not in argv
    assert argv.index("actor_rollout_ref.rollout.enforce_eager=True") < argv.index(
        "actor_rollout_ref.rollout.enforce_eager=False")
    assert "critic.strategy=fsdp2" in argv_of(spec(workload="ppo", device="cpu", n_gpus_per_node=1))
    sft = argv_of(spec(workload="sft", device="cpu", n_gpus_per_node=2))
    assert "--nproc_per_node=2" in sft and "trainer.device=cpu" in sft and "engine.strategy=fsdp2" in sft
    gpu = argv_of(spec())
    assert not [a for a in gpu if a.startswith(("trainer.device=", "reward.num_workers="))]


def test_device_is_gpu_or_cpu():
    assert spec().device == "gpu"
    (e,) = spec(device="tpu")
    assert e.field == "device" and "'gpu'" in e.message and "'cpu'" in e.message
