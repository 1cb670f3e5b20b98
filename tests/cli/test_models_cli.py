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
