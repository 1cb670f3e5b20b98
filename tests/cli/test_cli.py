"""The CLI against a live server: what users type, what they see."""

import pytest
from typer.testing import CliRunner

from argus.cli.main import app

ADV = """\
kind: advanced
workload: grpo
nnodes: 1
n_gpus_per_node: 1
command: python3 -m verl.trainer.main_ppo data.train_files=$HOME/datasets/t.parquet data.val_files=$HOME/datasets/v.parquet trainer.nnodes=1 trainer.n_gpus_per_node=1
"""


@pytest.fixture
def cli(live, monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))  # no stray ~/.config/argus/cli.yaml
    monkeypatch.setenv("ARGUS_URL", live.url)
    runner = CliRunner()

    def run(*args, token=None, input=None):
        monkeypatch.setenv("ARGUS_TOKEN", token or live.admin_token)
        return runner.invoke(app, list(args), input=input)

    return run


def test_user_token_submit_flow(cli, tmp_path):
    r = cli("user", "create", "alice")
    assert r.exit_code == 0, r.output
    token = r.output.split("token: ")[1].split()[0]
    spec = tmp_path / "t.yaml"
    spec.write_text(ADV)
    r = cli("submit", str(spec), token=token)
    assert r.exit_code == 0, r.output
    assert "accepted grpo-" in r.output
    tid = r.output.split("accepted ")[1].split()[0]
    r = cli("tasks", token=token)
    assert tid in r.output and "QUEUED" in r.output
    r = cli("task", tid, token=token)
    assert tid in r.output and "QUEUED" in r.output
    r = cli("spec", tid, "--view", "command", token=token)
    assert "$HOME/datasets/t.parquet" in r.output and "/users/alice/datasets/t.parquet" in r.output
    r = cli("spec", tid, "--view", "raw", token=token)
    assert r.output == ADV
    r = cli("cancel", tid, token=token)
    assert "CANCELED" in r.output
    r = cli("events", tid, token=token)
    assert "USER_CANCELED" in r.output and "alice" in r.output
    r = cli("me", token=token)
    assert "alice" in r.output


def test_rejection_prints_every_problem(cli, tmp_path):
    spec = tmp_path / "bad.yaml"
    spec.write_text("workload: grpo\nnnodes: 0\ntypo: 1\n")
    r = cli("submit", str(spec))
    assert r.exit_code == 1
    out = r.output
    assert "task spec rejected" in out
    for field in ("nnodes", "typo", "model_id", "train_file", "n_gpus_per_node"):
        assert f"• {field}" in out, out


def test_admin_commands(cli):
    assert cli("user", "create", "bob", "--no-token").exit_code == 0
    r = cli("user", "list")
    assert "bob" in r.output and "admin" in r.output
    r = cli("token", "create", "bob", "--name", "ci")
    token = r.output.split("token: ")[1].split()[0]
    r = cli("token", "list", "bob")
    assert "ci" in r.output
    token_id = r.output.strip().splitlines()[-1].split()[0]
    assert cli("me", token=token).exit_code == 0
    assert cli("token", "revoke", "bob", token_id).exit_code == 0
    r = cli("me", token=token)
    assert r.exit_code == 1 and "invalid or revoked token" in r.output
    assert cli("user", "disable", "bob").exit_code == 0
    r = cli("user", "create", "Bad Name")
    assert r.exit_code == 1 and "• name" in r.output


def test_unreachable_server_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("ARGUS_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("ARGUS_TOKEN", "x")
    r = CliRunner().invoke(app, ["tasks"])
    assert r.exit_code == 1 and "cannot reach" in r.output
