"""What a training environment really holds: run by the environment's own interpreter, prints one JSON object.

    <env>/bin/python -I probe.py [--imports] [--find MODULE ...]

Standard library only, started by file path with ``-I``: the environment has none of Argus's
packages, and nothing in the caller's folder or ``PYTHONPATH`` may shadow what it reports.

* versions of what a verl task needs (verl, torch, ray, transformers…), of the rollout engines
  and of the kernels, read from the installed distributions' metadata (nothing imported);
* ``--imports``: imports verl, torch and ray for real (the check that catches a broken build:
  a missing shared library, an ABI mismatch) and reads torch's CUDA build and the GPUs it sees;
* the NVIDIA driver's CUDA version (``cuDriverGetVersion`` through ctypes, no nvidia-smi) so a
  CUDA build newer than the driver is reported before a task dies on it;
* ``--find M``: whether module ``M`` is importable here, without importing it (the launcher's
  check of a task's rollout engine and attention kernel).

Problems are listed in ``problems`` (the environment cannot run verl tasks) and ``notes``
(worth knowing: no rollout engine, no GPU here); ``ok`` is ``not problems``.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import importlib.metadata
import importlib.util
import io
import json
import platform
import sys
import time

ESSENTIAL = ("verl", "torch", "ray")
PACKAGES = ("verl", "torch", "ray", "transformers", "tensordict", "hydra-core", "omegaconf", "numpy", "vllm",
            "sglang", "tensorrt-llm", "flash-attn", "flashinfer-python", "liger-kernel", "megatron-core", "peft",
            "lm-eval")
ROLLOUT_ENGINES = {"vllm": "vllm", "sglang": "sglang", "trtllm": "tensorrt-llm"}
KERNELS = ("flash-attn", "flashinfer-python", "liger-kernel")
CPU_PLATFORM_MODULE = "argus_verl_cpu"
LM_EVAL_MODULE = "lm_eval"  # EleutherAI's harness, run by argus.jobs.lm_eval (a `kind: eval` spec's lm_eval block)


def version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def findable(module: str) -> bool:
    """Whether ``import module`` would find it, importing no package ``__init__`` on the way."""
    import importlib.machinery

    parts = module.split(".")
    if not all(p.isidentifier() for p in parts):
        return False
    try:
        spec = importlib.util.find_spec(parts[0])
    except (ImportError, ValueError):
        return False
    for i in range(1, len(parts)):
        if spec is None or spec.submodule_search_locations is None:
            return False
        spec = importlib.machinery.PathFinder.find_spec(".".join(parts[: i + 1]), list(spec.submodule_search_locations))
    return spec is not None


def driver_cuda() -> str | None:
    """The newest CUDA version the installed NVIDIA driver supports ("12.8"), or None without one."""
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None
    out = ctypes.c_int(0)
    if lib.cuDriverGetVersion(ctypes.byref(out)) != 0 or out.value <= 0:
        return None
    return f"{out.value // 1000}.{(out.value % 1000) // 10}"


def _as_tuple(v: str) -> tuple[int, ...]:
    return tuple(int(p) for p in v.split(".")[:2] if p.isdigit())


def try_imports(report: dict[str, object]) -> None:
    """Import the essentials for real; what fails is a problem, with the error's first line."""
    problems: list[str] = report["problems"]  # type: ignore[assignment]
    times: dict[str, float] = {}
    for module in ("torch", "ray", "verl"):
        started = time.monotonic()
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                __import__(module)
        except Exception as exc:  # noqa: BLE001 - any failure to import is what this reports
            problems.append(f"import {module} fails: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
            continue
        times[module] = round(time.monotonic() - started, 2)
    report["import_s"] = times
    torch = sys.modules.get("torch")
    if torch is not None:
        cuda = getattr(torch.version, "cuda", None)
        report["torch_cuda"] = cuda
        try:
            report["gpus_seen"] = torch.cuda.device_count() if cuda else 0
        except Exception:  # noqa: BLE001 - a driver problem shows as no GPU, reported below
            report["gpus_seen"] = 0
        drv = report.get("driver_cuda")
        if cuda and isinstance(drv, str) and _as_tuple(cuda)[:1] > _as_tuple(drv)[:1]:
            problems.append(f"torch is built for CUDA {cuda} but this node's NVIDIA driver supports CUDA {drv} at "
                            "most: update the driver or use an environment built for an older CUDA")


def probe(imports: bool, find: list[str]) -> dict[str, object]:
    versions = {p: version(p) for p in PACKAGES}
    problems = [f"{p} is not installed" for p in ESSENTIAL if versions.get(p) is None]
    notes: list[str] = []
    engines = [name for name, dist in ROLLOUT_ENGINES.items() if versions.get(dist)]
    if not engines:
        # core.messages' env.no_rollout_engine (this runs in the environment's interpreter, without Argus)
        notes.append("no rollout engine (vllm, sglang, tensorrt-llm): PPO/GRPO cannot run here; SFT and jobs can")
    report: dict[str, object] = {
        "python": platform.python_version(),
        "executable": sys.executable,
        "prefix": sys.prefix,
        "base_prefix": sys.base_prefix,
        "machine": platform.machine(),
        "versions": {k: v for k, v in versions.items() if v is not None},
        "rollout_engines": engines,
        "kernels": [k for k in KERNELS if versions.get(k)],
        # Argus's verl CPU platform (argus/envs/cpu_plugin): this environment can run `device: cpu` training
        "cpu_platform": findable(CPU_PLATFORM_MODULE),
        # can run lm-eval evaluations; a probe without this key predates the check (admission then only warns)
        "lm_eval": findable(LM_EVAL_MODULE),
        "driver_cuda": driver_cuda(),
        "problems": problems,
        "notes": notes,
        "found": {m: findable(m) for m in find},
    }
    if imports:
        try_imports(report)
    report["ok"] = not problems
    return report


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="probe.py", description=__doc__.splitlines()[0])
    p.add_argument("--imports", action="store_true", help="import verl, torch and ray for real")
    p.add_argument("--find", action="append", default=[], metavar="MODULE", help="is MODULE importable (repeatable)")
    ns = p.parse_args(argv)
    sys.stdout.write(json.dumps(probe(ns.imports, ns.find)) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
