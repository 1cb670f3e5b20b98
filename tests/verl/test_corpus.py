"""verl's own example scripts as Argus specs: accepted or refused exactly as verl 0.9.1's config stage does.

The corpus (``tests/verl/corpus/specs``) was made by ``scripts/verl_corpus.py`` from volcengine/verl's
``examples/`` (the snapshot is verl 0.8.0.dev; each file names its script and commit). Each file's
second line is the verdict of verl 0.9.1's own config stage (``tests/verl/corpus_truth.py``, run with
nothing of Argus). Argus must agree: accept what verl accepts (a verdict that only says the validator
lacks vLLM is the validator's environment, so a warning), and refuse what verl refuses, naming the key.
Then one-defect mutations of an accepted script must be refused naming the defect's key.

``-s`` prints the submit latency (dry runs through the HTTP API, verl validation included).
"""

from __future__ import annotations

import re
import statistics
import time
from pathlib import Path

import pytest

from tests.verl.conftest import USER
from tests.verl.corpus_home import SPECS, prepare

_TRUTH = re.compile(r"^# verl 0\.9\.1 config stage: (.*)$", re.M)
LATENCIES: list[float] = []


@pytest.fixture(scope="module")
def corpus_home(verl_server) -> Path:  # noqa: ANN001
    home = verl_server.ctx.settings.root / "users" / USER
    prepare(home)
    return home


def dry(client, body: str):  # noqa: ANN001, ANN201
    started = time.monotonic()
    r = client.post("/api/v2/tasks", params={"dry_run": "true"}, content=body.encode(),
                    headers={"Content-Type": "application/yaml"})
    LATENCIES.append(time.monotonic() - started)
    return r


@pytest.mark.parametrize("spec", SPECS, ids=[p.stem for p in SPECS])
def test_corpus_verdict_matches_verl(alice, corpus_home, spec: Path):  # noqa: ANN001
    text = spec.read_text()
    truth = _TRUTH.search(text)
    assert truth, f"{spec.name} has no recorded verdict"
    verdict = truth.group(1)
    r = dry(alice, text)
    if verdict == "accept" or "vllm version None not supported" in verdict:
        assert r.status_code == 200, f"false reject of {spec.name}: {r.text}"
        if verdict != "accept":
            assert any("has no vLLM" in w for w in r.json()["warnings"]), r.json()
        return
    assert r.status_code == 400, f"missed error in {spec.name} (verl: {verdict}): {r.text}"
    errors = r.json()["detail"]["errors"]
    key = re.search(r"Could not override '([\w.]+)'", verdict)
    module = re.search(r"no module ([\w.]+)", verdict)
    if key:
        assert any(e["field"] == f"command: {key.group(1)}" for e in errors), errors
    elif module:
        assert any(module.group(1) in str(e["value"]) + e["message"] for e in errors), errors


BASE = SPECS[0].parent / "grpo_trainer__run_qwen2-7b.yaml"
MUTATIONS = [
    # (what the script gets, the key the refusal must name, a word the message must carry)
    (("data.train_batch_size=1024", "data.train_batch_size=1001"), "command: data.train_batch_size", "nearest valid"),
    (("actor_rollout_ref.actor.ppo_mini_batch_size=256", "actor_rollout_ref.actor.ppo_mini_batchsize=256"),
     "command: actor_rollout_ref.actor.ppo_mini_batchsize", "did you mean"),
    (("actor_rollout_ref.rollout.n=5", "actor_rollout_ref.rollout.n=five"), "command: actor_rollout_ref.rollout.n",
     "expects a number"),
    (("algorithm.adv_estimator=grpo", "algorithm.adv_estimator=gpro"), "command: algorithm.adv_estimator",
     "did you mean"),
    (("data.train_files=$HOME/datasets/gsm8k/train.parquet", "data.train_files=$HOME/datasets/gsm8k/trian.parquet"),
     "command: data.train_files", "does not exist"),
    (("actor_rollout_ref.model.path=$HOME/models/Qwen2-7B-Instruct",
      "actor_rollout_ref.model.path=$HOME/models/Qwen2-7B-Instruct-missing"), "command: actor_rollout_ref.model.path",
     "$HOME/models/Qwen2-7B-Instruct-missing"),
    (("trainer.n_gpus_per_node=8", "trainer.n_gpus_per_node=0"), "command: trainer.n_gpus_per_node", "≥ 1"),
    (("actor_rollout_ref.actor.use_kl_loss=True", "actor_rollout_ref.actor.use_kl_loss=yes please"),
     "command: actor_rollout_ref.actor.use_kl_loss", "true or false"),
]


@pytest.mark.parametrize(("change", "field", "words"), MUTATIONS, ids=[m[1].split(": ")[1] for m in MUTATIONS])
def test_one_defect_is_named(alice, corpus_home, change, field, words):  # noqa: ANN001
    text = BASE.read_text()
    old, new = change
    assert old in text
    r = dry(alice, text.replace(old, f"'{new}'" if " " in new else new))
    assert r.status_code == 400, r.text
    errors = r.json()["detail"]["errors"]
    assert any(e["field"] == field and words in e["message"] for e in errors), errors


def test_zz_report_latency():
    """Not a timing assertion (house rule): prints what the corpus runs above measured."""
    if len(LATENCIES) < 10:
        pytest.skip("run with the corpus tests to measure")
    q = statistics.quantiles(LATENCIES, n=20)
    print(f"\ncorpus dry-run submit latency over {len(LATENCIES)} specs: p50 {statistics.median(LATENCIES):.3f} s, "
          f"p95 {q[18]:.3f} s, max {max(LATENCIES):.3f} s")
