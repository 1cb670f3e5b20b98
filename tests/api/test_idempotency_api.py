"""Idempotent submit (issue 11): one key, one task — across retries, races and a server killed with -9."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from sqlalchemy import func, select, update

from argus.cli.client import ArgusClient
from argus.db.models import IdempotencyKeyModel, TaskModel, utcnow
from argus.db.session import Database
from tests.helpers import api_client, free_port
from tests.waiting import wait_until

SPEC = """\
kind: advanced
workload: job
nnodes: 1
n_gpus_per_node: 0
command: python3 -m argus.jobs.sleep 1
"""
OTHER = SPEC.replace("sleep 1", "sleep 2")


def post(c: httpx.Client, body: str, key: str | None, ctype: str = "application/yaml") -> httpx.Response:
    headers = {"Content-Type": ctype, **({"Idempotency-Key": key} if key is not None else {})}
    return c.post("/api/v2/tasks", content=body.encode(), headers=headers)


def n_tasks(db: Database) -> int:
    with db.session() as s:
        return s.scalar(select(func.count()).select_from(TaskModel))


def test_same_key_answers_the_first_answer_and_queues_one_task(live):
    alice = live.new_user("alice")
    first = post(alice, SPEC, "k-1")
    assert first.status_code == 201, first.text
    assert "idempotent-replayed" not in first.headers
    again = post(alice, SPEC, "k-1")
    assert again.status_code == 201
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.content == first.content  # same body, byte for byte
    assert n_tasks(live.ctx.db) == 1
    # the same key for another spec is refused, naming the key and the task it already made
    clash = post(alice, OTHER, "k-1")
    assert clash.status_code == 409
    detail = clash.json()["detail"]
    assert detail["code"] == "idempotency_key_reused" and first.json()["task_id"] in detail["message"]
    # a key is the user's own: bob's "k-1" is another key
    bob = live.new_user("bob")
    theirs = post(bob, SPEC, "k-1")
    assert theirs.status_code == 201 and "idempotent-replayed" not in theirs.headers
    assert theirs.json()["task_id"] != first.json()["task_id"]
    # without a key, every POST is a new task (as before)
    assert post(alice, SPEC, None).status_code == 201
    assert n_tasks(live.ctx.db) == 3


@pytest.mark.parametrize("key, why", [
    ("", "must not be empty"),
    ("x" * 256, "at most 255 characters"),
    ("tab\there", "printable ASCII"),
    ("caf\u00e9", "printable ASCII"),
])
def test_malformed_key_is_a_clear_400(live, key, why):
    alice = live.new_user("alice")
    r = alice.post("/api/v2/tasks", content=SPEC.encode(),
                   headers=[("Content-Type", "application/yaml"), ("Idempotency-Key", key.encode("latin-1"))])
    assert r.status_code == 400, r.text
    detail = r.json()["detail"]
    assert detail["code"] == "invalid_idempotency_key"
    assert detail["errors"][0]["field"] == "Idempotency-Key" and why in detail["errors"][0]["message"]
    assert n_tasks(live.ctx.db) == 0


def test_a_refused_spec_stores_nothing_so_the_key_can_carry_the_fix(live):
    alice = live.new_user("alice")
    bad = SPEC.replace("n_gpus_per_node: 0", "n_gpus_per_node: -3")
    assert post(alice, bad, "k-fix").status_code == 400
    assert post(alice, bad, "k-fix").status_code == 400  # checked again, not replayed
    ok = post(alice, SPEC, "k-fix")
    assert ok.status_code == 201 and "idempotent-replayed" not in ok.headers


def test_a_key_older_than_a_day_is_forgotten_and_pruned(live):
    alice = live.new_user("alice")
    first = post(alice, SPEC, "k-old").json()["task_id"]
    post(alice, SPEC, "k-other")
    with live.ctx.db.session() as s:
        s.execute(update(IdempotencyKeyModel).values(created_at=utcnow() - timedelta(hours=25)))
    again = post(alice, SPEC, "k-old")
    assert again.status_code == 201 and "idempotent-replayed" not in again.headers
    assert again.json()["task_id"] != first
    with live.ctx.db.session() as s:  # both stale rows went; the new one stays
        assert [k for (k,) in s.execute(select(IdempotencyKeyModel.key))] == ["k-old"]


def test_concurrent_requests_with_one_key_make_one_task(live):
    alice = live.new_user("alice")
    answers: list[httpx.Response] = []
    barrier = threading.Barrier(6)

    def go() -> None:
        with live.client(alice.headers["Authorization"].split(" ", 1)[1]) as c:
            barrier.wait()
            answers.append(post(c, SPEC, "k-race"))

    threads = [threading.Thread(target=go) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert [r.status_code for r in answers] == [201] * 6, [r.text for r in answers]
    assert len({r.json()["task_id"] for r in answers}) == 1
    assert sum("idempotent-replayed" not in r.headers for r in answers) == 1
    assert n_tasks(live.ctx.db) == 1


# ---------------------------------------------------------------- across a server killed with -9

TOKEN = "argus_idempotency_test_token_0123456789"


def start_server(state: Path, port: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, "ARGUS_ADMIN_TOKEN": TOKEN, "ARGUS_SFTP_ENABLED": "false", "ARGUS_VERL_VALIDATION": "off"}
    return subprocess.Popen([sys.executable, "-m", "argus.cli.main", "server", "--state-dir", str(state),
                             "--port", str(port), "--ray-address", "127.0.0.1:1"],
                            env=env, stdout=subprocess.DEVNULL, stderr=open(state / "server.log", "ab"))  # noqa: SIM115


def wait_healthy(port: int, proc: subprocess.Popen[bytes], state: Path) -> None:
    def healthy() -> bool:
        assert proc.poll() is None, (state / "server.log").read_text()[-3000:]
        return httpx.get(f"http://127.0.0.1:{port}/api/v2/health", timeout=1).status_code == 200

    wait_until(healthy, 60, ignore=(httpx.TransportError,), what="server did not become healthy")


def test_the_same_key_retried_across_a_kill_9_and_restart_gets_the_same_task(tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = start_server(state, port)
    procs = [proc]
    try:
        wait_healthy(port, proc, state)
        admin = api_client(url, TOKEN)
        assert admin.post("/api/v2/users", json={"name": "erin"}).status_code == 201
        token = admin.post("/api/v2/users/erin/tokens", json={}).json()["token"]
        erin = ArgusClient(url, token)
        first = erin.post_retrying("/api/v2/tasks", key="retry-me", content=SPEC.encode(),
                                   headers={"Content-Type": "application/yaml"})
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        # the client retries while the server is down; the server comes back on the same database
        restarted: list[subprocess.Popen[bytes]] = []
        timer = threading.Timer(1.0, lambda: restarted.append(start_server(state, port)))
        timer.start()
        t0 = time.monotonic()
        again = erin.post_retrying("/api/v2/tasks", key="retry-me", content=SPEC.encode(),
                                   headers={"Content-Type": "application/yaml"}, retry_for_s=90)
        timer.join()
        procs += restarted
        assert time.monotonic() - t0 > 1.0  # it really waited for the restart
        assert again == first
        db = Database(f"sqlite:///{state / 'argus.db'}")
        try:
            assert n_tasks(db) == 1
        finally:
            db.dispose()
        # and `argus submit` itself: a fresh key each run, so a second run is a second task
        env = {**os.environ, "ARGUS_URL": url, "ARGUS_TOKEN": token}
        spec_file = tmp_path / "t.yaml"
        spec_file.write_text(SPEC)
        out = subprocess.run([sys.executable, "-m", "argus.cli.main", "submit", str(spec_file)], env=env,
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0 and "accepted" in out.stdout, out.stdout + out.stderr
        assert len(ArgusClient(url, token).get("/api/v2/tasks")["items"]) == 2
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(30)
                except subprocess.TimeoutExpired:
                    p.kill()
