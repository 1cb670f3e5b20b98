"""Write a tiny GSM8K-style dataset in verl's RL parquet format (no download).

    python3 examples/make_dataset.py OUT_DIR [--train 64] [--test 16]

Each row has the columns verl's main_ppo and Argus's admission check expect:
``data_source``, ``prompt`` (chat messages), ``ability``, ``reward_model``
(``{"style": "rule", "ground_truth": ...}``) and ``extra_info``. The questions are
generated arithmetic word problems, so ``examples/reward.py`` can score them.
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

INSTRUCTION = "Let's think step by step and output the final answer after \"####\"."


def rows(n: int, split: str, seed: int) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        a, b, c = rng.randint(2, 50), rng.randint(2, 50), rng.randint(2, 9)
        question = f"Sam has {a} apples and buys {b} more, then shares them equally among {c} friends " \
                   f"and eats the remainder. How many apples does each friend get?"
        out.append({
            "data_source": "openai/gsm8k",
            "prompt": [{"role": "user", "content": f"{question} {INSTRUCTION}"}],
            "ability": "math",
            "reward_model": {"style": "rule", "ground_truth": str((a + b) // c)},
            "extra_info": {"split": split, "index": i},
        })
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--train", type=int, default=64)
    ap.add_argument("--test", type=int, default=16)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for split, n, seed in (("train", args.train, 1), ("test", args.test, 2)):
        path = args.out / f"{split}.parquet"
        pq.write_table(pa.Table.from_pylist(rows(n, split, seed)), path)
        print(f"wrote {n} rows to {path}")


if __name__ == "__main__":
    main()
