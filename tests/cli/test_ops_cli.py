"""`argus admin audit`, `argus admin prune`, `argus checkpoints rm` against a live server."""

from __future__ import annotations

import pytest
import typer

from argus.cli.ops import parse_age_days
from tests.api.test_retention_api import _age, _ended_task_with_checkpoints, _job
from tests.api.test_tasks_api import ADV, submit
from tests.cli.test_cli import cli as cli_fixture

cli = cli_fixture  # the fixture, under the name the tests ask for


def test_admin_audit_lists_and_pages(cli, live):
    for name in ("alice", "bob", "carol"):
        assert cli("user", "create", name).exit_code == 0
    r = cli("admin", "audit", "--action", "user.created", "--limit", "2")
    assert r.exit_code == 0, r.output
    assert "carol" in r.output and "bob" in r.output and "alice" not in r.output and "more: --cursor" in r.output
    cursor = r.output.split("more: --cursor ")[1].split()[0]
    r = cli("admin", "audit", "--action", "user.created", "--limit", "2", "--cursor", cursor)
    assert "alice" in r.output and "more:" not in r.output
    r = cli("admin", "audit", "--action", "user.exploded")
    assert r.exit_code == 1 and "action" in r.output


def test_admin_prune_dry_run_then_the_same_cutoff(cli, live):
    alice = live.new_user("alice")
    tid = submit(alice, ADV).json()["task_id"]
    _age(live, tid, "SUCCEEDED", 120)
    (_job(live, "alice", tid) / "logs").mkdir(parents=True)
    (_job(live, "alice", tid) / "logs" / "attempt-1.log").write_text("old\n")
    r = cli("admin", "prune", "--older-than", "90d", "--dry-run")
    assert r.exit_code == 0, r.output
    assert tid in r.output and "would remove: 2 events and 1 log files" in r.output
    before = r.output.split("argus admin prune --before ")[1].split()[0]
    assert (_job(live, "alice", tid) / "logs" / "attempt-1.log").exists()
    r = cli("admin", "prune", "--before", before)
    assert r.exit_code == 0 and "removed: 2 events and 1 log files" in r.output, r.output
    assert not (_job(live, "alice", tid) / "logs" / "attempt-1.log").exists()
    r = cli("admin", "prune", "--older-than", "90d", token=alice.headers["Authorization"].split()[1])
    assert r.exit_code == 1  # admins only


def test_checkpoints_rm(cli, live):
    alice = live.new_user("alice")
    token = alice.headers["Authorization"].split()[1]
    tid = _ended_task_with_checkpoints(live, alice, "alice")
    r = cli("checkpoints", "rm", tid, "--yes", token=token)
    assert r.exit_code == 0 and f"deleted $HOME/jobs/{tid}/checkpoints" in r.output, r.output
    assert not (_job(live, "alice", tid) / "checkpoints").exists()
    r = cli("checkpoints", "rm", tid, "--yes", token=token)
    assert r.exit_code == 1


@pytest.mark.parametrize(("text", "days"), [("90d", 90), ("90", 90), ("36h", 1.5), ("2w", 14), ("0.5d", 0.5)])
def test_ages(text, days):
    assert parse_age_days(text) == days


@pytest.mark.parametrize("text", ["", "0d", "-1d", "90m", "soon"])
def test_bad_ages(text):
    with pytest.raises(typer.BadParameter):
        parse_age_days(text)
