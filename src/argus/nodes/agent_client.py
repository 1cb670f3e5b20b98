"""Talking to a node's agent (:mod:`argus.nodes.agent`), and starting it when none answers.

Used by ``argus up`` / ``argus worker`` (start it, name themselves its keeper, release it when they stop
gracefully) and by the Ray job entry point on the node (:mod:`argus.nodes.attach`).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from argus.core.envvars import NODE_ENV_KEEP, env_kept
from argus.nodes.paths import AgentPaths

AGENT_ENV = "ARGUS_AGENT_SOCKET"  # in the node's ``ray start`` environment: its launchers find the agent here
START_WAIT_S = 60.0  # a loaded machine starts a Python process slowly
AGENT_GONE_S = 2.0  # between tries while the agent restarts


class AgentError(RuntimeError):
    """The agent did not answer, or refused the request (the message is its own)."""


def request(sock: str | Path, op: str, *, timeout_s: float = 30.0, **fields: Any) -> Any:
    """One request, one answer; ``AgentError`` when the agent is not there or says no."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout_s)
            s.connect(str(sock))
            s.sendall((json.dumps({"op": op, **fields}) + "\n").encode())
            data = b""
            while not data.endswith(b"\n"):
                chunk = s.recv(1 << 16)
                if not chunk:
                    break
                data += chunk
    except OSError as exc:
        raise AgentError(f"no node agent answers on {sock}: {exc}") from exc
    try:
        reply = json.loads(data)
    except ValueError as exc:
        raise AgentError(f"the node agent on {sock} gave no answer to {op}") from exc
    if not reply.get("ok"):
        raise AgentError(f"the node agent refused {op}: {reply.get('error')}")
    return reply.get("result")


def answers(sock: str | Path) -> bool:
    try:
        request(sock, "list", timeout_s=5)
    except AgentError:
        return False
    return True


def ensure_running(state_dir: Path, *, keeper: int | None, python: str = sys.executable) -> Path:
    """The node's agent socket, starting the agent first if none answers; ``keeper`` becomes its keeper.

    The agent is started in a session of its own with its output in ``<state>/agent/agent.log``, so
    neither a kill of the caller nor of the caller's process group reaches it.
    """
    paths = AgentPaths(state_dir)
    if answers(paths.socket):
        request(paths.socket, "hello", keeper=keeper)
        return paths.socket
    paths.make()
    with open(paths.log_file, "ab") as out:
        proc = subprocess.Popen([python, "-I", "-m", "argus.nodes.agent", "--state-dir", str(state_dir),
                          *(["--keeper", str(keeper)] if keeper else [])],
                         stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                         cwd="/", env=_agent_env())
    threading.Thread(target=proc.wait, daemon=True).start()  # no zombie of an agent that exits before us
    deadline = time.monotonic() + START_WAIT_S
    while time.monotonic() < deadline:
        if answers(paths.socket):
            request(paths.socket, "hello", keeper=keeper)
            return paths.socket
        time.sleep(0.1)
    raise AgentError(f"the node agent did not start within {START_WAIT_S:.0f} s; see {paths.log_file}")


def wait_for_end(sock: str | Path, key: str, wait_s: Callable[[], float]) -> int | None:
    """Follow the agent's attempt ``key`` until it ends; its exit status (None: the agent does not know it).
    While the agent restarts (systemd), the attempt goes on: asked again, or its exit file read once it ended.
    ``wait_s``: how long each ``wait`` may block (asked anew each time: shorter once a stop was sent)."""
    exit_file = AgentPaths(Path(sock).parent.parent).exit_file(key)
    while True:
        try:
            state = request(sock, "wait", key=key, timeout_s=wait_s() + 30, wait_s=wait_s())
        except AgentError:
            try:
                return int(exit_file.read_text().strip())
            except (OSError, ValueError):
                time.sleep(AGENT_GONE_S)
                continue
        if state.get("unknown") or not state.get("running", True):
            return state.get("exit_code")


def release(state_dir: Path, *, stop_tasks: bool, timeout_s: float = 60.0) -> dict[str, Any] | None:
    """The keeper stops: stop the attempts (or leave them training); None when no agent answers."""
    try:
        return request(AgentPaths(state_dir).socket, "release", stop_tasks=stop_tasks, timeout_s=timeout_s)
    except AgentError:
        return None


def _agent_env() -> dict[str, str]:
    """The agent's environment: the node allowlist only (core/envvars.py), never the server's secrets. A
    launcher gets its environment from its Ray job (``start``), not from the agent."""
    return {k: v for k, v in os.environ.items() if env_kept(k, NODE_ENV_KEEP) or k in ("HOME", "USER", "PATH")}
