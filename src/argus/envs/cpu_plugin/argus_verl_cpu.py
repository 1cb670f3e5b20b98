"""A verl platform for CPU-only machines: verl's RL loop (FSDP2 actor/critic, vLLM-CPU rollout) on CPU.

Installed into a CPU training environment by ``argus env build`` (the catalog entry's ``cpu_plugin``)
and loaded by verl itself: ``VERL_USE_EXTERNAL_MODULES=argus_verl_cpu`` (verl imports the module
at ``import verl``), ``VERL_PLATFORM=cpu`` (verl picks the platform registered here). Nothing in
verl or vLLM is edited; this module answers what verl asks of an accelerator and changes four
call sites whose GPU assumption has no setting (measured in ``shared/reference/rl-on-cpu.md``):

* **the device module**: verl calls ``get_torch_device().empty_cache()``, ``mem_get_info()``,
  ``get_rng_state()``… on ``torch.cuda``; ``torch.cpu`` lacks most of them. ``CpuDeviceModule`` is
  ``torch.cpu`` plus no-op cache/IPC calls, memory figures from the process's own RSS and the
  machine's memory, and the CPU RNG;
* **logical GPUs**: verl's resource pools always ask Ray for ``GPU``; the task's private Ray
  advertises as many GPUs as the task has CPU training workers (``device: cpu``), and the platform
  reports ``GPU`` as its Ray resource with a visible-devices variable nobody else reads;
* **weights to vLLM**: ``is_ipc_supported() = False``, so verl sends them through shared memory;
* **process groups**: verl asks for ``cpu:gloo,cpu:gloo`` (one backend per device), which torch
  refuses as a duplicate device; it becomes ``gloo``;
* **pinned memory**: the reference model's FSDP offload policy is built with ``pin_memory=True``
  in verl's code, and pinning needs an accelerator: forced off;
* **flash attention**: verl's critic loads with ``attn_implementation="flash_attention_2"``; where
  flash-attn is not installed, transformers gets ``sdpa`` instead of an ImportError.

Standard library, torch and verl only; import errors of the optional pieces are not swallowed
except where the piece is absent by design (flash-attn).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
from types import ModuleType
from typing import Any

import torch
import torch.distributed
from verl.plugin.platform.platform_base import PlatformBase
from verl.plugin.platform.platform_manager import PlatformRegistry

VISIBLE_DEVICES_ENV = "ARGUS_CPU_VISIBLE_DEVICES"  # read by nobody: CUDA_VISIBLE_DEVICES stays Ray's


def _rss_bytes() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _meminfo() -> tuple[int, int]:
    """(available, total) bytes of the machine (or of the task's memory limit, when it is lower)."""
    fields: dict[str, int] = {}
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                name, _, rest = line.partition(":")
                fields[name] = int(rest.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        return 0, 0
    total, available = fields.get("MemTotal", 0), fields.get("MemAvailable", 0)
    try:
        with open("/sys/fs/cgroup/memory.max") as f:
            limit = f.read().strip()
        if limit.isdigit() and int(limit) < total:
            total = int(limit)
            available = min(available, total)
    except OSError:
        pass
    return available, total


class CpuDeviceModule(ModuleType):
    """``torch.cpu`` with the ``torch.cuda`` calls verl makes: cache and IPC calls do nothing, memory
    questions are answered from the process and the machine, RNG state is the CPU generator's."""

    def __init__(self) -> None:
        super().__init__("argus_verl_cpu.device")

    def __getattr__(self, name: str) -> Any:
        return getattr(torch.cpu, name)

    @staticmethod
    def is_available() -> bool:
        return True

    @staticmethod
    def device_count() -> int:
        return 1

    @staticmethod
    def current_device() -> str:
        return "cpu"  # tensor.to(get_device_id()) then means tensor.to("cpu")

    @staticmethod
    def set_device(_device: Any) -> None:
        return None

    @staticmethod
    def get_device_name(_device: Any = None) -> str:
        return "cpu"

    @staticmethod
    def empty_cache() -> None:
        return None

    @staticmethod
    def ipc_collect() -> None:
        return None

    @staticmethod
    def set_per_process_memory_fraction(_fraction: float, _device: Any = None) -> None:
        return None

    @staticmethod
    def mem_get_info(_device: Any = None) -> tuple[int, int]:
        return _meminfo()

    @staticmethod
    def memory_allocated(_device: Any = None) -> int:
        return _rss_bytes()

    memory_reserved = max_memory_allocated = max_memory_reserved = memory_allocated

    @staticmethod
    def reset_peak_memory_stats(_device: Any = None) -> None:
        return None

    @staticmethod
    def get_rng_state(_device: Any = None) -> torch.Tensor:
        return torch.get_rng_state()

    @staticmethod
    def set_rng_state(state: torch.Tensor, _device: Any = None) -> None:
        torch.set_rng_state(state)

    @staticmethod
    def manual_seed(seed: int) -> None:
        torch.manual_seed(seed)

    manual_seed_all = manual_seed


@PlatformRegistry.register(platform="cpu")
class PlatformCPU(PlatformBase):
    """verl on CPU: FSDP2 on CPU tensors, gloo, Ray's logical GPUs as the workers' slots."""

    _module = CpuDeviceModule()

    @property
    def device_name(self) -> str:
        return "cpu"

    @property
    def vendor_name(self) -> str:
        return "cpu"

    @property
    def device_module(self) -> ModuleType:
        return self._module

    def is_available(self) -> bool:
        return True

    def is_platform_available(self, use_smi_check: bool = False) -> bool:
        return os.environ.get("VERL_PLATFORM", "").strip().lower() == "cpu"  # never auto-detected

    def current_device(self) -> Any:
        return "cpu"

    def device_count(self) -> int:
        return 1

    def set_device(self, device_index: int) -> None:
        return None

    def synchronize(self, device_index: int | None = None) -> None:
        return None

    def manual_seed(self, seed: int) -> None:
        torch.manual_seed(seed)

    def manual_seed_all(self, seed: int) -> None:
        torch.manual_seed(seed)

    def set_allocator_settings(self, settings: str) -> None:
        return None

    def empty_cache(self) -> None:
        return None

    def get_device_capability(self, device_index: int = 0) -> tuple[int | None, int | None]:
        return None, None

    def communication_backend_name(self) -> str:
        return "gloo"

    def visible_devices_envvar(self) -> str:
        return VISIBLE_DEVICES_ENV

    @contextlib.contextmanager
    def nvtx_range(self, msg: str):  # noqa: ANN201 - a context manager, as the base declares it
        yield

    def profiler_start(self) -> None:
        return None

    def profiler_stop(self) -> None:
        return None

    def ray_resource_name(self) -> str:
        return "GPU"  # logical: the task's private Ray advertises one per CPU training worker

    def ray_resource_options(self, num_gpus: float) -> dict[str, Any]:
        return {"num_gpus": num_gpus}

    def ray_noset_envvars(self) -> list[str]:
        return []

    def is_ipc_supported(self) -> bool:
        return False  # verl then syncs weights to the rollout through shared memory

    def cudart(self) -> Any:
        return None


def _one_gloo(backend: Any) -> Any:
    """``cpu:gloo,cpu:gloo`` → ``gloo``: verl names one backend per device type, and both are the CPU."""
    if isinstance(backend, str) and "," in backend:
        parts = {p.strip() for p in backend.split(",") if p.strip()}
        if parts == {"cpu:gloo"}:
            return "gloo"
    return backend


def _patch_process_group() -> None:
    original = torch.distributed.init_process_group
    if getattr(original, "_argus_cpu", False):
        return

    def init_process_group(*args: Any, **kwargs: Any) -> Any:
        if "backend" in kwargs:
            kwargs["backend"] = _one_gloo(kwargs["backend"])
        elif args:
            args = (_one_gloo(args[0]), *args[1:])
        return original(*args, **kwargs)

    init_process_group._argus_cpu = True  # type: ignore[attr-defined]
    torch.distributed.init_process_group = init_process_group


def _patch_offload_policy() -> None:
    try:
        from torch.distributed.fsdp import CPUOffloadPolicy
    except ImportError:
        return
    original = CPUOffloadPolicy.__init__
    if getattr(original, "_argus_cpu", False):
        return

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        object.__setattr__(self, "pin_memory", False)

    __init__._argus_cpu = True  # type: ignore[attr-defined]
    CPUOffloadPolicy.__init__ = __init__  # type: ignore[method-assign]


def _patch_flash_attention() -> None:
    if importlib.util.find_spec("flash_attn") is not None:
        return
    try:
        from transformers.modeling_utils import PreTrainedModel
    except ImportError:
        return
    original = PreTrainedModel._check_and_adjust_attn_implementation
    if getattr(original, "_argus_cpu", False):
        return

    def check(self: Any, attn_implementation: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(attn_implementation, str) and attn_implementation.startswith("flash_attention"):
            attn_implementation = "sdpa"
        return original(self, attn_implementation, *args, **kwargs)

    check._argus_cpu = True  # type: ignore[attr-defined]
    PreTrainedModel._check_and_adjust_attn_implementation = check  # type: ignore[method-assign]


def install() -> None:
    """Apply the call-site changes; only where verl runs on this platform (``VERL_PLATFORM=cpu``)."""
    if os.environ.get("VERL_PLATFORM", "").strip().lower() != "cpu":
        return
    _patch_process_group()
    _patch_offload_policy()
    _patch_flash_attention()


install()
