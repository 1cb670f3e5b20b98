"""Every independent refusal of verl's checks in one answer (issue 37, item 2), with real verl.

verl raises on its first problem. A refused value used to end the rounds (``argus.verl.rounds``): now the key it
names goes back to verl's default and verl's checks run again, and what they say next is reported unless it may
be only a consequence of that default. Each refusal names the user's key and value, as alone.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.verl.test_dry_run_verl import dry
from tests.verl.test_verl_admission import PPO_ARGS, advanced

pytest.importorskip("verl")

BASE = ["algorithm.adv_estimator=grpo", "data.train_batch_size=8", "actor_rollout_ref.rollout.n=2",
        "trainer.nnodes=1", "trainer.n_gpus_per_node=2", "actor_rollout_ref.actor.ppo_mini_batch_size=4",
        "actor_rollout_ref.actor.use_kl_loss=True", "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2",
        "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=2",
        "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=2"]
BATCH = ["data.train_batch_size=7", "actor_rollout_ref.rollout.n=1"]  # 7 × 1 prompts do not split over 2 GPUs
LOSS = ["actor_rollout_ref.actor.loss_agg_mode=foo"]  # not one of verl's five modes
MINI = ["actor_rollout_ref.actor.ppo_mini_batch_size=16"]  # larger than data.train_batch_size=8


def spec(*changes: list[str]) -> list[str]:
    """BASE with ``changes`` in place of its values (``key=null`` leaves a key without a value)."""
    out = {o.split("=", 1)[0]: o for o in BASE}
    for change in changes:
        out.update({o.split("=", 1)[0]: o for o in change})
    return list(out.values())


def check(validator, overrides: list[str]) -> list[dict]:  # noqa: ANN001
    return validator.request({"op": "validate", "config": "ppo_trainer", "overrides": overrides})["errors"]


def test_a_value_verl_names_by_its_last_segment_is_the_users_key(validator):
    """verl's "Invalid loss_agg_mode: foo" names no key: the one leaf of that name holding the user's word is it
    (the critic's loss_agg_mode is drawn from the actor's: no second candidate). A number is no such word: "greater
    than 0" does not make the temperature's refusal the temperature's."""
    errors = check(validator, spec(LOSS))
    assert [(e["key"], e["value"]) for e in errors] == [("actor_rollout_ref.actor.loss_agg_mode", "foo")], errors
    sample = check(validator, spec(["actor_rollout_ref.rollout.val_kwargs.do_sample=True",
                                    "actor_rollout_ref.rollout.temperature=0"]))
    assert [(e["key"], e["value"]) for e in sample] == [("", None)], sample


def test_two_refused_values_come_in_one_answer_each_as_alone(validator):
    both = check(validator, spec(BATCH, LOSS))
    assert [(e["key"], e["value"]) for e in both] == [("data.train_batch_size", 7),
                                                      ("actor_rollout_ref.actor.loss_agg_mode", "foo")], both
    assert "7 × 1 = 7 prompts' responses per step must divide evenly by 2" in both[0]["message"]
    assert "Invalid loss_agg_mode: foo" in both[1]["message"]
    # each is what verl says of it alone (the user's value, not the default that stood in for the first)
    assert check(validator, spec(BATCH)) == both[:1]
    assert check(validator, spec(LOSS)) == both[1:]
    again = validator.request({"op": "validate", "config": "ppo_trainer", "overrides": spec(BATCH, LOSS)})
    assert again["errors"] == both and again["resolved"]["data.train_batch_size"] == 7  # the default stayed inside
    # another pair, in verl's order: the loss mode (the actor's config), then its batch sizes
    pair = check(validator, spec(LOSS, MINI))
    assert [(e["key"], e["value"]) for e in pair] == [("actor_rollout_ref.actor.loss_agg_mode", "foo"),
                                                      ("data.train_batch_size", 8)], pair
    assert "train_batch_size (8) must be >= actor.ppo_mini_batch_size (16)" in pair[1]["message"]


def test_a_refused_value_and_a_missing_key_come_in_one_answer(validator):
    missing = ["actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=null"]
    errors = check(validator, spec(BATCH, missing))
    assert [(e["key"], e["value"]) for e in errors] == [
        ("data.train_batch_size", 7), ("actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu", None)], errors
    assert "Please set at least one of" in errors[1]["message"]
    # and a missing key first, then a refused value, then what follows it
    errors = check(validator, spec(missing, LOSS, MINI))
    assert [e["key"] for e in errors] == ["actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu",
                                          "actor_rollout_ref.actor.loss_agg_mode", "data.train_batch_size"], errors


def test_a_refusal_that_may_follow_from_the_default_is_not_reported(validator):
    """2050 prompts do not split over 4 GPUs; verl's default in its place (1024) is smaller than the user's
    mini-batch (2000), which the user's own 2050 is not: that refusal is the default's, never shown."""
    four = ["trainer.n_gpus_per_node=4", "actor_rollout_ref.rollout.n=1", "actor_rollout_ref.actor.ppo_mini_batch_size=2000"]
    errors = check(validator, spec(four, ["data.train_batch_size=2050"]))
    assert [(e["key"], e["value"]) for e in errors] == [("data.train_batch_size", 2050)], errors
    assert "must divide evenly by 4" in errors[0]["message"]
    with_default = check(validator, spec(four, ["data.train_batch_size=1024"]))
    assert "train_batch_size (1024) must be >= actor.ppo_mini_batch_size (2000)" in with_default[0]["message"]
    # an independent refusal before the default comes in is still reported; the one after it still is not
    errors = check(validator, spec(four, ["data.train_batch_size=2050"], LOSS))
    assert [e["key"] for e in errors] == ["data.train_batch_size", "actor_rollout_ref.actor.loss_agg_mode"], errors


def test_each_refusal_stays_at_its_override_line(verl_server, alice):
    body = advanced(PPO_ARGS, extra=[*BATCH, *LOSS], drop=("data.train_batch_size", "actor_rollout_ref.rollout.n"))
    r = dry(alice, body)
    assert r.status_code == 400, r.text
    errors = {e["field"]: e for e in r.json()["detail"]["errors"]}
    lines = body.splitlines()
    for key, value in (("data.train_batch_size", 7), ("actor_rollout_ref.actor.loss_agg_mode", "foo")):
        e = errors[f"command: {key}"]
        assert e["value"] == value, e
        assert e["line"] is not None and f"{key}={value}" in lines[e["line"] - 1], (e, lines)


CHAIN = """
import json, sys
sys.path.insert(0, "src")
from argus.verl import rounds, worker
from tests.verl.test_verl_rounds import BATCH, LOSS, spec
v = worker.Validator()
chain = spec(BATCH, LOSS, [f"{k}=null" for k in ("actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu",
    "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu", "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu")],
    ["actor_rollout_ref.rollout.val_kwargs.do_sample=True", "actor_rollout_ref.rollout.temperature=0"])
out = {}
for limit, budget in ((6, 60.0), (4, 60.0), (6, 0.0)):
    rounds.MAX_VERL_ROUNDS, rounds.ROUNDS_BUDGET_S = limit, budget
    out[f"{limit} {budget}"] = [e["key"] or e["message"] for e in v.validate("ppo_trainer", chain, "ppo")["errors"]]
# verl's defaults, stand-ins and the critic's stand-in model (a hub id) are all taken back out of the config
from omegaconf import OmegaConf
rounds.MAX_VERL_ROUNDS, rounds.ROUNDS_BUDGET_S = 6, 60.0
cfg = worker._without_hydra(v.compose("ppo_trainer", [*chain, "algorithm.adv_estimator=gae",
                                                      "critic.ppo_micro_batch_size_per_gpu=2"], with_hydra=True))
before = OmegaConf.to_yaml(cfg)
found = worker._run_verl(lambda: worker._ppo_check()(cfg), v.schema("ppo_trainer"), cfg)[0]
out["gae"] = [len(found), OmegaConf.to_yaml(cfg) == before]
print(json.dumps(out))
"""


def test_the_round_limit_and_the_time_budget_hold() -> None:
    """Six refusals one after the other (a value, a missing key, a value, two missing keys, the temperature):
    six rounds report all six, four rounds the first four, and a spent budget only the first. Whatever the rounds
    set, the config is given back as composed."""
    repo = Path(__file__).resolve().parents[2]
    r = subprocess.run([sys.executable, "-c", CHAIN], cwd=repo, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    six = out["6 60.0"]
    assert six[:5] == ["data.train_batch_size", "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu",
                       "actor_rollout_ref.actor.loss_agg_mode", "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu",
                       "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu"], six
    assert len(six) == 6 and "temperature should be greater than 0" in six[5], six
    assert out["6 60.0"][:4] == out["4 60.0"] and out["6 0.0"] == six[:1], out
    assert out["gae"][0] >= 2 and out["gae"][1], out  # after some rounds with a critic, the config is as composed


def test_what_may_follow_from_a_change_and_what_is_never_changed() -> None:
    """The rules of ``rounds`` on a small config: values drawn from a changed key, what a message names, and the
    keys that keep the user's value (a switch, an interpolated default, a refused default)."""
    from omegaconf import OmegaConf

    from argus.verl import rounds
    from argus.verl.messages import Schema

    defaults = {"data": {"train_batch_size": 1024},
                "actor": {"ppo_mini_batch_size": 256, "use_dynamic_bsz": False, "strategy": "fsdp",
                          "loss_agg_mode": "token-mean", "micro": None},
                "critic": {"ppo_mini_batch_size": "${oc.select:actor.ppo_mini_batch_size,256}",
                           "forward": "${.ppo_mini_batch_size}"}}
    schema = Schema(OmegaConf.create(defaults), "ppo_trainer")
    cfg = OmegaConf.create(defaults)
    cfg.actor.ppo_mini_batch_size, cfg.actor.loss_agg_mode, cfg.data.train_batch_size = 16, "foo", 7
    cfg.actor.use_dynamic_bsz, cfg.actor.strategy = True, "megatron"
    links = rounds.interpolations(cfg)
    assert rounds.drawn_from("actor.ppo_mini_batch_size", links) == {
        "actor.ppo_mini_batch_size", "critic.ppo_mini_batch_size", "critic.forward"}
    drawn = rounds.drawn_from("data.train_batch_size", links)
    follows = [("data.train_batch_size", "anything"), ("", "real_train_batch_size (7) must be divisible by 2"),
               ("critic.ppo_mini_batch_size", "train_batch_size (1024) must be >= critic.ppo_mini_batch_size (2000)"),
               ("", "ZeroDivisionError")]  # names no key: cannot be told from a consequence
    assert all(rounds.follows_from({"key": k, "message": m}, drawn, schema) for k, m in follows)
    assert not rounds.follows_from({"key": "", "message": "Invalid loss_agg_mode: foo"}, drawn, schema)
    assert not rounds.follows_from({"key": "actor.micro", "message": "Please set actor.micro"}, drawn, schema)
    values = {k: rounds.next_value(k, schema, cfg, {}) for k in (
        "data.train_batch_size", "actor.loss_agg_mode", "actor.micro", "actor.use_dynamic_bsz", "actor.strategy",
        "critic.ppo_mini_batch_size", "critic.forward", "")}
    assert values == {"data.train_batch_size": 1024, "actor.loss_agg_mode": "token-mean", "actor.micro": 1,
                      "actor.use_dynamic_bsz": None, "actor.strategy": None, "critic.ppo_mini_batch_size": None,
                      "critic.forward": None, "": None}
    assert rounds.next_value("data.train_batch_size", schema, cfg, {"data.train_batch_size": 7}) is None  # once
