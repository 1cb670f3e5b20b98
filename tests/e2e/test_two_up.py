"""Two `argus up` on one machine, told apart only by --state-dir and --port (and --sftp-port / --no-sftp).

Each starts its own Ray head and worker on ports it picks itself (no Ray port flag given), becomes
healthy, prints its admin token only after that, and runs a CPU task to SUCCEEDED. SIGTERM to each
process group stops everything it started (no process of either cluster is left).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import psutil
import pytest

from tests.e2e.stack import spec, submit, wait_status
from tests.helpers import free_port
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e


def up(state: Path, port: int, *flags: str) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ARGUS_", "RAY_ADDRESS"))}
    env.update(ARGUS_VERL_VALIDATION="off", ARGUS_SCHEDULER_TICK_S="0.5")
    state.mkdir()
    return subprocess.Popen([sys.executable, "-m", "argus.cli.main", "up", "--state-dir", str(state),
                             "--port", str(port), "--gpus", "0", *flags],
                            env=env, stdout=open(state / "out.log", "wb"), stderr=subprocess.STDOUT,  # noqa: SIM115
                            start_new_session=True)


def admin_token(state: Path, proc: subprocess.Popen[bytes], port: int, timeout: float = 150) -> str:
    """Wait for health, then for the token line (printed only once health answers)."""
    def out() -> str:
        return (state / "out.log").read_text(errors="replace")

    def token() -> str | None:
        said = out()
        assert proc.poll() is None, said[-3000:]
        tokens = [line.split(": ", 1)[1] for line in said.splitlines() if line.startswith("admin token: ")]
        if tokens:
            assert httpx.get(f"http://127.0.0.1:{port}/api/v2/health").status_code == 200
            return tokens[0]
        return None

    return wait_until(token, timeout, every=0.2,
                      what=lambda: f"argus up not healthy after {timeout} s:\n{out()[-3000:]}")


def processes_of(state: Path) -> list[psutil.Process]:
    """Every process whose command line names this state dir (or its short Ray temp-dir link)."""
    import hashlib

    link = f"argus-{hashlib.sha1(str(state / 'ray').encode()).hexdigest()[:12]}"
    found = []
    for p in psutil.process_iter(["cmdline"]):
        cmd = " ".join(p.info["cmdline"] or [])
        if str(state) in cmd or link in cmd:
            found.append(p)
    return found


def test_two_argus_up_on_one_machine(tmp_path: Path) -> None:
    states = [tmp_path / "a", tmp_path / "b"]
    ports = [free_port(), free_port()]
    procs = [up(states[0], ports[0], "--no-sftp"), up(states[1], ports[1], "--sftp-port", str(free_port()))]
    try:
        tokens = [admin_token(s, p, port) for s, p, port in zip(states, procs, ports, strict=True)]
        clients = [httpx.Client(base_url=f"http://127.0.0.1:{port}", headers={"Authorization": f"Bearer {t}"},
                                timeout=30) for port, t in zip(ports, tokens, strict=True)]
        tids = [submit(c, spec("python3 -m argus.jobs.sleep 0")) for c in clients]
        for c, tid in zip(clients, tids, strict=True):
            t = wait_status(c, tid, "SUCCEEDED", timeout=180)
            assert t["attempts"][0]["exit_code"] == 0
        outs = [(s / "out.log").read_text() for s in states]
        dashboards = [next(line for line in out.splitlines() if line.startswith("Ray dashboard: ")) for out in outs]
        assert dashboards[0] != dashboards[1] and "8265" not in dashboards[0] + dashboards[1]
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        codes = [p.wait(90) for p in procs]
    assert codes == [0, 0], [(s / "out.log").read_text()[-2000:] for s in states]
    for s in states:
        assert "Traceback" not in (s / "out.log").read_text()
        wait_until(lambda s=s: not processes_of(s), 20, every=0.5,
                   what=lambda s=s: f"no process of {s} left; {processes_of(s)}")
