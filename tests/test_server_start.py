"""`argus server` as a user runs it: a subprocess that serves the API and prints the admin token once."""

import os
import signal
import socket
import subprocess
import sys
import threading

import httpx
import pytest

from tests.helpers import free_port
from tests.waiting import slack, wait_until


def start(state_dir, port, **env):
    """The server as a subprocess; a thread collects its output (``proc.lines``) as it prints it."""
    e = {**os.environ, "ARGUS_SFTP_ENABLED": "false", "ARGUS_VERL_VALIDATION": "off", **env}
    e.pop("ARGUS_ADMIN_TOKEN", None) if "ARGUS_ADMIN_TOKEN" not in env else None
    proc = subprocess.Popen(
        [sys.executable, "-m", "argus.cli.main", "server", "--state-dir", str(state_dir), "--port", str(port),
         "--ray-address", "127.0.0.1:1"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=e,
    )
    proc.lines = []
    proc.reader = threading.Thread(target=lambda: proc.lines.extend(proc.stdout), daemon=True)
    proc.reader.start()
    return proc


def wait_healthy(port, proc, timeout=60):
    """Until the server says it is up ("Argus API: …", after its own health check and before the token): the
    API answering a probe of ours is not enough, the server may not have checked itself yet, and stopping it
    then is a start that never got up (CI saw that race)."""
    def ready():
        assert proc.poll() is None, "".join(proc.lines)
        return any(line.startswith("Argus API: ") for line in list(proc.lines))

    wait_until(ready, timeout, every=0.2, what="server did not say it is up")
    assert httpx.get(f"http://127.0.0.1:{port}/api/v2/health", timeout=slack(30)).status_code == 200


def stop(proc):
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=slack(30))
    proc.reader.join(timeout=slack(30))
    return "".join(proc.lines)


def test_server_serves_and_prints_token_once(tmp_path):
    port = free_port()
    proc = start(tmp_path, port)
    wait_healthy(port, proc)
    out = stop(proc)
    tokens = [line.split("admin token: ")[1] for line in out.splitlines() if line.startswith("admin token: ")]
    assert len(tokens) == 1, out
    r = None
    proc = start(tmp_path, port)
    try:
        wait_healthy(port, proc)
        r = httpx.get(f"http://127.0.0.1:{port}/api/v2/me", headers={"Authorization": f"Bearer {tokens[0]}"})
    finally:
        out2 = stop(proc)
    assert r.status_code == 200 and r.json()["name"] == "admin"
    assert "admin token:" not in out2  # printed once, on first start only


def test_fixed_admin_token(tmp_path):
    port = free_port()
    proc = start(tmp_path, port, ARGUS_ADMIN_TOKEN="argus_fixed_for_automation")
    try:
        wait_healthy(port, proc)
        r = httpx.get(f"http://127.0.0.1:{port}/api/v2/me",
                      headers={"Authorization": "Bearer argus_fixed_for_automation"})
        assert r.status_code == 200 and r.json()["is_admin"]
    finally:
        stop(proc)


# ---------------------------------------------------------------- start errors and the admin token


def run_cli(*args, timeout=60, **env):
    """Run `argus …` to completion (a start that fails does so before Ray starts); (rc, stdout, stderr)."""
    e = {**os.environ, "ARGUS_VERL_VALIDATION": "off", **env}
    for name in ("ARGUS_ADMIN_TOKEN", "ARGUS_RAY_HEAD_PORT", "ARGUS_RAY_DASHBOARD_PORT", "ARGUS_RAY_CLIENT_SERVER_PORT"):
        e.pop(name, None) if name not in env else None
    p = subprocess.run([sys.executable, "-m", "argus.cli.main", *map(str, args)], capture_output=True, text=True,
                       env=e, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def one_error_line(rc, out, err):
    assert rc != 0, out + err
    assert "Traceback" not in out + err, out + err
    errors = [line for line in (out + err).splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, out + err
    return errors[0]


@pytest.fixture
def taken_port():
    """A port something else listens on (as another user's server would)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def test_taken_api_port_is_one_line_naming_the_flag(tmp_path, taken_port):
    rc, out, err = run_cli("up", "--state-dir", tmp_path, "--port", taken_port, "--no-sftp")
    line = one_error_line(rc, out, err)
    assert f"127.0.0.1:{taken_port}" in line and "--port" in line and "in use" in line
    assert rc == 1 and "admin token:" not in out


def test_taken_sftp_port_names_its_flag_and_no_sftp(tmp_path, taken_port):
    rc, out, err = run_cli("server", "--state-dir", tmp_path, "--port", free_port(), "--sftp-port", taken_port,
                           "--ray-address", "127.0.0.1:1")
    line = one_error_line(rc, out, err)
    assert "SFTP" in line and "--sftp-port" in line and "--no-sftp" in line


def test_ray_port_in_worker_range_is_refused_naming_the_flag(tmp_path):
    rc, out, err = run_cli("up", "--state-dir", tmp_path, "--port", free_port(), "--no-sftp", "--ray-port", 12000)
    line = one_error_line(rc, out, err)
    assert "--ray-port" in line and "10002-19999" in line and rc == 2
    rc, out, err = run_cli("up", "--state-dir", tmp_path, "--no-sftp", ARGUS_RAY_DASHBOARD_PORT="19999")
    assert "ARGUS_RAY_DASHBOARD_PORT" in one_error_line(rc, out, err)


def test_taken_ray_port_fails_before_ray_and_keeps_the_first_token(tmp_path, taken_port):
    """A failed start (here: the Ray dashboard port asked for is taken) prints no token and uses none up:
    the next start that gets up prints it."""
    rc, out, err = run_cli("up", "--state-dir", tmp_path, "--port", free_port(), "--no-sftp",
                           "--ray-dashboard-port", taken_port)
    line = one_error_line(rc, out, err)
    assert str(taken_port) in line and "--ray-dashboard-port" in line and rc == 1
    assert "admin token:" not in out
    port = free_port()
    proc = start(tmp_path, port)
    wait_healthy(port, proc)
    out = stop(proc)
    lines = out.splitlines()
    tokens = [i for i, line in enumerate(lines) if line.startswith("admin token: ")]
    api = [i for i, line in enumerate(lines) if line.startswith("Argus API: ")]
    assert len(tokens) == 1 and api and api[0] < tokens[0], out  # printed once the API answers


def test_admin_token_reset_running_and_stopped(tmp_path):
    port = free_port()
    me = f"http://127.0.0.1:{port}/api/v2/me"

    def status(token):
        return httpx.get(me, headers={"Authorization": f"Bearer {token}"}).status_code

    proc = start(tmp_path, port)
    try:
        wait_healthy(port, proc)
        rc, out, err = run_cli("admin", "token", "--reset", "--state-dir", tmp_path)  # server running
        assert rc == 0, err
        new = out.strip().removeprefix("admin token: ")
        assert status(new) == 200
    finally:
        first = stop(proc)
    old = next(line.split(": ", 1)[1] for line in first.splitlines() if line.startswith("admin token: "))
    rc, out, err = run_cli("admin", "token", "--reset", "--state-dir", tmp_path)  # server stopped
    assert rc == 0, err
    newest = out.strip().removeprefix("admin token: ")
    proc = start(tmp_path, port)
    try:
        wait_healthy(port, proc)
        assert status(newest) == 200
        assert status(old) == 401 and status(new) == 401
    finally:
        assert "admin token:" not in stop(proc)


def test_admin_token_reset_needs_a_state_dir_with_a_database(tmp_path):
    rc, out, err = run_cli("admin", "token", "--reset", "--state-dir", tmp_path / "typo")
    assert "no Argus database" in one_error_line(rc, out, err)
    rc, out, err = run_cli("admin", "token", "--state-dir", tmp_path)
    assert "--reset" in one_error_line(rc, out, err)


def test_a_corrupt_or_foreign_database_is_one_error_line(tmp_path):
    """Issue 23 §6: a start-up problem is one line, never a traceback (the file is left as it was)."""
    state = tmp_path / "state"
    state.mkdir()
    (state / "argus.db").write_bytes(os.urandom(8192))
    line = one_error_line(*run_cli("server", "--state-dir", state, "--port", free_port(), "--no-sftp"))
    assert line.startswith(f"error: cannot open the database {state / 'argus.db'}: file is not a database; ")
    assert "move it away" in line
    (state / "argus.db").unlink()
    import sqlite3

    with sqlite3.connect(state / "argus.db") as conn:  # another application's Alembic history
        conn.execute("CREATE TABLE alembic_version (version_num VARCHAR(32))")
        conn.execute("INSERT INTO alembic_version VALUES ('deadbeef1234')")
    line = one_error_line(*run_cli("server", "--state-dir", state, "--port", free_port(), "--no-sftp"))
    assert "has a schema Argus does not know" in line and "deadbeef1234" in line


def test_start_up_output_has_no_migration_chatter(tmp_path):
    port = free_port()
    out = stop_after_healthy(tmp_path, port)
    assert "alembic" not in out and "SQLiteImpl" not in out, out


def stop_after_healthy(tmp_path, port) -> str:
    proc = start(tmp_path, port)
    try:
        wait_healthy(port, proc)
    finally:
        out = stop(proc)
    return out
