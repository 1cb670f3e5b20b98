"""The root cause of a failed task, read from the tail of its log: realistic verl/Ray/torchrun output."""

from __future__ import annotations

from argus.core.failures import MAX_CAUSE_CHARS, failure_cause, failure_message

PLAIN = """\
2026-11-21 10:02:11,118\tINFO worker.py:1832 -- Connecting to existing Ray cluster at address: 10.0.0.5:6380...
Error executing job with overrides: ['algorithm.adv_estimator=grpo', 'data.train_files=/private/users/alice/datasets/gsm8k/train.parquet']
Traceback (most recent call last):
  File "/opt/venv/lib/python3.11/site-packages/verl/trainer/main_ppo.py", line 42, in main
    run_ppo(config)
  File "/opt/venv/lib/python3.11/site-packages/verl/trainer/main_ppo.py", line 71, in run_ppo
    from verl.experimental.transfer_queue import TransferQueueClient
  File "/opt/venv/lib/python3.11/site-packages/verl/experimental/transfer_queue/__init__.py", line 3, in <module>
    import transfer_queue
ModuleNotFoundError: No module named 'transfer_queue'

Set the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace.
"""

C, R = "\x1b[36m", "\x1b[0m"
RAY = f"""\
{C}(TaskRunner pid=4242){R} TaskRunner hostname: gpu-node-1, PID: 4242
{C}(WorkerDict pid=5120, ip=10.0.0.7){R} [W1121 10:02:40.1 ProcessGroupNCCL.cpp:4561] Warning: using GPU 0 as device
Error executing job with overrides: ['trainer.nnodes=1']
Traceback (most recent call last):
  File "/opt/venv/lib/python3.11/site-packages/verl/trainer/main_ppo.py", line 42, in main
    run_ppo(config)
  File "/opt/venv/lib/python3.11/site-packages/verl/trainer/main_ppo.py", line 96, in run_ppo
    ray.get(runner.run.remote(config))
  File "/opt/venv/lib/python3.11/site-packages/ray/_private/worker.py", line 2882, in get
    values, debugger_breakpoint = worker.get_objects(object_refs, timeout=timeout)
                                  ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/opt/venv/lib/python3.11/site-packages/ray/_private/worker.py", line 968, in get_objects
    raise value.as_instanceof_cause()
ray.exceptions.RayTaskError(ValueError): \x1b[36mray::TaskRunner.run()\x1b[39m (pid=4242, ip=10.0.0.5, actor_id=6fa0c2, repr=<main_ppo.TaskRunner object at 0x7f3a>)
  File "/opt/venv/lib/python3.11/site-packages/verl/trainer/main_ppo.py", line 317, in run
    trainer.init_workers()
  File "/opt/venv/lib/python3.11/site-packages/verl/trainer/ppo/ray_trainer.py", line 702, in init_workers
    self.actor_rollout_wg.init_model()
{C}(WorkerDict pid=5121, ip=10.0.0.7){R} INFO: shutting down
  File "/opt/venv/lib/python3.11/site-packages/verl/single_controller/ray/base.py", line 48, in __call__
    raise ValueError(f"real_train_batch_size ({{n}}) must be divisible by minimal possible batch size ({{m}})")
ValueError: real_train_batch_size (60) must be divisible by minimal possible batch size (8)

Set the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace.
{C}(raylet){R} [2026-11-21 10:03:01,001 E 4000 4000] (raylet) node_manager.cc:3069: 1 Workers (tasks / actors) killed due to memory pressure
"""

RAY_ACTOR_ONLY = f"""\
{C}(TaskRunner pid=4242){R} Exception raised in creation task: The actor died because of an error raised in its creation task
{C}(TaskRunner pid=4242){R} Traceback (most recent call last):
{C}(TaskRunner pid=4242){R}   File "/opt/venv/lib/python3.11/site-packages/verl/trainer/main_ppo.py", line 120, in __init__
{C}(TaskRunner pid=4242){R}     self.config = validate(config)
{C}(WorkerDict pid=77){R} Traceback (most recent call last):
{C}(WorkerDict pid=77){R} KeyboardInterrupt
{C}(TaskRunner pid=4242){R} ValueError: [actor_rollout_ref.actor] ppo_mini_batch_size (4) must be >= n_gpus (8)
{C}(TaskRunner pid=4242){R} shutting down
"""

TORCHRUN = """\
W1121 10:02:11.118000 4242 site-packages/torch/distributed/run.py:792] Setting OMP_NUM_THREADS environment variable for each process to be 1 in default
[rank0]: Traceback (most recent call last):
[rank1]: Traceback (most recent call last):
[rank0]:   File "<frozen runpy>", line 198, in _run_module_as_main
[rank0]:   File "/opt/venv/lib/python3.11/site-packages/verl/trainer/sft_trainer.py", line 470, in <module>
[rank0]:     main()
[rank1]:   File "<frozen runpy>", line 198, in _run_module_as_main
[rank0]:   File "/opt/venv/lib/python3.11/site-packages/transformers/modeling_utils.py", line 2236, in _check_and_enable_flash_attn_2
[rank0]:     raise ImportError(f"{preface} the package flash_attn seems to be not installed. {install_message}")
[rank0]: ImportError: FlashAttention2 has been toggled on, but it cannot be used due to the following error: the package flash_attn seems to be not installed. Please refer to the documentation of https://huggingface.co/docs/transformers/perf_infer_gpu_one#flashattention-2 to install Flash Attention 2.
[rank1]: ImportError: FlashAttention2 has been toggled on, but it cannot be used due to the following error: the package flash_attn seems to be not installed.
W1121 10:02:20.500000 4242 site-packages/torch/distributed/elastic/multiprocessing/api.py:897] Sending process 4244 closing signal SIGTERM
E1121 10:02:20.700000 4242 site-packages/torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: 1) local_rank: 0 (pid: 4243) of binary: /opt/venv/bin/python3
Traceback (most recent call last):
  File "<frozen runpy>", line 198, in _run_module_as_main
  File "/opt/venv/lib/python3.11/site-packages/torch/distributed/run.py", line 923, in <module>
    main()
  File "/opt/venv/lib/python3.11/site-packages/torch/distributed/elastic/multiprocessing/errors/__init__.py", line 355, in wrapper
    return f(*args, **kwargs)
  File "/opt/venv/lib/python3.11/site-packages/torch/distributed/launcher/api.py", line 270, in launch_agent
    raise ChildFailedError(
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\x20
============================================================
verl.trainer.sft_trainer FAILED
------------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-11-21_10:02:20
  host      : gpu-node-1
  rank      : 0 (local_rank: 0)
  exitcode  : 1 (pid: 4243)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================
"""

CHAINED = """\
Traceback (most recent call last):
  File "/x.py", line 3, in load
    return json.loads(text)
json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "/x.py", line 9, in <module>
    load()
RuntimeError: cannot read /private/users/alice/datasets/meta.json
"""


def test_plain_traceback_with_hydra_footer():
    assert failure_cause(PLAIN) == "ModuleNotFoundError: No module named 'transfer_queue'"
    assert failure_message(1, failure_cause(PLAIN)) == \
        "exit code 1: ModuleNotFoundError: No module named 'transfer_queue'"


def test_ray_task_error_gives_the_actors_exception():
    assert failure_cause(RAY) == "ValueError: real_train_batch_size (60) must be divisible by minimal possible batch " \
                                 "size (8)"


def test_ray_actor_prefixed_traceback_interleaved_with_other_actors():
    assert failure_cause(RAY_ACTOR_ONLY) == \
        "ValueError: [actor_rollout_ref.actor] ppo_mini_batch_size (4) must be >= n_gpus (8)"


def test_torchrun_child_failed_points_at_the_rank_root_cause():
    cause = failure_cause(TORCHRUN)
    assert cause is not None and cause.startswith("ImportError: FlashAttention2 has been toggled on")
    assert "ChildFailedError" not in cause


def test_chained_exceptions_give_the_last():
    assert failure_cause(CHAINED) == "RuntimeError: cannot read /private/users/alice/datasets/meta.json"


def test_tail_cut_in_the_middle_and_tqdm_carriage_returns():
    tail = PLAIN[PLAIN.index("  File"):]  # the 64 KiB tail began inside the traceback: no header
    assert failure_cause(tail) == "ModuleNotFoundError: No module named 'transfer_queue'"  # loose line
    bar = "\rEpoch 1/2:  40%|████      | 2/5 [00:07<00:10,  3.67s/it]"
    assert failure_cause(bar + PLAIN.replace("\n", "\r\n")) == "ModuleNotFoundError: No module named 'transfer_queue'"


def test_no_exception_means_no_cause():
    assert failure_cause("") is None
    assert failure_cause("step:1 - a:1\nKilled\n") is None
    assert failure_cause("WARNING: something failed\nError executing job with overrides: []\n") is None
    assert failure_message(137, None) == "exit code 137"


def test_long_cause_is_clipped():
    cause = failure_cause("Traceback (most recent call last):\n  File \"x\"\nValueError: " + "x" * 5000 + "\n")
    assert cause is not None and len(cause) == MAX_CAUSE_CHARS and cause.endswith("…")
