"""The unit of a verl metric key (core/metric_units.py): a chart of several keys gives each unit its own axis."""

from __future__ import annotations

from argus.core.metric_units import unit_of, units_of

# keys as verl 0.5–0.7 prints them (step lines of real GRPO/PPO runs)
CASES = {
    "timing_s/gen": "s", "timing_s/step": "s", "timing_s/update_actor": "s", "perf/time_per_step": "s",
    "timing_per_token_ms/gen": "ms", "timing_per_token_ms/adv": "ms",
    "perf/throughput": "tokens_per_s",
    "perf/max_memory_allocated_gb": "gib", "perf/max_memory_reserved_gb": "gib", "perf/cpu_memory_used_gb": "gib",
    "response_length/mean": "tokens", "response_length/max": "tokens", "prompt_length/mean": "tokens",
    "global_seqlen/balanced_max": "tokens", "global_seqlen/minmax_diff": "tokens", "perf/total_num_tokens": "tokens",
    # plain numbers: losses, scores, fractions, norms, rates
    "response_length/clip_ratio": None, "prompt_length/clip_ratio": None, "response_length/aborted_ratio": None,
    "actor/pg_loss": None, "actor/pg_clipfrac": None, "actor/ppo_kl": None, "actor/entropy": None,
    "actor/grad_norm": None, "actor/lr": None, "critic/score/mean": None, "critic/rewards/max": None,
    "critic/advantages/mean": None, "perf/mfu/actor": None, "val-core/openai/gsm8k/reward/mean@1": None,
    "training/global_step": None, "train/loss": None,
}


def test_units_of_verl_keys() -> None:
    assert {k: unit_of(k) for k in CASES} == CASES


def test_units_of_leaves_plain_numbers_out() -> None:
    assert units_of(["actor/pg_loss", "timing_s/gen", "response_length/mean"]) == {
        "timing_s/gen": "s", "response_length/mean": "tokens"}
