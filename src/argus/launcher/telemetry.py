"""What one task uses, sampled by its driver: CPU, memory and, on GPU nodes, each of its GPUs (issue 24).

The driver samples its own task — the process tree under the task's child (the sandbox, the
task's private Ray and every worker Ray starts there) — never the node: another task's processes
are not counted. GPUs are the task's own (``CUDA_VISIBLE_DEVICES``: indices in nvidia-smi's
order, or ``GPU-…`` UUIDs), read through NVML (``libnvidia-ml.so.1`` via ctypes: no Python package,
no nvidia-smi process per sample). Where there is no NVML (a CPU node) there is no GPU figure:
nothing is faked.

One sample every ``SAMPLE_S`` is appended as a JSON line to ``<job>/telemetry/attempt-N.jsonl``:
``{"t": 1764072000, "cpu": 3.52, "rss": 12884901888, "gpu": [[97, 61440, 412.5], …]}`` — epoch
seconds, CPUs busy (1.0 = one core) over the interval, resident memory of the tree in bytes (each
process's proportional set size, so the libraries and shared memory that a training's dozens of
processes all map count once, not once per process: a GRPO run on CPU is 7.5 GB this way and 15 GB as
a sum of RSS; a process whose PSS cannot be read counts its RSS), and per
GPU [utilisation %, memory used MiB, power W]. 46 bytes a line without GPUs, 208 with 8: 0.26 to 1.2 MB
per task-day at 15 s; one sample of a 65-process tree costs ~20 ms of CPU with the PSS reads, measured at load 13 on 2 cores, 0.14 % of a core at 15 s (``bench/telemetry_cost.py``). The server reads that file for the task page's charts, ``argus task``, ``/metrics`` and the
idle-GPU flag; the newest sample is also in ``status.json`` (``usage``).
"""

from __future__ import annotations

import ctypes
import json
import time
from pathlib import Path
from typing import Any

import psutil

from argus import home_io

SAMPLE_S = 15.0


def resident_bytes(proc: psutil.Process) -> int:
    """``proc``'s proportional set size (``/proc/<pid>/smaps_rollup``, one kernel walk, no per-mapping
    parse), else its RSS (an older kernel, a process we may not inspect)."""
    try:
        with open(f"/proc/{proc.pid}/smaps_rollup", "rb") as fh:
            for line in fh:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return proc.memory_info().rss


class Nvml:
    """The few NVML calls a sample needs; ``Nvml.open()`` is None where the library or a GPU is missing."""

    class _Util(ctypes.Structure):
        _fields_ = [("gpu", ctypes.c_uint), ("memory", ctypes.c_uint)]

    class _Mem(ctypes.Structure):
        _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]

    def __init__(self, lib: Any) -> None:
        self.lib = lib

    @classmethod
    def open(cls) -> Nvml | None:
        try:
            lib = ctypes.CDLL("libnvidia-ml.so.1")
        except OSError:
            return None
        if lib.nvmlInit_v2() != 0:
            return None
        return cls(lib)

    def handles(self, visible: str | None) -> list[Any]:
        """The task's GPUs: ``CUDA_VISIBLE_DEVICES`` as indices or UUIDs (unset: every GPU of the node)."""
        if visible is not None and not visible.strip():
            return []
        out = []
        if visible is None:
            count = ctypes.c_uint()
            if self.lib.nvmlDeviceGetCount_v2(ctypes.byref(count)) != 0:
                return []
            names = [str(i) for i in range(count.value)]
        else:
            names = [v.strip() for v in visible.split(",") if v.strip()]
        for name in names:
            handle = ctypes.c_void_p()
            if name.isdigit():
                rc = self.lib.nvmlDeviceGetHandleByIndex_v2(ctypes.c_uint(int(name)), ctypes.byref(handle))
            else:
                rc = self.lib.nvmlDeviceGetHandleByUUID(name.encode(), ctypes.byref(handle))
            if rc == 0:
                out.append(handle)
        return out

    def sample(self, handle: Any) -> list[float | None]:
        """[utilisation %, memory used MiB, power W] of one GPU (None where NVML does not say)."""
        util, mem, power = self._Util(), self._Mem(), ctypes.c_uint()
        u = float(util.gpu) if self.lib.nvmlDeviceGetUtilizationRates(handle, ctypes.byref(util)) == 0 else None
        m = round(mem.used / 2**20) if self.lib.nvmlDeviceGetMemoryInfo(handle, ctypes.byref(mem)) == 0 else None
        p = round(power.value / 1000, 1) if self.lib.nvmlDeviceGetPowerUsage(handle, ctypes.byref(power)) == 0 else None
        return [u, m, p]


class Sampler:
    """Samples the process tree under ``pid`` and the task's GPUs; appends each sample to ``path``."""

    def __init__(self, pid: int, path: Path, visible: str | None, nvml: Nvml | None = None) -> None:
        self.root = pid
        self.path = path
        self.nvml = nvml
        self.gpus = nvml.handles(visible) if nvml is not None else []
        self._cpu: dict[int, float] = {}  # pid -> its CPU seconds at the last sample
        self._at = time.monotonic()
        self.failed: str | None = None

    def _tree(self) -> list[psutil.Process]:
        try:
            root = psutil.Process(self.root)
            return [root, *root.children(recursive=True)]
        except psutil.Error:
            return []

    def sample(self) -> dict[str, Any]:
        now = time.monotonic()
        interval, self._at = max(now - self._at, 1e-6), now
        busy, rss, seen = 0.0, 0, {}
        for proc in self._tree():
            try:
                with proc.oneshot():
                    t = proc.cpu_times()
                    total = t.user + t.system
                    rss += resident_bytes(proc)
            except psutil.Error:
                continue  # it ended between the listing and the read
            seen[proc.pid] = total
            busy += total - self._cpu.get(proc.pid, total)  # a new process counts from its first sample
        self._cpu = seen
        out: dict[str, Any] = {"t": int(time.time()), "cpu": round(busy / interval, 2), "rss": rss}
        if self.nvml is not None and self.gpus:
            out["gpu"] = [self.nvml.sample(h) for h in self.gpus]
        return out

    def record(self) -> dict[str, Any] | None:
        """One sample, appended to the file; None (and ``failed`` says why) if it could not be written."""
        data = self.sample()
        try:  # in the job folder reached without links (argus/home_io.py): the task can plant one there
            with home_io.append_to(home_io.anchor_for(self.path), self.path, mode=0o640) as out:
                out.write((json.dumps(data, separators=(",", ":")) + "\n").encode())
        except OSError as exc:
            self.failed = f"{type(exc).__name__}: {exc}"
            return None
        return data
