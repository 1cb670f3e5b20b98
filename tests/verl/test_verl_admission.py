"""Admission with REAL verl validation through the HTTP API: one case per error class, plus acceptances."""

from __future__ import annotations

import shutil

import pytest
import yaml

from tests.helpers import post_spec

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


submit = post_spec


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
                 "7 × 1 = 7 prompts' responses per step must divide evenly by 2", id="indivisible-batch"),
    pytest.param(["actor_rollout_ref.actor.ppo_mini_batch_size=64"], ("actor_rollout_ref.actor.ppo_mini_batch_size",),
                 "command: data.train_batch_size", "ppo_mini_batch_size", id="mini-larger-than-batch"),
    pytest.param(["data.train_files=$HOME/datasets/no_gt.parquet"], ("data.train_files",),
                 "command: data.train_files", "reward_model.ground_truth", id="dataset-missing-column"),
    pytest.param(["data.val_files=$HOME/datasets/nope.parquet"], ("data.val_files",),
                 "command: data.val_files", "does not exist", id="dataset-missing-file"),
    pytest.param(["actor_rollout_ref.model.path=$HOME/models/does-not-exist"], ("actor_rollout_ref.model.path",),
                 "command: actor_rollout_ref.model.path", "$HOME/models/does-not-exist: model folder does not exist",
                 id="model-missing-folder"),
    pytest.param(["actor_rollout_ref.model.path=argus-test/not-cached"], ("actor_rollout_ref.model.path",),
                 "command: actor_rollout_ref.model.path", "huggingface-cli download argus-test/not-cached",
                 id="model-hub-id-not-cached"),
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


def test_a_missing_data_file_is_a_coded_refusal_in_the_users_words(alice):
    """Issue 37: the WebUI says it in Chinese from its code; the English stays the message scripts read."""
    errs = errors_of(submit(alice, advanced(PPO_ARGS, extra=["data.val_files=$HOME/datasets/nope.parquet"],
                                            drop=("data.val_files",))))
    hit = next(e for e in errs if e["field"] == "command: data.val_files")
    assert hit["code"] == "path.file_missing" and hit["params"] == {"path": "$HOME/datasets/nope.parquet"}
    assert hit["message"] == "$HOME/datasets/nope.parquet: file does not exist (upload it first, or check the path)"


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


# ---------------------------------------------------------------- model paths


def test_missing_file_messages_show_paths_as_written(alice, verl_server):
    root = str(verl_server.ctx.settings.root)
    errs = errors_of(submit(alice, advanced(PPO_ARGS, extra=["data.val_files=$HOME/datasets/nope.parquet",
                                                             "actor_rollout_ref.model.path=$HOME/models/nope"],
                                            drop=("data.val_files", "actor_rollout_ref.model.path"))))
    hits = {e["field"]: e for e in errs}
    assert hits["command: data.val_files"]["value"] == "$HOME/datasets/nope.parquet", errs
    assert hits["command: actor_rollout_ref.model.path"]["value"] == "$HOME/models/nope", errs
    assert root not in str(errs)


def test_basic_model_id_missing_and_hub_id_in_shared_cache(alice, verl_server):
    errs = errors_of(submit(alice, basic(model_id="$HOME/models/does-not-exist")))
    assert any(e["field"] == "model_id" and "$HOME/models/does-not-exist" in e["message"] for e in errs), errs
    errs = errors_of(submit(alice, basic(workload="ppo", model_id="argus-test/absent")))
    assert {e["field"] for e in errs} == {"model_id"}, errs  # actor and critic both come from model_id
    assert all("huggingface-cli download argus-test/absent" in e["message"] for e in errs), errs
    # the layout huggingface_hub writes under HF_HOME=<root>/hf
    root = verl_server.ctx.settings.root
    snap = root / "hf" / "hub" / "models--argus-test--tiny" / "snapshots" / ("0" * 40)
    shutil.copytree(root / "users" / "alice" / "models" / "tiny", snap)
    r = submit(alice, basic(workload="ppo", model_id="argus-test/tiny"))
    assert r.status_code == 201, r.text


def test_sft_model_path_checked(alice):
    errs = errors_of(submit(alice, basic(workload="sft", model_id="$HOME/models/nope",
                                         train_file="$HOME/datasets/sft.parquet", val_file=None)))
    assert any(e["field"] == "model_id" and "model folder does not exist" in e["message"] for e in errs), errs


def test_model_check_warn_and_off(alice, verl_server):
    settings = verl_server.ctx.settings
    body = advanced(PPO_ARGS, extra=["actor_rollout_ref.model.path=argus-test/downloads-itself"],
                    drop=("actor_rollout_ref.model.path",))
    try:
        settings.model_check = "warn"
        r = submit(alice, body)
        assert r.status_code == 201, r.text
        assert any("huggingface-cli download argus-test/downloads-itself" in w for w in r.json()["warnings"])
        settings.model_check = "off"
        r = submit(alice, body)
        assert r.status_code == 201, r.text
        assert not any("huggingface-cli" in w for w in r.json()["warnings"])
    finally:
        settings.model_check = "required"


# ---------------------------------------------------------------- SFT the way verl documents it (torchrun)

SFT_ARGS = [
    "data.train_files=$HOME/datasets/sft.parquet",
    "data.val_files=$HOME/datasets/sft.parquet",
    "model.path=$HOME/models/tiny",
    "data.train_batch_size=4",
    "data.micro_batch_size_per_gpu=2",
]


def sft_advanced(launcher: str, extra: list[str] | tuple[str, ...] = (), *, gpus: int = 2) -> str:
    command = f"{launcher} -m verl.trainer.sft_trainer \\\n  " + " \\\n  ".join([*SFT_ARGS, *extra]) + "\n"
    return yaml.safe_dump({"kind": "advanced", "workload": "sft", "nnodes": 1, "n_gpus_per_node": gpus,
                           "command": command})


@pytest.mark.parametrize("launcher", [
    "torchrun --nproc_per_node=2 --standalone",
    "torchrun --standalone --nnodes 1 --nproc-per-node 2",
    "python3 -m torch.distributed.run --standalone --nnodes=1 --nproc_per_node=2",
])
def test_torchrun_sft_is_accepted_and_validated_like_the_basic_template(alice, launcher):
    r = submit(alice, sft_advanced(launcher, ["trainer.test_freq=after_each_epoch",
                                              "trainer.save_freq=after_each_epoch"]))
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["info"]["train_rows"] == 16 and body["info"]["verl_validation_s"] > 0
    task = alice.get(f"/api/v2/tasks/{body['task_id']}").json()
    assert task["entry_module"] == "verl.trainer.sft_trainer"
    assert not any("nproc" in w or "n_gpus_per_node" in w for w in body["warnings"]), body["warnings"]


def test_torchrun_sft_inner_overrides_get_verls_checks(alice):
    errs = errors_of(submit(alice, sft_advanced("torchrun --nproc_per_node=2 --standalone",
                                                ["data.train_batch_sz=4", "trainer.test_freq=sometimes"])))
    by_field = {e["field"]: e["message"] for e in errs}
    assert "did you mean `data.train_batch_size`" in by_field["command: data.train_batch_sz"], errs
    assert "expects a number or 'after_each_epoch'" in by_field["command: trainer.test_freq"], errs


def test_torchrun_with_more_ranks_than_gpus_is_refused(alice):
    errs = errors_of(submit(alice, sft_advanced("torchrun --nproc_per_node=4 --standalone")))
    assert any("more processes than the task has GPUs" in e["message"] for e in errs), errs


def test_ppo_test_freq_stays_a_number(alice):
    errs = errors_of(submit(alice, advanced(PPO_ARGS, extra=["trainer.test_freq=after_each_epoch"])))
    assert any(e["field"] == "command: trainer.test_freq" and "expects a number (" in e["message"] for e in errs), errs


@pytest.mark.parametrize("launcher", ["torchrun --nproc_per_node=2 --standalone", "python3"])
def test_a_module_verl_removed_is_refused_with_its_replacement(alice, launcher):
    body = sft_advanced(launcher).replace("verl.trainer.sft_trainer", "verl.trainer.fsdp_sft_trainer")
    errs = errors_of(submit(alice, body))
    hits = [e for e in errs if e["field"] == "command" and e["value"] == "verl.trainer.fsdp_sft_trainer"]
    assert hits and "does not exist in the training environment" in hits[0]["message"], errs
    assert "replaced by verl.trainer.sft_trainer" in hits[0]["message"]


def test_torchrun_sft_is_validated_for_the_processes_it_starts_not_the_reservation(alice):
    """8 GPUs reserved, 2 ranks started: verl sees a world of 2 (the idle GPUs are a warning)."""
    r = submit(alice, sft_advanced("torchrun --nproc_per_node=2 --standalone", gpus=8))
    assert r.status_code == 201, r.text
    assert any("nproc" in w for w in r.json()["warnings"]), r.json()["warnings"]


def test_a_shell_operator_and_verls_own_problems_come_in_one_answer(alice):
    """Issue 35: ``cd … && python3 -m verl…`` with a key typo: the operator and the typo, in one refusal."""
    body = yaml.safe_load(advanced(PPO_ARGS, extra=["data.train_batch_sz=8"]))
    body["command"] = "cd $HOME && " + body["command"].rstrip() + " 2>&1 | tee log\n"
    errs = errors_of(submit(alice, yaml.safe_dump(body)))
    assert any(e["field"] == "command" and e["value"] == "&&" for e in errs), errs
    [typo] = [e for e in errs if e["field"] == "command: data.train_batch_sz"]
    assert "did you mean `data.train_batch_size`" in typo["message"]
    assert not any(e["value"] in ("2", "log", "tee") for e in errs), errs
