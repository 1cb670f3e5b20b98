"""A multi-node attempt's hold on the platform's Ray, in a child process of the launcher (issue 36).

The first node's launcher places nodes 2..N through the platform's Ray (launcher/gang.py ``Gang``: a placement
group and a ``NodeSandbox`` actor per node), which needs a Ray driver connection for as long as the attempt
holds them. That connection used to be the launcher's own, and Ray ends a driver whose GCS stays away for
``gcs_rpc_server_reconnect_timeout_s`` (60 s): "Failed to connect to GCS within 60 seconds … The program will
terminate" — so a platform head down for more than a minute killed the launcher, and with it the first node's
sandbox and the training (found by bench/outage_multinode.py 120). The connection now lives here, in a child
the launcher talks to over a pipe; Ray may end it, the launcher goes on. The nodes themselves are their agents'
(gang.py), so they train on; a node whose actor went with the platform's Ray ends with the task's private Ray
(launcher/private_ray.py ``stay_joined``).

The protocol, one JSON object a line: the keeper says ``{"ip": …}`` (this node's address as Ray sees it, which
the task's private Ray head binds), reads ``{"head": …, "token": …}`` (never on a command line), places the
nodes and says ``{"refusal": …}`` (null: all run), then waits for ``stop`` (or the launcher's end: EOF), stops
every node through its actor (the agent confirms each group empty), says ``{"stopped": true}`` and exits.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

from argus.core.launch import LaunchSpec

IP_TIMEOUT_S = 300.0  # ray.init on a loaded node
EXIT_S = 10.0  # for the keeper to exit once it answered (or its pipe closed)
STOP_MARGIN_S = 40.0  # past the nodes' stop bound (gang.STOP_S): the actors' kill and the placement group's removal


class Gone(Exception):
    """The keeper ended or did not answer in time (the message says which)."""


class GangKeeper:
    """The launcher's side: :meth:`head_ip`, :meth:`start` and :meth:`stop`, as ``gang.Gang`` offers them."""

    def __init__(self, spec: LaunchSpec, job_dir: Path, argv: list[str] | None = None) -> None:
        from argus.launcher.gang import READY_TIMEOUT_S, STOP_S

        self.spec, self.job_dir = spec, job_dir
        self.argv = argv or [sys.executable, "-I", "-m", __name__, *spec.flags()]
        self.ready_s, self.stop_s = READY_TIMEOUT_S, STOP_S
        self.proc: subprocess.Popen[bytes] | None = None
        self.lost: str | None = None  # why the keeper went before the stop (said in the task's log at the end)

    def head_ip(self) -> str:
        from argus.launcher.driver import _die_with_parent

        self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd="/", bufsize=0,
                                     preexec_fn=_die_with_parent)  # its stderr: the launcher's (the agent's .out)
        return str(self._read(IP_TIMEOUT_S)["ip"])

    def start(self, head: str, token: str) -> str | None:
        """Place and start nodes 2..N; None when all run, else why not (the task must not start)."""
        try:
            self._send({"head": head, "token": token})
            refusal = self._read(self.ready_s + 60)["refusal"]
        except Gone as exc:
            return f"the platform's Ray connection that places the task's other nodes ended: {exc}"
        return None if refusal is None else str(refusal)

    def stop(self) -> str | None:
        """Every node stopped through its actor and the keeper gone; None, or what was lost on the way (a line)."""
        proc = self.proc
        if proc is None:
            return None
        if proc.poll() is None:
            try:
                self._send("stop")
                self._read(self.stop_s + STOP_MARGIN_S)
            except Gone as exc:
                self.lost = self.lost or str(exc)
        else:  # it went during the attempt (Ray ends a driver whose GCS stays away)
            self.lost = self.lost or _how(proc.returncode)
        try:
            proc.wait(EXIT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        return self.lost

    def _send(self, message: Any) -> None:
        proc = self.proc
        assert proc is not None and proc.stdin is not None
        try:
            proc.stdin.write((json.dumps(message) + "\n").encode())
            proc.stdin.flush()
        except OSError:
            raise Gone(self._ended()) from None

    def _read(self, timeout_s: float) -> dict[str, Any]:
        proc = self.proc
        assert proc is not None and proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], timeout_s)
        line = proc.stdout.readline() if ready else None
        if line is None:
            proc.kill()
            proc.wait()
            raise Gone(f"no answer in {timeout_s:.0f} s")
        if not line.endswith(b"\n"):  # EOF, or a line cut short by its end
            raise Gone(self._ended())
        try:
            return json.loads(line)
        except ValueError:
            raise Gone(f"it said {line[:200]!r}") from None

    def _ended(self) -> str:
        assert self.proc is not None
        try:
            code = self.proc.wait(EXIT_S)
        except subprocess.TimeoutExpired:
            return "it stopped answering"
        self.lost = _how(code)
        return self.lost


def _how(code: int) -> str:
    return f"it ended with {'signal ' + str(-code) if code < 0 else f'exit code {code}'}"


def serve(gang: Any, inp: IO[str], out: IO[str]) -> int:
    """The keeper's side of the protocol around a ``gang.Gang`` (or a stand-in with its three methods)."""
    def say(message: dict[str, Any]) -> None:
        out.write(json.dumps(message) + "\n")
        out.flush()

    say({"ip": gang.head_ip()})
    line = inp.readline()
    if not line:
        return 0  # the launcher went before the start
    asked = json.loads(line)
    say({"refusal": gang.start(asked["head"], asked["token"])})
    inp.readline()  # "stop", or EOF: the launcher ended
    gang.stop()
    try:
        say({"stopped": True})
    except OSError:
        pass
    return 0


def main(args: list[str] | None = None) -> int:
    from argus.launcher.gang import Gang

    spec = LaunchSpec.parse(sys.argv[1:] if args is None else args)
    out = os.fdopen(os.dup(1), "w")  # the protocol's; whatever Ray prints goes to stderr
    os.dup2(2, 1)
    started = time.monotonic()
    try:
        return serve(Gang(spec, Path(spec.job_dir)), sys.stdin, out)
    finally:
        print(f"[argus] gang keeper of {Path(spec.job_dir).name}.{spec.attempt} ends after "
              f"{time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main())
