"""``python3 -m argus.jobs.doctor``: check, from a worker node, what a training task will find there.

It is the first task a new user runs (examples/doctor.yaml): a real job through the whole path
(queue → Ray → driver on a worker → logs) that needs no GPU, and whose report answers the usual
"why does my task fail on that node" questions: which Python/torch/verl/ray, whether verl's
trainers can start here (every package their imports reach, also those imported inside functions,
which an ``import`` alone never runs: ``argus.verl.imports``), which rollout engines and attention
kernels are installed, which GPUs, which NCCL settings, whether the home is writable and the
shared folders readable, how much disk is free.

It reports and never crashes on a missing piece. Exit status 0 when the essentials pass (the
home is readable and writable, torch/verl/ray are installed, the trainers Argus templates import
and no package they need is missing), 1 otherwise. No GPU is not a failure: CPU jobs and the queue
still work, GPU tasks wait with a reason. A missing optional engine or kernel is reported, not
failed: the basic templates pick sdpa without flash-attn, and a rollout engine is checked by the
driver of the task that names it.

Paths: ``--home`` (admission expands ``$HOME`` in the command) or, by default, the home that the
driver's working directory ``<root>/users/<user>/jobs/<task_id>`` belongs to, else ``$HOME``.
``--shared`` (repeatable) defaults to ``<root>/datasets`` and ``<root>/hf`` next to that home.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path

from argus.verl.imports import ENTRY_MODULES, is_installed, walk

LEGACY_ENTRY_MODULES = ("verl.trainer.fsdp_sft_trainer",)  # verl < 0.9's SFT trainer
CALIBRATED_VERL = "0.9."  # argus.verl.imports' table of optional imports was made for this verl
MANIFEST = "argus-env.json"  # argus.envs.registry.MANIFEST (this job imports no server module)
PROBE = Path(__file__).resolve().parents[1] / "envs" / "probe.py"
PROBE_TIMEOUT_S = 300

# (import name, distribution name) of what a basic task may pick; shown with its version or "absent"
ROLLOUT_ENGINES = (("vllm", "vllm"), ("sglang", "sglang"), ("tensorrt_llm", "tensorrt_llm"))
ATTENTION_KERNELS = (("flash_attn", "flash-attn"), ("liger_kernel", "liger-kernel"))
ENV_PREFIXES = ("NCCL_", "CUDA_", "GLOO_", "TP_SOCKET", "NVIDIA_", "RAY_ADDRESS", "MASTER_")
SENSITIVE = ("TOKEN", "KEY", "SECRET", "PASSWORD")


class Report:
    def __init__(self, out: Callable[[str], None] = print) -> None:
        self.out = out
        self.failed: list[str] = []

    def ok(self, msg: str) -> None:
        self.out(f"OK    {msg}")

    def info(self, msg: str) -> None:
        self.out(f"      {msg}")

    def warn(self, msg: str) -> None:
        self.out(f"WARN  {msg}")

    def fail(self, msg: str) -> None:
        self.failed.append(msg)
        self.out(f"FAIL  {msg}")


def default_home(cwd: Path) -> Path:
    """``<root>/users/<user>`` when run by the driver (cwd is a job dir), else ``$HOME``."""
    parts = cwd.parts
    if len(parts) >= 4 and parts[-4] == "users" and parts[-2] == "jobs":
        return Path(*parts[:-2])
    return Path(os.environ.get("HOME", str(cwd)))


def check_versions(r: Report) -> None:
    r.ok(f"python {platform.python_version()} ({sys.executable})")
    for dist in ("torch", "verl", "ray"):
        try:
            r.ok(f"{dist} {importlib.metadata.version(dist)}")
        except importlib.metadata.PackageNotFoundError:
            r.fail(f"{dist} is not installed in {sys.executable}")


def _version(import_name: str, dist: str) -> str | None:
    """The installed version, ``"?"`` when importable without metadata, None when absent."""
    if not is_installed(import_name):
        return None
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "?"


def present_entries() -> tuple[str, ...]:
    """The trainers this environment's verl has: 0.9's (main_ppo, sft_trainer) or an older verl's
    (main_ppo, fsdp_sft_trainer) — found, not imported."""
    return tuple(m for m in (*ENTRY_MODULES, *LEGACY_ENTRY_MODULES) if is_installed(m))


def check_trainers(r: Report, entries: tuple[str, ...] | None = None) -> None:
    """Import the trainers this environment's verl has, then walk everything their code may import later."""
    if not is_installed("verl"):
        r.fail("verl is not installed: no trainer can start")
        return
    entries = entries if entries is not None else present_entries()
    if "verl.trainer.main_ppo" not in entries:
        r.fail("verl.trainer.main_ppo is not in this verl: no PPO/GRPO task can start")
    for module in entries:
        t0 = time.monotonic()
        try:
            with warnings.catch_warnings():  # verl warns once per absent optional engine: noise here
                warnings.simplefilter("ignore")
                importlib.import_module(module)
        except BaseException as e:  # noqa: BLE001 - SystemExit/ImportError alike: report and go on
            r.fail(f"import {module}: {type(e).__name__}: {e}")
        else:
            r.ok(f"import {module} ({time.monotonic() - t0:.1f} s)")
    rep = walk(entries)
    for module in rep.unresolved:
        r.fail(f"verl module {module} not found in verl's source")
    required = [p for p in rep.packages.values() if p.required]
    r.info(f"verl's trainers reach {len(rep.modules)} verl modules importing {len(rep.packages)} "
           f"third-party packages: {len(required)} required, {len(rep.packages) - len(required)} optional")
    missing = rep.missing(required=True)
    verl = importlib.metadata.version("verl")
    calibrated = verl.startswith(CALIBRATED_VERL)
    if missing and not calibrated:
        r.warn(f"which of verl's imports are optional is known for verl {CALIBRATED_VERL}x; this is verl {verl}: "
               "the packages below are reported, not failed (a task fails only if its config reaches one)")
    for pkg in missing:
        (r.fail if calibrated else r.info)(f"required package '{pkg.name}' is not installed (imported at {pkg.where}); "
               "a task fails when it gets there (install verl's verl-core extra)")
    if not missing:
        r.ok(f"all {len(required)} required packages are installed")
    absent: dict[str, list[str]] = {}
    for pkg in rep.missing(required=False):
        absent.setdefault(pkg.optional or "", []).append(pkg.name)
    for reason, names in sorted(absent.items()):
        r.info(f"optional, absent: {', '.join(names)} — {reason}")


def check_engines(r: Report) -> None:
    """Rollout engines and attention kernels: what a basic task's template can choose from."""
    for name, dist in ROLLOUT_ENGINES:
        v = _version(name, dist)
        r.info(f"rollout engine {name}: {v or 'absent'}")
    if not any(_version(n, d) for n, d in ROLLOUT_ENGINES):
        r.warn("no rollout engine installed: ppo/grpo tasks cannot run on this node (sft can)")
    for name, dist in ATTENTION_KERNELS:
        v = _version(name, dist)
        r.info(f"kernel {name}: {v or 'absent'}")
    try:
        import torch

        sdpa = hasattr(torch.nn.functional, "scaled_dot_product_attention")
        r.info(f"torch sdpa: {'available' if sdpa else 'absent'}")
        if not sdpa and not _version("flash_attn", "flash-attn"):
            r.warn("neither flash-attn nor torch sdpa: no attention implementation for training")
    except Exception as e:  # noqa: BLE001 - a broken torch is reported by check_versions too
        r.warn(f"torch could not be imported: {e!r}")


def check_gpus(r: Report) -> None:
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    r.info(f"CUDA_VISIBLE_DEVICES={'<unset>' if visible is None else visible}")
    if visible == "":
        r.info("this task holds no GPU (CUDA_VISIBLE_DEVICES is empty); the node's GPUs follow if nvidia-smi lists them")
    try:
        import torch

        if torch.cuda.is_available():
            n = torch.cuda.device_count()
            r.ok(f"{n} GPU(s) visible to torch (CUDA {torch.version.cuda})")
            for i in range(n):
                p = torch.cuda.get_device_properties(i)
                uuid = getattr(p, "uuid", None)
                r.info(f"  cuda:{i} {p.name}, {p.total_memory / 2**30:.1f} GiB" + (f", GPU-{uuid}" if uuid else ""))
            return
    except Exception as e:  # noqa: BLE001 - a broken torch is reported, not fatal here
        r.warn(f"torch could not query CUDA: {e!r}")
    smi = shutil.which("nvidia-smi")
    if smi:
        res = subprocess.run([smi, "--query-gpu=index,name,memory.total,uuid", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30)
        lines = [ln for ln in res.stdout.splitlines() if ln.strip()]
        if res.returncode == 0 and lines:
            if visible == "":
                r.ok(f"torch sees no GPU, as this task asked for none; the node has {len(lines)}:")
            else:
                r.warn(f"torch sees no GPU, but nvidia-smi lists {len(lines)}:")
            for ln in lines:
                r.info(f"  {ln}")
            return
    r.ok("no GPU on this node (CPU jobs run; GPU tasks wait for a node with GPUs)")


def check_env(r: Report) -> None:
    found = sorted(k for k in os.environ if k.startswith(ENV_PREFIXES))
    if not found:
        r.info("no NCCL_/CUDA_/GLOO_ environment variables set")
    for key in found:
        value = "<hidden>" if any(s in key for s in SENSITIVE) else os.environ[key]
        r.info(f"{key}={value}")


def check_home(r: Report, home: Path) -> None:
    try:
        with tempfile.NamedTemporaryFile("w+", dir=home, prefix=".argus-doctor-") as f:
            f.write("ok")
            f.flush()
            f.seek(0)
            if f.read() != "ok":
                raise OSError("read back something else than was written")
        r.ok(f"home {home} is readable and writable ({len(os.listdir(home))} entries)")
    except OSError as e:
        r.fail(f"home {home} is not readable and writable: {e!r}")


def check_environments(r: Report, root: Path, home: Path) -> None:
    """Every training environment this node can see (the cluster's and the user's own), each probed by its
    own interpreter with real imports (argus.envs.probe): the doctor of each environment on this node."""
    manifests = sorted((root / "envs").glob(f"*/{MANIFEST}")) + sorted((home / "envs").glob(f"*/{MANIFEST}"))
    if not manifests:
        r.info(f"no training environment under {root / 'envs'} (tasks run in Argus's own, 'argus')")
    for manifest in manifests:
        try:
            python = json.loads(manifest.read_text())["python"]
        except (OSError, ValueError, KeyError) as exc:
            r.fail(f"environment {manifest.parent.name}: unreadable manifest {manifest}: {exc!r}")
            continue
        name = manifest.parent.name if manifest.is_relative_to(root / "envs") else f"~/envs/{manifest.parent.name}"
        try:
            done = subprocess.run([python, "-I", str(PROBE), "--imports"], capture_output=True, text=True,
                                  timeout=PROBE_TIMEOUT_S)
            report = json.loads(done.stdout.strip().splitlines()[-1])
        except (OSError, subprocess.TimeoutExpired, ValueError, IndexError) as exc:
            r.fail(f"environment {name}: its interpreter {python} cannot run here: {exc!r}")
            continue
        v = report.get("versions") or {}
        line = (f"environment {name}: verl {v.get('verl')}, torch {v.get('torch')} (CUDA "
                f"{report.get('torch_cuda') or '-'}, driver {report.get('driver_cuda') or '-'}), ray {v.get('ray')}, "
                f"rollout {','.join(report.get('rollout_engines') or []) or '-'}, "
                f"kernels {','.join(report.get('kernels') or []) or '-'}")
        if report.get("problems"):
            r.fail(f"{line}: " + "; ".join(report["problems"]))
        else:
            r.ok(line)


def check_shared(r: Report, folder: Path) -> None:
    if not folder.exists():
        r.warn(f"shared folder {folder} does not exist")
        return
    try:
        n = len(os.listdir(folder))
    except OSError as e:
        r.warn(f"shared folder {folder} is not readable: {e!r}")
        return
    if os.access(folder, os.W_OK):
        r.warn(f"shared folder {folder} is readable ({n} entries) and writable by this process "
               "(users should only read it; Argus enforces that for SFTP/API writes)")
    else:
        r.ok(f"shared folder {folder} is readable ({n} entries) and read-only")


def check_disk(r: Report, paths: list[Path]) -> None:
    for p in paths:
        try:
            u = shutil.disk_usage(p)
        except OSError as e:
            r.warn(f"cannot stat {p}: {e!r}")
            continue
        r.ok(f"free disk at {p}: {u.free / 2**30:.1f} GiB of {u.total / 2**30:.1f} GiB")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m argus.jobs.doctor", description=__doc__.splitlines()[0])
    ap.add_argument("--home", type=Path, help="the user's home (default: from the job dir, else $HOME)")
    ap.add_argument("--shared", type=Path, action="append", help="a shared read-only folder (repeatable)")
    ns = ap.parse_args(argv)
    cwd = Path.cwd()
    home = (ns.home or default_home(cwd)).resolve()
    shared = ns.shared or [home.parent.parent / "datasets", home.parent.parent / "hf"]
    r = Report()
    print(f"argus doctor on {platform.node()} ({platform.platform()}), cwd {cwd}", flush=True)
    for title, check in (
        ("versions", lambda: check_versions(r)),
        ("trainers", lambda: check_trainers(r)),
        ("training environments", lambda: check_environments(r, home.parent.parent, home)),
        ("engines and kernels", lambda: check_engines(r)),
        ("GPUs", lambda: check_gpus(r)),
        ("environment", lambda: check_env(r)),
        ("home", lambda: check_home(r, home)),
        ("shared folders", lambda: [check_shared(r, p) for p in shared]),
        ("disk", lambda: check_disk(r, [home, Path(tempfile.gettempdir())])),
    ):
        print(f"== {title}", flush=True)
        check()
    if r.failed:
        print(f"doctor: {len(r.failed)} essential check(s) failed", flush=True)
        return 1
    print("doctor: all essential checks passed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
