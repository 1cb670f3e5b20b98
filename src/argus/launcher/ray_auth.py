"""The platform Ray cluster's auth token: made once by the head, read by every platform process (issue 21).

It lives in ``<root>/.argus`` (mode 0600) beside the discovery file, on the filesystem the nodes share; no
sandbox shows that folder (launcher/jail.py hides the data root and shows only the owner's parts of it), so no
task can talk to the platform's GCS, raylets or Jobs API. Standard library only: the launcher imports it on
every node, and the server.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from argus.launcher.private_ray import RAY_NO_METRICS

TOKEN_NAME = "ray-auth-token"


class NoRayToken(RuntimeError):
    """This node cannot reach the head's token: it may not join the platform's Ray (the message says why)."""


def token_path(data_root: Path) -> Path:
    return data_root / ".argus" / TOKEN_NAME


def ensure_ray_token(data_root: Path) -> str:
    """The platform Ray cluster's auth token (created once, mode 0600, in ``<root>/.argus``).

    Every platform process (nodes, server, launchers) reads it from there; no sandbox shows
    ``<root>/.argus``, so no task can talk to the platform's GCS, raylets or Jobs API.
    """
    path = token_path(data_root)
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{TOKEN_NAME}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(secrets.token_hex(32))
    try:
        os.link(tmp, path)  # first writer wins; a concurrent creator reads the winner's token
    except FileExistsError:
        pass
    finally:
        tmp.unlink()
    return path.read_text().strip()


def read_ray_token(data_root: Path) -> str | None:
    try:
        return token_path(data_root).read_text().strip() or None
    except OSError:
        return None


def platform_ray_env(data_root: Path) -> dict[str, str]:
    """The variables that make a ``ray start`` (and every platform process it starts) use token auth, and
    serve no Prometheus endpoint: those take no token (``private_ray.RAY_NO_METRICS``)."""
    path = token_path(data_root)
    if not path.is_file():
        raise NoRayToken(f"no Ray auth token at {path}: the head creates it on the shared filesystem; "
                        f"is it mounted at {data_root} here (argus worker --data-root)?")
    return {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(path), **RAY_NO_METRICS}
