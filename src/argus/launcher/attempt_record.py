"""An attempt's record out of its owner's reach: the driver's heartbeat and outcome, and the server's stop request.

``status.json`` is in the owner's home, and the task can rewrite it: it may describe (a log's cause, a start
time) but never decide. Deciding is what this record is for. When the platform's Ray loses a job whose driver
still runs — its Ray head restarted under a training, and the driver, no longer a child of a Ray worker,
carries on (measured: kill -9 of ``argus up`` and its raylets leaves the driver, its sandbox and the training
running, reparented to init) — the server must neither start a second copy of the attempt nor forget the
first. So the driver mirrors what the server decides on into
``<data root>/.argus/attempts/<task>.<attempt>.json`` (beside the dashboards' records: a platform folder that
no sandbox shows and no file access of a user reaches), and the server follows the attempt through it:

* **alive** (no ``finished_at``, ``alive_at`` within ``LOST_AFTER_BEATS`` heartbeats): it keeps RUNNING,
  followed through this record instead of Ray; a cancel writes ``<task>.<attempt>.stop``, which the driver
  looks for every second and answers as a SIGTERM;
* **finished**: the task ends as the driver says (exit code, time), in its first attempt;
* **silent** past the grace, or never written: only then is the attempt lost (RAY_JOB_LOST), and its retry
  resumes from the latest complete checkpoint (scheduler/autoresume.py).

The same folder carries the server's other request, for stall forensics (scheduler/progress.py): when an attempt
stalls, the server cannot reach its node's processes, so it writes ``<task>.<attempt>.stacks`` (when it asked:
the request's token); the driver takes it (removes it, so each request is answered once), writes every process's
stack into the task's folder (launcher/stacks.py) and answers in ``<task>.<attempt>.stacks.json`` with that token
and the file's path below the owner's home, which the server names in the task's timeline.
"""

from __future__ import annotations

import json
import os
import re
import socket
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

# what the record keeps: the attempt's identity, its heartbeat and its end (status.json has the rest)
FIELDS = ("attempt", "hostname", "node_id", "driver_pid", "started_at", "alive_at", "heartbeat_s", "finished_at",
          "exit_code", "signal", "oom_kills", "memory_limit", "limit_hit")
LOST_AFTER_BEATS = 3  # heartbeats missed before a driver that has not finished counts as gone


def folder(data_root: Path) -> Path:
    return data_root / ".argus" / "attempts"


def record_path(data_root: Path, task_id: str, attempt: int) -> Path:
    return folder(data_root) / f"{task_id}.{attempt}.json"


def stop_path(data_root: Path, task_id: str, attempt: int) -> Path:
    return folder(data_root) / f"{task_id}.{attempt}.stop"


def stacks_path(data_root: Path, task_id: str, attempt: int) -> Path:
    """The server's request for every process's stack (launcher/stacks.py), until the driver takes it."""
    return folder(data_root) / f"{task_id}.{attempt}.stacks"


def stacks_answer_path(data_root: Path, task_id: str, attempt: int) -> Path:
    return folder(data_root) / f"{task_id}.{attempt}.stacks.json"


def gpu_check_path(data_root: Path, key: str) -> Path:
    """The node agent's check of an ended attempt's GPUs (``core.gpu_free.GpuCheck``; issue 36): ``key`` is the
    agent's, ``<task>.<attempt>`` or ``<task>.<attempt>.node-<k>`` for the other nodes of a gang."""
    return folder(data_root) / f"{key}.gpus.json"


def held_folder(data_root: Path) -> Path:
    """The GPUs held back (``core.gpu_free.HeldGpu``, one file each): written and removed by the nodes' agents,
    listed by the scheduler every pass (so a folder of its own, empty while nothing is held)."""
    return data_root / ".argus" / "gpus-held"


def held_path(data_root: Path, node_id: str, uuid: str) -> Path:
    return held_folder(data_root) / f"{_SAFE.sub('_', node_id)}.{_SAFE.sub('_', uuid)}.json"


_SAFE = re.compile(r"[^A-Za-z0-9_-]")


def write_json(path: Path, data: dict[str, Any]) -> OSError | None:
    """``data`` replaced atomically (0600, its folder 0700); the error, never raised."""
    return _replace_json(path, data)


def read_held(data_root: Path) -> list[dict[str, Any]]:
    """Every held GPU's record (decoded, not yet typed: ``HeldGpu.parse``); [] when none (the usual case)."""
    try:
        entries = [e.path for e in os.scandir(held_folder(data_root)) if e.name.endswith(".json")]
    except OSError:
        return []
    return [data for data in (_read_json(Path(p)) for p in sorted(entries)) if data]


def write(path: Path, data: dict[str, Any]) -> OSError | None:
    """The record's fields of ``data``, replaced atomically (0600, its folder 0700); the error, never raised."""
    return _replace_json(path, {k: data.get(k) for k in FIELDS})


def _replace_json(path: Path, data: dict[str, Any]) -> OSError | None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(data, f)
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        return exc
    return None


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def read(data_root: Path, task_id: str, attempt: int) -> dict[str, Any]:
    """The attempt's record, or ``{}`` (never written: a driver from before it, or one that never started).

    A driver of this machine (``hostname``) whose process is gone is said so at once (``gone``), without
    waiting out the heartbeats: a worker that died with its drivers (SIGKILL: no last word) beside the
    server, as in ``argus up``. A driver elsewhere is judged by its heartbeat alone."""
    data = _read_json(record_path(data_root, task_id, attempt))
    if data.get("attempt") != attempt:
        return {}
    pid = data.get("driver_pid")
    if data.get("hostname") == socket.gethostname() and isinstance(pid, int) and not _running(pid):
        data["gone"] = True
    return data


def _running(pid: int) -> bool:
    """Whether ``pid`` runs here: exists and is not a zombie (a dead driver that no init reaped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[:1] != ["Z"]


def request_stop(data_root: Path, task_id: str, attempt: int) -> None:
    path = stop_path(data_root, task_id, attempt)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.touch()


def stop_requested(data_root: Path, task_id: str, attempt: int) -> bool:
    return stop_path(data_root, task_id, attempt).exists()


def ask_to_stop(data_root: Path, task_id: str, attempt: int, now: datetime) -> dict[str, Any]:
    """The attempt's record while its driver still runs it, with a stop asked of it there (once); ``{}`` when
    nothing runs (and its stop request, if any, is removed). What a cancel and a retry both need."""
    record = read(data_root, task_id, attempt)
    if not alive(record, now):
        forget(data_root, task_id, attempt)
        return {}
    if not stop_requested(data_root, task_id, attempt):
        request_stop(data_root, task_id, attempt)
    return record


def forget(data_root: Path, task_id: str, attempt: int) -> None:
    """Remove an ended attempt's requests, which no driver will take (its record stays: the outcome, for a server
    that comes back; so does a stacks answer, the file it names is in the task's folder)."""
    stop_path(data_root, task_id, attempt).unlink(missing_ok=True)
    stacks_path(data_root, task_id, attempt).unlink(missing_ok=True)


def ask_for_stacks(data_root: Path, task_id: str, attempt: int, now: datetime) -> str | None:
    """Ask the attempt's driver for every process's stack: the request's token (when it was asked), to find its
    answer by (:func:`stacks_answer`); None when no driver runs the attempt (nothing would answer) or the request
    could not be written. A request still waiting is replaced: its answer carries the newer token."""
    if not alive(read(data_root, task_id, attempt), now):
        return None
    token = now.isoformat()
    failed = _replace_json(stacks_path(data_root, task_id, attempt), {"asked_at": token})
    return None if failed is not None else token


def take_stacks_request(data_root: Path, task_id: str, attempt: int) -> str | None:
    """The driver's side: the waiting request's token, removed so that it is answered once; None when none waits.

    Looked for every poll (a ``stat``, like the stop request); the token is echoed in the answer."""
    path = stacks_path(data_root, task_id, attempt)
    if not path.exists():
        return None
    token = _read_json(path).get("asked_at")
    try:
        path.unlink()
    except FileNotFoundError:
        return None  # taken meanwhile
    except OSError:
        pass  # cannot remove it: answer it anyway (the server ignores a second answer to one token)
    return token if isinstance(token, str) else ""


def answer_stacks(data_root: Path, task_id: str, attempt: int, token: str, *, file: str | None,
                  processes: int = 0, python: int = 0, dumped: int = 0, error: str | None = None) -> OSError | None:
    """The driver's answer to the request ``token``: ``file`` below the owner's home (None: none written, and
    ``error`` says why), how many processes it lists, how many are Python and how many py-spy dumped."""
    return _replace_json(stacks_answer_path(data_root, task_id, attempt), {
        "asked_at": token, "answered_at": datetime.now(UTC).isoformat(), "file": file, "processes": processes,
        "python": python, "dumped": dumped, "error": error})


def stacks_answer(data_root: Path, task_id: str, attempt: int, token: str) -> dict[str, Any] | None:
    """The driver's answer to the request ``token``, or None while it has not answered that one."""
    data = _read_json(stacks_answer_path(data_root, task_id, attempt))
    return data if token and data.get("asked_at") == token else None


def _when(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        at = datetime.fromisoformat(value)
    except ValueError:
        return None
    return at if at.tzinfo else at.replace(tzinfo=UTC)


def finished(record: dict[str, Any]) -> bool:
    return _when(record.get("finished_at")) is not None and isinstance(record.get("exit_code"), int)


def alive(record: dict[str, Any], now: datetime) -> bool:
    """Whether the driver still runs the attempt: not finished, and heard from within the grace."""
    beat = record.get("heartbeat_s")
    at = _when(record.get("alive_at"))
    if finished(record) or record.get("gone") or at is None or not isinstance(beat, int | float):
        return False
    return (now - at).total_seconds() <= LOST_AFTER_BEATS * float(beat)


RECORD_KEEP_S = 30 * 86400  # an ended attempt's files: long after any server restart could still need them


def prune(data_root: Path, *, older_than_s: float = RECORD_KEEP_S, now: float | None = None) -> int:
    """Remove the files of attempts that ended (or went silent) more than ``older_than_s`` ago; how many.

    The folder would otherwise grow by a record per attempt forever. A file still written to (a live
    driver refreshes its record every heartbeat) is never old enough, whatever its content says.
    """
    cutoff = (time.time() if now is None else now) - older_than_s
    removed = 0
    try:
        entries = list(folder(data_root).iterdir())
    except OSError:
        return 0
    for path in entries:
        try:
            if path.is_file() and path.stat().st_mtime < cutoff:
                path.unlink()
                removed += 1
        except OSError:
            continue
    return removed
