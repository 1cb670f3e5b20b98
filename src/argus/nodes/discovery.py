"""The head discovery file ``<data root>/.argus/head.json``: how workers find the current Ray head.

Why a file and not a fixed address: every machine already mounts the shared data root at the
same path, so a file there needs no DNS entry, no extra service and no configuration on the
workers; the head may move to another machine and the workers follow.

Contract:

* The head rewrites the file on every start with a fresh ``generation`` (a random hex id). A
  worker compares the generation it joined with the one in the file: a different one means the
  head restarted (Ray state is gone, the GCS may be elsewhere) and the worker must join again.
* Writes are atomic (temp file in the same directory + ``os.replace``), so a reader on another
  machine sees the old or the new content, never half of it.
* On a clean stop the head keeps the file and marks it ``state: "stopped"`` (with ``stopped_at``),
  but only if the file still holds its own generation: a newer head elsewhere is never clobbered.
  Keeping the file tells workers at once that the head is gone on purpose (they stop their
  raylets instead of waiting for a timeout) and tells a human where and when the head last ran.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import socket
import tempfile
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path

log = logging.getLogger(__name__)

SCHEMA = 1
RUNNING = "running"
STOPPED = "stopped"


class DiscoveryError(ValueError):
    """The discovery file exists but cannot be used (the message says why)."""


@dataclass(frozen=True)
class HeadInfo:
    gcs_address: str  # host:port that `ray start --address` and drivers (RAY_ADDRESS) use
    dashboard_url: str  # the Ray dashboard as the head's server reaches it (loopback: it has no auth)
    api_url: str  # the Argus API/WebUI
    generation: str  # new on every head start
    started_at: str  # ISO-8601 UTC
    ray_version: str  # workers must run the same Ray
    hostname: str  # the head machine (a worker on the same host needs different raylet flags)
    pid: int
    state: str = RUNNING
    stopped_at: str | None = None
    schema: int = SCHEMA

    @property
    def gcs_host_port(self) -> tuple[str, int]:
        host, _, port = self.gcs_address.rpartition(":")
        return host.strip("[]"), int(port)


def discovery_path(data_root: Path) -> Path:
    return Path(data_root) / ".argus" / "head.json"


def local_ray_version() -> str:
    """The installed Ray's version without importing Ray (that costs seconds)."""
    return version("ray")


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def new_head_info(*, gcs_address: str, dashboard_url: str, api_url: str) -> HeadInfo:
    return HeadInfo(gcs_address=gcs_address, dashboard_url=dashboard_url, api_url=api_url,
                    generation=secrets.token_hex(8), started_at=now_iso(), ray_version=local_ray_version(),
                    hostname=socket.gethostname(), pid=os.getpid())


def write_discovery(path: Path, info: HeadInfo) -> None:
    """Atomically replace the file (readable by everyone: workers may run as another user)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".head-", suffix=".json.tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(asdict(info), f, indent=2)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_discovery(path: Path) -> HeadInfo | None:
    """The file's content; None when there is no file; DiscoveryError when it is unusable."""
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        raise DiscoveryError(f"cannot read {path}: {e}") from e
    if not isinstance(raw, dict) or raw.get("schema") != SCHEMA:
        raise DiscoveryError(f"{path}: not a schema-{SCHEMA} head discovery file")
    try:
        info = HeadInfo(**raw)
        info.gcs_host_port  # noqa: B018 - validates the address
    except (TypeError, ValueError) as e:
        raise DiscoveryError(f"{path}: {e}") from e
    return info


def mark_stopped(path: Path, generation: str) -> bool:
    """Mark our own generation stopped; False (file untouched) when another head owns the file now."""
    try:
        current = read_discovery(path)
    except DiscoveryError as e:
        log.warning("not marking the head stopped: %s", e)
        return False
    if current is None or current.generation != generation:
        return False
    write_discovery(path, replace(current, state=STOPPED, stopped_at=now_iso()))
    return True


def detect_ip() -> str:
    """The address of the interface that routes outwards (no packet is sent); loopback as the last resort."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("10.255.255.255", 1))
            ip = s.getsockname()[0]
            if not ip.startswith("127."):
                return ip
        except OSError:
            pass
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return "127.0.0.1"
