"""Admission's reward dry-run: ``argus.jobs.reward_check`` in a subprocess with a CPU budget.

The reward is user code, so it never runs inside the server process: a jailed
(``verl/sandbox.py``) subprocess of the training interpreter (``settings.verl_python``) imports it
and scores ``settings.reward_check_rows`` rows. The child gets a minimal
environment (no ARGUS_* settings or tokens) and its own session. A reward that cannot import or
raises is rejected at submit with the last lines of its traceback.

The budget (``reward_check_timeout_s``) is the check's own CPU time, not the clock (verl/budget.py): a busy
head makes a reward that imports ``transformers`` slow, not refused.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from argus.settings import Settings
from argus.verl.budget import CpuBudget
from argus.verl.sandbox import child_env, sandbox_prefix

_SRC_ROOT = str(Path(__file__).resolve().parents[2])
POLL_S = 0.25


@dataclass
class RewardCheckResult:
    error: str | None = None
    warnings: list[str] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)


def check_reward(settings: Settings, path: str, name: str | None, data: str | None, *,
                 python: str | None = None) -> RewardCheckResult:
    """Dry-run the reward under ``python`` (the task's environment's interpreter; default ``verl_python``)."""
    python = python or settings.verl_python
    argv = [python, "-m", "argus.jobs.reward_check", "--reward", path, "--rows",
            str(settings.reward_check_rows), "--json"]
    if name:
        argv += ["--name", name]
    if data:
        argv += ["--data", data]
    env = child_env(PYTHONPATH=os.pathsep.join((str(Path(path).parent), _SRC_ROOT)), PYTHONDONTWRITEBYTECODE="1")
    # Jailed: the reward sees its own folder and the data file, not the server's state or other homes.
    jail = sandbox_prefix(settings, readable=[Path(path).parent, *([data] if data else [])], python=python)
    proc = subprocess.Popen(  # noqa: S603 - fixed argv; the interpreter comes from settings
        [*jail, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        cwd=str(Path(path).parent) if Path(path).parent.is_dir() else None, start_new_session=True,
    )
    outcome = _wait_within_budget(proc, settings.reward_check_timeout_s)
    if isinstance(outcome, str):
        return RewardCheckResult(error=f"the reward check {outcome} on {settings.reward_check_rows} rows and was "
                                 f"stopped (reward_check_timeout_s = {settings.reward_check_timeout_s:g} s of CPU)")
    stdout, stderr = outcome
    report = _last_json(stdout)
    if report is None:
        tail = "\n".join(stderr.strip().splitlines()[-6:])
        return RewardCheckResult(error=f"the reward check crashed (exit {proc.returncode}): {tail}")
    result = RewardCheckResult(summary={
        "rows": len(report.get("rows", [])),
        "scores": [r["ground_truth"].get("score") for r in report.get("rows", [])],
        "wrong_scores": [r["wrong"].get("score") for r in report.get("rows", [])],
    })
    if not report.get("ok"):
        tb = report.get("traceback", "")
        result.error = f"{report.get('error')}" + (f"\n{tb}" if tb else "")
    for key in ("warning", "data_warning"):
        if report.get(key):
            result.warnings.append(f"reward check: {report[key]}")
    return result


def _wait_within_budget(proc: subprocess.Popen[str], budget_s: float) -> tuple[str, str] | str:
    """The child's (stdout, stderr) once it exits; else it is killed with its session, and why is returned."""
    budget = CpuBudget(proc.pid, budget_s)
    while True:
        try:
            return proc.communicate(timeout=POLL_S)  # a retry after a time-out loses no output
        except subprocess.TimeoutExpired:
            pass
        why = budget.overrun()
        if why is not None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            return why


def _last_json(stdout: str) -> dict[str, Any] | None:
    for line in reversed(stdout.strip().splitlines()):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None
