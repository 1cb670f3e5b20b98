"""One round, one answer, soon (issue 37): verl's refusals all at once, the spec's own checks first, spare copies.

* verl stops at its first refusal: the worker gives a key with no value a stand-in and asks again, so a spec
  missing three micro batch sizes hears of all three in one answer (and nothing of the stand-ins);
* ``POST /api/v2/tasks?dry_run=true&checks=spec`` answers from the spec's own checks (no verl), the New Task
  page's first answer; ``checks`` on a real submit is a clear 400;
* the merged config's copy made between requests (``worker.make_spares``) composes exactly what a copy made on
  demand composes, and a request's edits never reach the next one.
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

MICRO = ("actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu",  # in the order verl checks them
         "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu",
         "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu")


def test_every_missing_micro_batch_size_is_named_in_one_answer(validator):
    overrides = ["algorithm.adv_estimator=grpo", "data.train_batch_size=8", "actor_rollout_ref.rollout.n=2",
                 "trainer.nnodes=1", "trainer.n_gpus_per_node=2", "actor_rollout_ref.actor.ppo_mini_batch_size=4",
                 "actor_rollout_ref.actor.use_kl_loss=True"]
    r = validator.request({"op": "validate", "config": "ppo_trainer", "overrides": overrides})
    assert [e["key"] for e in r["errors"]] == list(MICRO), r["errors"]
    assert all("Please set at least one of" in e["message"] for e in r["errors"])
    # the stand-ins never leave the worker: the next answer about the same spec is the same
    again = validator.request({"op": "validate", "config": "ppo_trainer", "overrides": overrides})
    assert again["errors"] == r["errors"]


def test_a_refused_value_after_a_missing_one_is_named_too(validator):
    """The missing actor size gets a stand-in; verl then reaches its do_sample rule and refuses the temperature."""
    overrides = ["algorithm.adv_estimator=grpo", "data.train_batch_size=8", "actor_rollout_ref.rollout.n=2",
                 "trainer.nnodes=1", "trainer.n_gpus_per_node=2", "actor_rollout_ref.actor.ppo_mini_batch_size=4",
                 "actor_rollout_ref.actor.use_kl_loss=True", *(f"{k}=2" for k in MICRO[1:]),
                 "actor_rollout_ref.rollout.val_kwargs.do_sample=True", "actor_rollout_ref.rollout.temperature=0"]
    r = validator.request({"op": "validate", "config": "ppo_trainer", "overrides": overrides})
    assert len(r["errors"]) == 2, r["errors"]
    assert r["errors"][0]["key"] == MICRO[0]
    assert "temperature should be greater than 0" in r["errors"][1]["message"]
    # the temperature's refusal names no key: it ends the rounds; with the actor's size given, it alone
    fixed = validator.request({"op": "validate", "config": "ppo_trainer", "overrides": [*overrides, f"{MICRO[0]}=2"]})
    assert [e["message"] for e in fixed["errors"]] == [r["errors"][1]["message"]]


def test_the_spec_checks_answer_alone_and_verl_then_says_more(verl_server, alice):
    body = advanced(PPO_ARGS, extra=["data.train_batch_sz=8"])  # a typo only verl's schema knows
    quick = alice.post("/api/v2/tasks", params={"dry_run": "true", "checks": "spec"}, content=body.encode(),
                       headers={"Content-Type": "application/yaml"})
    assert quick.status_code == 200 and quick.json()["checks"] == "spec", quick.text
    assert "verl_validation_s" not in quick.json()["info"]  # verl was not asked
    full = dry(alice, body)
    assert full.status_code == 400
    assert any(e["field"] == "command: data.train_batch_sz" for e in full.json()["detail"]["errors"])
    # the spec's own problems come in the quick answer, at their line, as the full one gives them
    bad = advanced(PPO_ARGS, gpus=5000)
    quick = alice.post("/api/v2/tasks", params={"dry_run": "true", "checks": "spec"}, content=bad.encode(),
                       headers={"Content-Type": "application/yaml"})
    assert quick.status_code == 400
    q = {e["field"]: e for e in quick.json()["detail"]["errors"]}
    assert "n_gpus_per_node" in q and q["n_gpus_per_node"]["line"] is not None
    ok = dry(alice, advanced(PPO_ARGS))
    assert ok.status_code == 200 and ok.json()["checks"] == "all" and ok.json()["info"]["verl_validation_s"] > 0


def test_checks_on_a_real_submit_or_an_unknown_stage_is_a_clear_400(verl_server, alice):
    body = advanced(PPO_ARGS).encode()
    r = alice.post("/api/v2/tasks", params={"checks": "spec"}, content=body, headers={"Content-Type": "application/yaml"})
    assert r.status_code == 400, r.text
    assert r.json()["detail"]["errors"][0]["field"] == "checks"
    r = alice.post("/api/v2/tasks", params={"dry_run": "true", "checks": "some"}, content=body,
                   headers={"Content-Type": "application/yaml"})
    assert r.status_code in (400, 422) and "checks" in r.text, r.text


SPARES = """
import json, sys
sys.path.insert(0, "src")
from omegaconf import OmegaConf
from argus.verl import worker
v = worker.Validator()
ov = ["data.train_batch_size=8", "trainer.total_training_steps=3"]
on_demand = OmegaConf.to_yaml(v.compose("ppo_trainer", ov))
before = [s.copy is None for s in worker.spares.values()]
made = worker.make_spares(lambda: False)
ready = [s.copy is not None for s in worker.spares.values()]
taken = v.compose("ppo_trainer", ov)
from_spare = OmegaConf.to_yaml(taken)
left = [s.copy is None for s in worker.spares.values()]
taken.data.train_batch_size = 12345  # a request's own edit
worker.make_spares(lambda: False)
after_edit = OmegaConf.to_yaml(v.compose("ppo_trainer", ov))
waiting = worker.make_spares(lambda: True)
print(json.dumps({"same": on_demand == from_spare, "untouched": after_edit == on_demand, "made": made,
                  "before": before, "ready": ready, "left": left, "waiting": waiting, "n": len(worker.spares)}))
"""


def test_a_spare_copy_composes_what_hydra_composes_and_is_used_once() -> None:
    repo = Path(__file__).resolve().parents[2]
    r = subprocess.run([sys.executable, "-c", SPARES], cwd=repo, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["same"] and out["untouched"], out
    assert out["made"] >= 1 and all(out["ready"]), out
    assert any(out["left"]), out  # the spare was taken: the next one is made after the answer
    assert out["waiting"] == 0  # a request waiting: no copy is made first
    assert 1 <= out["n"] <= 2


def test_prompt_lengths_are_read_once_per_file_version(tmp_path) -> None:
    """Every edit of a spec asked the worker for the same sampled prompt lengths; now a file's version answers
    once (a rewritten file is read again)."""
    from argus.verl import worker
    from tests.verl.conftest import make_tiny_model, write_rl_parquet

    make_tiny_model(tmp_path / "tiny")
    data = tmp_path / "train.parquet"
    write_rl_parquet(data, 12)
    worker._prompt_lengths.cache_clear()
    first = worker.prompt_lengths(str(tmp_path / "tiny"), str(data), "prompt", 8)
    again = worker.prompt_lengths(str(tmp_path / "tiny"), str(data), "prompt", 8)
    assert first == again and len(first["lengths"]) == 8 and all(n > 0 for n in first["lengths"])
    info = worker._prompt_lengths.cache_info()
    assert (info.hits, info.misses) == (1, 1)
    write_rl_parquet(data, 3)  # rewritten: another size, another answer
    assert len(worker.prompt_lengths(str(tmp_path / "tiny"), str(data), "prompt", 8)["lengths"]) == 3
    assert worker._prompt_lengths.cache_info().misses == 2
