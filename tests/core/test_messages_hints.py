"""A failed task's specific hints (core/failures.py HINTS_EN) as hint.<name> + params (issue 37): the English
stays byte-identical to what diagnose wrote before the codes, and a stored hint is known again with its where-prefix."""

from __future__ import annotations

import re

from argus.core import messages
from argus.core.failures import HINTS_EN, _hint
from argus.core.messages import EN, Message, msg, render
from argus.web import i18n

# code, params, the English core/failures.py wrote before the codes (its f-strings at fabbdcc, filled in)
OLD = [
    ('hint.gpu_oom_rollout', {},
     'Out of GPU memory in the rollout engine: lower actor_rollout_ref.rollout.gpu_memory_utilization '
     'or max_num_batched_tokens, or free the GPU for it with '
     'actor_rollout_ref.actor.fsdp_config.param_offload=True'),
    ('hint.gpu_oom_ref_log_prob', {},
     'Out of GPU memory computing the reference log-probs: lower '
     'actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu (or log_prob_max_token_len_per_gpu), or '
     'set actor_rollout_ref.ref.fsdp_config.param_offload=True'),
    ('hint.gpu_oom_log_prob', {},
     'Out of GPU memory computing log-probs: lower '
     'actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu (or log_prob_max_token_len_per_gpu), '
     'or set actor_rollout_ref.actor.fsdp_config.param_offload=True'),
    ('hint.gpu_oom_critic', {},
     'Out of GPU memory in the critic: lower critic.ppo_micro_batch_size_per_gpu (or '
     'ppo_max_token_len_per_gpu), keep critic.model.enable_gradient_checkpointing=True'),
    ('hint.gpu_oom_actor', {},
     'Out of GPU memory in the actor update: lower '
     'actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu (or ppo_max_token_len_per_gpu), keep '
     'actor_rollout_ref.model.enable_gradient_checkpointing=True, set '
     'actor_rollout_ref.actor.fsdp_config.param_offload=True, or lower '
     'actor_rollout_ref.rollout.gpu_memory_utilization'),
    ('hint.gpu_oom_sft', {},
     'Out of GPU memory in SFT: lower data.micro_batch_size_per_gpu (or data.max_token_len_per_gpu), '
     'keep model.enable_gradient_checkpointing=True, or set engine.param_offload=True'),
    ('hint.sigkill', {},
     "No Python error and a SIGKILL usually mean the kernel's OOM killer (host RAM): offload less to "
     'CPU (fsdp_config.param_offload / optimizer_offload), run fewer rollout workers, lower '
     'data.dataloader_num_workers, or reserve more with memory_per_node in the spec'),
    ('hint.vllm_config', {'settings': 'actor_rollout_ref.rollout.max_num_batched_tokens, actor_rollout_ref.rollout.max_model_len'},
     'vLLM refused its configuration: set actor_rollout_ref.rollout.max_num_batched_tokens, '
     'actor_rollout_ref.rollout.max_model_len so that the condition in the message holds (verl passes '
     'these to vLLM as they are)'),
    ('hint.kv_cache', {},
     'The KV cache does not fit: raise actor_rollout_ref.rollout.gpu_memory_utilization or lower '
     'actor_rollout_ref.rollout.max_model_len (prompt + response length), or use a larger '
     'tensor_model_parallel_size'),
    ('hint.gpu_not_free', {},
     'The GPU was not free enough when the engine started: lower '
     "actor_rollout_ref.rollout.gpu_memory_utilization, or offload the trainer's weights with "
     'actor_rollout_ref.actor.fsdp_config.param_offload=True'),
    ('hint.sglang_kv_cache', {},
     "SGLang's weights left no room for its KV cache: raise "
     "actor_rollout_ref.rollout.gpu_memory_utilization (SGLang's mem_fraction_static), lower "
     'max_model_len, or use a larger tensor_model_parallel_size'),
    ('hint.tensor_parallel', {},
     "actor_rollout_ref.rollout.tensor_model_parallel_size must divide the model's attention heads and "
     'be at most the GPUs per node'),
    ('hint.nccl_ranks_waited', {'ranks': '0, 1, 3', 'seconds': 600, 'op': 'ALLREDUCE'},
     'Ranks 0, 1, 3 waited 600s in ALLREDUCE: a rank that is not listed stalled or died first (look '
     'for its error above: OOM, exception, killed), else the network / InfiniBand; raise '
     'actor_rollout_ref.nccl_timeout only if steps are legitimately that slow'),
    ('hint.nccl_ranks_waited_collective', {'ranks': '0, 1, 3', 'seconds': 600},
     'Ranks 0, 1, 3 waited 600s in a collective: a rank that is not listed stalled or died first (look '
     'for its error above: OOM, exception, killed), else the network / InfiniBand; raise '
     'actor_rollout_ref.nccl_timeout only if steps are legitimately that slow'),
    ('hint.nccl_peer_gone', {'peer': '10.0.0.5:4242'},
     'A peer (10.0.0.5:4242) went away mid-collective: its rank died first (look for its error above: '
     "OOM, exception, killed) or the network / InfiniBand between the nodes failed; check that node's "
     'links (NCCL_DEBUG=INFO names them)'),
    ('hint.nccl_peer_gone_unknown', {},
     'A peer went away mid-collective: its rank died first (look for its error above: OOM, exception, '
     "killed) or the network / InfiniBand between the nodes failed; check that node's links "
     '(NCCL_DEBUG=INFO names them)'),
    ('hint.missing_path', {'path': '/data/gsm8k/train.parquet'},
     '/data/gsm8k/train.parquet is not there when the task runs: upload it to your home (sftp or '
     '`argus files put`) and write its path as $HOME/...; shared data is read from '
     '$HOME/common/datasets and $HOME/common/hf'),
    ('hint.permission_path', {'path': '/srv/ckpt'},
     'The task was refused /srv/ckpt: a task writes only inside your home ($HOME/...); '
     '$HOME/common/datasets and $HOME/common/hf are read-only, so point outputs such as '
     'trainer.default_local_dir under $HOME'),
]


def test_every_specific_hint_renders_the_english_failures_wrote() -> None:
    assert sorted(c for c, _, _ in OLD) == sorted(HINTS_EN)  # each code, once
    for code, params, english in OLD:
        assert _hint(code, **params) == english, code
        assert msg(code, where="", **params).text == english, code
        assert msg(code, where="on rank0: ", **params).text == "on rank0: " + english, code
        assert EN[code] == "{where}" + HINTS_EN[code]


def test_a_stored_specific_hint_is_known_again_with_its_where() -> None:
    for code, params, english in OLD:
        kind = "nccl_timeout" if "nccl" in code else "missing_file"  # any kind whose generic hint it is not
        said = {k: str(v) for k, v in params.items()}  # as the text writes them
        where = "on WorkerDict pid=72, ip=10.0.0.4, GPU 3: "
        assert messages.failure_hint(kind, where + english) == Message(code, {"where": where, **said}, where + english)
        assert messages.failure_hint(kind, english) == Message(code, {"where": "", **said}, english)
    # a path that holds ": " stays the path's; the where-prefix is the shortest
    text = "on rank1: " + _hint("hint.missing_path", path="/data/a: b.parquet")
    assert messages.failure_hint("missing_file", text).params == {"where": "on rank1: ", "path": "/data/a: b.parquet"}
    # not a template's text (edited, or another version's words): no code, it stays English
    assert messages.failure_hint("gpu_oom", "on rank0: " + HINTS_EN["hint.gpu_oom_sft"] + " now") is None
    assert messages.failure_hint("missing_file", "upload /data/x.parquet to your home") is None
    # the generic hint keeps its failure.<kind> code
    assert messages.failure_hint("gpu_oom", "on rank3: " + messages.hint_for(messages.FailureKind.GPU_OOM)).code == (
        "failure.gpu_oom")


def test_the_chinese_catalog_says_each_specific_hint_after_its_where() -> None:
    zh = {k.removeprefix("msg."): v for k, v in i18n.catalog("zh").items() if k.startswith("msg.")}
    for code, params, _ in OLD:
        said = render(code, {"where": "on rank0: ", **params}, zh)
        assert said.startswith("on rank0: ") and re.search(r"[\u4e00-\u9fff]", said), code
        assert "{" not in said, code  # every parameter filled
        for v in params.values():
            assert str(v) in said, (code, v)
