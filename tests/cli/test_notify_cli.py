"""`argus notify …` against a live server (real HTTP, real SQLite) whose sender posts to a real receiver."""

from __future__ import annotations

import json

import pytest
import yaml
from typer.testing import CliRunner

from argus.cli.main import app
from argus.server import notification_sender
from argus.settings import Settings
from tests.notify_fixtures import ALLOW_LOCAL, Receiver


@pytest.fixture
def settings(tmp_path) -> Settings:
    """The operator allows webhooks to the local receiver (loopback: refused otherwise)."""
    return Settings(state_dir=tmp_path / "state", sftp_enabled=False, verl_validation="off",
                    notify_webhook_allow=ALLOW_LOCAL)


@pytest.fixture
def cli(live, monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))  # no stray ~/.config/argus/cli.yaml
    monkeypatch.setenv("ARGUS_URL", live.url)
    monkeypatch.setenv("COLUMNS", "200")
    runner = CliRunner()

    def run(*args, token):
        monkeypatch.setenv("ARGUS_TOKEN", token)
        return runner.invoke(app, list(args))

    return run


def test_add_list_test_deliveries_remove(cli, live, receiver: Receiver) -> None:
    alice = live.new_user("alice")
    token = alice.headers["Authorization"].removeprefix("Bearer ")
    r = cli("notify", "list", token=token)
    assert r.exit_code == 0 and "no notification channels" in r.output

    r = cli("notify", "add-webhook", receiver.url, "--events", "failed,SUCCEEDED", token=token)
    assert r.exit_code == 0, r.output
    assert f"webhook {receiver.url} (SUCCEEDED, FAILED)" in r.output and "shown only now" in r.output
    secret = r.output.strip().splitlines()[-1]
    assert len(secret) == 64
    [ch] = json.loads(cli("notify", "list", "-o", "json", token=token).output)
    assert ch["events"] == ["SUCCEEDED", "FAILED"] and "secret" not in ch
    assert yaml.safe_load(cli("notify", "list", "-o", "yaml", token=token).output)[0]["id"] == ch["id"]
    r = cli("notify", "list", token=token)
    assert str(ch["id"]) in r.output and receiver.url in r.output and "SUCCEEDED,FAILED" in r.output

    r = cli("notify", "test", str(ch["id"]), token=token)
    assert r.exit_code == 0 and "queued test notification" in r.output, r.output
    r = cli("notify", "deliveries", str(ch["id"]), token=token)
    assert "TEST" in r.output and "pending" in r.output, r.output
    sender = notification_sender(live.ctx)
    try:
        receiver.secret = secret
        sender.run_once()
    finally:
        sender.db.dispose()
    assert receiver.wait_for(1)[0].signed_ok
    [d] = json.loads(cli("notify", "deliveries", str(ch["id"]), "-o", "json", token=token).output)
    assert (d["event"], d["state"], d["attempts"]) == ("TEST", "delivered", 1)

    r = cli("notify", "add-webhook", "ftp://example.com/x", "-e", "EXPLODED", token=token)
    assert r.exit_code == 1
    assert "target" in r.output and "ftp://example.com/x" in r.output and "https://" in r.output
    assert "events" in r.output and "EXPLODED" in r.output
    r = cli("notify", "add-email", "alice@example.com", token=token)
    assert r.exit_code == 1 and "smtp_host" in r.output

    bob = live.new_user("bob")
    r = cli("notify", "remove", str(ch["id"]), token=bob.headers["Authorization"].removeprefix("Bearer "))
    assert r.exit_code == 1 and f"no notification channel {ch['id']}" in r.output
    r = cli("notify", "remove", str(ch["id"]), token=token)
    assert r.exit_code == 0 and f"removed channel {ch['id']}" in r.output
    assert json.loads(cli("notify", "list", "-o", "json", token=token).output) == []
