"""Benchmark: one verl validation in the validator (``argus.verl.worker``) for specs verl refuses more than once.

Issue 37, item 2: a refused value ended the rounds of verl's checks, so a spec with two bad values showed only the
first; now the key goes back to verl's default and the checks run again (``argus.verl.rounds``), while what they
say next cannot be a consequence of that, up to ``MAX_VERL_ROUNDS`` runs and ``ROUNDS_BUDGET_S`` of CPU. Each
spec here is the New Task bench's GRPO spec (bench/verdict_worker.py) with some values changed; one warm
``Validator`` in this process (no pipe, no server) validates each ``--samples`` times, the specs interleaved.
The figures are the request's own time, its CPU time (what a busy box inflates least), and how many
errors the answer gives.

    .venv/bin/python bench/verdict_rounds.py [--samples 20] [--src <a tree's src>]

``--src`` runs another tree's validator (the tree before the change: ``git archive <commit> src | tar -x -C
/tmp/before``). Prints figures; asserts nothing. Measured on the shared 2-core box at load average 13-25 (other
helpers' test runs), before (c28b277) and after, alternated twice, 15 samples each; p50 wall (the load makes it
~3x the quiet box's) and p50 CPU:

    spec                              before: wall     CPU  errors     after: wall     CPU  errors
    valid                                   310/482   65/79   0             218/277   66/67   0
    one refused value                       220/279   45/54   1             238/291   75/75   1
    two refused values                      149/294   43/55   1             320/402  100/98   2
    a value and a missing key               171/278   43/56   1             311/352   96/98   2
    six in a row                            202/391   42/57   1             546/616 169/169   6
    two values, with a critic (GAE)         308/513   73/93   1             436/572 142/155   2

Each further refusal costs one more run of verl's checks (~20 ms of CPU; ~40 ms with a critic, whose config
loads a tokenizer), and one run more confirms there is nothing after the last; a valid spec runs once, as before.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OVERRIDES = ["algorithm.adv_estimator=grpo", "data.train_batch_size=8", "actor_rollout_ref.rollout.n=2",
             "trainer.nnodes=1", "trainer.n_gpus_per_node=2", "data.max_prompt_length=64",
             "data.max_response_length=32", "actor_rollout_ref.actor.ppo_mini_batch_size=4",
             "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2",
             "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=2",
             "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=2"]
BATCH = ["data.train_batch_size=7", "actor_rollout_ref.rollout.n=1"]  # 7 prompts over 2 GPUs
LOSS = ["actor_rollout_ref.actor.loss_agg_mode=foo"]
MISSING = ["actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=null"]
SPECS = {
    "valid": [],
    "one refused value": BATCH,
    "two refused values": BATCH + LOSS,
    "a value and a missing key": BATCH + MISSING,
    "six in a row": BATCH + LOSS + MISSING + [
        "actor_rollout_ref.actor.use_kl_loss=True", "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=null",
        "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=null",
        "actor_rollout_ref.rollout.val_kwargs.do_sample=True", "actor_rollout_ref.rollout.temperature=0"],
    "two values, with a critic (GAE)": BATCH + LOSS + ["algorithm.adv_estimator=gae",
                                                       "critic.ppo_micro_batch_size_per_gpu=2"],
}


def spec(changes: list[str], step: int) -> list[str]:
    out = {o.split("=", 1)[0]: o for o in OVERRIDES}
    out.update({o.split("=", 1)[0]: o for o in changes})
    return [*out.values(), f"trainer.total_training_steps={step}"]  # a new spec each time, as an edit makes


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(p / 100 * (len(xs) - 1)))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=20)
    ap.add_argument("--src", default=str(ROOT / "src"), help="the tree whose validator runs")
    args = ap.parse_args()
    sys.path.insert(0, args.src)
    from argus.verl import worker

    t0 = time.perf_counter()
    v = worker.Validator()
    gc.collect()
    gc.freeze()  # as the worker does once warm: a full collection walking verl's objects is not what is measured
    print(f"validator from {worker.__file__} warm in {time.perf_counter() - t0:.1f} s")
    times: dict[str, list[float]] = {name: [] for name in SPECS}
    cpu: dict[str, list[float]] = {name: [] for name in SPECS}
    counts: dict[str, set[int]] = {name: set() for name in SPECS}
    step = 100
    for _ in range(args.samples):
        for name, changes in SPECS.items():
            step += 1
            worker.make_spares(lambda: False)  # what the worker's loop does after an answer
            t, c = time.perf_counter(), time.process_time()
            errors = v.validate("ppo_trainer", spec(changes, step), "ppo")["errors"]
            times[name].append((time.perf_counter() - t) * 1000)
            cpu[name].append((time.process_time() - c) * 1000)
            counts[name].add(len(errors))
    for name, xs in times.items():
        print(f"{name:34s} p50 {pct(xs, 50):4.0f} ms, p95 {pct(xs, 95):4.0f} ms (CPU p50 {pct(cpu[name], 50):4.0f} ms); "
              f"errors {sorted(counts[name])}")


if __name__ == "__main__":
    main()
