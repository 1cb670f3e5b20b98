"""One server per state directory: ``<state_dir>/argus.lock``, held for the life of the process.

Two ``argus up`` (or ``argus server``/``argus head``) on one state dir would share a database, a
data root and the embedded Ray record, and the second would adopt or stop the first one's Ray. An
``flock`` is the proof of ownership: the kernel drops it when its holder dies, even by ``kill -9``,
so a stale lock file never blocks a restart, and a live holder is always refused. The file also
holds the owner's pid, for the error message only (a pid alone proves nothing: it may be reused).
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

LOCK_NAME = "argus.lock"


class StateDirBusy(RuntimeError):
    """Another live process holds the state dir; the message names its pid and the fix."""


class StateLock:
    def __init__(self, state_dir: Path) -> None:
        self.path = state_dir / LOCK_NAME
        self.fd: int | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise StateDirBusy(f"another Argus server (pid {owner}) is running with --state-dir "
                               f"{self.path.parent}; stop it first, or choose another --state-dir") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self.fd = fd

    def release(self) -> None:
        if self.fd is not None:
            os.ftruncate(self.fd, 0)
            os.close(self.fd)  # closing the only descriptor drops the flock
            self.fd = None
