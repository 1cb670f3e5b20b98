"""An atomic, quota-checked write in progress (made by ``services.files.UserFiles.create_upload``).

Bytes go to a hidden temp file in the target directory, reached through a
directory fd that was opened with the confinement checks; ``commit`` renames it
over the target (``renameat`` replaces a name, never follows a link), ``abort``
unlinks it. Every growth of the temp file is reserved in the usage ledger
*before* it is written, so an upload over quota fails at the first chunk that
would cross the line and leaves no file behind. Writes by offset serve SFTP
(pipelined, possibly out-of-order requests) and sequential appends serve HTTP.

Resumable uploads (OpenSSH ``reput``): when the SFTP client of an upload of a *new* file vanishes,
``keep_partial`` keeps the bytes received without a gap from offset 0 under
``resume_name(target)`` (hidden, reserved prefix) instead of deleting them. ``reput`` then stats
the target (SFTP answers the partial's size while the target does not exist), opens it without
truncating and appends; ``UserFiles.create_upload`` continues the partial as the temp file of that
upload, and CLOSE renames it into place. So the target still appears only complete and at once.
A fresh upload of the same name (``put``: open with TRUNC) discards the partial; one untouched for
``RESUME_TTL_S`` is deleted when next seen (quota walk, stat, upload).
"""

from __future__ import annotations

import hashlib
import os

from argus.errors import QuotaExceeded
from argus.services.fs_paths import RESUME_PREFIX
from argus.services.quota import UsageLedger


def resume_name(name: str) -> str:
    """The hidden name an interrupted upload of ``name`` is kept under, in the same directory."""
    return f"{RESUME_PREFIX}{hashlib.sha256(name.encode('utf-8', 'surrogateescape')).hexdigest()[:32]}"


class Upload:
    def __init__(self, ledger: UsageLedger, user: str, quota: int | None, dir_fd: int, fd: int, tmp: str,
                 name: str, vpath: str, *, old_size: int, charged: bool) -> None:
        self.ledger, self.user, self.quota = ledger, user, quota
        self.dir_fd, self.fd, self.tmp, self.name, self.path = dir_fd, fd, tmp, name, vpath
        self.old_size = old_size
        self.charged = charged  # counts against the user's quota (home area; shared folders do not)
        self.size = 0
        self.reserved = 0  # bytes reserved in the ledger: growth beyond the size of the file it replaces
        self.done = False
        self.resumable = False  # a new file (nothing to replace): an interrupted upload may be kept
        self.prefix = 0  # bytes written without a gap from offset 0: what a kept partial may hold
        self._pending: dict[int, int] = {}  # start -> end of writes beyond a gap (out-of-order requests)

    def continue_partial(self, size: int) -> None:
        """The temp file is a kept partial of ``size`` bytes (already on disk and in the ledger)."""
        self.size = self.prefix = size
        if self.charged:
            self.reserved = max(0, size - self.old_size)

    def _reserve(self, new_size: int) -> None:
        """Replacing a file costs only what the new one adds over it (the old size is credited)."""
        if not self.charged:
            return
        delta = max(0, new_size - self.old_size) - self.reserved
        if delta:
            try:
                self.ledger.charge(self.user, delta, self.quota)
            except QuotaExceeded:
                self.abort()
                raise
            self.reserved += delta

    def _grow(self, new_size: int) -> None:
        if new_size > self.size:
            self._reserve(new_size)
            self.size = new_size

    def write(self, data: bytes, offset: int | None = None) -> None:
        """Write at ``offset`` (default: append)."""
        if self.done:
            raise ValueError("upload already finished")
        offset = self.size if offset is None else offset
        self._grow(offset + len(data))
        self._received(offset, offset + len(data))
        view = memoryview(data)
        while view:
            n = os.pwrite(self.fd, view, offset)
            view, offset = view[n:], offset + n

    def _received(self, start: int, end: int) -> None:
        if start > self.prefix:
            self._pending[start] = max(end, self._pending.get(start, 0))
            return
        self.prefix = max(self.prefix, end)
        while True:
            joined = [s for s in self._pending if s <= self.prefix]
            if not joined:
                return
            for s in joined:
                self.prefix = max(self.prefix, self._pending.pop(s))

    def read(self, offset: int, size: int) -> bytes:
        return os.pread(self.fd, size, offset)

    def truncate(self, size: int) -> None:
        self._grow(size)
        os.ftruncate(self.fd, size)
        if size < self.size:
            self._reserve(size)
            self.size = size
        self.prefix = min(self.prefix, size)
        self._pending = {s: min(e, size) for s, e in self._pending.items() if s < size}

    def fstat(self) -> os.stat_result:
        return os.fstat(self.fd)

    def chmod(self, mode: int) -> None:
        os.fchmod(self.fd, (mode & 0o777) | 0o600)

    def copy_from_existing(self, st: os.stat_result) -> None:
        """SFTP opens without TRUNC (resume, append): start from the current content, still atomically."""
        src = os.open(self.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=self.dir_fd)
        try:
            fst = os.fstat(src)
            if (fst.st_dev, fst.st_ino) != (st.st_dev, st.st_ino):
                raise OSError(13, "changed while opening")
            self._grow(fst.st_size)
            offset = 0
            while offset < fst.st_size:
                n = os.copy_file_range(src, self.fd, fst.st_size - offset, offset, offset)
                if n == 0:
                    break
                offset += n
            os.fchmod(self.fd, fst.st_mode & 0o777)
            self.prefix = fst.st_size
        except BaseException:
            self.abort()
            raise
        finally:
            os.close(src)

    def commit(self) -> None:
        if self.done:
            return
        try:
            os.rename(self.tmp, self.name, src_dir_fd=self.dir_fd, dst_dir_fd=self.dir_fd)
        except BaseException:
            self.abort()
            raise
        self.done = True
        if self.charged and self.size < self.old_size:
            self.ledger.charge(self.user, self.size - self.old_size, None)
        self._close()

    def keep_partial(self) -> bool:
        """The client vanished: keep what a ``reput`` can continue (see the module doc), else ``abort``."""
        if self.done:
            return False
        if not self.resumable or self.prefix == 0:
            self.abort()
            return False
        try:
            os.ftruncate(self.fd, self.prefix)  # never keep bytes after a gap: reput appends at the size
            self._reserve(self.prefix)
            self.size = self.prefix
            os.rename(self.tmp, resume_name(self.name), src_dir_fd=self.dir_fd, dst_dir_fd=self.dir_fd)
        except OSError:
            self.abort()
            return False
        self.done = True  # the bytes stay on disk, so their reservation stays in the ledger
        self._close()
        return True

    def abort(self) -> None:
        if self.done:
            return
        self.done = True
        try:
            os.unlink(self.tmp, dir_fd=self.dir_fd)
        except FileNotFoundError:
            pass
        if self.charged and self.reserved:
            self.ledger.charge(self.user, -self.reserved, None)
            self.reserved = 0
        self._close()

    def _close(self) -> None:
        for fd in (self.fd, self.dir_fd):
            try:
                os.close(fd)
            except OSError:
                pass
        self.fd = self.dir_fd = -1

    def __enter__(self) -> Upload:
        return self

    def __exit__(self, exc_type: object, *_: object) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.abort()
