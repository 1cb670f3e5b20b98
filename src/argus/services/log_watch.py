"""Wake a log follower when its file changes (issue 25: a line appended is on screen in p50 < 100 ms).

Polling every 0.5 s put a floor of ~250 ms (mean) under follow latency. On Linux, inotify tells us
within microseconds that the file was written, so ``DirWatch.wait`` returns as soon as anything in the
log's folder changes. inotify comes from libc through ctypes (no extra package). It watches the
folder, not the file: the log may not exist yet (the attempt has not started) or be recreated.

inotify sees only writes made by *this* machine's kernel: on a network filesystem (NFS, CephFS,
Lustre) the driver writes from a worker node and no event ever arrives here. So ``wait`` always has a
timeout — the caller's backstop poll — and where inotify is unavailable (not Linux, the per-user
watch limit reached, the folder missing) ``wait`` is a plain sleep: the old polling behaviour.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import select
import time
from pathlib import Path

IN_MODIFY = 0x002
IN_CLOSE_WRITE = 0x008
IN_MOVED_TO = 0x080
IN_CREATE = 0x100
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_NONBLOCK = os.O_NONBLOCK
IN_CLOEXEC = os.O_CLOEXEC
MASK = IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE_SELF | IN_MOVE_SELF

_libc = None
# Off: every follow polls (bench/web_log_latency.py measures the "before" figure this way).
ENABLED = True


def _load_libc():  # noqa: ANN202
    """libc with the inotify calls, or None (not Linux, or a libc without them)."""
    global _libc
    if _libc is None:
        try:
            lib = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
            lib.inotify_init1.argtypes = [ctypes.c_int]
            lib.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
            _libc = lib
        except (OSError, AttributeError):
            _libc = False
    return _libc or None


class DirWatch:
    """Changes in one folder, as a blocking ``wait(timeout)``; a sleep where inotify cannot be used.

    ``inotify=False`` forces the sleep (tests of the fallback; a server on a network filesystem
    could choose it too). Close it (or use ``with``) to free the inotify descriptor.
    """

    def __init__(self, folder: Path, *, inotify: bool = True) -> None:
        self.folder = folder
        self.fd: int | None = None
        self.watching = False
        if inotify:
            lib = _load_libc()
            fd = lib.inotify_init1(IN_NONBLOCK | IN_CLOEXEC) if lib else -1
            self.fd = fd if fd >= 0 else None
            self._add()

    def _add(self) -> None:
        """Watch the folder once it exists (a follower may start before the driver made it)."""
        if self.fd is None or self.watching:
            return
        lib = _load_libc()
        wd = lib.inotify_add_watch(self.fd, os.fsencode(self.folder), MASK) if lib else -1
        self.watching = wd >= 0

    @property
    def notifying(self) -> bool:
        """Whether a change wakes ``wait`` at once (else it sleeps its whole timeout)."""
        return self.watching

    def wait(self, timeout: float) -> bool:
        """Block until the folder changes or ``timeout`` seconds pass; True when a change woke it."""
        self._add()
        if not self.watching:
            time.sleep(timeout)
            return False
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return False
        self._drain()
        return True

    def _drain(self) -> None:
        """Read and discard the queued events (their content does not matter: the file is re-read)."""
        try:
            while os.read(self.fd, 65536):
                pass
        except BlockingIOError:
            pass
        except OSError:  # the watch broke (folder removed): fall back to sleeping
            self.watching = False

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
            self.watching = False

    def __enter__(self) -> DirWatch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
