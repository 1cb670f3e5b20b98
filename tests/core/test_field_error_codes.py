"""Admission's field errors as a code and parameters (issue 37): the common refusals of a spec carry a
``spec.*`` / ``path.*`` code whose English rendering is exactly the message scripts read, and the API body
carries both, so the WebUI says them in Chinese."""

from __future__ import annotations

import re
from typing import Any

import pytest

from argus.core import messages
from argus.core.admission import check_data_paths, check_foreign_paths, check_reward_path
from argus.core.example_paths import fold_example_paths
from argus.core.messages import EN, field_error, render
from argus.core.pathrules import check_path_value
from argus.core.paths import DataLayout
from argus.core.problems import shown
from argus.core.taskspec import parse_taskspec
from argus.errors import FieldError
from argus.web import i18n
from tests.core.test_messages_admission import SCENARIOS as MORE_SCENARIOS

LAYOUT = DataLayout.at("/private")
BASIC = {"workload": "grpo", "model_id": "m", "train_file": "$HOME/d/t.parquet", "nnodes": 1, "n_gpus_per_node": 1}


def spec_errors(**fields: Any) -> list[FieldError]:
    out = parse_taskspec({**BASIC, **fields})
    assert isinstance(out, list), out
    return out


def path_errors(fn: Any, *args: Any) -> list[FieldError]:
    errors: list[FieldError] = []
    fn(*args, "alice", LAYOUT, errors, fld="f")
    return errors


# One input per code, each the way a user meets it; the expected English is today's text, written out.
SCENARIOS: dict[str, tuple[Any, str]] = {
    "spec.unknown_field_did_you_mean": (lambda: spec_errors(devise="cpu"),
                                        "unknown field; did you mean 'device'? allowed fields: cpus_per_node, "),
    "spec.unknown_field": (lambda: spec_errors(zzz=1), "unknown field; allowed fields: cpus_per_node, device, "),
    "spec.missing": (lambda: parse_taskspec({"workload": "grpo"}),
                     "required field is missing; add 'nnodes: 1'"),
    "spec.one_of": (lambda: spec_errors(rollout_name="x"), "must be one of 'vllm', 'sglang' or 'trtllm'"),
    "spec.bound": (lambda: spec_errors(nnodes=0), "must be ≥ 1"),
    "spec.whole_number_range": (lambda: spec_errors(priority=1e9), "must be a whole number from -100 to 100"),
    "spec.whole_number_not_float": (lambda: spec_errors(nnodes=1.5),
                                    "must be a whole number, e.g. 4 (write 1000, not 1e3 or 1000.0)"),
    "spec.whole_number": (lambda: spec_errors(nnodes="two"), "must be a whole number, e.g. 4"),
    "spec.number": (lambda: spec_errors(lr="fast"), "must be a number, e.g. 1e-6"),
    "spec.too_long": (lambda: spec_errors(name="n" * 200), "is too long (at most 128 characters)"),
    "spec.empty": (lambda: spec_errors(model_id=""), "must not be empty"),
    "spec.string": (lambda: spec_errors(model_id=5), "must be a string"),
    "spec.overrides_list": (lambda: spec_errors(overrides="a=b"), "must be a list of 'key=value' strings"),
    "spec.too_many_items": (lambda: spec_errors(overrides=["a=b"] * 513), "has too many items (at most 512)"),
    "spec.kind": (lambda: parse_taskspec({"kind": "nope"}), "must be 'basic' (or omitted), 'advanced' or 'eval'"),
    "spec.unsafe_string": (lambda: spec_errors(reward_name="a\x00b"),
                           "must not contain NUL bytes or unpaired surrogate escapes"),
    "path.other_home": (lambda: check_path_value("trainer.default_local_dir", "/private/users/bob/ck", "alice", LAYOUT,
                                                 fld="f"),
                        "trainer.default_local_dir=<bob's home>/ck is in another user's home; use your own files "
                        "($HOME/...) and the shared $HOME/common/datasets and $HOME/common/hf"),
    "path.other_users_home": (lambda: path_errors(check_foreign_paths, "cat /private/users/bob/x"),
                              "refers to another user's home (bob's); you may only use your own files ($HOME/...) "
                              "and the shared $HOME/common/datasets and $HOME/common/hf"),
    "path.train_outside": (lambda: check_path_value("data.train_files", "/tmp/t.parquet", "alice", LAYOUT, fld="f"),
                           "data.train_files=/tmp/t.parquet: training data must be under your home "
                           "($HOME/datasets/...), a team folder of yours ($HOME/teams/<team>/...) or the shared "
                           "datasets ($HOME/common/datasets/...)"),
    "path.train_data_outside": (lambda: path_errors(check_data_paths, "/tmp/t.parquet"),
                                "training data must be under your home ($HOME/datasets/...), a team folder of yours "
                                "($HOME/teams/<team>/...) or the shared datasets ($HOME/common/datasets/...)"),
    "path.train_data_absolute": (lambda: path_errors(check_data_paths, "t.parquet"),
                                 "must be an absolute path such as $HOME/datasets/<file>.parquet or "
                                 "$HOME/common/datasets/<file>.parquet"),
    "path.reward_outside": (lambda: check_path_value("custom_reward_function.path", "/private/users/alice/r.py",
                                                     "alice", LAYOUT, fld="f"),
                            "custom_reward_function.path=$HOME/r.py: the reward function file must be under "
                            "$HOME/code/ (or a team's $HOME/teams/<team>/code/)"),
    "path.reward_file_outside": (lambda: path_errors(check_reward_path, "/tmp/r.py"),
                                 "the reward function file must be under $HOME/code/ (upload it there, e.g. "
                                 "$HOME/code/reward.py)"),
    "path.output_outside": (lambda: check_path_value("trainer.default_local_dir", "/tmp/ck", "alice", LAYOUT,
                                                     fld="f"),
                            "trainer.default_local_dir=/tmp/ck: verl writes there, and a task may "
                            "only write inside your home or your teams' folders; use $HOME/jobs/... or a relative "
                            "path (relative to $HOME/jobs/<task>)"),
    "path.data_root": (lambda: check_path_value("actor_rollout_ref.model.path", "/private/other/m", "alice", LAYOUT,
                                                fld="f"),
                       "actor_rollout_ref.model.path=<data root>/other/m is in the data root but outside your home "
                       "and the shared folders; use your own files ($HOME/...) and the shared $HOME/common/datasets "
                       "and $HOME/common/hf"),
    "path.example_files": (lambda: fold_example_paths([field_error("train_file", "$HOME/datasets/gsm8k/train.parquet",
                                                                   "path.file_missing",
                                                                   path="$HOME/datasets/gsm8k/train.parquet")]),
                           "the template's example files are not in your home yet ($HOME/datasets/gsm8k/train.parquet)"
                           ": upload your model and data first (the Data page, /data, or SFTP), then set train_file "
                           "to them"),
}
# codes written outside core (verl/check.py's data file check): tests/api checks them on a live server
ELSEWHERE = {"path.file_missing"}


@pytest.mark.parametrize("code", sorted(SCENARIOS))
def test_each_coded_refusal_is_its_templates_english_and_says_code_and_params(code: str) -> None:
    make, english = SCENARIOS[code]
    found = [e for e in make() if e.code == code]
    assert found, [(e.code, e.message) for e in make()]
    e = found[0]
    assert e.message.startswith(english) and e.message == render(code, e.params)  # the text scripts read
    body = e.as_dict()
    assert body["code"] == code and body["params"] == e.params and body["message"] == e.message
    assert "{" not in e.message
    # and the page's Chinese catalog says it with every value the English names
    zh = {k.removeprefix("msg."): v for k, v in i18n.catalog("zh").items() if k.startswith("msg.")}
    text = render(code, e.params, zh)
    assert re.search(r"[\u4e00-\u9fff]", text) and "{" not in text
    for v in e.params.values():
        assert str(v) in text


def test_every_spec_and_path_code_has_a_scenario() -> None:
    # the refusals converted later (issue 37, item 7) are made in tests/core/test_messages_admission.py
    areas = ("spec.", "path.")
    made = set(SCENARIOS) | {c for c in MORE_SCENARIOS if c.startswith(areas)} | ELSEWHERE
    assert made == {c for c in EN if c.startswith(areas)}


def test_an_uncoded_field_error_says_no_code_and_equality_ignores_it() -> None:
    plain = FieldError("nnodes", 0, "must be ≥ 1")
    assert "code" not in plain.as_dict() and "params" not in plain.as_dict()
    assert plain == field_error("nnodes", 0, "spec.bound", op="≥", limit=1)  # code/params: not in eq/hash


def test_a_resolved_value_keeps_english_without_a_code_and_a_validators_refusal_is_coded() -> None:
    e = check_path_value("data.train_files", "/tmp/t.parquet", "alice", LAYOUT, fld="f", resolved=True)[0]
    assert e.code is None and e.message.startswith("data.train_files resolves to /tmp/t.parquet: training data")
    stall = spec_errors(stall_after="soon")[0]  # a pydantic validator's ValueError (core.messages.Invalid)
    assert stall.field == "stall_after" and stall.code == "spec.duration"


def test_a_rewritten_message_keeps_its_code_only_while_it_still_renders() -> None:
    e = check_path_value("data.train_files", "/tmp/t.parquet", "alice", LAYOUT, fld="f")[0]
    kept = messages.retext(e, lambda s: s.replace("/tmp", "<server>"))
    assert kept.code == "path.train_outside" and kept.message == render(kept.code, kept.params)
    assert "<server>" in kept.params["at"]
    dropped = messages.retext(e, lambda s: s + " (and more)")
    assert dropped.code is None and dropped.params == {} and dropped.message.endswith("(and more)")
    # problems.shown (what the API does before answering) writes paths as the user does, code kept
    raw = field_error("f", "/private/users/alice/t.parquet", "path.file_missing", path="/private/users/alice/t.parquet")
    seen = shown([raw], "alice", LAYOUT)[0]
    assert seen.message == "$HOME/t.parquet: file does not exist (upload it first, or check the path)"
    assert seen.code == "path.file_missing" and seen.params == {"path": "$HOME/t.parquet"}
