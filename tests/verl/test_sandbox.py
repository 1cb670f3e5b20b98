"""The jail around head-side user code: a hostile reward sees neither the server's state nor other homes."""

from __future__ import annotations

import pytest

from argus.settings import Settings
from argus.verl import sandbox
from argus.verl.rewards import check_reward
from tests.verl.conftest import GOOD_REWARD, write_rl_parquet
from tests.waiting import wait_until

SNOOP = """
import os, socket
found = []
for path in {paths!r}:
    try:
        found.append(open(path).read())
    except OSError:
        pass
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=2)
    found.append("network")
except OSError:
    pass
if found:
    raise RuntimeError("LEAKED " + repr(found))

def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    return 1.0 if solution_str == ground_truth else 0.0
"""


@pytest.fixture
def world(tmp_path):
    settings = Settings(state_dir=tmp_path / "jailed-state", sandbox="bwrap", reward_check_timeout_s=60)
    root = settings.root
    (root / "users" / "bob").mkdir(parents=True)
    (root / "users" / "bob" / "secret.txt").write_text("bob's secret")
    code = root / "users" / "alice" / "code"
    code.mkdir(parents=True)
    settings.state_dir.mkdir(parents=True, exist_ok=True)
    (settings.state_dir / "argus.db").write_text("the database")
    data = root / "users" / "alice" / "datasets" / "d.parquet"
    data.parent.mkdir(parents=True)
    write_rl_parquet(data, 4)
    return settings, code, data


def test_hostile_reward_sees_nothing(world, live):
    settings, code, data = world
    port = int(live.url.rsplit(":", 1)[1])  # a real server listening on loopback outside the jail
    paths = [str(settings.root / "users" / "bob" / "secret.txt"), str(settings.state_dir / "argus.db")]
    (code / "reward.py").write_text(SNOOP.format(paths=paths, port=port))
    result = check_reward(settings, str(code / "reward.py"), None, str(data))
    assert result.error is None, result.error  # it ran, and found nothing to leak
    assert result.summary["scores"] == [1.0] * 4


def test_the_same_reward_leaks_without_the_jail(world, live):
    settings, code, data = world
    settings.sandbox = "off"
    port = int(live.url.rsplit(":", 1)[1])
    paths = [str(settings.root / "users" / "bob" / "secret.txt")]
    (code / "reward.py").write_text(SNOOP.format(paths=paths, port=port))
    result = check_reward(settings, str(code / "reward.py"), None, str(data))
    assert result.error is not None and "LEAKED" in result.error  # proves the test above can fail


def test_good_reward_runs_jailed(world):
    settings, code, data = world
    (code / "reward.py").write_text(GOOD_REWARD)
    assert check_reward(settings, str(code / "reward.py"), None, str(data)).error is None


def test_required_jail_without_bubblewrap_is_an_error(world, monkeypatch):
    settings, _code, _data = world
    monkeypatch.setattr(sandbox.shutil, "which", lambda _name: None)
    with pytest.raises(sandbox.SandboxUnavailable, match="apt-get install bubblewrap"):
        sandbox.sandbox_prefix(settings)
    settings.sandbox = "auto"
    assert sandbox.sandbox_prefix(settings) == []


def test_jailed_validator_outlives_its_start_thread(tmp_path):
    """PR_SET_PDEATHSIG is per thread: a jail tied to the start-up thread would die when that thread ends."""
    from pathlib import Path

    from argus.verl.component import make_verl_check

    settings = Settings(state_dir=tmp_path / "s", sandbox="bwrap", verl_validation="required")
    _check, validator = make_verl_check(settings)
    assert validator is not None and validator.jail and "--die-with-parent" not in validator.jail
    try:
        validator.start_background()
        assert validator._ready.wait(180)
        starter = validator._starter
        assert starter is not None
        # the death signal is sent as the thread's OS thread exits: wait until the kernel has let it go
        wait_until(lambda: not starter.is_alive() and not Path(f"/proc/self/task/{starter.native_id}").exists(),
                   30, what="the start thread to end")
        assert validator._proc is not None and validator._proc.poll() is None
        assert validator.request({"op": "info"}).get("verl_version")
        assert validator.restarts == 0
    finally:
        validator.stop()


def test_a_reward_is_checked_in_an_environment_built_under_the_embedded_data_root(world):
    """Issue 35: in embedded mode the data root (and its ``envs``) is inside the hidden state dir, and a reward
    checked with a built environment's interpreter failed with "bwrap: execvp …/venv/bin/python: No such file".
    The reward checks that it runs under that environment's interpreter (no data file: a bare venv has no pyarrow,
    and the jail shows no other venv that may live under /tmp, as a CI checkout does)."""
    import subprocess
    import sys

    settings, code, _data = world
    venv = settings.root / "envs" / "verl-0.4.1-cpu" / "venv"
    subprocess.run([getattr(sys, "_base_executable", sys.executable), "-m", "venv", "--without-pip", str(venv)],
                   check=True, timeout=120)
    (code / "reward.py").write_text(f"import sys\nassert sys.prefix == {str(venv)!r}, sys.prefix\n" + GOOD_REWARD)
    result = check_reward(settings, str(code / "reward.py"), None, None, python=str(venv / "bin" / "python"))
    assert result.error is None, result.error
