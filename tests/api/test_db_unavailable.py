"""A busy or full database answers 503 + Retry-After naming the cause (issue 11), logged once, not per request."""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from types import SimpleNamespace

import pytest
from sqlalchemy import create_engine, event, text

from argus.settings import Settings
from tests.helpers import live_server, post_spec
from tests.pg import postgres_server

SPEC = """\
kind: advanced
workload: job
nnodes: 1
n_gpus_per_node: 0
command: python3 -m argus.jobs.sleep 1
"""


def submit(c, body: str = SPEC):
    return post_spec(c, body)


@pytest.fixture
def quick(tmp_path):
    """A live server whose requests wait 1 s for a database lock (the default is 5 s)."""
    settings = Settings(state_dir=tmp_path / "state", sftp_enabled=False, verl_validation="off",
                        db_request_busy_timeout_s=1.0)
    with live_server(settings) as srv:
        yield srv


def sqlite_path(srv) -> str:
    return srv.ctx.settings.db_url.split("///", 1)[1]


def test_a_held_write_lock_is_a_503_database_busy_with_retry_after_logged_once(quick, caplog):
    alice = quick.new_user("alice")
    holder = sqlite3.connect(sqlite_path(quick), isolation_level=None, timeout=0.1)
    holder.execute("BEGIN IMMEDIATE")  # another process holds the write lock (a long migration, a backup…)
    try:
        with caplog.at_level(logging.WARNING, logger="argus.api.db"):
            answers = [submit(alice) for _ in range(3)]
        for r in answers:
            assert r.status_code == 503, r.text
            assert r.headers["Retry-After"] == "2"
            detail = r.json()["detail"]
            assert detail["code"] == "database_busy" and detail["message"].startswith("database busy")
        lines = [rec for rec in caplog.records if rec.name == "argus.api.db"]
        assert len(lines) == 1 and "database busy" in lines[0].getMessage()
        assert not [rec for rec in caplog.records if rec.levelno >= logging.ERROR]  # no tracebacks per request
        assert alice.get("/api/v2/tasks").status_code == 200  # reads go on (WAL)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    r = submit(alice)
    assert r.status_code == 201, r.text


def test_a_full_database_is_a_503_database_disk_full(quick):
    alice = quick.new_user("alice")
    assert submit(alice).status_code == 201

    @event.listens_for(quick.ctx.db.engine, "connect")
    def _cap(dbapi_conn, _record):  # SQLite's own limit: past it every write fails with SQLITE_FULL
        pages = dbapi_conn.execute("PRAGMA page_count").fetchone()[0]
        dbapi_conn.execute(f"PRAGMA max_page_count={pages}")

    quick.ctx.db.engine.dispose()  # new connections, each capped at the file's current size
    big = SPEC + "".join(f"# padding line {i:06d} {'x' * 100}\n" for i in range(1500))  # ~170 KB: new pages
    r = submit(alice, big)
    assert r.status_code == 503, r.text
    assert r.headers["Retry-After"] == "30"
    detail = r.json()["detail"]
    assert detail["code"] == "database_full" and detail["message"].startswith("database disk full")
    event.remove(quick.ctx.db.engine, "connect", _cap)
    quick.ctx.db.engine.dispose()
    assert submit(alice, big).status_code == 201  # space again: the same request goes through


def test_a_lock_on_postgres_is_a_503_too(tmp_path):
    with postgres_server() as admin_url:
        eng = create_engine(admin_url, isolation_level="AUTOCOMMIT")
        with eng.connect() as c:
            c.execute(text("CREATE DATABASE argus_busy"))
        eng.dispose()
        url = admin_url.rsplit("/", 1)[0] + "/argus_busy"
        settings = Settings(state_dir=tmp_path / "state", sftp_enabled=False, verl_validation="off",
                            database_url=url, db_request_busy_timeout_s=1.0)
        with live_server(settings) as srv:
            alice = srv.new_user("alice")
            holder = create_engine(url)
            with holder.connect() as c:
                c.execute(text("LOCK TABLE tasks IN EXCLUSIVE MODE"))  # writes wait; lock_timeout ends the wait
                r = submit(alice)
                c.rollback()
            holder.dispose()
            assert r.status_code == 503, r.text
            assert r.json()["detail"]["code"] == "database_busy" and r.headers["Retry-After"] == "2"
            assert submit(alice).status_code == 201


def test_a_write_that_fails_at_commit_is_a_503_not_a_lost_201(quick):
    """``enable`` only changes a loaded row: the write happens at the request's commit, which must run
    before the answer is sent (deps.get_session with scope="function")."""
    quick.new_user("alice")
    with quick.admin() as admin:
        assert admin.post("/api/v2/users/alice/disable").status_code == 200
        holder = sqlite3.connect(sqlite_path(quick), isolation_level=None, timeout=0.1)
        holder.execute("BEGIN IMMEDIATE")
        try:
            r = admin.post("/api/v2/users/alice/enable")
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        assert r.status_code == 503, r.text
        assert r.json()["detail"]["code"] == "database_busy"
        alice = next(u for u in admin.get("/api/v2/users").json() if u["name"] == "alice")
        assert alice["disabled"] is True  # not enabled behind a success answer


def test_argus_submit_waits_out_a_busy_database_and_queues_once(quick, monkeypatch, tmp_path):
    from typer.testing import CliRunner

    from argus.cli.main import app

    quick.new_user("alice")
    with quick.admin() as admin:
        token = admin.post("/api/v2/users/alice/tokens", json={}).json()["token"]
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("ARGUS_URL", quick.url)
    monkeypatch.setenv("ARGUS_TOKEN", token)
    spec = tmp_path / "t.yaml"
    spec.write_text(SPEC)
    holder = sqlite3.connect(sqlite_path(quick), isolation_level=None, timeout=0.1, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    released = threading.Event()

    def release() -> None:
        if not released.is_set():
            released.set()
            holder.execute("ROLLBACK")
            holder.close()

    def sleep_then_release(seconds: float) -> None:
        """The lock is let go at the CLI's first backoff, i.e. only once a busy answer was seen.

        A fixed timer raced the CLI's start: on a loaded machine its first POST came after the
        release and never saw the busy database this test is about.
        """
        release()
        time.sleep(seconds)

    monkeypatch.setattr("argus.client.http.time", SimpleNamespace(monotonic=time.monotonic, sleep=sleep_then_release))
    try:
        r = CliRunner().invoke(app, ["submit", str(spec)])
    finally:
        release()
    assert r.exit_code == 0, r.output
    assert "database busy" in r.output and "retrying" in r.output and "accepted" in r.output
    with quick.admin() as admin:
        assert admin.get("/api/v2/tasks").json()["total"] == 1
