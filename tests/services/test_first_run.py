"""Where New Task opens (services/first_run.starting_point): a template the default environment runs."""

from __future__ import annotations

from argus.services.first_run import starting_point


def test_an_environment_with_a_rollout_engine_opens_on_grpo() -> None:
    start = starting_point({"rollout_engines": ["vllm"], "cpu_training": False})
    assert (start.template, start.device) == ("basic-grpo", "gpu")
    assert start.first_templates == ("basic-grpo", "basic-ppo", "basic-sft")


def test_argus_own_environment_has_no_rollout_engine_and_opens_on_sft() -> None:
    start = starting_point({"rollout_engines": [], "cpu_training": False})
    assert (start.template, start.device) == ("basic-sft", "gpu") and start.first_templates[0] == "basic-sft"


def test_a_cpu_training_environment_asks_for_cpu() -> None:
    assert starting_point({"rollout_engines": ["vllm"], "cpu_training": True}).device == "cpu"
    assert starting_point({"rollout_engines": [], "cpu_training": True}).template == "basic-sft"


def test_an_unknown_default_environment_keeps_grpo_on_gpus() -> None:
    start = starting_point(None)
    assert (start.template, start.device) == ("basic-grpo", "gpu")
