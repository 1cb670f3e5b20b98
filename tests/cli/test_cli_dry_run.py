"""`argus submit --dry-run`: the verdict printed, exit 0/1, nothing queued."""

import pytest
from typer.testing import CliRunner

from argus.cli.main import app
from tests.cli.test_cli import ADV


@pytest.fixture
def cli(live, monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("ARGUS_URL", live.url)
    monkeypatch.setenv("ARGUS_TOKEN", live.new_user("alice").headers["Authorization"].split(" ", 1)[1])
    runner = CliRunner()
    return lambda *args: runner.invoke(app, list(args))


def test_dry_run_ok_then_problems_with_lines(cli, live, tmp_path):
    spec = tmp_path / "t.yaml"
    spec.write_text(ADV)
    r = cli("submit", "--dry-run", str(spec))
    assert r.exit_code == 0, r.output
    assert "would be accepted" in r.output and "nothing was queued" in r.output
    assert f"{live.ctx.settings.root}/users/alice/datasets/t.parquet" in r.output  # the expanded command
    assert cli("tasks").output.count("grpo-") == 0

    r = cli("submit", "--dry-run", str(spec), "--output", "json")
    assert r.exit_code == 0 and '"resolved"' in r.output and '"command_expanded"' in r.output

    spec.write_text(ADV.replace("nnodes: 1", "nnodes: 0") + "typo: 1\n")
    r = cli("submit", "--dry-run", str(spec))
    assert r.exit_code == 1
    assert "• nnodes (line 3) = 0" in r.output and "• typo (line 6)" in r.output, r.output
    assert cli("tasks").output.count("grpo-") == 0
