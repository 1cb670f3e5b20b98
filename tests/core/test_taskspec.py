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


BASIC_YAML = ("workload: grpo\nmodel_id: Qwen/Qwen2.5-0.5B-Instruct\ntrain_file: $HOME/datasets/t.parquet\n"
              "nnodes: 1\nn_gpus_per_node: 2\n")


def _load(extra: str):
    doc = load_spec_document(BASIC_YAML + extra)
    assert isinstance(doc, dict), doc
    return parse_taskspec(doc)


@pytest.mark.parametrize("text, value", [("1e-4", 1e-4), ("1E+3", 1e3), ("5e-7", 5e-7), ("-1.5e-3", -1.5e-3),
                                         ("1.5e3", 1.5e3), ("2.5E-6", 2.5e-6), (".5e-2", 0.005)])
def test_yaml_scientific_notation_is_a_float(text, value):
    """PyYAML is YAML 1.1: "1e-4" (no dot) and "1.5e3" (unsigned exponent) were strings there."""
    assert load_spec_document(f"x: {text}\n") == {"x": value}


def test_lr_in_scientific_notation_is_accepted():
    spec = _load("lr: 1e-4\n")
    assert isinstance(spec, BasicTaskSpec) and spec.lr == 1e-4
    assert _load("lr: -1.5e-3\n")[0].field == "lr"  # a number now, refused by its bound (> 0)


@pytest.mark.parametrize("text", ['"1e-4"', "1e", "e5", "1e-4x", "1e-", "0x1p3", "true", "yes", "1e4.5"])
def test_non_numbers_stay_refused_where_a_number_is_required(text):
    out = _load(f"lr: {text}\n")
    assert isinstance(out, list) and out[0].field == "lr" and "must be a number" in out[0].message


def test_ints_and_other_scalars_unchanged():
    assert load_spec_document("a: 10\nb: 1_000\nc: 1.0\nd: .inf\ne: 1e3x\nf: '1e3'\n") == {
        "a": 10, "b": 1000, "c": 1.0, "d": float("inf"), "e": "1e3x", "f": "1e3"}


@pytest.mark.parametrize("field, text, bound", [
    ("train_batch_size", "1e30", "2147483647"),
    ("train_batch_size", str(10**30), "2147483647"),
    ("train_batch_size", str(2**31), "2147483647"),
    ("max_prompt_length", str(10**30), "2147483647"),
    ("total_training_steps", "1e12", "1000000000"),
    ("save_freq", str(10**30), "1000000000"),
    ("total_epochs", str(10**30), "100000"),
    ("nnodes", "1e30", "100000"),
])
def test_huge_numbers_are_refused_naming_the_bound(field, text, bound):
    out = _load(f"{field}: {text}\n") if field != "nnodes" else parse_taskspec(
        load_spec_document(BASIC_YAML.replace("nnodes: 1", f"nnodes: {text}")))
    assert isinstance(out, list), out
    err = {e.field: e for e in out}[field]
    assert bound in err.message, err.message


def test_whole_number_written_as_float_says_how_to_write_it():
    out = _load("train_batch_size: 1e3\n")
    assert isinstance(out, list) and "write 1000" in out[0].message


@pytest.mark.parametrize("name", ["a\x00b", "ab\n", "a\nb", "tab\there", "esc\x1b[31m", "del\x7f", "x\ud800"])
def test_name_with_control_characters_refused(name):
    errs = _errors({**BASIC, "name": name})
    assert "control characters" in errs["name"].message
    errs["name"].value.encode("utf-8")  # echoed back escaped: always encodable, one line
    assert "\n" not in errs["name"].value and "\x00" not in errs["name"].value


def test_plain_names_accepted():
    assert parse_taskspec({**BASIC, "name": "  grpo run é 日本 #3 "}).name == "grpo run é 日本 #3"


def test_nul_and_surrogates_refused_in_every_string():
    errs = _errors({**BASIC, "model_id": "Qwen\x00", "overrides": ["a=1", "b=\ud800"]})
    assert {"model_id", "overrides.1"} <= set(errs)
    assert "NUL" in errs["model_id"].message


def test_deep_yaml_is_a_field_error_not_a_recursion_error():
    out = load_spec_document("a: " + "[" * 5000 + "]" * 5000 + "\n")
    assert isinstance(out, list) and out[0].field == "(body)" and "nested deeper than" in out[0].message
    block = "a:\n" + "".join(" " * i + "- \n" for i in range(1, 40)) + " " * 40 + "- 1\n"
    out = load_spec_document(block)
    assert isinstance(out, list) and "nested deeper than" in out[0].message
    assert isinstance(load_spec_document("overrides: [a=1, b=2]\nx: {y: [[1]]}\n"), dict)


def test_deep_json_is_a_field_error_not_a_recursion_error():
    out = load_spec_document('{"a": ' + "[" * 50_000 + "]" * 50_000 + "}", "application/json")
    assert isinstance(out, list) and out[0].field == "(body)" and "nested deeper than" in out[0].message
    # brackets inside strings do not count
    assert load_spec_document('{"a": "' + "[" * 100 + '\\"", "b": [[1]]}', "application/json") == {
        "a": "[" * 100 + '"', "b": [[1]]}


def test_json_depth_scan_is_linear_on_hostile_strings():
    import time

    for text in ('"\\' * 131_000, '"' * 262_000, '["' + 'x\\"' * 80_000, "[]" * 131_000):
        t0 = time.monotonic()
        out = load_spec_document(text, "application/json")
        # a denial-of-service guard, not a benchmark: a quadratic scan of these strings takes minutes
        assert isinstance(out, list) and time.monotonic() - t0 < 20
