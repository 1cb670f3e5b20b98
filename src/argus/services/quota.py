"""Per-user storage usage, kept cheap enough to check on every uploaded chunk.

Approach: the first question about a user walks their home once (``scandir``,
no symlink following, apparent sizes of regular files) and caches the total.
Writes through ``services.files`` then adjust the cached figure by their deltas
under a lock (``charge``), so a quota check is O(1) and concurrent uploads by
the same user (two SFTP sessions, SFTP + HTTP) are accounted together: each
chunk *reserves* its bytes before it is written. Tasks also write into homes
(``jobs/``) behind our back, so the cache expires after ``ttl_s`` and is
recomputed by a new walk; between walks the figure can lag what tasks wrote.
Quota therefore guards uploads; it is not a hard filesystem limit.
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
import time
from pathlib import Path

from argus.errors import QuotaExceeded
from argus.services.fs_paths import RESUME_PREFIX, RESUME_TTL_S


def walk_usage(top: Path) -> int:
    """Bytes in regular files under ``top``; symlinks are never followed (they cost nothing).

    The walk also deletes kept partial uploads (``RESUME_PREFIX``) untouched for ``RESUME_TTL_S``:
    hidden from listings, they would otherwise hold quota forever."""
    total = 0
    expired = time.time() - RESUME_TTL_S
    stack = [str(top)]
    while stack:
        current = stack.pop()
        try:
            with os.scandir(current) as it:
                for entry in it:
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    if stat.S_ISDIR(st.st_mode):
                        stack.append(entry.path)
                    elif stat.S_ISREG(st.st_mode):
                        if entry.name.startswith(RESUME_PREFIX) and st.st_mtime < expired:
                            with contextlib.suppress(OSError):
                                os.unlink(entry.path)
                                continue
                        total += st.st_size
        except OSError:
            continue
    return total


NEAR_FRACTION = 0.8  # the Data page's quota bar turns orange here ...
FULL_FRACTION = 0.95  # ... and red here: most uploads no longer fit


def usage_level(used: int, quota: int | None) -> str:
    """"ok", "near" or "full": how close ``used`` is to ``quota`` (None: no quota, always "ok").

    Decided here, not in the page, so the WebUI and the CLI colour the same figure the same way."""
    if quota is None:
        return "ok"
    if quota <= 0 or used >= FULL_FRACTION * quota:
        return "full"
    return "near" if used >= NEAR_FRACTION * quota else "ok"


def human(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"  # pragma: no cover


class UsageLedger:
    """Cached bytes used per home, adjusted by every write that goes through the service."""

    def __init__(self, users_dir: Path, ttl_s: float = 60.0, *, quota_name: str = "storage quota") -> None:
        """``users_dir``: the folder holding one folder per key (homes; team folders for the team ledger).
        ``quota_name``: how a refusal names the quota, ``{}`` the key (e.g. "team {}'s storage quota")."""
        self.users_dir = users_dir
        self.quota_name = quota_name
        self.ttl_s = ttl_s
        self._lock = threading.Lock()
        self._usage: dict[str, tuple[float, int]] = {}

    def usage(self, user: str) -> int:
        with self._lock:
            cached = self._usage.get(user)
            if cached and time.monotonic() - cached[0] < self.ttl_s:
                return cached[1]
        # Walk outside the lock: a big home must not stall other users' uploads.
        total = walk_usage(self.users_dir / user)
        with self._lock:
            self._usage[user] = (time.monotonic(), total)
        return total

    def charge(self, user: str, delta: int, quota: int | None) -> None:
        """Add ``delta`` bytes to the user's usage, refusing growth past ``quota`` (None: no limit)."""
        cached = self._usage.get(user)
        if cached is None or time.monotonic() - cached[0] >= self.ttl_s:
            self.usage(user)
        with self._lock:
            # invalidate() may have dropped the entry since: walk again rather than fail the write
            stamp, used = self._usage.get(user) or (time.monotonic(), walk_usage(self.users_dir / user))
            if delta > 0 and quota is not None and used + delta > quota:
                raise QuotaExceeded(
                    f"{self.quota_name.format(user)} exceeded: {human(used)} used of {human(quota)}; this write needs "
                    f"{human(delta)} more", code="quota_exceeded")
            self._usage[user] = (stamp, max(0, used + delta))

    def invalidate(self, user: str) -> None:
        """Forget the cached figure (after a recursive delete or a move across areas)."""
        with self._lock:
            self._usage.pop(user, None)
