"""A throwaway PostgreSQL server for tests (Debian's postgresql package; scripts/test.sh installs it)."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.helpers import free_port


def _bindir() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _as_postgres(cmd: list[str]) -> list[str]:
    # initdb and postgres refuse to run as root; CI runs as root.
    return ["runuser", "-u", "postgres", "--", *cmd] if os.geteuid() == 0 else cmd


@contextmanager
def postgres_server() -> Iterator[str]:
    """Start a private cluster on a free loopback port; yields an admin SQLAlchemy URL."""
    bindir = _bindir()
    if bindir is None:
        raise RuntimeError("PostgreSQL server binaries not found: apt-get install postgresql")
    tmp = Path(tempfile.mkdtemp(prefix="argus-pg-"))
    data, sock = tmp / "data", tmp / "sock"
    sock.mkdir()
    if os.geteuid() == 0:
        shutil.chown(tmp, "postgres")
        shutil.chown(sock, "postgres")
    port = free_port()
    subprocess.run(_as_postgres([str(bindir / "initdb"), "-D", str(data), "-U", "argus", "--auth=trust", "-E", "UTF8"]),
                   check=True, capture_output=True)
    opts = f"-p {port} -k {sock} -c listen_addresses=127.0.0.1 -c fsync=off"
    subprocess.run(_as_postgres([str(bindir / "pg_ctl"), "-D", str(data), "-o", opts, "-w", "-l", str(tmp / "log"),
                                 "start"]), check=True, capture_output=True)
    try:
        yield f"postgresql+psycopg://argus@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(_as_postgres([str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"]),
                       capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)


def create_database(admin_url: str, name: str) -> str:
    """Create database ``name`` on the server of ``admin_url``; its URL."""
    from sqlalchemy import create_engine, text

    eng = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with eng.connect() as c:
        c.execute(text(f"CREATE DATABASE {name}"))
    eng.dispose()
    return admin_url.rsplit("/", 1)[0] + f"/{name}"
