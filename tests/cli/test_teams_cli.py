"""`argus team …` against a live server (real HTTP, real SQLite): the admin creates a team and sets its
limits, a team admin adds a member, errors name the field (issue 26)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from argus.cli.main import app


@pytest.fixture
def cli(live, monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("ARGUS_URL", live.url)
    monkeypatch.setenv("COLUMNS", "200")
    runner = CliRunner()

    def run(*args, token):
        monkeypatch.setenv("ARGUS_TOKEN", token)
        return runner.invoke(app, list(args))

    return run


def token_of(client) -> str:  # noqa: ANN001
    return client.headers["Authorization"].removeprefix("Bearer ")


def test_team_lifecycle_from_the_cli(cli, live) -> None:  # noqa: ANN001
    alice, bob = token_of(live.new_user("alice")), token_of(live.new_user("bob"))
    admin = live.admin_token
    r = cli("team", "list", token=alice)
    assert r.exit_code == 0 and "you are in no team" in r.output

    r = cli("team", "create", "nlp", "--weight", "2", "--max-gpus", "8", token=admin)
    assert r.exit_code == 0 and "created team nlp" in r.output, r.output
    r = cli("team", "create", "Bad!", token=admin)
    assert r.exit_code != 0 and "name" in r.output and "Bad!" in r.output
    assert cli("team", "add", "nlp", "alice", "--admin", token=admin).exit_code == 0
    r = cli("team", "add", "nlp", "bob", token=alice)  # bob is in no team alice administers (issue 33)
    assert r.exit_code != 0 and "ask a site administrator to add 'bob'" in r.output, r.output
    r = cli("team", "add", "nlp", "bob", token=admin)
    assert r.exit_code == 0 and "added bob to nlp as member" in r.output, r.output

    r = cli("team", "show", "nlp", token=bob)
    assert "weight 2, max GPUs 8" in r.output and "alice" in r.output and "bob" in r.output, r.output
    r = cli("team", "set", "nlp", "--weight", "5", token=alice)
    assert r.exit_code != 0 and "administrators" in r.output
    r = cli("team", "set", "nlp", "--clear", "max-gpus", "--gpu-hours-month", "100", token=admin)
    assert r.exit_code == 0, r.output
    [t] = json.loads(cli("team", "list", "-o", "json", token=bob).output)
    assert (t["max_gpus"], t["gpu_hours_month"], t["my_role"]) == (None, 100.0, "member")

    r = cli("team", "remove", "nlp", "alice", token=alice)
    assert r.exit_code != 0 and "last admin" in r.output
    assert cli("team", "role", "nlp", "bob", "admin", token=alice).exit_code == 0
    assert cli("team", "remove", "nlp", "alice", token=alice).exit_code == 0
    r = cli("team", "show", "nlp", token=alice)
    assert r.exit_code != 0 and "no team named 'nlp'" in r.output
    assert cli("team", "delete", "nlp", "--yes", token=admin).exit_code == 0


def test_usage_by_team_as_csv(cli, live) -> None:  # noqa: ANN001
    alice = token_of(live.new_user("alice"))
    assert cli("team", "create", "nlp", token=live.admin_token).exit_code == 0
    assert cli("team", "add", "nlp", "alice", token=live.admin_token).exit_code == 0
    r = cli("usage", "--by", "team", "--csv", token=live.admin_token)
    assert r.exit_code == 0 and r.output.splitlines()[0] == "team,gpu_hours,cpu_hours,attempts", r.output
    r = cli("usage", "--team", "nlp", "--by", "user", token=alice)
    assert r.exit_code == 0 and "total" in r.output, r.output
    r = cli("usage", "--team", "vision", token=alice)
    assert r.exit_code != 0 and "no team named 'vision'" in r.output


def test_priority_classes_from_the_cli(cli, live) -> None:  # noqa: ANN001
    alice = token_of(live.new_user("alice"))
    admin = live.admin_token
    assert "no priority classes" in cli("priority-class", "list", token=alice).output
    r = cli("priority-class", "create", "urgent", "--value", "100", "--users", "alice", "--description", "deadline",
            token=admin)
    assert r.exit_code == 0 and "created priority class urgent (value 100)" in r.output, r.output
    r = cli("priority-class", "list", token=alice)
    assert "urgent" in r.output and "yes" in r.output and "deadline" in r.output, r.output
    r = cli("priority-class", "create", "x", "--value", "5000", token=admin)
    assert r.exit_code != 0 and "value" in r.output and "5000" in r.output
    assert cli("priority-class", "set", "urgent", "--value", "50", token=admin).exit_code == 0
    assert cli("priority-class", "set", "urgent", "--value", "60", token=alice).exit_code != 0
    assert cli("priority-class", "delete", "..", token=admin).exit_code != 0
    assert cli("priority-class", "delete", "urgent", token=admin).exit_code == 0
