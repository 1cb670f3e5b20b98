"""Write a real verl FSDP checkpoint of a tiny model on CPU: `python fsdp_checkpoint.py CK_FOLDER REF_FOLDER STEP`.

Runs in its own process (it initialises torch.distributed with gloo, world size 1). The model is
a random 1-layer Llama (vocab 64, hidden 16) with a word-level tokenizer, built offline; it is
saved as a Hugging Face folder to REF_FOLDER (the weights an export must reproduce), then
wrapped in FSDP on CPU and saved with verl's own ``FSDPCheckpointManager`` into
``CK_FOLDER/global_step_STEP/actor`` — followed, in verl's trainer order, by ``data.pt`` and
``latest_checkpointed_iteration.txt`` (``RayPPOTrainer._save_checkpoint``).
"""

from __future__ import annotations

import os
import socket
import sys


def main(folder: str, ref: str, step: int) -> None:
    import torch
    import torch.distributed as dist

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK="0", WORLD_SIZE="1", LOCAL_RANK="0")
    dist.init_process_group("gloo", rank=0, world_size=1)
    from tokenizers import Tokenizer, models, pre_tokenizers
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
    from verl.utils.checkpoint.fsdp_checkpoint_manager import FSDPCheckpointManager

    vocab = {w: i for i, w in enumerate(["<unk>", "<s>", "</s>", *[f"w{i}" for i in range(61)]])}
    tk = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="<unk>", bos_token="<s>", eos_token="</s>")
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
                      num_key_value_heads=2, max_position_embeddings=64, tie_word_embeddings=False)
    model = LlamaForCausalLM(cfg)
    model.save_pretrained(ref)
    tok.save_pretrained(ref)
    fsdp = FSDP(model, device_id=torch.device("cpu"), use_orig_params=True)
    optimizer = torch.optim.AdamW(fsdp.parameters(), lr=1e-3)
    manager = FSDPCheckpointManager(model=fsdp, optimizer=optimizer, lr_scheduler=None, processing_class=tok)
    step_dir = os.path.join(folder, f"global_step_{step}")
    manager.save_checkpoint(os.path.join(step_dir, "actor"), global_step=step)
    torch.save({"epoch": 0}, os.path.join(step_dir, "data.pt"))
    with open(os.path.join(folder, "latest_checkpointed_iteration.txt"), "w") as f:
        f.write(str(step))
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
