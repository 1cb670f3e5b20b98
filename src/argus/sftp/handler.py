"""The SFTP subsystem: a thin adapter from asyncssh's SFTPServer calls to ``services.files``.

Every request goes through ``UserFiles``; no method here touches a real path.
asyncssh's default SFTPServer methods operate on the server's own filesystem,
so EVERY one of them is overridden here (``map_path`` too, as a tripwire):
an operation we do not serve answers "unsupported" or "permission denied",
never falls through to the real filesystem. ``symlink`` and ``link`` are
refused with a permission error. Uploads are atomic: a handle left open when
the client vanishes is aborted (no partial file), a CLOSE commits it. The one exception makes
``reput`` work: an interrupted upload of a *new* file is kept hidden under a resume name, and
``stat`` of the still-missing file answers its size (see ``services/uploads.py``).
"""

from __future__ import annotations

import functools
import os
import stat
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

import asyncssh
from asyncssh import SFTPAttrs, SFTPName

from argus.errors import ArgusError, Conflict, Forbidden, NotFound, QuotaExceeded
from argus.services.files import FileInfo, ReadHandle, Upload, UserFiles
from argus.sftp.stats import STATS

F = TypeVar("F", bound=Callable[..., Any])


def _to_sftp(exc: ArgusError) -> asyncssh.SFTPError:
    msg = exc.message
    if isinstance(exc, Forbidden):
        return asyncssh.SFTPPermissionDenied(msg)
    if isinstance(exc, NotFound):
        return asyncssh.SFTPNoSuchFile(msg)
    if isinstance(exc, QuotaExceeded):
        return asyncssh.SFTPQuotaExceeded(msg)  # SFTPv3 clients see FAILURE with this message
    if isinstance(exc, Conflict):
        if exc.code == "not_empty":
            return asyncssh.SFTPDirNotEmpty(msg)
        return asyncssh.SFTPFileAlreadyExists(msg)
    return asyncssh.SFTPFailure(msg)


def _mapped(fn: F) -> F:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ArgusError as exc:
            raise _to_sftp(exc) from None

    return wrapper  # type: ignore[return-value]


def _path(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise asyncssh.SFTPInvalidFilename("path is not valid UTF-8") from None


def _attrs(info: FileInfo) -> SFTPAttrs:
    assert info.st is not None
    attrs = SFTPAttrs.from_local(info.st)
    if not info.writable and attrs.permissions is not None:
        attrs.permissions &= ~0o222  # show read-only areas as read-only
    return attrs


class _Writer:
    """An open write handle: the upload plus SFTP's append flag."""

    def __init__(self, upload: Upload, append: bool) -> None:
        self.upload = upload
        self.append = append


class ArgusSFTPServer(asyncssh.SFTPServer):
    def __init__(self, chan: asyncssh.SSHServerChannel, files: UserFiles) -> None:
        super().__init__(chan)
        self.files = files
        self._open: set[_Writer] = set()
        STATS.sessions_open += 1
        STATS.sessions_total += 1

    def map_path(self, path: bytes) -> bytes:  # tripwire: nothing may reach the real filesystem by name
        raise asyncssh.SFTPPermissionDenied("not available")

    reverse_map_path = map_path

    @_mapped
    def realpath(self, path: bytes) -> bytes:
        return self.files.show(self.files.virtual(_path(path), clamp=True)).encode()

    @_mapped
    def stat(self, path: bytes) -> SFTPAttrs:
        return _attrs(self._stat(_path(path), follow=True))

    @_mapped
    def lstat(self, path: bytes) -> SFTPAttrs:
        return _attrs(self._stat(_path(path), follow=False))

    def _stat(self, path: str, *, follow: bool) -> FileInfo:
        """The file, or for a missing one the partial an interrupted upload left (``reput`` resumes there)."""
        try:
            return self.files.stat(path, follow=follow)
        except NotFound:
            partial = self.files.stat_partial(path)
            if partial is None:
                raise
            return partial

    async def scandir(self, path: bytes) -> AsyncIterator[SFTPName]:
        try:
            infos = self.files.list(_path(path))
        except ArgusError as exc:
            raise _to_sftp(exc) from None
        for info in infos:
            yield SFTPName(info.name.encode(), attrs=_attrs(info))

    @_mapped
    def open(self, path: bytes, pflags: int, attrs: SFTPAttrs) -> object:
        p = _path(path)
        if not pflags & asyncssh.FXF_WRITE:
            return self.files.open_read(p)
        if not pflags & asyncssh.FXF_CREAT:
            self.files.stat(p)  # must exist
        upload = self.files.create_upload(p, truncate=bool(pflags & asyncssh.FXF_TRUNC),
                                          exclusive=bool(pflags & asyncssh.FXF_EXCL))
        if attrs.permissions is not None:
            upload.chmod(attrs.permissions)
        writer = _Writer(upload, append=bool(pflags & asyncssh.FXF_APPEND))
        self._open.add(writer)
        return writer

    def open56(self, path: bytes, desired_access: int, flags: int, attrs: SFTPAttrs) -> object:
        raise asyncssh.SFTPOpUnsupported("SFTP v5+ open is not supported; use SFTP v3")

    @_mapped
    def read(self, file_obj: object, offset: int, size: int) -> bytes:
        if isinstance(file_obj, _Writer):
            data = file_obj.upload.read(offset, size)
        else:
            assert isinstance(file_obj, ReadHandle)
            data = file_obj.pread(offset, size)
        STATS.bytes_read += len(data)
        return data

    @_mapped
    def write(self, file_obj: object, offset: int, data: bytes) -> int:
        if not isinstance(file_obj, _Writer):
            raise asyncssh.SFTPPermissionDenied("file was opened for reading")
        file_obj.upload.write(data, None if file_obj.append else offset)
        STATS.bytes_written += len(data)
        return len(data)

    @_mapped
    def close(self, file_obj: object) -> None:
        if isinstance(file_obj, _Writer):
            self._open.discard(file_obj)
            if self.channel.is_closing():  # cleanup after the client vanished: not a finished upload
                file_obj.upload.keep_partial()
            else:
                file_obj.upload.commit()
        elif isinstance(file_obj, ReadHandle):
            file_obj.close()

    def exit(self) -> None:
        STATS.sessions_open -= 1
        for writer in list(self._open):
            writer.upload.keep_partial()  # the client vanished mid-upload: kept for reput, or deleted
        self._open.clear()

    def fstat(self, file_obj: object) -> SFTPAttrs:
        if isinstance(file_obj, _Writer):
            return SFTPAttrs.from_local(file_obj.upload.fstat())
        assert isinstance(file_obj, ReadHandle)
        return SFTPAttrs.from_local(file_obj.fstat())

    @staticmethod
    def _times(attrs: SFTPAttrs) -> tuple[int, int] | None:
        if attrs.mtime is None:
            return None
        atime = attrs.atime if attrs.atime is not None else attrs.mtime
        return (atime * 1_000_000_000, attrs.mtime * 1_000_000_000)

    @_mapped
    def setstat(self, path: bytes, attrs: SFTPAttrs) -> None:
        """Permission bits and times only; uid/gid are ignored; size (truncate) must go through an upload."""
        if attrs.size is not None:
            raise asyncssh.SFTPOpUnsupported("truncate by path is not supported; upload the file again")
        self.files.setstat(_path(path), mode=attrs.permissions, times_ns=self._times(attrs))

    lsetstat = setstat

    @_mapped
    def fsetstat(self, file_obj: object, attrs: SFTPAttrs) -> None:
        if not isinstance(file_obj, _Writer):
            raise asyncssh.SFTPPermissionDenied("file was opened for reading")
        if attrs.size is not None:
            file_obj.upload.truncate(attrs.size)
        if attrs.permissions is not None:
            file_obj.upload.chmod(attrs.permissions)
        times = self._times(attrs)
        if times is not None:
            os.utime(file_obj.upload.fd, ns=times)

    @_mapped
    def remove(self, path: bytes) -> None:
        self.files.remove(_path(path), expect="file")

    @_mapped
    def rmdir(self, path: bytes) -> None:
        self.files.remove(_path(path), expect="dir")

    @_mapped
    def mkdir(self, path: bytes, attrs: SFTPAttrs) -> None:
        mode = attrs.permissions if attrs.permissions is not None else 0o755
        self.files.mkdir(_path(path), stat.S_IMODE(mode))

    @_mapped
    def rename(self, oldpath: bytes, newpath: bytes) -> None:
        self.files.move(_path(oldpath), _path(newpath), overwrite=False)

    @_mapped
    def posix_rename(self, oldpath: bytes, newpath: bytes) -> None:
        self.files.move(_path(oldpath), _path(newpath), overwrite=True)

    @_mapped
    def readlink(self, path: bytes) -> bytes:
        return self.files.readlink(_path(path)).encode()

    def symlink(self, oldpath: bytes, newpath: bytes) -> None:
        raise asyncssh.SFTPPermissionDenied("creating symbolic links is not allowed")

    def link(self, oldpath: bytes, newpath: bytes) -> None:
        raise asyncssh.SFTPPermissionDenied("creating hard links is not allowed")

    def lock(self, file_obj: object, offset: int, length: int, lock_flags: int) -> None:
        raise asyncssh.SFTPOpUnsupported("byte-range locks are not supported")

    def unlock(self, file_obj: object, offset: int, length: int) -> None:
        raise asyncssh.SFTPOpUnsupported("byte-range locks are not supported")

    def statvfs(self, path: bytes) -> Any:
        raise asyncssh.SFTPOpUnsupported("statvfs is not supported")

    def fstatvfs(self, file_obj: object) -> Any:
        raise asyncssh.SFTPOpUnsupported("statvfs is not supported")

    def fsync(self, file_obj: object) -> None:
        if isinstance(file_obj, _Writer):
            os.fsync(file_obj.upload.fd)
