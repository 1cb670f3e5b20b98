"""The Ray job's entry point when the node has an agent: ask it to run the attempt, then follow it.

The platform's Ray places the attempt and holds its share of the node for as long as this process lives;
the attempt's processes are the agent's (:mod:`argus.nodes.agent`). So:

* this process dying (the raylet restarted, the head lost, Ray's SIGKILL of its job's group) does
  **not** end the training: the server, back or reconnected, follows the attempt through its record
  (launcher/attempt_record.py) and takes its outcome from there;
* Ray's stop (SIGTERM, the cancel's one request) is passed on as the agent's ``stop``: the launcher stops
  the task and the agent kills and empties its cgroup;
* the exit status is the launcher's, so Ray's ``driver_exit_code`` stays the task's; the last part of the
  launcher's output is copied to this process's stdout at the end, so Ray's driver log still has the
  words of a launcher that died before it could write the task's own log.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from pathlib import Path

from argus.core.launch import LaunchSpec
from argus.nodes.agent import KEY_ENV, NODE_ID_ENV
from argus.nodes.agent_client import AgentError, request, wait_for_end
from argus.nodes.paths import AgentPaths

WAIT_S = 10.0
TAIL_BYTES = 64 * 1024


def attempt_key(spec: LaunchSpec) -> str:
    return f"{Path(spec.job_dir).name}.{spec.attempt}"


def follow(sock: str, args: list[str], spec: LaunchSpec, node_id: str | None) -> int | None:
    """Run the attempt under the agent and return its exit status; None when no agent took it (the
    caller then runs it itself, as on a node without an agent)."""
    key = attempt_key(spec)
    env = {**os.environ, **({NODE_ID_ENV: node_id} if node_id else {})}
    env.pop(KEY_ENV, None)
    argv = [sys.executable, "-I", "-m", "argus.launcher.driver", *args]
    try:
        started = request(sock, "start", key=key, argv=argv, env=env, cwd="/")
    except AgentError as exc:
        print(f"[argus] {exc}: this attempt runs as a child of Ray's job and ends with it", flush=True)
        return None
    print(f"[argus] attempt {key} runs under the node agent (launcher pid {started['pid']}, cgroup "
          f"{started.get('cgroup') or 'none'}); this Ray job follows it", flush=True)
    stop = threading.Event()

    def stop_now(*_: object) -> None:
        """Ray's stop: passed on at once, not after the pending ``wait``: Ray SIGKILLs this process a few seconds
        after its SIGTERM (RAY_JOB_STOP_WAIT_TIME_S), and the attempt would go on training unasked."""
        if not stop.is_set():
            stop.set()
            threading.Thread(target=_ask_stop, args=(sock, key), daemon=True).start()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, stop_now)
    code = wait_for_end(sock, key, lambda: 1.0 if stop.is_set() else WAIT_S)
    _copy_tail(AgentPaths(Path(sock).parent.parent).out_file(key))
    return 1 if code is None else int(code)


def _ask_stop(sock: str, key: str) -> None:
    try:
        request(sock, "stop", key=key, timeout_s=60)
    except AgentError as exc:
        print(f"[argus] could not ask the node agent to stop {key}: {exc}", flush=True)


def _copy_tail(path: Path) -> None:
    try:
        with path.open("rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - TAIL_BYTES))
            data = f.read()
    except OSError:
        return
    sys.stdout.buffer.write(data)
    sys.stdout.flush()
