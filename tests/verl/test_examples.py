"""Every spec in examples/ is accepted by real verl validation once its data and model exist.

The README tour and the examples are what a new user copies first; a template or an
admission rule that starts refusing them must fail here, not in front of that user.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.envs_fixtures import install_env
from tests.verl.conftest import USER, make_tiny_model, write_sft_parquet

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
QWEN = "Qwen/Qwen2.5-0.5B-Instruct"


@pytest.fixture(scope="module")
def cluster_data(verl_server, alice, tmp_path_factory):  # noqa: ANN001, ANN201
    """What the examples expect: GSM8K-style data (home and shared), the reward, the models."""
    root = verl_server.ctx.settings.root
    home = root / "users" / USER
    data = tmp_path_factory.mktemp("gsm8k")
    subprocess.run([sys.executable, str(EXAMPLES / "make_dataset.py"), str(data)], check=True, capture_output=True)
    for target in (home / "datasets" / "gsm8k", root / "datasets" / "gsm8k"):
        target.mkdir(parents=True, exist_ok=True)
        for f in data.glob("*.parquet"):
            shutil.copy(f, target / f.name)
    shutil.copy(EXAMPLES / "reward.py", home / "code" / "reward.py")
    (home / "datasets" / "sft").mkdir(parents=True, exist_ok=True)
    for split in ("train", "val"):  # examples/sft-cpu.yaml (the README tour uploads smoke_tiny's sft/ there)
        write_sft_parquet(home / "datasets" / "sft" / f"{split}.parquet", 16)
    install_env(root, "verl-0.9.1-vllm-cpu")  # the CPU examples name it (issue 34)
    tiny = home / "models" / "tiny"
    if not tiny.exists():
        make_tiny_model(tiny)
    # the shared HF cache, as huggingface_hub lays it out, and a plain folder under hf/
    snapshot = root / "hf" / "hub" / f"models--{QWEN.replace('/', '--')}" / "snapshots" / "0123abc"
    shutil.copytree(tiny, snapshot, dirs_exist_ok=True)
    shutil.copytree(tiny, root / "hf" / QWEN.split("/")[1], dirs_exist_ok=True)
    return alice


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.glob("*.yaml")))
def test_each_example_is_accepted(cluster_data, example: str) -> None:
    body = (EXAMPLES / example).read_text()
    kind = next((k for k in ("sweep", "pipeline") if f"\nkind: {k}\n" in f"\n{body}"), None)
    # a sweep or a pipeline: every trial or step checked, as a dry run (nothing queued)
    r = cluster_data.post(f"/api/v2/{kind}s" if kind else "/api/v2/tasks", content=body.encode(),
                          params={"dry_run": "true"} if kind else None, headers={"Content-Type": "application/yaml"})
    assert r.status_code == 201, r.text
    if kind == "sweep":
        assert len(r.json()["trials"]) == 4, r.json()
