"""Admission round 3 (issue 23), through the HTTP API with real verl 0.9.1 validation.

§2 scripts written for older verl get the 0.9.1 key; the legacy reward rewrite applies only where verl
0.9.1 wants it; an old full config copy and a fork's entry module are named for what they are.
§3 every problem of a spec in one answer, each once, follow-on errors folded into their cause.
§4 JSON data, unknown reward managers and SFT without torchrun get verl's verdict before the GPUs do.
§5 (every test here, and every refusal of the suite: tests/conftest.py) no answer shows the server's folders.
"""

from __future__ import annotations

import json

import pytest
import yaml

from argus.verl.entry import fork_copy
from tests.verl.test_verl_admission import PPO_ARGS, advanced, errors_of, submit


def by_field(errs: list[dict]) -> dict[str, dict]:
    return {e["field"]: e for e in errs}


# ---------------------------------------------------------------- §2 older verl


def test_renamed_keys_name_their_091_key(alice):
    errs = by_field(errors_of(submit(alice, advanced(PPO_ARGS, extra=[
        "actor_rollout_ref.rollout.n_val=4", "actor_rollout_ref.actor.use_token_level_loss=True",
        "data.train_data_num=1000", "+actor_rollout_ref.actor.ppo_mini_batch_sizes=4"]))))
    n_val = errs["command: actor_rollout_ref.rollout.n_val"]["message"]
    assert "actor_rollout_ref.rollout.val_kwargs.n=4" in n_val and "did you mean" not in n_val
    loss = errs["command: actor_rollout_ref.actor.use_token_level_loss"]["message"]
    assert "actor_rollout_ref.actor.loss_agg_mode=token-mean" in loss
    assert "data.train_max_samples=1000" in errs["command: data.train_data_num"]["message"]
    sizes = errs["command: actor_rollout_ref.actor.ppo_mini_batch_sizes"]["message"]
    assert "actor_rollout_ref.actor.ppo_mini_batch_size=4" in sizes
    assert "ppo_micro_batch_size`" not in sizes and "ppo_micro_batch_size=" not in sizes  # never a deprecated key


def test_an_older_key_added_with_plus_is_accepted_with_a_warning(alice):
    """verl composes ``+actor_rollout_ref.rollout.n_val=4`` (its own qwen3moe recipe writes it) and never reads it:
    accepted, with the warning naming what verl reads instead, as a deprecated key gets (issue 35: one rule)."""
    r = submit(alice, advanced(PPO_ARGS, extra=["+actor_rollout_ref.rollout.n_val=4"]))
    assert r.status_code == 201, r.text
    [w] = [w for w in r.json()["warnings"] if "n_val" in w]
    assert "ignores it" in w and "actor_rollout_ref.rollout.val_kwargs.n=4" in w and "did you mean" not in w


def test_legacy_reward_error_names_the_key_the_user_wrote(alice):
    errs = errors_of(submit(alice, advanced(PPO_ARGS, extra=["custom_reward_function.path=$HOME/code/nope.py"])))
    [e] = [e for e in errs if "reward" in e["field"]]
    assert e["field"] == "command: custom_reward_function.path", errs
    assert "reward.custom_reward_function" not in e["message"] and e["value"] == "$HOME/code/nope.py"
    assert "Traceback" not in e["message"], "Argus's own frames say nothing the user can fix"


def test_legacy_reward_rewrite_leaves_keys_verl_never_had(alice):
    r = submit(alice, advanced(PPO_ARGS, extra=["custom_reward_function.path=$HOME/code/reward.py",
                                               "+custom_reward_function.overlong_buffer.enable=True"]))
    assert r.status_code == 201, r.text
    spec = alice.get(f"/api/v2/tasks/{r.json()['task_id']}/spec").json()["resolved"]
    assert "reward.custom_reward_function.path=" in spec["command"]
    assert "+custom_reward_function.overlong_buffer.enable=True" in spec["command"]
    assert "reward.custom_reward_function.overlong_buffer" not in spec["command"]


def test_legacy_reward_manager_is_moved_where_main_ppo_reads_it(alice):
    r = submit(alice, advanced(PPO_ARGS, extra=["reward_model.reward_manager=dapo"]))
    assert r.status_code == 201, r.text
    assert any("reward.reward_manager.name" in w for w in r.json()["warnings"]), r.json()
    errs = errors_of(submit(alice, advanced(PPO_ARGS, extra=["reward_model.reward_manager=prime"])))
    [e] = [e for e in errs if "reward_manager" in e["field"]]
    assert e["field"] == "command: reward_model.reward_manager" and "unknown reward manager" in e["message"]


def test_user_config_folder_in_the_old_layout_is_not_rewritten(alice, verl_server):
    cfg = verl_server.ctx.settings.root / "users" / "alice" / "code" / "oldcfg"
    cfg.mkdir(parents=True, exist_ok=True)
    (cfg / "my_ppo.yaml").write_text("hydra:\n  searchpath: [pkg://verl.trainer.config]\n"
                                     "defaults:\n  - ppo_trainer\n  - _self_\n"
                                     "custom_reward_function:\n  path: null\n  name: compute_score\n")
    r = submit(alice, advanced(PPO_ARGS, extra=["--config-path=$HOME/code/oldcfg", "--config-name=my_ppo",
                                               "custom_reward_function.path=$HOME/code/reward.py"]))
    assert r.status_code == 201, r.text
    assert not any("rewrote" in w for w in r.json()["warnings"]), r.json()


def test_full_copy_of_an_old_config_is_named(alice, verl_server):
    cfg = verl_server.ctx.settings.root / "users" / "alice" / "code" / "copied"
    cfg.mkdir(parents=True, exist_ok=True)
    # the shape of verl 0.3's ppo_trainer.yaml: every section spelled out, none of what 0.9 added
    (cfg / "ppo_trainer.yaml").write_text(yaml.safe_dump({
        "data": {"train_files": "x", "val_files": "x", "prompt_key": "prompt", "max_prompt_length": 512,
                 "max_response_length": 512, "train_batch_size": 1024, "return_raw_chat": False},
        "actor_rollout_ref": {"hybrid_engine": True, "model": {"path": "x"},
                              "actor": {"strategy": "fsdp", "ppo_mini_batch_size": 256},
                              "ref": {"log_prob_micro_batch_size": None}, "rollout": {"name": "vllm", "n": 1}},
        "critic": {"strategy": "fsdp", "optim": {"lr": 1e-5}},
        "reward_model": {"enable": False},
        "algorithm": {"gamma": 1.0, "lam": 1.0, "adv_estimator": "gae"},
        "trainer": {"total_epochs": 30, "project_name": "verl_examples", "nnodes": 1, "n_gpus_per_node": 8},
    }))
    errs = errors_of(submit(alice, advanced(PPO_ARGS, extra=["--config-path=$HOME/code/copied",
                                                            "--config-name=ppo_trainer"])))
    hits = [e for e in errs if "full copy of an older verl" in e["message"]]
    assert hits and "defaults: [ppo_trainer, _self_]" in hits[0]["message"], errs
    assert [e for e in errs if "not in struct" in e["message"]] == hits, "verl's raw error is folded into it"


def test_entry_module_of_a_projects_own_fork(alice, verl_server):
    fork = verl_server.ctx.settings.root / "users" / "alice" / "code" / "dapo-proj" / "verl" / "trainer"
    fork.mkdir(parents=True, exist_ok=True)
    (fork / "main_ppo_dapo.py").write_text("print('a fork')\n")
    body = advanced(PPO_ARGS).replace("verl.trainer.main_ppo", "verl.trainer.main_ppo_dapo")
    [e] = [e for e in errors_of(submit(alice, body)) if e["value"] == "verl.trainer.main_ppo_dapo"]
    assert "your own copy of verl ($HOME/code/dapo-proj/verl/trainer/main_ppo_dapo.py)" in e["message"]
    assert "verl.trainer.main_ppo" in e["message"].split("Run ", 1)[1]


# ---------------------------------------------------------------- §3 one answer


@pytest.mark.hostile
def test_six_problems_in_one_answer_each_once(alice, verl_server):
    root = verl_server.ctx.settings.root
    errs = errors_of(submit(alice, advanced(PPO_ARGS, drop=("actor_rollout_ref.actor.ppo_mini_batch_size",
                                                            "data.train_files", "data.val_files"), extra=[
        "actor_rollout_ref.actor.ppo_mini_batchsize=4",  # a typo: verl then refuses its default (256) too
        "data.train_files=$HOME/datasets/train.pkl",  # a format verl does not read
        "+data.train_batch_size=8",  # + on a key verl has: Hydra would stop composing
        f"data.val_files={root}/users/bob/x.parquet",  # another user's file
        "trainer.total_epochs=x",
        "algorithm.adv_estimator=grpoo"])))
    fields = [e["field"] for e in errs]
    assert len(fields) == len(set(fields)), errs  # one problem, once
    assert {"command: actor_rollout_ref.actor.ppo_mini_batchsize", "command: data.train_files",
            "command: data.train_batch_size", "command: data.val_files", "command: trainer.total_epochs",
            "command: algorithm.adv_estimator"} <= set(fields), errs
    typo = next(e for e in errs if e["field"] == "command: actor_rollout_ref.actor.ppo_mini_batchsize")
    assert "actor_rollout_ref.actor.ppo_mini_batch_size" in typo["message"]
    assert "until it is fixed, verl also reports" in typo["message"]  # the follow-on error, folded
    pkl = next(e for e in errs if e["field"] == "command: data.train_files")
    assert ".pkl" in pkl["message"] and ".parquet" in pkl["message"]
    assert next(e for e in errs if e["field"] == "command: data.val_files")["value"] == "<bob's home>/x.parquet"


def test_data_files_are_checked_while_a_key_is_wrong(alice):
    errs = by_field(errors_of(submit(alice, advanced(PPO_ARGS, drop=("data.val_files",), extra=[
        "data.train_batch_sz=8", "data.val_files=$HOME/datasets/not_parquet.parquet"]))))
    assert "command: data.train_batch_sz" in errs and "command: data.val_files" in errs


# ---------------------------------------------------------------- §4 verdicts


def _write_json_rows(path, rows: int, *, lines: bool, drop: str | None = None) -> None:  # noqa: ANN001
    data = [{"data_source": "toy", "prompt": [{"role": "user", "content": f"what is {i} plus 1 ?"}],
             "reward_model": {"style": "rule", "ground_truth": str(i + 1)}} for i in range(rows)]
    for row in data:
        row.pop(drop, None)
    path.write_text("\n".join(json.dumps(r) for r in data) + "\n" if lines else json.dumps(data))


def test_json_and_jsonl_data_are_read_as_verl_does(alice, verl_server):
    ds = verl_server.ctx.settings.root / "users" / "alice" / "datasets"
    _write_json_rows(ds / "val.jsonl", 5, lines=True)
    _write_json_rows(ds / "val.json", 7, lines=False)
    _write_json_rows(ds / "no_gt.jsonl", 3, lines=True, drop="reward_model")
    for name, rows in (("val.jsonl", 5), ("val.json", 7)):
        r = submit(alice, advanced(PPO_ARGS, drop=("data.val_files",), extra=[f"data.val_files=$HOME/datasets/{name}"]))
        assert r.status_code == 201, r.text
        assert r.json()["info"]["val_rows"] == rows
    errs = by_field(errors_of(submit(alice, advanced(PPO_ARGS, drop=("data.val_files",),
                                                     extra=["data.val_files=$HOME/datasets/no_gt.jsonl"]))))
    assert "reward_model.ground_truth" in errs["command: data.val_files"]["message"]


def test_unknown_reward_manager_is_refused_with_the_registry(alice):
    errs = by_field(errors_of(submit(alice, advanced(PPO_ARGS, extra=["reward.reward_manager.name=dapoo"]))))
    msg = errs["command: reward.reward_manager.name"]["message"]
    assert "did you mean `dapo`" in msg and "naive" in msg


def test_sft_without_torchrun_on_many_gpus_names_torchrun(alice):
    cmd = ("python3 -m verl.trainer.sft_trainer data.train_files=$HOME/datasets/sft.parquet "
           "data.val_files=$HOME/datasets/sft.parquet model.path=$HOME/models/tiny "
           "data.micro_batch_size_per_gpu=2 data.train_batch_size=16")
    r = submit(alice, yaml.safe_dump({"kind": "advanced", "nnodes": 1, "n_gpus_per_node": 8, "command": cmd}))
    [e] = [e for e in errors_of(r) if e["field"] == "command"]
    assert "replace 'python3 -m' with 'torchrun --standalone --nnodes=1 --nproc_per_node=8 -m'" in e["message"]
    assert e["fix"] == {"replace": "python3 -m", "with": "torchrun --standalone --nnodes=1 --nproc_per_node=8 -m"}
    one = submit(alice, yaml.safe_dump({"kind": "advanced", "nnodes": 1, "n_gpus_per_node": 1, "command": cmd}))
    assert one.status_code == 201, one.text
    assert not any("trainer.n_gpus_per_node" in w for w in one.json()["warnings"]), "the SFT trainer never reads it"


def test_the_fixes_of_one_answer_compose_never_contradict(alice):
    """Issue 35: 'python3 -m verl.trainer.fsdp_sft_trainer' on 2 GPUs under verl 0.9.1 was told to write
    'torchrun … -m verl.trainer.fsdp_sft_trainer', then that the module does not exist. Now one fix changes the
    launcher, the other the module, and applying both gives a command neither refuses."""
    cmd = ("python3 -m verl.trainer.fsdp_sft_trainer data.train_files=$HOME/datasets/sft.parquet "
           "data.val_files=$HOME/datasets/sft.parquet model.path=$HOME/models/tiny "
           "data.micro_batch_size_per_gpu=2 data.train_batch_size=16")
    spec = {"kind": "advanced", "nnodes": 1, "n_gpus_per_node": 2, "command": cmd}
    errs = [e for e in errors_of(submit(alice, yaml.safe_dump(spec))) if e["field"] == "command"]
    assert len(errs) == 2 and all(e.get("fix") for e in errs), errs
    assert not any("-m verl.trainer.fsdp_sft_trainer" in e["fix"]["with"] for e in errs), errs
    for e in errs:
        spec["command"] = spec["command"].replace(e["fix"]["replace"], e["fix"]["with"], 1)
    assert spec["command"].startswith("torchrun --standalone --nnodes=1 --nproc_per_node=2 -m verl.trainer.sft_trainer ")
    fixed = submit(alice, yaml.safe_dump(spec))
    assert fixed.status_code == 201, fixed.text


@pytest.mark.hostile
def test_fork_lookup_never_follows_a_symbolic_link(tmp_path):
    """The fork hint walks the user's own code folder only: a link to another home reveals nothing."""
    home, other = tmp_path / "users" / "alice", tmp_path / "users" / "bob"
    (other / "proj" / "verl" / "trainer").mkdir(parents=True)
    (other / "proj" / "verl" / "trainer" / "main_ppo_x.py").write_text("")
    (home / "code").mkdir(parents=True)
    (home / "code" / "bobs").symlink_to(other / "proj")
    (home / "code" / "linked").symlink_to(other)
    assert fork_copy("verl.trainer.main_ppo_x", home) is None
    (home / "code" / "mine" / "verl" / "trainer").mkdir(parents=True)
    (home / "code" / "mine" / "verl" / "trainer" / "main_ppo_x.py").symlink_to(other / "proj" / "verl" / "trainer" /
                                                                              "main_ppo_x.py")
    assert fork_copy("verl.trainer.main_ppo_x", home) is None  # the module file itself is a link
    (home / "code" / "mine" / "verl" / "trainer" / "main_ppo_x.py").unlink()
    (home / "code" / "mine" / "verl" / "trainer" / "main_ppo_x.py").write_text("")
    assert fork_copy("verl.trainer.main_ppo_x", home) == "code/mine/verl/trainer/main_ppo_x.py"
    assert fork_copy("os.path", home) is None  # only verl's modules have forks
