"""`python3 -m argus.jobs.curves key=value …`: a CPU job that prints noisy verl PPO-style metric lines.

It exists for the chart tests (issue 25, "Charts"): RL curves are noisy and a verl run logs many
``prefix/name`` keys, so each step prints ``step:K - actor/pg_loss:… - critic/score/mean:… - …`` with
a dozen keys under actor/, critic/, perf/, timing_s/ and response_length/, values drawn from a
seeded generator (two runs with different ``seed``/``lr`` give different, reproducible curves).
Keys: ``steps`` (default 20), ``step_seconds`` (default 0.2), ``seed`` (default 0), ``lr`` (default
1e-6; a larger lr climbs faster). Stdlib only.
"""

from __future__ import annotations

import math
import random
import sys
import time


def _args(argv: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for word in argv:
        key, sep, value = word.lstrip("+").partition("=")
        if not sep:
            raise SystemExit(f"argus.jobs.curves: expected key=value, got {word!r}")
        out[key] = value
    return out


def line(step: int, rng: random.Random, lr: float) -> str:
    """One verl console metrics line for ``step`` (noisy, trending like a PPO run)."""
    rate = 1 + 1e5 * lr
    score = 1 - math.exp(-step * rate / 15) + rng.gauss(0, 0.08)
    values = {
        "actor/pg_loss": rng.gauss(0, 0.02),
        "actor/entropy": 1.2 * math.exp(-step / 40) + rng.gauss(0, 0.03),
        "actor/kl_loss": 0.001 * step + abs(rng.gauss(0, 0.002)),
        "actor/grad_norm": abs(rng.gauss(0.4, 0.1)),
        "critic/score/mean": score,
        "critic/rewards/mean": score - 0.05,
        "critic/vf_loss": abs(rng.gauss(0.3, 0.05)) / math.sqrt(step),
        "response_length/mean": 180 + 4 * step + rng.gauss(0, 10),
        "perf/throughput": 1500 + rng.gauss(0, 60),
        "perf/max_memory_allocated_gb": 30.5,
        "timing_s/gen": 12 + rng.gauss(0, 1),
        "timing_s/step": 40 + rng.gauss(0, 2),
    }
    return f"step:{step} - " + " - ".join(f"{k}:{v:.6g}" for k, v in values.items())


def main(argv: list[str] | None = None) -> int:
    a = _args(sys.argv[1:] if argv is None else argv)
    steps, pause = int(a.get("steps", "20")), float(a.get("step_seconds", "0.2"))
    rng, lr = random.Random(int(a.get("seed", "0"))), float(a.get("lr", "1e-6"))
    for step in range(1, steps + 1):
        time.sleep(pause)
        print(line(step, rng, lr), flush=True)
    print(f"curves: done after {steps} steps", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
