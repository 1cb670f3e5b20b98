"""core.sweeps: a sweep's own checks, its trials, and how trials are judged (early stops, the best)."""

from argus.core.sweeps import (
    EarlyStop,
    SweepSpec,
    TrialState,
    best,
    parse_sweep,
    stops,
    trial_doc,
    trial_params,
)

BASE = {"workload": "grpo", "model_id": "m", "train_file": "t", "val_file": "v", "nnodes": 1, "n_gpus_per_node": 1,
        "test_freq": 2, "overrides": ["data.shuffle=False"]}
ACC = "val-core/openai/gsm8k/acc/mean@1"


def _spec(**kw) -> SweepSpec:
    out = parse_sweep({"base": BASE, "parameters": {"lr": [1e-6, 1e-5]}, **kw})
    assert isinstance(out, SweepSpec), out
    return out


def test_a_sweep_names_each_field_it_gets_wrong() -> None:
    errors = parse_sweep({"base": BASE, "parameters": {"lr": []}, "metric": "critic/score/mean", "nope": 1,
                          "max_concurrent": 0})
    by = {e.field: e.message for e in errors}
    assert "validation metric" in by["metric"] and "DAPO" in by["metric"]
    assert "at least one value" in by["parameters"] and "unknown field" in by["nope"]
    assert "max_concurrent" in by
    errors = parse_sweep({"base": BASE, "parameters": {"lr": {"min": 1e-6, "max": 1e-4}}})
    assert any("method: random" in e.message for e in errors), errors
    errors = parse_sweep({"base": BASE, "parameters": {"lr": [1]}, "early_stop": {"rungs": [4, 2]}})
    assert [e.field for e in errors] == ["early_stop.rungs"] and "ascending" in errors[0].message
    errors = parse_sweep({"base": BASE, "parameters": {"lr": [1]}, "early_stop": {"rungs": [2]}})
    assert "needs a metric" in errors[0].message, errors
    errors = parse_sweep({"base": BASE, "parameters": {"a b": [1]}})
    assert any("is not a spec field" in e.message for e in errors), errors


def test_a_grid_is_every_combination_first_key_slowest_and_bounded_by_max_trials() -> None:
    spec = _spec(parameters={"lr": [1, 2], "actor_rollout_ref.rollout.n": [4, 8, 16]})
    params = trial_params(spec)
    assert params[:4] == [{"lr": 1, "actor_rollout_ref.rollout.n": 4}, {"lr": 1, "actor_rollout_ref.rollout.n": 8},
                          {"lr": 1, "actor_rollout_ref.rollout.n": 16}, {"lr": 2, "actor_rollout_ref.rollout.n": 4}]
    assert len(params) == 6
    refused = trial_params(_spec(parameters={"lr": [1, 2, 3]}, max_trials=2))
    assert refused[0].field == "max_trials" and "the grid has 3 points" in refused[0].message


def test_random_draws_are_seeded_and_inside_their_ranges() -> None:
    spec = _spec(method="random", max_trials=20, seed=7,
                 parameters={"lr": {"min": 1e-6, "max": 1e-3, "log": True}, "rollout_n": {"min": 2, "max": 9,
                                                                                     "integer": True},
                             "clip": [0.1, 0.2]})
    first, again = trial_params(spec), trial_params(spec)
    assert first == again and len(first) == 20
    assert all(1e-6 <= p["lr"] <= 1e-3 and 2 <= p["rollout_n"] <= 9 and isinstance(p["rollout_n"], int)
               and p["clip"] in (0.1, 0.2) for p in first)
    assert len({p["lr"] for p in first}) > 10
    assert trial_params(_spec(method="random"))[0].field == "max_trials"


def test_a_trial_sets_fields_of_its_kind_and_appends_the_rest_as_overrides() -> None:
    basic = trial_doc(BASE, {"lr": 1e-5, "actor_rollout_ref.rollout.n": 8}, name="s #0",
                      spec_fields=frozenset({"lr", "name"}))
    assert basic["lr"] == 1e-5 and basic["name"] == "s #0"
    assert basic["overrides"] == ["data.shuffle=False", "actor_rollout_ref.rollout.n=8"]
    assert BASE["overrides"] == ["data.shuffle=False"]
    adv = trial_doc({"kind": "advanced", "command": "python3 -m argus.jobs.steps x=1\n", "nnodes": 1},
                    {"nnodes": 2, "val_per_step": 0.5, "flag": True, "p": "a b"}, name="n",
                    spec_fields=frozenset({"nnodes", "command"}))
    assert adv["nnodes"] == 2
    assert adv["command"] == "python3 -m argus.jobs.steps x=1 val_per_step=0.5 flag=True 'p=a b'"


def _t(tid: str, i: int, values: dict[int, float], active: bool = True) -> TrialState:
    return TrialState(tid, i, active, values)


def test_a_trial_behind_at_its_rung_is_stopped_once_enough_reported() -> None:
    early = EarlyStop(rungs=[2, 4], keep=0.5)
    alone = [_t("a", 0, {2: 0.1})]
    assert stops(alone, early, "max") == []  # one report: nothing to compare with
    trials = [_t("a", 0, {2: 0.1}), _t("b", 1, {2: 0.3}), _t("c", 2, {2: 0.2, 4: 0.5}), _t("d", 3, {})]
    out = stops(trials, early, "max")
    assert [(s.task_id, s.rung, s.rank, s.reported, s.kept) for s in out] == [("a", 2, 3, 3, 1)]
    assert "ranked 3 of the 3 trials" in out[0].message(ACC)
    # c is judged at rung 4 (alone there: goes on), b leads rung 2; with min the order turns
    assert [s.task_id for s in stops(trials, early, "min")] == ["b"]
    ended = [_t("a", 0, {2: 0.1}, active=False), _t("b", 1, {2: 0.05})]  # an ended trial still ranks the others
    assert [s.task_id for s in stops(ended, early, "max")] == ["b"]


def test_the_best_trial_by_its_last_validated_value() -> None:
    trials = [_t("a", 0, {2: 0.9, 4: 0.2}), _t("b", 1, {2: 0.5}), _t("c", 2, {}), _t("d", 3, {2: 0.5})]
    assert best(trials, "max").task_id == "b"  # a tie: the earlier trial
    assert best(trials, "min").task_id == "a"
    assert best([_t("c", 0, {})], "max") is None
