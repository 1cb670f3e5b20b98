"""`argus model register | ls | show | alias` against a live server (real HTTP, real SQLite)."""

import json
from pathlib import Path

from tests.api.test_checkpoints_api import PPO, submit
from tests.cli.test_checkpoints_cli import cli  # noqa: F401 - the fixture
from tests.services.test_checkpoints import write_step


def test_a_model_from_the_command_line(cli, live):  # noqa: F811
    alice = live.new_user("alice")
    token = alice.headers["Authorization"].removeprefix("Bearer ")
    tid = submit(alice, PPO)
    write_step(Path(live.ctx.settings.root) / "users" / "alice" / "runs" / "ppo", 2)
    r = cli("model", "register", "tiny", "--task", tid, token=token)
    assert r.exit_code == 0 and "registered tiny:1 (checkpoint) $HOME/runs/ppo/global_step_2" in r.output, r.output
    r = cli("model", "alias", "tiny", "candidate", "1", token=token)
    assert r.exit_code == 0 and "tiny@candidate → version 1" in r.output, r.output
    r = cli("model", "ls", token=token)
    assert "tiny" in r.output and "@candidate=1" in r.output, r.output
    r = cli("model", "show", "tiny@candidate", "-o", "json", token=token)
    assert json.loads(r.output)["versions"][0]["source_task"] == tid
    r = cli("model", "register", "tiny", "--path", "/etc", token=token)
    assert r.exit_code == 1 and "path" in r.output, r.output


def test_a_team_model_from_the_command_line(cli, live):  # noqa: F811
    """A task charged to a team registers into the team's registry and says so; `ls` shows TEAM/NAME; a member
    cannot move the team's alias, its admin can; --team puts a folder of your home in a team's registry."""
    admin = live.admin()
    alice, bob = live.new_user("alice"), live.new_user("bob")
    admin.post("/api/v2/teams", json={"name": "nlp"})
    admin.post("/api/v2/teams/nlp/members", json={"user": "alice"})
    admin.post("/api/v2/teams/nlp/members", json={"user": "bob", "role": "admin"})
    a, b = (c.headers["Authorization"].removeprefix("Bearer ") for c in (alice, bob))
    tid = submit(alice, PPO)
    root = Path(live.ctx.settings.root)
    write_step(root / "users" / "alice" / "runs" / "ppo", 2)
    r = cli("model", "register", "tiny", "--task", tid, token=a)
    assert r.exit_code == 0, r.output
    assert "registered nlp/tiny:1 (checkpoint) $HOME/runs/ppo/global_step_2" in r.output, r.output
    assert f"in team nlp's registry: task {tid} is charged to team nlp" in r.output, r.output
    assert "not shared" in r.output and "--to $HOME/teams/nlp/models/tiny" in " ".join(r.output.split()), r.output
    (root / "users" / "bob" / "models" / "b").mkdir(parents=True)
    (root / "users" / "bob" / "models" / "b" / "config.json").write_text("{}")
    r = cli("model", "register", "tiny", "--path", "$HOME/models/b", "--team", "nlp", token=b)
    assert r.exit_code == 0 and "registered nlp/tiny:2 (hf)" in r.output, r.output
    r = cli("model", "ls", token=a)
    assert "nlp/tiny" in r.output, r.output
    r = cli("model", "alias", "nlp/tiny", "production", "1", token=a)
    assert r.exit_code == 1 and "admin role" in r.output, r.output
    r = cli("model", "alias", "nlp/tiny", "production", "1", token=b)
    assert r.exit_code == 0 and "nlp/tiny@production → version 1" in r.output, r.output
    r = cli("model", "show", "nlp/tiny@production", "-o", "json", token=a)
    assert json.loads(r.output)["versions"][0]["source_task"] == tid
    r = cli("model", "show", "nlp/tiny", token=a)
    assert r.exit_code == 0 and "nlp/tiny:2" in r.output and "bob" in r.output, r.output
    r = cli("model", "register", "x", "--path", "$HOME/models/b", "--team", "ghost", token=b)
    assert r.exit_code == 1 and "team" in r.output, r.output
