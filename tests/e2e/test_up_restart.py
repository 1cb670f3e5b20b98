"""`argus up` killed with SIGKILL, then the same command again: it adopts the Ray it left and becomes healthy.

The embedded Ray nodes run in their own sessions, so they outlive a SIGKILL of `argus up`. The second
start (no extra flag) adopts them — the task that was running keeps running and succeeds with its one
attempt — and a clean SIGTERM afterwards leaves no process of that state dir. While the first one is
alive, a second `argus up` on the same state dir is refused in one line naming the owner's pid.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import httpx
import pytest

from tests.e2e.stack import spec, submit, wait_status
from tests.e2e.test_two_up import admin_token, processes_of
from tests.helpers import free_port
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e


def up(state: Path, port: int, log: str, *, env: dict[str, str] | None = None,
       prefix: Sequence[str] = ()) -> subprocess.Popen[bytes]:
    """``argus up`` on ``state`` in its own session; ``env`` is added to its environment and ``prefix`` runs it
    (``setpriv ... --``: as another account)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("ARGUS_", "RAY_ADDRESS"))}
    base.update(ARGUS_VERL_VALIDATION="off", ARGUS_SCHEDULER_TICK_S="0.5", **(env or {}))
    state.mkdir(exist_ok=True)
    return subprocess.Popen([*prefix, sys.executable, "-m", "argus.cli.main", "up", "--state-dir", str(state),
                             "--port", str(port), "--gpus", "0", "--no-sftp"],
                            env=base, stdout=open(state / log, "wb"), stderr=subprocess.STDOUT,  # noqa: SIM115
                            start_new_session=True)


def wait_healthy(proc: subprocess.Popen[bytes], port: int, out: Path, timeout: float = 150) -> None:
    def healthy() -> bool:
        assert proc.poll() is None, out.read_text()[-3000:]
        return httpx.get(f"http://127.0.0.1:{port}/api/v2/health", timeout=2).status_code == 200

    wait_until(healthy, timeout, every=0.2, ignore=(httpx.TransportError,),
               what=lambda: f"argus up healthy:\n{out.read_text()[-3000:]}")


def test_sigkill_of_up_then_up_again_adopts_its_ray(tmp_path: Path) -> None:
    state, port = tmp_path / "state", free_port()
    first = up(state, port, "out1.log")
    second = None
    try:
        token = _token(state, first, port)
        client = httpx.Client(base_url=f"http://127.0.0.1:{port}", headers={"Authorization": f"Bearer {token}"},
                              timeout=30)
        tid = submit(client, spec("python3 -m argus.jobs.sleep 12 --lines 4"))
        wait_status(client, tid, "RUNNING", timeout=120)

        # a second `argus up` on the same state dir while the first lives: refused, naming its pid
        busy = subprocess.run([sys.executable, "-m", "argus.cli.main", "up", "--state-dir", str(state),
                               "--port", str(free_port()), "--no-sftp"], capture_output=True, text=True, timeout=60)
        assert busy.returncode == 1, busy.stderr
        assert f"another Argus server (pid {first.pid}) is running with --state-dir {state}" in busy.stderr

        ray_pids = {p.pid for p in processes_of(state)} - {first.pid}
        assert ray_pids, "the embedded Ray should be running"
        os.kill(first.pid, signal.SIGKILL)
        first.wait(10)
        assert all(_alive(pid) for pid in ray_pids), "SIGKILL of argus up should leave its Ray running"

        second = up(state, port, "out2.log")
        wait_healthy(second, port, state / "out2.log")
        out = (state / "out2.log").read_text()
        assert f"embedded Ray: adopted the cluster left running by pid {first.pid}" in out, out[-3000:]
        assert "admin token:" not in out  # the first run's token still works
        t = wait_status(client, tid, "SUCCEEDED", timeout=120)
        assert len(t["attempts"]) == 1, t["attempts"]
        assert client.get("/api/v2/nodes").status_code == 200
    finally:
        for proc in (second, first):
            if proc is not None and proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        codes = [p.wait(90) for p in (first, second) if p is not None]
    assert codes[-1] == 0, (state / "out2.log").read_text()[-3000:]
    wait_until(lambda: not processes_of(state), 20, every=0.5,
               what=lambda: f"no process of the state dir left; {processes_of(state)}")
    assert not (state / "embedded-ray.json").exists()


def _token(state: Path, proc: subprocess.Popen[bytes], port: int) -> str:
    (state / "out.log").unlink(missing_ok=True)
    (state / "out.log").symlink_to(state / "out1.log")  # admin_token reads out.log
    return admin_token(state, proc, port)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
