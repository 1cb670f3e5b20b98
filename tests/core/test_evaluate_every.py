"""evaluate_checkpoints (issue 38) as pure rules: the option's checks at submit, against the rest of the spec, and
which steps a look queues (core/evaluate_every.py)."""

import pytest

from argus.core import checkpoints as ck
from argus.core import evaluate_every as ee
from argus.core.admission import AdmissionPolicy, Admitted, Rejected, admit
from argus.core.paths import DataLayout
from argus.core.taskspec import parse_taskspec

POLICY = AdmissionPolicy(layout=DataLayout.at("/data"), entry_allowlist=("verl.trainer.", "argus.jobs."))
GRPO = {"workload": "grpo", "nnodes": 1, "n_gpus_per_node": 1, "model_id": "Qwen/Qwen2.5-0.5B-Instruct",
        "train_file": "$HOME/datasets/t.parquet", "val_file": "$HOME/datasets/v.parquet", "save_freq": 2}
PPO_COMMAND = ("python3 -m verl.trainer.main_ppo data.train_files=$HOME/datasets/t.parquet "
               "data.val_files=$HOME/datasets/v.parquet trainer.nnodes=1 trainer.n_gpus_per_node=1")
ADVANCED = {"kind": "advanced", "workload": "ppo", "nnodes": 1, "n_gpus_per_node": 1, "command": PPO_COMMAND}
LM = {"tasks": ["tiny_arith"], "include_path": "$HOME/code/lm_tasks", "limit": 16}


def _errors(doc: dict) -> list:
    out = parse_taskspec(doc)
    assert isinstance(out, list), out
    return out


def _admit(doc: dict) -> Admitted | Rejected:
    spec = parse_taskspec(doc)
    assert not isinstance(spec, list), spec
    return admit(spec, "alice", POLICY)


@pytest.mark.parametrize(("value", "stored"), [
    (True, {}), (False, None),
    ({"val_file": "$HOME/datasets/math/test.parquet", "reward_name": "score"},
     {"val_file": "$HOME/datasets/math/test.parquet", "reward_name": "score"}),
    ({"lm_eval": LM, "val_file": None}, {"lm_eval": LM}),
])
def test_the_option_is_stored_as_none_an_empty_mapping_or_what_it_names(value, stored) -> None:
    spec = parse_taskspec({**GRPO, "evaluate_checkpoints": value})
    assert not isinstance(spec, list), spec
    assert spec.evaluate_checkpoints == stored
    assert parse_taskspec(GRPO).evaluate_checkpoints is None  # absent: off


@pytest.mark.parametrize(("value", "field", "says"), [
    (3, "evaluate_checkpoints", "must be true"),
    ("yes", "evaluate_checkpoints", "or a mapping of val_file"),
    ([True], "evaluate_checkpoints", "must be true"),
    ({"val_fil": "$HOME/x.parquet"}, "evaluate_checkpoints.val_fil", "did you mean 'val_file'?"),
    ({"val_file": 4}, "evaluate_checkpoints.val_file", "non-empty string"),
    ({"reward_path": "  "}, "evaluate_checkpoints.reward_path", "non-empty string"),
    ({"lm_eval": LM, "val_file": "$HOME/x.parquet"}, "evaluate_checkpoints.val_file", "verl's validation only"),
    ({"lm_eval": {"tasks": ["a b"]}}, "evaluate_checkpoints.lm_eval.tasks", "lm-eval tasks"),
    ({"lm_eval": {"tasks": ["a"], "shots": 1}}, "evaluate_checkpoints.lm_eval.shots", "unknown field"),
    ({"lm_eval": "arith"}, "evaluate_checkpoints.lm_eval", "must be a mapping"),
])
def test_a_bad_option_is_refused_with_its_field_value_and_fix(value, field, says) -> None:
    for doc in (GRPO, ADVANCED):
        errors = _errors({**doc, "evaluate_checkpoints": value})
        assert [e.field for e in errors] == [field], errors
        assert says in errors[0].message


def test_every_problem_of_the_option_at_once_beside_the_other_fields() -> None:
    errors = _errors({**GRPO, "nnodes": 0, "evaluate_checkpoints": {"val_fil": "x", "reward_nam": "y"}})
    assert {e.field for e in errors} == {"nnodes", "evaluate_checkpoints.val_fil", "evaluate_checkpoints.reward_nam"}


def test_verl_validation_needs_a_ppo_or_grpo_run_and_lm_eval_takes_any() -> None:
    sft = {**GRPO, "workload": "sft", "evaluate_checkpoints": True}
    del sft["val_file"]
    out = _admit(sft)
    assert isinstance(out, Rejected)
    [error] = out.errors
    assert error.field == "evaluate_checkpoints" and "sft task" in error.message and "lm_eval" in error.message
    assert isinstance(_admit({**sft, "evaluate_checkpoints": {"lm_eval": LM}}), Admitted)
    job = {**ADVANCED, "workload": "job", "n_gpus_per_node": 0,
           "command": "python3 -m argus.jobs.steps trainer.save_freq=2", "evaluate_checkpoints": True}
    assert [e.field for e in _admit(job).errors] == ["evaluate_checkpoints"]
    assert isinstance(_admit({**job, "evaluate_checkpoints": {"lm_eval": LM}}), Admitted)


def test_a_run_that_saves_no_checkpoint_is_refused_naming_save_freq() -> None:
    no_save = {k: v for k, v in GRPO.items() if k != "save_freq"}
    out = _admit({**no_save, "evaluate_checkpoints": True})
    assert isinstance(out, Rejected)
    assert [(e.field, e.value) for e in out.errors] == [("save_freq", -1)]
    assert "save_freq: N" in out.errors[0].message and "(the default)" in out.errors[0].message
    out = _admit({**GRPO, "overrides": ["trainer.save_freq=-1"], "evaluate_checkpoints": True})
    assert [(e.field, e.value) for e in out.errors] == [("overrides[0]", "trainer.save_freq=-1")]
    assert isinstance(_admit({**no_save, "overrides": ["trainer.save_freq=5"], "evaluate_checkpoints": True}), Admitted)
    out = _admit({**ADVANCED, "command": PPO_COMMAND + " trainer.save_freq=0", "evaluate_checkpoints": True})
    assert [(e.field, e.value) for e in out.errors] == [("command: trainer.save_freq", "trainer.save_freq=0")]


def test_a_command_that_names_no_save_freq_is_a_warning_its_config_file_may_set_it() -> None:
    out = _admit({**ADVANCED, "evaluate_checkpoints": True})
    assert isinstance(out, Admitted)
    assert any("evaluate_checkpoints" in w and "trainer.save_freq=N" in w for w in out.warnings), out.warnings
    out = _admit({**ADVANCED, "command": PPO_COMMAND + " trainer.save_freq=4", "evaluate_checkpoints": True})
    assert isinstance(out, Admitted) and not [w for w in out.warnings if "evaluate_checkpoints" in w]
    out = _admit({**ADVANCED, "command": PPO_COMMAND + " trainer.save_freq=4"})  # without the option: no word of it
    assert not [w for w in out.warnings if "evaluate_checkpoints" in w]


def test_the_options_paths_are_judged_like_the_fields_of_those_names() -> None:
    out = _admit({**GRPO, "evaluate_checkpoints": {"val_file": "/etc/passwd", "reward_path": "$HOME/datasets/r.py"}})
    assert isinstance(out, Rejected)
    assert {e.field for e in out.errors} == {"evaluate_checkpoints.val_file", "evaluate_checkpoints.reward_path"}
    out = _admit({**GRPO, "evaluate_checkpoints": {"lm_eval": {**LM, "include_path": "$HOME/../bob/code"}}})
    assert isinstance(out, Rejected) and out.errors[0].field == "evaluate_checkpoints.lm_eval.include_path"
    assert isinstance(_admit({**GRPO, "evaluate_checkpoints": {"val_file": "$HOME/common/datasets/m/test.parquet",
                                                                "reward_path": "$HOME/code/r.py"}}), Admitted)


def test_a_resumed_run_keeps_the_option_and_starts_after_the_step_it_resumes_from() -> None:
    doc = {**GRPO, "evaluate_checkpoints": {"val_file": "$HOME/datasets/m.parquet"}}
    resumed = ck.resume_spec(doc, "$HOME/jobs/grpo-1/checkpoints/global_step_6")
    assert resumed["evaluate_checkpoints"] == {"val_file": "$HOME/datasets/m.parquet"}
    assert ee.first_step_after(["python3", "-m", "verl.trainer.main_ppo", *resumed["overrides"]]) == 6
    advanced = ck.resume_spec({**ADVANCED, "evaluate_checkpoints": True}, "$HOME/runs/ppo/global_step_4/")
    assert advanced["evaluate_checkpoints"] is True
    assert ee.first_step_after(["bash", "-lc", advanced["command"]]) == 4
    assert ee.first_step_after(["bash", "-lc", PPO_COMMAND]) is None


def test_a_look_queues_the_new_complete_steps_no_evaluation_has_and_moves_its_mark() -> None:
    assert ee.plan([], None, None, set()) == ee.Plan((), None)  # no tracker yet: nothing, no mark
    assert ee.plan([2, 4], 4, None, set()) == ee.Plan((2, 4), 4)
    assert ee.plan([6, 4], 6, 4, set()) == ee.Plan((6,), 6)  # past the mark only, oldest first
    assert ee.plan([6, 8], 8, 4, {6}) == ee.Plan((8,), 8)  # step 6 was evaluated already (by the user)
    assert ee.plan([], 10, 8, set()) == ee.Plan((), 10)  # a tracker past every folder (one removed): the mark follows
    assert ee.plan([], 8, 8, set()) == ee.Plan((), 8)  # nothing new
