"""`argus checkpoints ID`, `argus resume`, `argus export` against a live server (real HTTP, real SQLite)."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from argus.cli.main import app
from tests.api.test_checkpoints_api import SPEC, submit
from tests.services.test_checkpoints import write_step


@pytest.fixture
def cli(live, monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))  # no stray ~/.config/argus/cli.yaml
    monkeypatch.setenv("ARGUS_URL", live.url)
    runner = CliRunner()

    def run(*args, token):
        monkeypatch.setenv("ARGUS_TOKEN", token)
        return runner.invoke(app, list(args))

    return run


def test_checkpoints_resume_export(cli, live):
    alice = live.new_user("alice")
    token = alice.headers["Authorization"].removeprefix("Bearer ")
    tid = submit(alice, SPEC)
    r = cli("checkpoints", tid, token=token)
    assert r.exit_code == 0 and "no checkpoints yet" in r.output, r.output
    folder = Path(live.ctx.settings.root) / "users" / "alice" / "runs" / "ck"
    write_step(folder, 2)
    write_step(folder, 4, tracker=False)
    r = cli("checkpoints", tid, token=token)
    assert r.exit_code == 0, r.output
    assert "$HOME/runs/ck  (latest_checkpointed_iteration: 2)" in r.output
    lines = {line.split()[0]: line for line in r.output.splitlines() if line[:1].isdigit()}
    assert "complete" in lines["2"] and "1.5 KiB" in lines["2"] and "actor, critic, data.pt" in lines["2"]
    assert "writing" in lines["4"]
    r = cli("checkpoints", "ls", tid, "-o", "json", token=token)
    assert [s["step"] for s in json.loads(r.output)["steps"]] == [2, 4]

    r = cli("resume", tid, token=token)
    assert r.exit_code == 1 and "is QUEUED" in r.output
    cli("cancel", tid, token=token)
    r = cli("resume", tid, "--step", "4", token=token)
    assert r.exit_code == 1 and "step = 4" in r.output and "complete steps: 2" in r.output, r.output
    r = cli("resume", tid, token=token)
    assert r.exit_code == 0 and f"resumes {tid} from step 2" in r.output, r.output
    r = cli("export", tid, "--to", "m1", token=token)
    assert r.exit_code == 0, r.output
    assert f"exports {tid} step 2 (fsdp) to $HOME/models/m1" in r.output


def test_evaluate_shows_scores_on_the_step_and_picks_the_best(cli, live):
    from tests.api.test_checkpoints_api import ACC, PPO, _succeed_with_log

    alice = live.new_user("alice")
    token = alice.headers["Authorization"].removeprefix("Bearer ")
    tid = submit(alice, PPO)
    folder = Path(live.ctx.settings.root) / "users" / "alice" / "runs" / "ppo"
    write_step(folder, 2)
    write_step(folder, 4)
    r = cli("evaluate", tid, "--step", "2", token=token)
    assert r.exit_code == 0 and f"evaluates {tid} step 2" in r.output, r.output
    eid = r.output.split("accepted", 1)[1].split()[0]
    r = cli("checkpoints", tid, token=token)
    assert f"{eid} QUEUED" in r.output, r.output
    r = cli("export", tid, "--best", ACC, token=token)
    assert r.exit_code == 1 and "has no evaluation with scores yet" in r.output, r.output
    _succeed_with_log(live, eid, f"step:2 - {ACC}:0.625 - val-aux/len:7.0\n")
    r = cli("checkpoints", tid, token=token)
    assert f"{ACC}=0.625" in r.output.replace("\n", "").replace(" ", ""), r.output
    cli("cancel", tid, token=token)
    r = cli("export", tid, "--best", ACC, "--to", "best", token=token)
    assert r.exit_code == 0 and f"exports {tid} step 2" in r.output, r.output
