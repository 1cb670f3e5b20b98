"""Admission with REAL verl validation through the HTTP API: one case per error class, plus acceptances."""

from __future__ import annotations

import pytest
import yaml

PPO_ARGS = [
    "algorithm.adv_estimator=grpo",
    "data.train_files=$HOME/datasets/train.parquet",
    "data.val_files=$HOME/datasets/val.parquet",
    "data.train_batch_size=8",
    "data.max_prompt_length=64",
    "data.max_response_length=32",
    "actor_rollout_ref.model.path=$HOME/models/tiny",
    "actor_rollout_ref.actor.ppo_mini_batch_size=4",
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2",
    "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=2",
    "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=2",
    "actor_rollout_ref.rollout.n=2",
    "actor_rollout_ref.actor.use_kl_loss=True",
    "trainer.nnodes=1",
    "trainer.n_gpus_per_node=2",
]


def advanced(args: list[str], *, extra: list[str] | tuple[str, ...] = (), drop: tuple[str, ...] = (),
             gpus: int = 2) -> str:
    """The base args minus ``drop`` keys, then ``extra`` (which may re-set a dropped key)."""
    kept = [a for a in args if a.split("=", 1)[0] not in drop] + list(extra)
    command = "python3 -m verl.trainer.main_ppo \\\n  " + " \\\n  ".join(kept) + "\n"
    return yaml.safe_dump({"kind": "advanced", "workload": "grpo", "nnodes": 1, "n_gpus_per_node": gpus,
                           "command": command})


def submit(client, body: str):  # noqa: ANN001, ANN201
    return client.post("/api/v2/tasks", content=body.encode(), headers={"Content-Type": "application/yaml"})


def errors_of(r) -> list[dict]:  # noqa: ANN001
    assert r.status_code == 400, r.text
    return r.json()["detail"]["errors"]


def test_valid_advanced_is_accepted_with_row_counts(alice):
    r = submit(alice, advanced(PPO_ARGS))
    assert r.status_code == 201, r.text
    info = r.json()["info"]
    assert info["train_rows"] == 24 and info["val_rows"] == 8
    assert info["verl_validation_s"] > 0


# (extra or replacing args, dropped keys, expected field, text that must be in the message)
ERROR_CASES = [
    pytest.param(["data.train_batch_sz=8"], (), "command: data.train_batch_sz",
                 "did you mean `data.train_batch_size`", id="unknown-key"),
    pytest.param(["+data.train_batch_sz=8"], (), "command: data.train_batch_sz",
                 "did you mean `data.train_batch_size`", id="plus-key-typo"),
    pytest.param(["data.train_batch_size=eight"], ("data.train_batch_size",), "command: data.train_batch_size",
                 "expects a number", id="non-numeric"),
    pytest.param(["actor_rollout_ref.actor.use_kl_loss=maybe"], ("actor_rollout_ref.actor.use_kl_loss",),
                 "command: actor_rollout_ref.actor.use_kl_loss", "true or false", id="non-bool"),
    pytest.param(["trainer.n_gpus_per_node=0"], ("trainer.n_gpus_per_node",), "command: trainer.n_gpus_per_node",
                 "must be ≥ 1", id="zero-gpus"),
    pytest.param(["algorithm.adv_estimator=grpoo"], ("algorithm.adv_estimator",), "command: algorithm.adv_estimator",
                 "did you mean `grpo`", id="unknown-estimator"),
    pytest.param([], ("actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu",),
                 "command: actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu", "ppo_micro_batch_size_per_gpu",
                 id="missing-micro-batch"),
    pytest.param(["data.train_batch_size=7", "actor_rollout_ref.rollout.n=1"],
                 ("data.train_batch_size", "actor_rollout_ref.rollout.n"), "command: data.train_batch_size",
                 "must be divisible", id="indivisible-batch"),
    pytest.param(["actor_rollout_ref.actor.ppo_mini_batch_size=64"], ("actor_rollout_ref.actor.ppo_mini_batch_size",),
                 "command: data.train_batch_size", "ppo_mini_batch_size", id="mini-larger-than-batch"),
    pytest.param(["data.train_files=$HOME/datasets/no_gt.parquet"], ("data.train_files",),
                 "command: data.train_files", "reward_model.ground_truth", id="dataset-missing-column"),
    pytest.param(["data.val_files=$HOME/datasets/nope.parquet"], ("data.val_files",),
                 "command: data.val_files", "does not exist", id="dataset-missing-file"),
    pytest.param(["data.val_files=$HOME/datasets/not_parquet.parquet"], ("data.val_files",),
                 "command: data.val_files", "not a readable parquet", id="dataset-not-parquet"),
    pytest.param(["reward.custom_reward_function.path=$HOME/code/bad_import.py"], (),
                 "command: reward.custom_reward_function.path", "argus_no_such_module_xyz", id="reward-import"),
    pytest.param(["reward.custom_reward_function.path=$HOME/code/raises.py"], (),
                 "command: reward.custom_reward_function.path", "ZeroDivisionError", id="reward-raises"),
    pytest.param(["reward.custom_reward_function.path=$HOME/code/reward.py",
                  "reward.custom_reward_function.name=nope"], (),
                 "command: reward.custom_reward_function.path", "no function 'nope'", id="reward-missing-fn"),
]


@pytest.mark.parametrize(("extra", "drop", "field", "text"), ERROR_CASES)
def test_error_classes(alice, extra, drop, field, text):
    errs = errors_of(submit(alice, advanced(PPO_ARGS, extra=extra, drop=drop)))
    hits = [e for e in errs if e["field"] == field]
    assert hits, errs
    assert any(text in e["message"] for e in hits), hits


def test_every_problem_is_reported_at_once(alice):
    errs = errors_of(submit(alice, advanced(PPO_ARGS, extra=["data.train_batch_sz=8", "algorithm.adv_estimator=nope"],
                                            drop=("algorithm.adv_estimator",))))
    fields = {e["field"] for e in errs}
    assert {"command: data.train_batch_sz", "command: algorithm.adv_estimator"} <= fields


def test_plus_key_without_a_near_miss_is_legal(alice):
    r = submit(alice, advanced(PPO_ARGS + ["+data.argus_custom_flag=1"]))
    assert r.status_code == 201, r.text


def test_legacy_reward_key_is_rewritten_and_spec_shows_both(alice):
    r = submit(alice, advanced(PPO_ARGS + ["custom_reward_function.path=$HOME/code/reward.py"]))
    assert r.status_code == 201, r.text
    warnings = r.json()["warnings"]
    assert any("rewrote custom_reward_function.path" in w for w in warnings), warnings
    assert any("compute_score" in w for w in warnings), warnings
    assert r.json()["info"]["reward_check"]["scores"] == [1.0, 1.0, 1.0]
    spec = alice.get(f"/api/v2/tasks/{r.json()['task_id']}/spec").json()
    assert " custom_reward_function.path=$HOME/code/reward.py" in spec["command_raw"]
    assert "reward.custom_reward_function.path=" not in spec["command_raw"]
    assert "reward.custom_reward_function.path=/" in spec["command_expanded"]
    assert " custom_reward_function.path" not in spec["command_expanded"]


def test_named_reward_returning_dict_is_accepted(alice):
    r = submit(alice, advanced(PPO_ARGS + ["reward.custom_reward_function.path=$HOME/code/named.py",
                                           "reward.custom_reward_function.name=my_score"]))
    assert r.status_code == 201, r.text


def test_seed_example_without_micro_batches_names_the_keys(alice):
    """Seed 000 §3.2-style command: verl 0.9 needs the micro-batch sizes; the error names them."""
    drop = ("actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu",
            "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu",
            "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu")
    errs = errors_of(submit(alice, advanced(PPO_ARGS, drop=drop)))
    assert any("micro_batch_size_per_gpu" in e["message"] for e in errs), errs


# ---------------------------------------------------------------- basic templates


def basic(**kw) -> str:
    doc = {"workload": "grpo", "model_id": "$HOME/models/tiny", "train_file": "$HOME/datasets/train.parquet",
           "val_file": "$HOME/datasets/val.parquet", "nnodes": 1, "n_gpus_per_node": 2, **kw}
    return yaml.safe_dump(doc)


@pytest.mark.parametrize("workload", ["ppo", "grpo"])
def test_basic_rl_templates_accepted(alice, workload):
    r = submit(alice, basic(workload=workload, nnodes=2, n_gpus_per_node=3, reward_path="$HOME/code/reward.py"))
    assert r.status_code == 201, r.text
    assert r.json()["info"]["train_rows"] == 24


def test_basic_sft_template_accepted_and_columns_checked(alice):
    r = submit(alice, basic(workload="sft", train_file="$HOME/datasets/sft.parquet", val_file=None,
                            n_gpus_per_node=4))
    assert r.status_code == 201, r.text
    errs = errors_of(submit(alice, basic(workload="sft", val_file=None)))  # RL data has no messages column
    assert any(e["field"] == "train_file" and "messages" in e["message"] for e in errs), errs


def test_basic_errors_point_at_spec_fields(alice):
    errs = errors_of(submit(alice, basic(train_batch_size=7, n_gpus_per_node=2, rollout_n=1,
                                         overrides=["data.max_prompt_lenght=10"])))
    fields = {e["field"] for e in errs}
    assert "train_batch_size" in fields and "overrides[0]" in fields, errs
    errs = errors_of(submit(alice, basic(reward_path="$HOME/code/raises.py")))
    assert any(e["field"] == "reward_path" and "ZeroDivisionError" in e["message"] for e in errs), errs


def test_prompt_token_lengths_with_local_tokenizer(alice):
    r = submit(alice, advanced(PPO_ARGS))
    assert r.status_code == 201 and r.json()["info"]["prompt_tokens_max_sampled"] > 3, r.text
    errs = errors_of(submit(alice, advanced(PPO_ARGS, extra=["data.max_prompt_length=3"],
                                            drop=("data.max_prompt_length",))))
    assert any(e["field"] == "command: data.max_prompt_length" and "tokens > data.max_prompt_length=3"
               in e["message"] for e in errs), errs
