"""Fixtures for real verl validation: a tiny local model, parquet datasets and reward files (no hub access).

The validator child costs ~3-5 s to start (``import verl``), so one is shared
per test module and stopped at its end.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from argus.settings import Settings
from argus.verl.check import VerlCheck
from argus.verl.entry import EntryModuleCheck
from argus.verl.validator import VerlValidator
from tests.helpers import LiveServer, live_server

pytest.importorskip("verl")

USER = "alice"
GOOD_REWARD = '''
def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    return 1.0 if solution_str.strip() == str(ground_truth).strip() else 0.0
'''
NAMED_REWARD = '''
def my_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    return {"score": float(solution_str == ground_truth), "acc": 1.0}
'''
IMPORT_ERROR_REWARD = "import argus_no_such_module_xyz\n\ndef compute_score(*a, **k):\n    return 0.0\n"
RAISING_REWARD = '''
def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    return 1 / 0
'''


def make_tiny_model(path: Path) -> None:
    """A 2-layer Qwen2 with a word-level tokenizer trained in memory, saved like a hub snapshot."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    corpus = [f"what is {a} plus {b} ? the answer is {a + b}" for a in range(20) for b in range(20)]
    tok.train_from_iterator(corpus, trainers.WordLevelTrainer(special_tokens=["<unk>", "<pad>", "<|im_end|>"]))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", pad_token="<pad>", eos_token="<|im_end|>")
    fast.chat_template = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
    fast.save_pretrained(path)
    cfg = Qwen2Config(vocab_size=len(fast), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=256,
                      architectures=["Qwen2ForCausalLM"])
    Qwen2ForCausalLM(cfg).save_pretrained(path)


def write_rl_parquet(path: Path, rows: int, *, drop: str | None = None) -> None:
    data = {
        "data_source": [f"toy/{i % 2}" for i in range(rows)],
        "prompt": [[{"role": "user", "content": f"what is {i} plus 1 ?"}] for i in range(rows)],
        "ability": ["math"] * rows,
        "reward_model": [{"style": "rule", "ground_truth": str(i + 1)} for i in range(rows)],
        "extra_info": [{"index": i, "split": "train"} for i in range(rows)],
    }
    if drop:
        data.pop(drop)
    pq.write_table(pa.table(data), path)


def write_sft_parquet(path: Path, rows: int) -> None:
    msgs = [[{"role": "user", "content": f"what is {i} plus 1 ?"}, {"role": "assistant", "content": str(i + 1)}]
            for i in range(rows)]
    pq.write_table(pa.table({"messages": msgs}), path)


def populate_home(root: Path) -> Path:
    home = root / "users" / USER
    for sub in ("datasets", "code", "models"):
        (home / sub).mkdir(parents=True, exist_ok=True)
    make_tiny_model(home / "models" / "tiny")
    write_rl_parquet(home / "datasets" / "train.parquet", 24)
    write_rl_parquet(home / "datasets" / "val.parquet", 8)
    write_rl_parquet(home / "datasets" / "no_gt.parquet", 8, drop="reward_model")
    write_sft_parquet(home / "datasets" / "sft.parquet", 16)
    (home / "datasets" / "not_parquet.parquet").write_text("this is not parquet\n")
    for name, text in (("reward.py", GOOD_REWARD), ("named.py", NAMED_REWARD),
                       ("bad_import.py", IMPORT_ERROR_REWARD), ("raises.py", RAISING_REWARD)):
        (home / "code" / name).write_text(text)
    return home


@pytest.fixture(scope="module")
def validator() -> Iterator[VerlValidator]:
    v = VerlValidator(sys.executable, timeout_s=60)
    v.start_background()
    yield v
    v.stop()


@pytest.fixture(scope="module")
def verl_server(tmp_path_factory: pytest.TempPathFactory, validator: VerlValidator) -> Iterator[LiveServer]:
    """A live API server whose admission runs real verl validation (required mode)."""
    base = tmp_path_factory.mktemp("verl")
    settings = Settings(state_dir=base / "state", sftp_enabled=False, verl_validation="required",
                        reward_check_rows=3, reward_check_timeout_s=60)

    def configure(ctx):  # noqa: ANN001, ANN202
        ctx.checks = (EntryModuleCheck(ctx.settings, validator), VerlCheck(ctx.settings, validator))

    with live_server(settings, configure) as srv:
        populate_home(settings.root)
        yield srv


@pytest.fixture(scope="module")
def alice(verl_server: LiveServer):  # noqa: ANN201
    with verl_server.new_user(USER) as c:
        yield c
