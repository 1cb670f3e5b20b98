"""A real verl FSDP checkpoint (verl's own checkpoint code, CPU/gloo), listed, exported with verl.model_merger
by an Argus CPU task on the local Ray cluster, loaded with transformers and compared with the original."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from argus.client import Client
from tests.e2e.stack import Stack, spec

pytestmark = pytest.mark.e2e
MAKER = Path(__file__).with_name("fsdp_checkpoint.py")


def test_export_real_fsdp_checkpoint_and_load_it(stack: Stack, tmp_path: Path) -> None:
    alice = stack.user("alice")
    c = Client(stack.server.url, alice.headers["Authorization"].removeprefix("Bearer "))
    tid = c.submit(spec("python3 -m argus.jobs.steps trainer.default_local_dir=$HOME/runs/fsdp "
                        "trainer.total_training_steps=0"))["task_id"]
    assert c.wait(tid, timeout=120, poll_s=0.3)["status"] == "SUCCEEDED"
    home = Path(stack.server.ctx.settings.root) / "users" / "alice"
    ref = tmp_path / "ref"
    subprocess.run([sys.executable, str(MAKER), str(home / "runs" / "fsdp"), str(ref), "2"], check=True, timeout=300,
                   capture_output=True)

    ck = c.checkpoints(tid)
    assert [(s["step"], s["state"]) for s in ck["steps"]] == [(2, "complete")] and ck["latest"] == 2
    assert {x["name"]: x["kind"] for x in ck["steps"][0]["components"]} == {"actor": "actor", "data.pt": "dataloader"}

    exp = c.export(tid, to="tiny-exported")
    assert exp["info"] == {"source_task": tid, "step": 2, "target": "$HOME/models/tiny-exported", "backend": "fsdp",
                           "env": "argus (verl 0.9.1)"}
    t = c.wait(exp["task_id"], timeout=300, poll_s=0.5)
    log = "\n".join(c.logs(exp["task_id"], follow=False))
    assert t["status"] == "SUCCEEDED", (t, log[-2000:])
    assert t["n_gpus_per_node"] == 0 and "Saving model to" in log
    out = home / "models" / "tiny-exported"
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= {p.name for p in out.iterdir()}

    exported = AutoModelForCausalLM.from_pretrained(out)
    original = AutoModelForCausalLM.from_pretrained(ref, dtype=exported.dtype)  # the merger writes bfloat16
    ids = AutoTokenizer.from_pretrained(out)("w1 w2 w3 w40", return_tensors="pt").input_ids
    assert ids.tolist() == [[4, 5, 6, 43]]
    with torch.no_grad():
        assert torch.equal(exported(ids).logits, original(ids).logits)
    a, b = exported.state_dict(), original.state_dict()
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    # a second export to the same folder is refused before anything runs
    r = alice.post(f"/api/v2/tasks/{tid}/export", json={"to": "tiny-exported"})
    assert r.status_code == 409 and r.json()["detail"]["code"] == "exists"
