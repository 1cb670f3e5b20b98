"""The reward dry-run job and the driver's reward banner, on real files (subprocesses where it matters)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from argus.verl.reward_banner import announce_reward, reward_from_argv
from tests.verl.conftest import (
    GOOD_REWARD,
    IMPORT_ERROR_REWARD,
    NAMED_REWARD,
    RAISING_REWARD,
    write_rl_parquet,
)

SRC = str(Path(__file__).resolve().parents[2] / "src")
SLOW_IMPORT = """
import time
for _ in range(8):
    time.sleep(0.6)
    t = time.process_time()
    while time.process_time() - t < 0.12:
        pass
"""


@pytest.fixture
def files(tmp_path: Path) -> Path:
    for name, text in (("good.py", GOOD_REWARD), ("named.py", NAMED_REWARD), ("bad.py", IMPORT_ERROR_REWARD),
                       ("raises.py", RAISING_REWARD)):
        (tmp_path / name).write_text(text)
    (tmp_path / "hang.py").write_text("import time\ntime.sleep(60)\n")
    (tmp_path / "spin.py").write_text("while True:\n    pass\n")
    # what a busy head makes of an import that needs ~1 s of CPU: 6 s of wall time, never idle for long
    (tmp_path / "slow.py").write_text(SLOW_IMPORT + GOOD_REWARD)
    write_rl_parquet(tmp_path / "d.parquet", 10)
    return tmp_path


def run_job(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "argus.jobs.reward_check", *args], capture_output=True, text=True,
                          timeout=120, env={"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"})


def test_good_reward(files):
    res = run_job("--reward", str(files / "good.py"), "--data", str(files / "d.parquet"), "--rows", "3", "--json")
    assert res.returncode == 0, res.stderr
    report = json.loads(res.stdout)
    assert [r["ground_truth"]["score"] for r in report["rows"]] == [1.0, 1.0, 1.0]
    assert [r["wrong"]["score"] for r in report["rows"]] == [0.0, 0.0, 0.0]
    assert all(r["ground_truth"]["seconds"] >= 0 for r in report["rows"])


def test_human_output_and_named_dict_reward(files):
    res = run_job("--reward", str(files / "named.py"), "--name", "my_score", "--data", str(files / "d.parquet"))
    assert res.returncode == 0, res.stdout
    assert "ground truth → 1" in res.stdout and "OK: 4 row(s) scored" in res.stdout


@pytest.mark.parametrize(("name", "text"), [("bad.py", "ModuleNotFoundError"), ("raises.py", "ZeroDivisionError")])
def test_bad_rewards_exit_nonzero(files, name, text):
    res = run_job("--reward", str(files / name), "--data", str(files / "d.parquet"), "--json")
    assert res.returncode == 1
    report = json.loads(res.stdout)
    assert not report["ok"] and text in report["error"] + report["traceback"]


def test_without_data_checks_import_and_function(files):
    assert run_job("--reward", str(files / "good.py")).returncode == 0
    res = run_job("--reward", str(files / "good.py"), "--name", "missing", "--json")
    assert res.returncode == 1 and "missing" in json.loads(res.stdout)["error"]
    res = run_job("--reward", str(files / "good.py"), "--data", str(files / "nope.parquet"), "--json")
    assert res.returncode == 0 and "cannot read" in json.loads(res.stdout)["data_warning"]


def test_admission_check_budget_is_cpu_time_not_the_clock(files, tmp_path):
    """A hang (no CPU used) and a loop (CPU used up) are stopped, each said so; a check slower than the budget
    on the clock but within it in CPU, as on a busy head, passes (issue 35: refused under load before)."""
    from argus.settings import Settings
    from argus.verl.rewards import check_reward

    settings = Settings(state_dir=tmp_path / "s", reward_check_timeout_s=3)
    result = check_reward(settings, str(files / "hang.py"), None, None)
    assert result.error and "used no CPU for 3 s" in result.error and "reward_check_timeout_s" in result.error
    result = check_reward(settings, str(files / "spin.py"), None, None)
    assert result.error and "used more than 3 s of CPU" in result.error
    started = time.monotonic()
    result = check_reward(settings, str(files / "slow.py"), None, str(files / "d.parquet"))
    assert result.error is None and time.monotonic() - started > 3, result.error


def test_banner(files, capsys):
    argv = ["python3", "-m", "verl.trainer.main_ppo", f"reward.custom_reward_function.path={files / 'good.py'}"]
    assert reward_from_argv(argv) == (str(files / "good.py"), "compute_score")
    assert announce_reward(argv)
    assert capsys.readouterr().out.strip() == (
        f"using customized reward function 'compute_score' from '{files / 'good.py'}'")
    cmd = f"python3 -m verl.trainer.main_ppo \\\n  custom_reward_function.path={files / 'named.py'} " \
          "custom_reward_function.name=my_score"
    assert reward_from_argv(["bash", "-lc", cmd]) == (str(files / "named.py"), "my_score")
    assert not announce_reward(["python3", "-m", "verl.trainer.main_ppo", f"reward.custom_reward_function.path="
                                f"{files / 'bad.py'}"])
    assert "cannot load customized reward function" in capsys.readouterr().out
    assert not announce_reward(["python3", "-m", "verl.trainer.main_ppo"])
