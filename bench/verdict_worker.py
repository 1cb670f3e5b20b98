"""Benchmark: one verl validation in the validator (``argus.verl.worker``), with and without the spare copy.

Issue 37: deep-copying verl's cached merged config was about half a compose; the worker now makes the next
copy after each answer, while it waits (``worker.make_spares``). Here one warm ``Validator`` (in this process:
no pipe, no server) validates the New Task bench's GRPO spec with a new ``trainer.total_training_steps`` each
time, as an edit does, in alternating rounds: "spare" makes the copy between requests (as the worker's loop
does while idle), "on demand" does not (the copy is made inside the request, as before). The figure is the
request's own time; the spare's copy is paid while nobody waits.

    .venv/bin/python bench/verdict_worker.py [--rounds 4] [--per-round 10]

Prints figures; asserts nothing. Measured on the shared 2-core box at load average 15 (other test runs):

    validate, on demand: p50 283 ms, p95 1110 ms, mean 371 ms (40 requests)
    validate, spare: p50 182 ms, p95 249 ms, mean 178 ms (40 requests)
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from argus.verl import worker  # noqa: E402

OVERRIDES = ["algorithm.adv_estimator=grpo", "data.train_batch_size=8", "actor_rollout_ref.rollout.n=2",
             "trainer.nnodes=1", "trainer.n_gpus_per_node=2", "data.max_prompt_length=64",
             "data.max_response_length=32", "actor_rollout_ref.actor.ppo_mini_batch_size=4",
             "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2",
             "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=2",
             "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=2"]


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(p / 100 * (len(xs) - 1)))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--per-round", type=int, default=10)
    args = ap.parse_args()
    t0 = time.perf_counter()
    v = worker.Validator()
    print(f"validator warm in {time.perf_counter() - t0:.1f} s (import verl, warm configs)")
    times: dict[str, list[float]] = {"on demand": [], "spare": []}
    step = 100
    for r in range(args.rounds * 2):
        label = "spare" if r % 2 else "on demand"
        for _ in range(args.per_round):
            step += 1
            if label == "spare":
                worker.make_spares(lambda: False)  # what the worker's loop does after an answer
            else:
                for s in worker.spares.values():
                    s.copy = None  # no copy made while idle: the request makes its own
            t = time.perf_counter()
            v.validate("ppo_trainer", [*OVERRIDES, f"trainer.total_training_steps={step}"], "ppo")
            times[label].append((time.perf_counter() - t) * 1000)
            time.sleep(0.2)
    for label, xs in times.items():
        print(f"validate, {label}: p50 {pct(xs, 50):.0f} ms, p95 {pct(xs, 95):.0f} ms, "
              f"mean {statistics.mean(xs):.0f} ms ({len(xs)} requests)")


if __name__ == "__main__":
    main()
