"""The doctor job as users run it: a real process on this (GPU-less) machine."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from argus.jobs.doctor import default_home

DOCTOR = [sys.executable, "-m", "argus.jobs.doctor"]


def test_doctor_passes_without_gpu_and_reports_everything(tmp_path: Path) -> None:
    root = tmp_path / "private"
    job = root / "users" / "alice" / "jobs" / "t-1"
    job.mkdir(parents=True)
    (root / "datasets").mkdir()
    res = subprocess.run(DOCTOR, cwd=job, capture_output=True, text=True, timeout=120)
    out = res.stdout
    assert res.returncode == 0, out + res.stderr
    for section in ("== versions", "== GPUs", "== environment", "== home", "== shared folders", "== disk"):
        assert section in out
    assert "OK    torch " in out and "OK    verl " in out and "OK    ray " in out
    assert "GPU" in out.split("== GPUs", 1)[1].split("==", 1)[0]
    assert f"home {root / 'users' / 'alice'} is readable and writable" in out  # found from the job dir
    assert f"shared folder {root / 'datasets'} is readable" in out
    assert f"shared folder {root / 'hf'} does not exist" in out  # reported, not fatal
    assert out.rstrip().endswith("doctor: all essential checks passed")


def test_doctor_fails_when_the_home_is_unusable(tmp_path: Path) -> None:
    res = subprocess.run([*DOCTOR, "--home", str(tmp_path / "missing"), "--shared", str(tmp_path)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 1
    assert "FAIL  home" in res.stdout and "1 essential check(s) failed" in res.stdout


def test_default_home() -> None:
    assert default_home(Path("/private/users/bob/jobs/t-9")) == Path("/private/users/bob")

