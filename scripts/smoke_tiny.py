"""A tiny model and tiny datasets for ``scripts/gpu-smoke.sh``, made offline from code.

    python3 scripts/smoke_tiny.py OUT_DIR

writes ``OUT_DIR/model`` (a random-weight Qwen2-style causal LM, about 1 MB, with a byte-level
BPE tokenizer trained on the data below and a ChatML chat template), ``OUT_DIR/sft/{train,val}.parquet``
(a ``messages`` column, as verl's SFT trainer reads by default) and ``OUT_DIR/gsm8k/{train,test}.parquet``
(``examples/make_dataset.py``'s GSM8K-style RL rows). Then it checks that verl's own dataset
classes (``MultiTurnSFTDataset``, ``RLHFDataset``) tokenize both with that tokenizer, so a task
that fails later does not fail on the smoke test's own inputs. No network access at all.

Sizes: head_dim 64 (attention kernels of vLLM/SGLang/flash-attn all take it), 2 layers.
"""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

CHATML = (
    "{% for m in messages %}"
    "{% if loop.first and m['role'] != 'system' %}<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}"
    "<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
PAD, BOS_CHAT, EOS_CHAT = "<|endoftext|>", "<|im_start|>", "<|im_end|>"


def _make_dataset_module():
    """examples/make_dataset.py, loaded by path (examples/ is not a package)."""
    path = Path(__file__).resolve().parent.parent / "examples" / "make_dataset.py"
    spec = importlib.util.spec_from_file_location("argus_example_make_dataset", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def sft_rows(n: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        a, b = rng.randint(1, 99), rng.randint(1, 99)
        out.append({"messages": [{"role": "user", "content": f"What is {a} plus {b}?"},
                                 {"role": "assistant", "content": f"{a} plus {b} is {a + b}. #### {a + b}"}]})
    return out


def write(rows: list[dict], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)
    print(f"wrote {len(rows)} rows to {path}")


def make_tokenizer(corpus: list[str]):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(corpus, trainers.BpeTrainer(
        vocab_size=1024, special_tokens=[PAD, BOS_CHAT, EOS_CHAT], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token=PAD, eos_token=EOS_CHAT,
                                   additional_special_tokens=[BOS_CHAT, EOS_CHAT])
    fast.chat_template = CHATML
    return fast


def make_model(tokenizer, out: Path) -> int:
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    vocab = (len(tokenizer) + 63) // 64 * 64  # padded: some kernels like a multiple of 64
    cfg = Qwen2Config(vocab_size=vocab, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=2048,
                      tie_word_embeddings=True, torch_dtype="bfloat16",
                      eos_token_id=tokenizer.convert_tokens_to_ids(EOS_CHAT),
                      pad_token_id=tokenizer.convert_tokens_to_ids(PAD), bos_token_id=None)
    model = Qwen2ForCausalLM(cfg).to(torch.bfloat16)
    model.save_pretrained(out)
    model.generation_config.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return sum(p.numel() for p in model.parameters())


def verify_with_verl(model_dir: Path, sft: Path, rl: Path) -> None:
    """Tokenize both datasets with verl's own classes and the saved tokenizer."""
    from omegaconf import OmegaConf
    from transformers import AutoTokenizer
    from verl.utils.dataset.multiturn_sft_dataset import MultiTurnSFTDataset
    from verl.utils.dataset.rl_dataset import RLHFDataset

    tok = AutoTokenizer.from_pretrained(model_dir)
    ds = MultiTurnSFTDataset(str(sft), tok, OmegaConf.create({"max_length": 256, "messages_key": "messages"}))
    item = ds[0]
    assert int(item["loss_mask"].sum()) > 0, "SFT sample has no assistant tokens to learn"
    print(f"verl MultiTurnSFTDataset: {len(ds)} rows, first has {int(item['attention_mask'].sum())} tokens")
    rl_ds = RLHFDataset(str(rl), tok, OmegaConf.create({"prompt_key": "prompt", "max_prompt_length": 256,
                                                        "filter_overlong_prompts": True, "truncation": "error"}))
    assert len(rl_ds) > 0, "every RL prompt was filtered as too long"
    text = tok.apply_chat_template(rl_ds[0]["raw_prompt"], add_generation_prompt=True, tokenize=False)
    n = len(tok(text)["input_ids"])
    print(f"verl RLHFDataset: {len(rl_ds)} rows, first prompt {n} tokens")


def main(out: Path) -> int:
    md = _make_dataset_module()
    rl_train, rl_test = md.rows(64, "train", 1), md.rows(16, "test", 2)
    sft_train, sft_val = sft_rows(192, 0), sft_rows(32, 1)
    corpus = [m["content"] for r in sft_train + sft_val for m in r["messages"]]
    corpus += [r["prompt"][0]["content"] for r in rl_train + rl_test] + ["You are a helpful assistant. system user assistant"]
    tok = make_tokenizer(corpus)
    n = make_model(tok, out / "model")
    print(f"tiny model: {n} parameters, vocab {len(tok)} -> {out / 'model'}")
    write(sft_train, out / "sft" / "train.parquet")
    write(sft_val, out / "sft" / "val.parquet")
    write(rl_train, out / "gsm8k" / "train.parquet")
    write(rl_test, out / "gsm8k" / "test.parquet")
    verify_with_verl(out / "model", out / "sft" / "train.parquet", out / "gsm8k" / "train.parquet")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(Path(sys.argv[1])))
