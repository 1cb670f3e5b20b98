import pytest

from argus.core.taskspec import AdvancedTaskSpec, BasicTaskSpec, load_spec_document, parse_taskspec


def _errors(doc):
    out = parse_taskspec(doc)
    assert isinstance(out, list), out
    return {e.field: e for e in out}


BASIC = {"workload": "grpo", "model_id": "Qwen/Qwen2.5-0.5B-Instruct", "train_file": "$HOME/datasets/t.parquet",
         "val_file": "$HOME/datasets/v.parquet", "nnodes": 1, "n_gpus_per_node": 2}


def test_no_kind_is_basic():
    spec = parse_taskspec(dict(BASIC))
    assert isinstance(spec, BasicTaskSpec) and spec.kind == "basic" and spec.total_epochs == 1


def test_advanced():
    spec = parse_taskspec({"kind": "advanced", "workload": "ppo", "nnodes": 2, "n_gpus_per_node": 4,
                           "command": "python3 -m verl.trainer.main_ppo"})
    assert isinstance(spec, AdvancedTaskSpec)


def test_unknown_field_is_named_with_suggestion():
    errs = _errors({**BASIC, "total_epoch": 3})
    assert "total_epoch" in errs
    assert "did you mean 'total_epochs'" in errs["total_epoch"].message
    assert errs["total_epoch"].value == 3


def test_every_problem_at_once():
    errs = _errors({"workload": "dpo", "nnodes": 0, "n_gpus_per_node": "four", "bogus": 1})
    assert {"workload", "nnodes", "n_gpus_per_node", "bogus", "model_id", "train_file"} <= set(errs)
    assert "≥ 1" in errs["nnodes"].message
    assert "whole number" in errs["n_gpus_per_node"].message
    assert "required" in errs["model_id"].message and "model_id:" in errs["model_id"].message


def test_bad_kind():
    errs = _errors({"kind": "magic"})
    assert "advanced" in errs["kind"].message


def test_bool_is_not_a_number():
    errs = _errors({**BASIC, "nnodes": True})
    assert "nnodes" in errs


@pytest.mark.parametrize(
    "text, needle",
    [("a: [1,\n", "invalid YAML at line"), ("- 1\n- 2\n", "mapping"), ("", "empty"), ("{1: 2}", "strings")],
)
def test_documents(text, needle):
    out = load_spec_document(text)
    assert isinstance(out, list) and needle in out[0].message


def test_json_body():
    assert load_spec_document('{"nnodes": 1}', "application/json") == {"nnodes": 1}
    out = load_spec_document('{"nnodes": ', "application/json")
    assert isinstance(out, list) and "invalid JSON" in out[0].message


def test_yaml_aliases_refused():
    out = load_spec_document("a: &x [1]\nb: *x\n")
    assert isinstance(out, list) and "aliases" in out[0].message and "line 2" in out[0].message
