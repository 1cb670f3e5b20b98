"""The per-user virtual filesystem: the ONE place that confines file access (SFTP and HTTP).

What a user sees (seed 000 §2.3.1, §4)::

    /                  <root>/users/<user>    read-write
    /common            synthetic, read-only, always lists datasets and hf
    /common/datasets   <root>/datasets        read-only (admins: writable if settings.admin_writes_shared)
    /common/hf         <root>/hf              idem

``/common`` is synthetic: a real ``<home>/common`` directory (a task may create
one) is shadowed, never listed and unreachable here, exactly as task admission
expands ``$HOME/common/datasets`` to the shared folder and not into the home.

Confinement rules, in order:

1. Virtual paths are lexically normalised; NUL bytes are refused and a ``..``
   that would climb above ``/`` is Forbidden (no clamping: it is an attempt).
2. The real path is ``realpath``-ed and must lie inside one of the user's areas
   (their home, the datasets or hf folder); it then takes *that* area's rights.
   A symlink the user (or a task) planted that leads elsewhere is Forbidden; one
   that stays inside an area works (HF caches are made of such links).
3. The checked path is then opened component by component from the area root
   with ``O_NOFOLLOW`` (openat-style), so a symlink swapped in after the check
   (a race) makes the open fail instead of escaping.
4. Only regular files and directories are served: fifos, sockets and devices
   are refused before they are opened.
5. A regular file with more than one hard link is refused for reading and for
   attribute changes: we cannot cheaply prove where its other names are, and a
   task (same Unix user) can hard-link another user's file into its home.
   Writes never modify an existing inode (temp file + rename), so writing to
   such a name only replaces the name.
6. Writes go to a hidden temp file (``.argus-part-*``, never listed) in the
   target directory and are renamed over the target on commit; quota is
   reserved chunk by chunk (``services.quota``); an abort removes the temp file.
"""

from __future__ import annotations

import errno
import os
import secrets
import shutil
import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.orm import Session

from argus.db.models import UserModel
from argus.errors import ArgusError, ClientError, Conflict, Forbidden, NotFound, QuotaExceeded
from argus.services.principal import Principal
from argus.services.quota import UsageLedger
from argus.services.uploads import Upload
from argus.settings import Settings

PART_PREFIX = ".argus-part-"
SHARED = ("datasets", "hf")
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass(frozen=True)
class Area:
    """A real directory tree shown at a virtual mount point with one set of rights."""

    key: str  # "home" | "datasets" | "hf"
    real: str  # realpath of the area root
    virtual: str  # "/" | "/common/datasets" | "/common/hf"
    writable: bool

    def to_virtual(self, rel: tuple[str, ...]) -> str:
        base = "" if self.virtual == "/" else self.virtual
        return base + "/" + "/".join(rel) if rel else self.virtual


@dataclass(frozen=True)
class FileInfo:
    name: str
    path: str  # virtual
    type: str  # "file" | "dir" | "symlink" | "other"
    size: int
    mtime: float
    mode: int
    writable: bool
    st: os.stat_result | None = None

    def as_dict(self) -> dict:
        return {"name": self.name, "path": self.path, "type": self.type, "size": self.size,
                "mtime": self.mtime, "mode": oct(stat.S_IMODE(self.mode)), "writable": self.writable}


def _kind(mode: int) -> str:
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "dir"
    return "symlink" if stat.S_ISLNK(mode) else "other"


@contextmanager
def os_errors(vpath: str) -> Iterator[None]:
    """Turn OS errors into errors.py types with the *virtual* path (never the real one)."""
    try:
        yield
    except OSError as exc:
        e = exc.errno
        if e == errno.ENOENT:
            raise NotFound(f"{vpath}: no such file or directory", code="not_found") from None
        if e in (errno.ELOOP, errno.EMLINK):
            raise Forbidden(f"{vpath}: symbolic links are not followed here", code="symlink_refused") from None
        if e in (errno.EACCES, errno.EPERM, errno.EROFS):
            raise Forbidden(f"{vpath}: permission denied", code="forbidden") from None
        if e == errno.EEXIST:
            raise Conflict(f"{vpath}: already exists", code="exists") from None
        if e == errno.ENOTEMPTY:
            raise Conflict(f"{vpath}: directory not empty", code="not_empty") from None
        if e in (errno.ENOSPC, errno.EDQUOT):
            raise QuotaExceeded(f"{vpath}: no space left", code="no_space") from None
        messages = {errno.ENOTDIR: "not a directory", errno.EISDIR: "is a directory",
                    errno.EXDEV: "cannot move across filesystems", errno.EINVAL: "invalid operation",
                    errno.ENAMETOOLONG: "name too long"}
        raise ClientError(f"{vpath}: {messages.get(e, exc.strerror or 'failed')}", code="bad_path") from None


class FileStore:
    """Process-wide: the data root, the policy settings and the usage ledger (shared by SFTP and HTTP)."""

    def __init__(self, root: Path, *, default_quota: int | None = None, admin_writes_shared: bool = True,
                 usage_ttl_s: float = 60.0) -> None:
        self.root = Path(os.path.realpath(root))
        self.default_quota = default_quota
        self.admin_writes_shared = admin_writes_shared
        self.ledger = UsageLedger(self.root / "users", ttl_s=usage_ttl_s)

    @classmethod
    def from_settings(cls, settings: Settings) -> FileStore:
        return cls(settings.root, default_quota=settings.quota_bytes,
                   admin_writes_shared=settings.admin_writes_shared)

    def for_user(self, principal: Principal, quota: int | None = None) -> UserFiles:
        return UserFiles(self, principal, quota)


_STORE_LOCK = threading.Lock()


def shared_store(extras: dict, settings: Settings) -> FileStore:
    """The one FileStore of a process, kept in ``AppContext.extras`` so SFTP and HTTP share quotas."""
    with _STORE_LOCK:
        store = extras.get("file_store")
        if store is None:
            store = extras["file_store"] = FileStore.from_settings(settings)
        return store


def user_files(store: FileStore, session: Session, principal: Principal) -> UserFiles:
    """A user's view with their quota (the user's own column, else the installation default)."""
    user = session.get(UserModel, principal.id)
    if user is None or user.disabled:
        raise Forbidden(f"user {principal.name!r} is disabled or gone", code="user_disabled")
    quota = user.quota_bytes if user.quota_bytes is not None else store.default_quota
    return store.for_user(principal, quota)


class UserFiles:
    """One user's view. Every method takes a virtual path string and raises errors.py types."""

    def __init__(self, store: FileStore, principal: Principal, quota: int | None) -> None:
        self.store = store
        self.user = principal.name
        self.quota = quota
        shared_rw = principal.is_admin and store.admin_writes_shared
        self.home = Area("home", str(store.root / "users" / principal.name), "/", True)
        self.areas = (self.home, *(Area(k, str(store.root / k), f"/common/{k}", shared_rw) for k in SHARED))

    # ------------------------------------------------------------ path resolution

    @staticmethod
    def virtual(path: object, *, clamp: bool = False) -> tuple[str, ...]:
        """Lexical normalisation of a virtual path into components (``/`` is the empty tuple)."""
        if not isinstance(path, str):
            raise ClientError("path must be a string", code="bad_path")
        if "\x00" in path:
            raise ClientError("path contains a NUL byte", code="bad_path")
        parts: list[str] = []
        for comp in path.split("/"):
            if comp in ("", "."):
                continue
            if comp == "..":
                if not parts:
                    if clamp:
                        continue
                    raise Forbidden(f"{path}: leads outside your home", code="escape")
                parts.pop()
            else:
                parts.append(comp)
        return tuple(parts)

    @staticmethod
    def show(parts: tuple[str, ...]) -> str:
        return "/" + "/".join(parts)

    def _locate(self, parts: tuple[str, ...], write: bool = False) -> tuple[Area | None, tuple[str, ...]]:
        """The area a virtual path names and the components inside it; (None, ()) is ``/common``."""
        if parts and parts[0] == "common":
            if len(parts) == 1:
                return None, ()
            area = next((a for a in self.areas if a.key == parts[1] and a.key != "home"), None)
            if area is None and write:  # /common/anything-else: a write is refused, not "missing"
                raise Forbidden(f"{self.show(parts)}: /common is read-only", code="read_only")
            if area is None:
                raise NotFound(f"{self.show(parts)}: no such file or directory", code="not_found")
            return area, parts[2:]
        return self.home, parts

    def _classify(self, real: str, vpath: str) -> tuple[Area, tuple[str, ...]]:
        for area in self.areas:
            if real == area.real:
                return area, ()
            if real.startswith(area.real + "/"):
                return area, tuple(real[len(area.real) + 1:].split("/"))
        raise Forbidden(f"{vpath}: leads outside your home (a link to somewhere else?)", code="escape")

    def resolve(self, path: object, *, follow_last: bool = True,
                write: bool = False) -> tuple[Area, tuple[str, ...], str]:
        """(area, components inside it, virtual path) after realpath + prefix check.

        With ``follow_last=False`` the last component is kept as named (remove, rename,
        lstat act on a link itself); its parent is still resolved.
        """
        parts = self.virtual(path)
        vpath = self.show(parts)
        area, rel = self._locate(parts, write)
        if area is None:
            raise Forbidden(f"{vpath}: read-only", code="read_only")
        if not rel:
            return area, (), vpath
        real = os.path.join(area.real, *rel)
        if follow_last:
            return (*self._classify(os.path.realpath(real), vpath), vpath)
        parent_area, parent_rel = self._classify(os.path.realpath(os.path.dirname(real)), vpath)
        return parent_area, (*parent_rel, rel[-1]), vpath

    def open_dir(self, area: Area, rel: tuple[str, ...], vpath: str) -> int:
        """An fd on ``area/rel`` reached with O_NOFOLLOW at every step (a swapped-in link fails)."""
        with os_errors(vpath):
            fd = os.open(area.real, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                for comp in rel:
                    nfd = os.open(comp, _DIR_FLAGS, dir_fd=fd)
                    os.close(fd)
                    fd = nfd
            except BaseException:
                os.close(fd)
                raise
        return fd

    @contextmanager
    def _parent(self, path: object, *, follow_last: bool = True, write: bool = False,
                allow_root: bool = False) -> Iterator[tuple[int, str, Area, str]]:
        """(parent dir fd, last name, area, virtual path); refuses area roots unless ``allow_root``."""
        area, rel, vpath = self.resolve(path, follow_last=follow_last, write=write)
        if write and not area.writable:
            raise Forbidden(f"{vpath}: read-only for you", code="read_only")
        if not rel:
            if not allow_root:
                raise Forbidden(f"{vpath}: cannot change this folder itself", code="forbidden")
            fd = self.open_dir(area, (), vpath)
            try:
                yield fd, ".", area, vpath
            finally:
                os.close(fd)
            return
        if write and rel[-1].startswith(PART_PREFIX):
            raise ClientError(f"{vpath}: names starting with {PART_PREFIX} are reserved", code="bad_path")
        fd = self.open_dir(area, rel[:-1], vpath)
        try:
            yield fd, rel[-1], area, vpath
        finally:
            os.close(fd)

    # ------------------------------------------------------------ reading

    def _info(self, name: str, vpath: str, st: os.stat_result, writable: bool) -> FileInfo:
        return FileInfo(name, vpath, _kind(st.st_mode), st.st_size, st.st_mtime, st.st_mode, writable, st)

    def _common_info(self, name: str = "common") -> FileInfo:
        st = os.stat(self.store.root)
        mode = stat.S_IFDIR | 0o555
        fake = os.stat_result((mode, 0, 0, 2, st.st_uid, st.st_gid, 0, st.st_atime, st.st_mtime, st.st_ctime),
                              {"st_atime_ns": st.st_atime_ns, "st_mtime_ns": st.st_mtime_ns,
                               "st_ctime_ns": st.st_ctime_ns})
        return FileInfo(name, "/common", "dir", 0, st.st_mtime, mode, False, fake)

    def stat(self, path: object, *, follow: bool = True) -> FileInfo:
        parts = self.virtual(path)
        if parts == ("common",):
            return self._common_info()
        with self._parent(path, follow_last=follow, allow_root=True) as (fd, name, area, vpath), os_errors(vpath):
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if follow and stat.S_ISLNK(st.st_mode):  # swapped in after realpath
                raise Forbidden(f"{vpath}: symbolic links are not followed here", code="symlink_refused")
            return self._info(parts[-1] if parts else "/", vpath, st, area.writable)

    def list(self, path: object) -> list[FileInfo]:
        parts = self.virtual(path)
        vpath = self.show(parts)
        if parts == ("common",):
            return [self.stat(f"/common/{k}") for k in SHARED]
        area, rel, vpath = self.resolve(path)
        fd = self.open_dir(area, rel, vpath)
        out: list[FileInfo] = []
        try:
            with os_errors(vpath):
                for entry in os.scandir(fd):
                    if entry.name.startswith(PART_PREFIX) or (area is self.home and not rel and entry.name == "common"):
                        continue
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except FileNotFoundError:
                        continue
                    out.append(self._info(entry.name, area.to_virtual((*rel, entry.name)), st, area.writable))
        finally:
            os.close(fd)
        if area is self.home and not rel:
            out.append(self._common_info())
        return sorted(out, key=lambda f: f.name)

    def readlink(self, path: object) -> str:
        """The virtual target of a link, only if it stays inside the user's areas."""
        area, rel, vpath = self.resolve(path, follow_last=False)
        if not rel:
            raise ClientError(f"{vpath}: not a link", code="not_link")
        fd = self.open_dir(area, rel[:-1], vpath)
        try:
            with os_errors(vpath):
                target = os.readlink(rel[-1], dir_fd=fd)
        finally:
            os.close(fd)
        real = os.path.realpath(os.path.join(area.real, *rel[:-1], target))
        target_area, target_rel = self._classify(real, vpath)
        return target_area.to_virtual(target_rel)

    def open_read(self, path: object) -> ReadHandle:
        with self._parent(path) as (fd, name, _area, vpath), os_errors(vpath):
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            self._check_regular(st, vpath)
            rfd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=fd)
            fst = os.fstat(rfd)
            if (fst.st_dev, fst.st_ino) != (st.st_dev, st.st_ino):
                os.close(rfd)
                raise Forbidden(f"{vpath}: changed while opening; try again", code="race")
            return ReadHandle(rfd, fst.st_size, vpath)

    @staticmethod
    def _check_regular(st: os.stat_result, vpath: str) -> None:
        if stat.S_ISDIR(st.st_mode):
            raise ClientError(f"{vpath}: is a directory", code="is_directory")
        if stat.S_ISLNK(st.st_mode):
            raise Forbidden(f"{vpath}: symbolic links are not followed here", code="symlink_refused")
        if not stat.S_ISREG(st.st_mode):
            raise Forbidden(f"{vpath}: not a regular file (fifo, socket or device)", code="special_file")
        if st.st_nlink > 1:
            raise Forbidden(f"{vpath}: has several hard links; refused because another name may lie outside "
                            "your home (copy it instead of hard-linking)", code="hard_link")

    # ------------------------------------------------------------ writing

    def create_upload(self, path: object, *, truncate: bool = True, exclusive: bool = False) -> Upload:
        """Start an atomic write: bytes go to a hidden temp file, ``commit`` renames it into place."""
        parts = self.virtual(path)
        if parts == ("common",):
            raise Forbidden("/common: read-only", code="read_only")
        with self._parent(path, follow_last=False, write=True) as (fd, name, area, vpath), os_errors(vpath):
            try:
                old = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                old = None
            if old is not None:
                if exclusive:
                    raise Conflict(f"{vpath}: already exists", code="exists")
                if stat.S_ISDIR(old.st_mode):
                    raise ClientError(f"{vpath}: is a directory", code="is_directory")
                if not truncate:
                    self._check_regular(old, vpath)
            tmp = f"{PART_PREFIX}{secrets.token_hex(8)}"
            wfd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=fd)
            pfd = os.dup(fd)
        charged = area is self.home
        old_size = old.st_size if old is not None and stat.S_ISREG(old.st_mode) and old.st_nlink == 1 else 0
        upload = Upload(self.store.ledger, self.user, self.quota if charged else None, pfd, wfd, tmp, name,
                        vpath, old_size=old_size if charged else 0, charged=charged)
        if old is not None and not truncate:
            upload.copy_from_existing(old)
        return upload

    def mkdir(self, path: object, mode: int = 0o755) -> FileInfo:
        if self.virtual(path) == ("common",):
            raise Conflict("/common: already exists", code="exists")
        with self._parent(path, follow_last=False, write=True) as (fd, name, _area, vpath), os_errors(vpath):
            os.mkdir(name, (mode & 0o777) | 0o700, dir_fd=fd)
        return self.stat(path)

    def remove(self, path: object, *, recursive: bool = False, expect: str | None = None) -> None:
        """Remove a file or link (never its target), an empty directory, or a tree if ``recursive``."""
        if self.virtual(path) == ("common",):
            raise Forbidden("/common: read-only", code="read_only")
        with self._parent(path, follow_last=False, write=True) as (fd, name, area, vpath), os_errors(vpath):
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            is_dir = stat.S_ISDIR(st.st_mode)
            if expect == "file" and is_dir:
                raise ClientError(f"{vpath}: is a directory", code="is_directory")
            if expect == "dir" and not is_dir:
                raise ClientError(f"{vpath}: not a directory", code="not_directory")
            if is_dir and recursive:
                shutil.rmtree(name, dir_fd=fd)  # fd-based walk on Linux: immune to symlink races
                self.store.ledger.invalidate(self.user)
            elif is_dir:
                os.rmdir(name, dir_fd=fd)
            else:
                os.unlink(name, dir_fd=fd)
                if area is self.home and stat.S_ISREG(st.st_mode) and st.st_nlink == 1:
                    self.store.ledger.charge(self.user, -st.st_size, None)

    def move(self, src: object, dst: object, *, overwrite: bool = False) -> FileInfo:
        """Rename within the user's writable areas; a link is moved as a link, never followed."""
        for p in (src, dst):
            if self.virtual(p) == ("common",):
                raise Forbidden("/common: read-only", code="read_only")
        with self._parent(src, follow_last=False, write=True) as (sfd, sname, sarea, svpath), \
                self._parent(dst, follow_last=False, write=True) as (dfd, dname, darea, dvpath):
            with os_errors(svpath):
                os.stat(sname, dir_fd=sfd, follow_symlinks=False)
            with os_errors(dvpath):
                if not overwrite:
                    try:
                        os.stat(dname, dir_fd=dfd, follow_symlinks=False)
                        raise Conflict(f"{dvpath}: already exists", code="exists")
                    except FileNotFoundError:
                        pass
                os.rename(sname, dname, src_dir_fd=sfd, dst_dir_fd=dfd)
        if sarea is not darea or overwrite:
            self.store.ledger.invalidate(self.user)
        return self.stat(dst, follow=False)

    def setstat(self, path: object, *, mode: int | None = None, times_ns: tuple[int, int] | None = None) -> None:
        """chmod (permission bits only: no setuid/setgid/sticky) and utime; nothing else is settable."""
        with self._parent(path, write=True, allow_root=True) as (fd, name, _area, vpath), os_errors(vpath):
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if not stat.S_ISDIR(st.st_mode):
                self._check_regular(st, vpath)
            flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
            tfd = os.open(name, flags | (os.O_DIRECTORY if stat.S_ISDIR(st.st_mode) else 0), dir_fd=fd)
            try:
                if (os.fstat(tfd).st_ino, os.fstat(tfd).st_dev) != (st.st_ino, st.st_dev):
                    raise Forbidden(f"{vpath}: changed while opening; try again", code="race")
                if mode is not None:
                    os.fchmod(tfd, (mode & 0o777) | (0o700 if stat.S_ISDIR(st.st_mode) else 0o600))
                if times_ns is not None:
                    os.utime(tfd, ns=times_ns)
            finally:
                os.close(tfd)

    def ensure_room(self, path: object, nbytes: int) -> None:
        """Fail early (before any byte is read) when a declared upload size cannot fit the quota."""
        area, rel, vpath = self.resolve(path, follow_last=False, write=True)
        if area is not self.home or self.quota is None or not rel:
            return
        try:
            old = self.stat(path, follow=False)
            nbytes -= old.size if old.type == "file" and old.st is not None and old.st.st_nlink == 1 else 0
        except NotFound:
            pass
        if nbytes > 0:
            self.store.ledger.charge(self.user, nbytes, self.quota)
            self.store.ledger.charge(self.user, -nbytes, None)

    def usage(self) -> dict:
        return {"used_bytes": self.store.ledger.usage(self.user), "quota_bytes": self.quota}


class ReadHandle:
    """An open regular file; reads by offset so SFTP and HTTP Range need no seeking state."""

    def __init__(self, fd: int, size: int, vpath: str) -> None:
        self.fd, self.size, self.path = fd, size, vpath

    def pread(self, offset: int, size: int) -> bytes:
        return os.pread(self.fd, size, offset)

    def iter_range(self, start: int = 0, end: int | None = None, chunk: int = 1 << 20) -> Iterator[bytes]:
        """Bytes ``start``..``end`` (exclusive), chunk by chunk; closes the file when done."""
        end = self.size if end is None else end
        try:
            pos = start
            while pos < end:
                data = os.pread(self.fd, min(chunk, end - pos), pos)
                if not data:
                    break
                pos += len(data)
                yield data
        finally:
            self.close()

    def fstat(self) -> os.stat_result:
        return os.fstat(self.fd)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> ReadHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["ArgusError", "Area", "FileInfo", "FileStore", "ReadHandle", "Upload", "UserFiles", "shared_store",
           "user_files"]
