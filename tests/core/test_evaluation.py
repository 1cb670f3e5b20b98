"""core.evaluation: the spec of a checkpoint's evaluation, its scores and the best step."""

from argus.core.evaluation import VAL_ONLY, best_step, eval_spec, scores_of
from argus.core.metrics import MetricsParser

BASIC = {"workload": "grpo", "model_id": "$HOME/models/tiny", "train_file": "$HOME/d/train.parquet",
         "val_file": "$HOME/d/test.parquet", "reward_path": "$HOME/code/reward.py", "nnodes": 1, "n_gpus_per_node": 1,
         "overrides": ["trainer.val_only=False", "trainer.resume_mode=disable", "data.shuffle=False"]}
STEP = "$HOME/jobs/grpo-1/checkpoints/global_step_4"


def test_a_basic_spec_resumes_validates_only_and_keeps_the_rest() -> None:
    out = eval_spec(BASIC, STEP, name="eval grpo-1 step 4")
    assert out["name"] == "eval grpo-1 step 4" and out["model_id"] == BASIC["model_id"]
    assert out["val_file"] == BASIC["val_file"] and out["reward_path"] == BASIC["reward_path"]
    assert out["overrides"] == ["data.shuffle=False", "trainer.resume_mode=resume_path",
                                f"trainer.resume_from_path={STEP}", *VAL_ONLY]
    assert BASIC["overrides"][0] == "trainer.val_only=False"  # the source document is not changed
    assert "evaluate_checkpoints" not in eval_spec({**BASIC, "evaluate_checkpoints": {}}, STEP, name="x")
    other = eval_spec(BASIC, STEP, name="e", val_file="$HOME/d/math.parquet", reward_path="$HOME/code/m.py",
                      reward_name="score")
    assert (other["val_file"], other["reward_path"], other["reward_name"]) == (
        "$HOME/d/math.parquet", "$HOME/code/m.py", "score")


def test_an_advanced_command_gets_hydra_overrides_appended_quoted_where_needed() -> None:
    doc = {"kind": "advanced", "command": "python3 -m verl.trainer.main_ppo trainer.n_gpus_per_node=1\n"}
    out = eval_spec(doc, STEP, name="e", val_file="$HOME/my data/t.parquet")
    assert out["command"] == ("python3 -m verl.trainer.main_ppo trainer.n_gpus_per_node=1 "
                              f"trainer.resume_mode=resume_path trainer.resume_from_path={STEP} "
                              "trainer.val_only=True trainer.val_before_train=True "
                              "'data.val_files=$HOME/my data/t.parquet'")


def test_scores_are_the_last_validation_line_without_nan_or_training_metrics() -> None:
    p = MetricsParser()
    p.feed("step:0 - val-core/a/acc/mean@1:0.1\nstep:1 - actor/loss:0.3\n"
           "step:4 - val-core/a/acc/mean@1:0.5 - val-aux/a/len:12 - val-aux/a/x:nan - timing_s/testing:3.5\n")
    assert scores_of(p.series) == {"val-core/a/acc/mean@1": 0.5, "val-aux/a/len": 12.0}
    q = MetricsParser()
    q.feed("step:1 - actor/loss:0.3\n")
    assert scores_of(q.series) is None


def test_the_best_step_by_max_or_min_ties_to_the_later_one() -> None:
    scored = [(2, {"acc": 0.5, "loss": 1.0}), (4, {"acc": 0.7, "loss": 1.0}), (6, {"acc": 0.7}), (8, {})]
    assert best_step(scored, "acc") == 6
    assert best_step(scored, "loss", "min") == 4
    assert best_step(scored, "nope") is None and best_step([], "acc") is None


def test_an_eval_spec_is_the_basic_grpo_it_stands_for_validating_only() -> None:
    from argus.core.taskspec import BasicTaskSpec, parse_taskspec

    doc = {"kind": "eval", "model_id": "$HOME/models/tiny", "val_file": "$HOME/d/test.parquet", "nnodes": 1,
           "n_gpus_per_node": 2, "device": "cpu", "checkpoint": "$HOME/jobs/grpo-1/checkpoints/global_step_4/",
           "overrides": ["data.shuffle=False"]}
    spec = parse_taskspec(doc)
    assert isinstance(spec, BasicTaskSpec), spec
    assert (spec.workload, spec.train_file, spec.train_batch_size, spec.rollout_n, spec.save_freq) == (
        "grpo", "$HOME/d/test.parquet", 2, 1, -1)
    assert spec.name == "eval $HOME/models/tiny"
    assert spec.overrides == ["data.shuffle=False", "actor_rollout_ref.actor.use_kl_loss=False",
                              "algorithm.use_kl_in_reward=False", "trainer.resume_mode=resume_path",
                              "trainer.resume_from_path=$HOME/jobs/grpo-1/checkpoints/global_step_4", *VAL_ONLY]


def test_an_eval_spec_names_every_field_it_gets_wrong() -> None:
    from argus.core.taskspec import parse_taskspec

    errors = parse_taskspec({"kind": "eval", "nnodes": 1, "n_gpus_per_node": 1, "train_file": "x",
                             "checkpoint": "$HOME/jobs/x/checkpoints"})
    by_field = {e.field: e.message for e in errors}
    assert set(by_field) == {"train_file", "model_id", "val_file", "checkpoint"}, by_field
    assert "unknown field of an eval spec" in by_field["train_file"] and "global_step_4" in by_field["checkpoint"]
    errors = parse_taskspec({"kind": "eval", "model_id": "m", "val_file": "v", "nnodes": 1, "n_gpus_per_node": 1,
                             "lr": 1})
    assert [e.field for e in errors] == ["lr"]
    errors = parse_taskspec({"kind": "eval", "model_id": "m", "val_file": "v", "nnodes": 0, "n_gpus_per_node": 1})
    assert [e.field for e in errors] == ["nnodes"]  # the basic spec's own checks, under the same name


def test_a_command_is_an_evaluation_when_its_last_val_only_is_true() -> None:
    from argus.core.evaluation import is_evaluation

    assert is_evaluation(["python3", "-m", "verl.trainer.main_ppo", "trainer.val_only=True"])
    assert is_evaluation(["bash", "-lc", "python3 -m verl.trainer.main_ppo +trainer.val_only=true"])
    assert not is_evaluation(["python3", "-m", "x", "trainer.val_only=True", "trainer.val_only=False"])
    assert not is_evaluation(["python3", "-m", "verl.trainer.main_ppo"])


LM = {"kind": "eval", "model_id": "$HOME/models/tiny", "device": "cpu", "env": "verl-0.9.1-vllm-cpu",
      "lm_eval": {"tasks": ["tiny_arith", "tiny_words"], "include_path": "$HOME/code/lm tasks", "limit": 8,
                  "num_fewshot": 0, "batch_size": 4}}


def test_an_lm_eval_spec_is_the_lm_eval_program_on_one_worker() -> None:
    from argus.core.evaluation import is_evaluation
    from argus.core.taskspec import parse_taskspec

    spec = parse_taskspec(LM)
    assert not isinstance(spec, list), spec
    assert (spec.kind, spec.workload, spec.nnodes, spec.n_gpus_per_node, spec.device, spec.env, spec.cpus_per_node) == (
        "advanced", "job", 1, 1, "cpu", "verl-0.9.1-vllm-cpu", 1)  # one busy CPU counted, as for GPU below
    assert spec.command == ("python3 -m argus.jobs.lm_eval --model '$HOME/models/tiny' --tasks tiny_arith,tiny_words "
                            "--include-path '$HOME/code/lm tasks' --num-fewshot 0 --batch-size 4 --limit 8 --device cpu")
    assert is_evaluation(spec.command.split())  # its metric line is the task's scores
    doc = {k: v for k, v in LM.items() if k != "model_id"} | {"device": "gpu", "lm_eval": {"tasks": "t", "limit": 0.25},
                                                              "checkpoint": "$HOME/jobs/t/checkpoints/global_step_2/"}
    spec = parse_taskspec(doc)
    assert not isinstance(spec, list), spec
    assert spec.command.endswith("--checkpoint '$HOME/jobs/t/checkpoints/global_step_2' --tasks t --limit 0.25 "
                                 "--device cuda") and spec.cpus_per_node == 1


def test_an_lm_eval_spec_names_every_field_it_gets_wrong() -> None:
    from argus.core.taskspec import parse_taskspec

    bad = {"kind": "eval", "model_id": "$HOME/m", "checkpoint": "$HOME/m/step3", "val_file": "$HOME/v.parquet",
           "n_gpus_per_node": 2, "lm_eval": {"tasks": ["no spaces"], "limt": 3, "batch_size": 0, "limit": 1.5,
                                             "include_path": [""]}}
    errors = {e.field: e.message for e in parse_taskspec(bad)}
    assert set(errors) == {"val_file", "model_id", "checkpoint", "n_gpus_per_node", "lm_eval.tasks", "lm_eval.limt",
                           "lm_eval.batch_size", "lm_eval.limit", "lm_eval.include_path"}, errors
    assert "did you mean 'limit'" in errors["lm_eval.limt"] and "not both" in errors["model_id"]
    assert "verl's validation only" in errors["val_file"] and "global_step_4" in errors["checkpoint"]
    missing = {e.field: e.message for e in parse_taskspec({"kind": "eval", "lm_eval": ["t"]})}
    assert "must be a mapping" in missing["lm_eval"] and "model_id: $HOME/models/tiny" in missing["checkpoint"]


def test_the_lm_eval_programs_scores_are_one_metric_line_of_finite_numbers() -> None:
    from argus.core.metrics import is_training_step, parse_metric_line
    from argus.jobs.lm_eval import metric_line, scores

    results = {"results": {"tiny_arith": {"alias": "tiny_arith", "acc,none": 0.5, "acc_stderr,none": "N/A",
                                          "exact_match,strict-match": 1, "f1,none": float("nan"), "ok,none": True}},
               "groups": {"tiny": {"acc,none": 0.25}}, "config": {"model": "hf"}}
    values = scores(results)
    assert values == {"lm-eval/tiny_arith/acc": 0.5, "lm-eval/tiny_arith/exact_match@strict-match": 1.0,
                      "lm-eval/tiny/acc": 0.25}
    step, parsed = parse_metric_line(metric_line(4, values))
    assert step == 4 and parsed == values and not is_training_step(parsed)
