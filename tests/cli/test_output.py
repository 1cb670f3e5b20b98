"""CLI output that survives copy and paste, and ``--output json|yaml`` for scripts (against a live server).

At 80 and 200 columns, ids, full paths, commands and times appear unbroken in `argus tasks`, `task`
and `spec`; tables shrink only free-text columns, or print one record per block.
"""

from __future__ import annotations

import json
import re
import subprocess
from datetime import UTC, datetime

import pytest
import yaml
from sqlalchemy import update
from typer.testing import CliRunner

from argus.cli.main import app
from argus.db.models import TaskAttemptModel, TaskModel
from argus.settings import Settings
from tests.helpers import free_port

LONG = "$HOME/datasets/a-rather-long-folder-name/with-another-long-subfolder/gsm8k-2026-11-20"
SPEC = f"""\
kind: advanced
workload: grpo
nnodes: 1
n_gpus_per_node: 1
command: >-
  PYTHONUNBUFFERED=1 python3 -m verl.trainer.main_ppo
  data.train_files={LONG}/train.parquet
  data.val_files={LONG}/test.parquet
  trainer.nnodes=1 trainer.n_gpus_per_node=1
"""
HOST = "gpu-worker-0042.cluster.example.org"
STARTED = datetime(2026, 11, 20, 15, 30, 12, 123456, tzinfo=UTC)
FINISHED = datetime(2026, 11, 20, 16, 45, 59, 654321, tzinfo=UTC)


@pytest.fixture
def settings(tmp_path) -> Settings:
    """SFTP enabled so that /api/v2/me carries the exact `sftp` command (no SFTP server is started)."""
    return Settings(state_dir=tmp_path / "state", sftp_enabled=True, sftp_port=free_port(), verl_validation="off")


@pytest.fixture
def alice(live):
    with live.admin() as a:
        assert a.post("/api/v2/users", json={"name": "alice"}).status_code == 201
        token = a.post("/api/v2/users/alice/tokens", json={}).json()["token"]
    with live.client(token) as c:
        r = c.post("/api/v2/tasks", content=SPEC, headers={"Content-Type": "application/yaml"})
        assert r.status_code == 201, r.text
        tid = r.json()["task_id"]
    with live.ctx.db.session() as s:  # one finished attempt on a named node: ids and times to show
        s.execute(update(TaskModel).where(TaskModel.id == tid).values(
            status="FAILED", attempts=1, submission_id=f"{tid}-a1", termination_reason="JOB_FAILED",
            status_message=f"exit code 1; see {LONG}/logs/attempt-1.log", started_at=STARTED, finished_at=FINISHED))
        s.add(TaskAttemptModel(task_id=tid, attempt=1, submission_id=f"{tid}-a1", status="FAILED", exit_code=1,
                               node_id="f" * 56, hostname=HOST, started_at=STARTED, finished_at=FINISHED))
    return token, tid


@pytest.fixture
def cli(live, monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))  # no stray ~/.config/argus/cli.yaml
    monkeypatch.setenv("ARGUS_URL", live.url)
    runner = CliRunner()

    def run(*args, token, columns=200, input=None):
        monkeypatch.setenv("ARGUS_TOKEN", token)
        monkeypatch.setenv("COLUMNS", str(columns))
        r = runner.invoke(app, list(args), input=input)
        assert r.exit_code == 0, r.output
        return r.output

    return run


def api(live, token, url, params=None):
    with live.client(token) as c:
        r = c.get(url, params=params)
        assert r.status_code == 200, r.text
        return r.json()


@pytest.mark.parametrize("columns", [80, 200])
def test_ids_paths_commands_and_times_are_never_broken(live, alice, cli, columns):
    token, tid = alice
    spec = api(live, token, f"/api/v2/tasks/{tid}/spec")
    expanded_long = LONG.replace("$HOME", api(live, token, "/api/v2/me")["home"])
    whole = [tid, f"{tid}-a1", HOST, "2026-11-20 15:30:12", "2026-11-20 16:45:59", f"{LONG}/logs/attempt-1.log"]

    out = cli("tasks", token=token, columns=columns)
    for s in (tid, "FAILED", "2026-11-20", f"{LONG}/logs/attempt-1.log"):
        assert s in out, out

    out = cli("task", tid, token=token, columns=columns)
    for s in whole:
        assert s in out, out

    out = cli("spec", tid, token=token, columns=columns)
    for s in (spec["command_raw"], spec["command_expanded"], f"{LONG}/train.parquet",
              f"{expanded_long}/test.parquet", *SPEC.splitlines()):
        assert s in out, out
    for line in json.dumps(spec["resolved"], indent=2, ensure_ascii=False).splitlines():
        assert line in out, line
    out = cli("spec", tid, "--view", "command", token=token, columns=columns)
    assert spec["command_raw"] in out and spec["command_expanded"] in out


def test_table_shrinks_free_text_then_degrades_to_blocks(live, alice, cli):
    token, tid = alice
    wide = cli("tasks", token=token, columns=200).splitlines()
    assert wide[0].split() == ["TASK", "USER", "STATUS", "GPUS", "CREATED", "REASON"]
    assert wide[1].startswith(f"{tid}  alice  FAILED") and wide[1].endswith(f"{LONG}/logs/attempt-1.log")
    # at 80 columns the reason's path (longer than what is left) cannot wrap: one block per task
    narrow = cli("tasks", token=token, columns=80).splitlines()
    assert narrow[0].split() == ["TASK", tid] and narrow[2].split() == ["STATUS", "FAILED"]
    assert narrow[5] == f"REASON   exit code 1; see {LONG}/logs/attempt-1.log"
    # a short reason wraps within its column instead, every other column whole
    with live.ctx.db.session() as s:
        s.execute(update(TaskModel).where(TaskModel.id == tid).values(
            status_message="exit code 1, see the log of attempt 1 for the first error and the traceback"))
    lines = cli("tasks", token=token, columns=80).splitlines()
    assert lines[0].split() == ["TASK", "USER", "STATUS", "GPUS", "CREATED", "REASON"]
    assert re.match(rf"{tid}  alice  FAILED  1×1   \d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d  exit code 1, see", lines[1])
    assert len(lines) > 2 and all(len(line) <= 80 for line in lines)
    # the attempts of `argus task` do not fit 80 columns whole: a block, with the full node id
    out = cli("task", tid, token=token, columns=80)
    assert f"SUBMISSION  {tid}-a1" in out and f"NODE        {HOST}" in out
    out = cli("task", tid, token=token, columns=200)
    assert any(line.split()[:4] == ["1", f"{tid}-a1", "FAILED", HOST] for line in out.splitlines())


def test_output_json_and_yaml_are_the_api_answer(live, alice, cli, tmp_path):
    token, tid = alice
    with live.client(token) as c:
        assert c.put("/api/v2/files/content", params={"path": "/datasets/x.txt"}, content=b"hi").status_code < 300
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "alice@laptop", "-f",
                        str(tmp_path / "k")], check=True)
        pub = (tmp_path / "k.pub").read_text()
        assert c.post("/api/v2/me/keys", json={"public_key": pub}).status_code == 201
    cases = [
        (("tasks",), token, "/api/v2/tasks", {"limit": 50, "offset": 0}),
        (("task", tid), token, f"/api/v2/tasks/{tid}", {}),
        (("spec", tid), token, f"/api/v2/tasks/{tid}/spec", {}),
        (("events", tid), token, f"/api/v2/tasks/{tid}/events", {}),
        (("metrics", tid), token, f"/api/v2/tasks/{tid}/metrics", {}),
        (("nodes",), token, "/api/v2/nodes", {}),
        (("me",), token, "/api/v2/me", {}),
        (("files", "ls", "/datasets"), token, "/api/v2/files", {"path": "/datasets"}),
        (("keys", "list"), token, "/api/v2/me/keys", {}),
        (("user", "list"), live.admin_token, "/api/v2/users", {}),
    ]
    for args, who, path, params in cases:
        body = api(live, who, path, params)
        for flag in ("--output", "-o"):
            assert json.loads(cli(*args, flag, "json", token=who, columns=80)) == body, args
            assert yaml.safe_load(cli(*args, flag, "yaml", token=who, columns=80)) == body, args
    # multi-line strings are literal blocks, never folded, in YAML; `--json` still works
    assert "raw: |" in cli("spec", tid, "-o", "yaml", token=token)
    assert json.loads(cli("task", tid, "--json", token=token))["task_id"] == tid
    me = api(live, token, "/api/v2/me")
    assert me["sftp"] and f"files: {me['sftp']}" in cli("me", token=token, columns=80)


def test_passwd_from_a_pipe(live, alice, cli, capfd, monkeypatch):
    token, _ = alice
    me = api(live, token, "/api/v2/me")
    out = cli("passwd", token=token, input="one long password\n")
    assert f"password set; log in with: {me['sftp']}" in out and "<port>" not in out
    # now that one is set, the current one is needed: from a pipe, in ARGUS_CURRENT_PASSWORD
    r = CliRunner().invoke(app, ["passwd"], input="another long password\n",
                           env={"ARGUS_TOKEN": token, "ARGUS_CURRENT_PASSWORD": ""})
    assert r.exit_code == 1 and "ARGUS_CURRENT_PASSWORD" in r.output
    monkeypatch.setenv("ARGUS_CURRENT_PASSWORD", "one long password")
    out = cli("passwd", token=token, input="another long password\r\nanother long password\r\n")
    monkeypatch.delenv("ARGUS_CURRENT_PASSWORD")
    assert me["sftp"] in out
    r = CliRunner().invoke(app, ["passwd"], input="a long password\nnot the same\n")
    assert r.exit_code == 1 and "two identical lines" in r.output
    r = CliRunner().invoke(app, ["passwd"], input="")
    assert r.exit_code == 1 and "no password on standard input" in r.output
    assert "GetPassWarning" not in capfd.readouterr().err
