"""The hostile probe against the process that really runs: a real ``argus up`` with secrets in its environment.

tests/e2e/test_jail.py runs tests/e2e/hostile_probe.py on the in-process test stack; here the same probe
runs in a task of a real ``argus up`` subprocess started with ``ARGUS_ADMIN_TOKEN``, ``ARGUS_METRICS_TOKEN``
and ``AWS_SECRET_ACCESS_KEY`` in its environment, while bob's Ray task runs beside it. The probe searches
every ``/proc/*/environ`` it can see, and its own environment, for those values, and tries every other way
out (the platform's GCS, dashboard and Jobs API, bob's private Ray, the platform's files, the server's pid).
Each way is blocked, the server still answers afterwards, and SIGTERM leaves no process of the state dir.

Once as root and once as an unprivileged account (uid/gid 65534, via ``setpriv``; the sandbox then needs
unprivileged user namespaces).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import psutil
import pytest

from argus.nodes.leftover import load, record_path
from tests.accounts import NOBODY, SETPRIV, skip_unless_nobody_can_run_argus
from tests.e2e.test_jail import assert_all_blocked, probe_knowledge, run_hostile_probe
from tests.e2e.test_two_up import admin_token, processes_of
from tests.e2e.test_up_restart import up
from tests.helpers import free_port, new_user_client
from tests.waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.hostile]

@pytest.fixture(params=["root", "non-root"])
def account(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Path, dict[str, str], list[str]]]:
    """(state dir, extra environment, command prefix) of the account ``argus up`` runs as."""
    is_root = os.geteuid() == 0
    if request.param == "root":
        if not is_root:
            pytest.skip("argus up as root needs a root test process")
        yield tmp_path / "state", {}, []
        return
    skip_unless_nobody_can_run_argus()
    base = Path(tempfile.mkdtemp(prefix="argus-hostile-up-", dir="/tmp"))  # tmp_path is 0700 root
    try:
        state, home = base / "state", base / "home"
        state.mkdir()
        home.mkdir()
        for path in [base, *base.rglob("*")]:
            os.chown(path, NOBODY, NOBODY)
        yield state, {"HOME": str(home)}, SETPRIV
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_a_hostile_task_of_argus_up_reaches_neither_its_secrets_nor_another_task(account) -> None:
    state, account_env, prefix = account
    admin, metrics, aws = (secrets.token_urlsafe(24) for _ in range(3))
    env = {**account_env, "ARGUS_ADMIN_TOKEN": admin, "ARGUS_METRICS_TOKEN": metrics,
           "AWS_SECRET_ACCESS_KEY": aws, "ARGUS_TASK_JAIL": "bwrap"}
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = up(state, port, "out.log", env=env, prefix=prefix)
    knows: dict | None = None
    try:
        assert admin_token(state, proc, port) == admin  # printed once, as it was newly registered
        server = psutil.Process(proc.pid)
        if prefix:
            assert server.uids().real == NOBODY and server.gids().real == NOBODY, (server.uids(), server.gids())
        # the secrets are really there to find: in the server's own environment
        server_env = Path(f"/proc/{proc.pid}/environ").read_bytes()
        assert all(v.encode() in server_env for v in (admin, metrics, aws))

        record = load(record_path(state))
        assert record is not None, (state / "out.log").read_text()[-3000:]
        root = state / "private"
        ray_token = (root / ".argus" / "ray-auth-token").read_text().strip()
        knows = probe_knowledge(
            gcs=f"{record.host}:{record.ports['ray_head_port']}",
            dashboard=f"http://{record.host}:{record.ports['ray_dashboard_port']}",
            client_port=record.ports["ray_client_server_port"], server_pid=proc.pid, state_dir=state,
            data_root=root,
            platform_paths=[str(state / "argus.db"), str(root / ".argus" / "ray-auth-token"),
                            str(state / "jail" / "node.json"), str(Path(record.temp_dir) / "session_latest")],
            secret_values=[admin, metrics, aws, ray_token])
        alice, bob = new_user_client(url, admin, "alice"), new_user_client(url, admin, "bob")
        started = time.monotonic()
        log, _ = run_hostile_probe(alice, bob, knows=knows)
        who = f"as uid {NOBODY}" if prefix else "as root"
        print(f"\n[{who}] probe ran in {time.monotonic() - started:.0f} s")
        assert_all_blocked(log)
        assert httpx.get(f"{url}/api/v2/health", timeout=10).status_code == 200
    finally:
        if knows is not None:
            (Path("/dev/shm") / knows["shm_marker"]).unlink(missing_ok=True)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
        code = proc.wait(90)
        with contextlib.suppress(AssertionError):  # on a time-out the ones left are named and killed below
            wait_until(lambda: not processes_of(state), 30, every=0.5, what="no process of the state dir")
        left = []
        for p in processes_of(state):  # named in the report, then killed: never left behind, even on a failure
            try:
                left.append((p.pid, " ".join(p.cmdline())))
                p.kill()
            except psutil.Error:
                pass
    out = (state / "out.log").read_text(errors="replace") if (state / "out.log").exists() else ""
    assert code == 0, out[-3000:]
    assert not left, left
    assert "Traceback" not in out, out[-3000:]
