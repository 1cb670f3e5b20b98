"""Where a task attempt's own Ray dashboard listens (port, token), for the server's proxy (issue 21).

The launcher writes it, the server's dashboard proxy reads it (services/ray_dashboard.py). It lives beside the
platform Ray's token (launcher/ray_auth.py), in a folder no sandbox shows and no file access of a user reaches:
a record in the owner's home could point the proxy at any web server she likes. Standard library only.
"""

from __future__ import annotations

import json
import os
from pathlib import Path


def dashboard_record_path(data_root: Path, task_id: str, attempt: int) -> Path:
    """Where the launcher says where an attempt's own Ray dashboard listens (port, token): beside the platform
    Ray's token, a folder no sandbox shows and no file access of a user reaches. Never the attempt's
    ``status.json``: that is in the owner's home, and the owner could point the proxy at her own web server."""
    return data_root / ".argus" / "dashboards" / f"{task_id}.{attempt}.json"


def write_dashboard_record(data_root: Path, task_id: str, attempt: int, port: int, token: str) -> Path:
    path = dashboard_record_path(data_root, task_id, attempt)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump({"port": port, "token": token}, f)
    os.replace(tmp, path)
    return path


def read_dashboard_record(data_root: Path, task_id: str, attempt: int) -> dict | None:
    try:
        record = json.loads(dashboard_record_path(data_root, task_id, attempt).read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None
