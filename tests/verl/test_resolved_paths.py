"""Paths are judged in the config verl resolves (ARCHITECTURE §7), through the API with REAL verl validation."""

from __future__ import annotations

import pytest
import yaml

from tests.verl.test_verl_admission import PPO_ARGS, advanced, errors_of, submit

pytestmark = pytest.mark.hostile  # the hostile-input suite: grows with every hole found

BOB = "<bob's home>"  # how a path in another home is shown: never the server's layout


def refused(alice, extra, *, drop=(), field):
    errs = errors_of(submit(alice, advanced(PPO_ARGS, extra=extra, drop=drop)))
    hits = [e for e in errs if e["field"] == field]
    assert hits, errs
    return hits


@pytest.mark.parametrize(("extra", "drop", "field"), [
    pytest.param(["'+x=..'", "'trainer.default_local_dir=$HOME/${x}/bob/ck'"], (),
                 "command: trainer.default_local_dir", id="helper-key"),
    pytest.param(["trainer.experiment_name=../bob", "'trainer.default_local_dir=$HOME/${trainer.experiment_name}/ck'"],
                 (), "command: trainer.default_local_dir", id="experiment-name"),
    pytest.param(["'+a=$HOME/.'", "'+b=/bob/ck'", "'trainer.default_local_dir=${a}.${b}'"], (),
                 "command: trainer.default_local_dir", id="split-across-keys"),
    pytest.param(["trainer.project_name=../..", "trainer.experiment_name=../../bob"], (),
                 "command: trainer.default_local_dir", id="verl-default-interpolation"),
    pytest.param(["'+x=..'", "'hydra.run.dir=$HOME/${x}/bob/out'"], (), "command: hydra.run.dir", id="hydra-run-dir"),
    pytest.param(["'+x=..'", "'data.val_files=$HOME/${x}/bob/datasets/val.parquet'"], ("data.val_files",),
                 "command: data.val_files", id="data-file"),
])
def test_interpolation_into_another_home_is_refused_with_the_resolved_path(alice, extra, drop, field):
    hits = refused(alice, extra, drop=drop, field=field)
    key = field.removeprefix("command: ")
    assert any(f"{key} resolves to" in e["message"] and BOB in e["value"] and "another user's home" in e["message"]
               for e in hits), hits
    assert not any("does not exist" in e["message"] for e in hits), hits  # bob's file was never opened


@pytest.mark.parametrize("value", ["${oc.env:SOME_VAR,../bob}", "${oc.env:HOME}"])
def test_environment_resolvers_are_refused(alice, value):
    errs = errors_of(submit(alice, advanced(PPO_ARGS, extra=[f"'trainer.experiment_name={value}'"])))
    assert any("'oc.env' resolver" in e["message"] for e in errs), errs


def test_outputs_outside_the_home_are_refused(alice):
    hits = refused(alice, ["'+d=/tmp'", "'trainer.default_local_dir=${d}/ck'"], field="command: trainer.default_local_dir")
    assert any("/tmp/ck" in e["message"] and "only write inside your home" in e["message"] for e in hits), hits


def test_legitimate_interpolation_is_accepted(alice):
    r = submit(alice, advanced(PPO_ARGS, extra=[
        "trainer.experiment_name=exp1", "'trainer.default_local_dir=$HOME/jobs/x/${trainer.experiment_name}'",
        "'hydra.run.dir=outputs/${trainer.experiment_name}'"]))
    assert r.status_code == 201, r.text


BASIC = {"workload": "grpo", "model_id": "$HOME/models/tiny", "train_file": "$HOME/datasets/train.parquet",
         "val_file": "$HOME/datasets/val.parquet", "nnodes": 1, "n_gpus_per_node": 2, "train_batch_size": 8,
         "max_prompt_length": 64, "max_response_length": 32, "rollout_n": 2}


def test_basic_overrides_are_resolved_too(alice):
    body = yaml.safe_dump({**BASIC, "overrides": ["+x=..", "trainer.default_local_dir=$HOME/${x}/bob/ck"]})
    errs = errors_of(submit(alice, body))
    assert any(e["field"] == "overrides[1]" and f"{BOB}/ck" in e["message"] for e in errs), errs
    body = yaml.safe_dump({**BASIC, "overrides": ["trainer.default_local_dir=$HOME/jobs/keep/${trainer.experiment_name}"]})
    r = submit(alice, body)
    assert r.status_code == 201, r.text
