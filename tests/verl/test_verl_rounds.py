"""verl's refusals of values, each at the user's key (issue 37, item 2), with real verl."""

from __future__ import annotations

import pytest

pytest.importorskip("verl")

BASE = ["algorithm.adv_estimator=grpo", "data.train_batch_size=8", "actor_rollout_ref.rollout.n=2",
        "trainer.nnodes=1", "trainer.n_gpus_per_node=2", "actor_rollout_ref.actor.ppo_mini_batch_size=4",
        "actor_rollout_ref.actor.use_kl_loss=True", "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2",
        "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=2",
        "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=2"]
BATCH = ["data.train_batch_size=7", "actor_rollout_ref.rollout.n=1"]  # 7 × 1 prompts do not split over 2 GPUs
LOSS = ["actor_rollout_ref.actor.loss_agg_mode=foo"]  # not one of verl's five modes
MINI = ["actor_rollout_ref.actor.ppo_mini_batch_size=16"]  # larger than data.train_batch_size=8


def spec(*changes: list[str]) -> list[str]:
    """BASE with ``changes`` in place of its values (``key=null`` leaves a key without a value)."""
    out = {o.split("=", 1)[0]: o for o in BASE}
    for change in changes:
        out.update({o.split("=", 1)[0]: o for o in change})
    return list(out.values())


def check(validator, overrides: list[str]) -> list[dict]:  # noqa: ANN001
    return validator.request({"op": "validate", "config": "ppo_trainer", "overrides": overrides})["errors"]


def test_a_value_verl_names_by_its_last_segment_is_the_users_key(validator):
    """verl's "Invalid loss_agg_mode: foo" names no key: the one leaf of that name holding the user's word is it
    (the critic's loss_agg_mode is drawn from the actor's: no second candidate). A number is no such word: "greater
    than 0" does not make the temperature's refusal the temperature's."""
    errors = check(validator, spec(LOSS))
    assert [(e["key"], e["value"]) for e in errors] == [("actor_rollout_ref.actor.loss_agg_mode", "foo")], errors
    sample = check(validator, spec(["actor_rollout_ref.rollout.val_kwargs.do_sample=True",
                                    "actor_rollout_ref.rollout.temperature=0"]))
    assert [(e["key"], e["value"]) for e in sample] == [("", None)], sample
