"""The doctor job as users run it: a real process on this (GPU-less) machine."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from argus.jobs.doctor import default_home

DOCTOR = [sys.executable, "-m", "argus.jobs.doctor"]
# The doctor imports verl's trainers and walks their 300 modules' source: 16 s on an idle 2-core machine, and
# 120 s (a timeout, in CI) in the niced light lane beside a training run (tests/scheduling.py). How long it
# takes is not what these tests check: the bound only ends a doctor that hangs.
RUN_TIMEOUT_S = 600
pytestmark = pytest.mark.timeout(RUN_TIMEOUT_S + 60)


def test_doctor_passes_without_gpu_and_reports_everything(tmp_path: Path) -> None:
    root = tmp_path / "private"
    job = root / "users" / "alice" / "jobs" / "t-1"
    job.mkdir(parents=True)
    (root / "datasets").mkdir()
    res = subprocess.run(DOCTOR, cwd=job, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    out = res.stdout
    assert res.returncode == 0, out + res.stderr
    for section in ("== versions", "== trainers", "== engines and kernels", "== GPUs", "== environment", "== home",
                    "== shared folders", "== disk"):
        assert section in out
    assert "OK    torch " in out and "OK    verl " in out and "OK    ray " in out
    assert "OK    import verl.trainer.main_ppo" in out and "OK    import verl.trainer.sft_trainer" in out
    assert "required packages are installed" in out and "FAIL" not in out
    assert "rollout engine vllm: " in out and "rollout engine sglang: " in out
    assert "kernel flash_attn: " in out and "torch sdpa: available" in out
    assert "GPU" in out.split("== GPUs", 1)[1].split("==", 1)[0]
    assert f"home {root / 'users' / 'alice'} is readable and writable" in out  # found from the job dir
    assert f"shared folder {root / 'datasets'} is readable" in out
    assert f"shared folder {root / 'hf'} does not exist" in out  # reported, not fatal
    assert out.rstrip().endswith("doctor: all essential checks passed")


def test_doctor_fails_when_the_home_is_unusable(tmp_path: Path) -> None:
    res = subprocess.run([*DOCTOR, "--home", str(tmp_path / "missing"), "--shared", str(tmp_path)],
                         capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    assert res.returncode == 1
    assert "FAIL  home" in res.stdout and "1 essential check(s) failed" in res.stdout


def test_default_home() -> None:
    assert default_home(Path("/private/users/bob/jobs/t-9")) == Path("/private/users/bob")



# A finder that makes one package look uninstalled (as on the first GPU run), before the doctor runs.
BLOCK = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == {name!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
sys.meta_path.insert(0, Block())
from argus.jobs.doctor import main
sys.exit(main(["--home", {home!r}, "--shared", {home!r}]))
"""


def test_doctor_fails_naming_a_required_package_that_only_a_function_imports(tmp_path: Path) -> None:
    """cachetools is imported only by verl's rollout router: importing main_ppo never shows it missing."""
    code = BLOCK.format(name="cachetools", home=str(tmp_path))
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "OK    import verl.trainer.main_ppo" in res.stdout
    assert "FAIL  required package 'cachetools' is not installed (imported at verl.workers.rollout.router:" in res.stdout
