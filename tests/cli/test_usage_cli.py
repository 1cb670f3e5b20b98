"""`argus usage` and `argus user limits` against a live server (text and ``-o json``)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from typer.testing import CliRunner

from argus.cli.main import app
from tests.api.test_usage_api import put_attempt


@pytest.fixture
def cli(live, monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("ARGUS_URL", live.url)
    monkeypatch.setenv("COLUMNS", "200")
    runner = CliRunner()

    def run(*args, token, code=0):
        monkeypatch.setenv("ARGUS_TOKEN", token)
        r = runner.invoke(app, list(args))
        assert r.exit_code == code, r.output
        return r.output

    return run


def test_usage_and_limits_from_the_cli(live, cli):
    alice = live.new_user("alice")
    token = alice.headers["Authorization"].split()[1]
    start = datetime(2026, 11, 10, 22, tzinfo=UTC)
    put_attempt(live, "alice", "grpo-a", gpus=8, hours=4, start=start)

    out = cli("usage", "--from", "2026-11-10", "--to", "2026-11-12", "--by", "day", token=token)
    assert "2026-11-10" in out and "16.00" in out and "2026-11-11" in out
    data = json.loads(cli("usage", "--from", "2026-11-10", "--to", "2026-11-12", "-o", "json", token=token))
    assert data["total"]["gpu_hours"] == 32.0 and [r["key"] for r in data["rows"]] == ["alice"]
    assert "only admins" in cli("usage", "--user", "admin", token=token, code=1)

    admin = live.admin_token
    out = cli("user", "limits", "alice", "--max-gpus", "16", "--max-running-tasks", "2", token=admin)
    assert "max GPUs 16, max running tasks 2" in out
    out = cli("user", "limits", "alice", "--max-gpus", "default", token=admin)
    assert "max GPUs default, max running tasks 2" in out
    assert "must be a whole number" in cli("user", "limits", "alice", "--max-gpus", "lots", token=admin, code=1)
    out = cli("user", "limits", "alice", "--quota-bytes", "1073741824", token=admin)
    assert "max running tasks 2, storage quota 1073741824" in out
    assert "storage quota default" in cli("user", "limits", "alice", "--quota-bytes", "default", token=admin)
    assert "admin only" in cli("user", "limits", "alice", "--max-gpus", "99", token=token, code=1)
    assert "MAX GPUS" in cli("user", "list", token=admin)
