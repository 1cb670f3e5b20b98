"""Opening files in a user's home from a process that runs outside every sandbox (the server, a launcher).

A user's tasks and SFTP session can change everything in their home — the job folder included — so a path
the platform opens there (``jobs/<task>/logs/attempt-1.log``, ``status.json``, ``telemetry/…``) may have
become a symlink to another user's file or to a file of the node's root (``/root/.ssh/authorized_keys``), a
FIFO that blocks forever, or a hard link. Every open here walks from an anchor the user cannot replace (their
home: ``<root>/users/<user>``, whose parent is the platform's) with ``O_NOFOLLOW`` at each step, so a link
anywhere below it fails the open (``ELOOP``/``ENOTDIR``) instead of being followed, also when it is planted
between two opens; a file opened for writing must be a plain file with a single name.

Used by ``services/home_files.py`` (the server's reads) and by the launcher (``launcher/tasklog.py``,
``launcher/telemetry.py``, ``launcher/gang.py``, ``launcher/driver.py``: everything it writes in a job folder).
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def open_in_home(home: Path, rel: tuple[str, ...], flags: int, *, make_dirs: bool = False, mode: int = 0o644) -> int:
    """An fd for ``home/rel…`` opened without following any link below ``home`` (``make_dirs``: the missing
    folders on the way are made, 0755)."""
    if not rel or any(part in ("", ".", "..") for part in rel):
        raise OSError(errno.EINVAL, f"not a path below the home: {'/'.join(rel)!r}")
    fd = _walk(home, rel[:-1], make_dirs)
    try:
        return os.open(rel[-1], flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, mode, dir_fd=fd)
    except OSError as exc:
        raise _named(exc, home.joinpath(*rel)) from None
    finally:
        os.close(fd)


def _named(exc: OSError, path: Path) -> OSError:
    """``exc`` naming the whole path (an open relative to a folder's fd names only the last part)."""
    return type(exc)(exc.errno, exc.strerror, str(path))


def _walk(home: Path, dirs: tuple[str, ...], make_dirs: bool) -> int:
    """An fd on the folder ``home/dirs…``, reached with O_NOFOLLOW at every step."""
    if make_dirs:  # the anchor's own path is the platform's (``<root>/users/<user>``): made as it is named
        try:
            home.mkdir(parents=True, exist_ok=True)
        except FileExistsError:
            pass  # not a folder: the open below says so
    fd = os.open(home, DIR_FLAGS)
    at = home
    try:
        for name in dirs:
            at = at / name
            if make_dirs:
                try:
                    os.mkdir(name, 0o755, dir_fd=fd)
                except FileExistsError:
                    pass
            sub = os.open(name, DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = sub
    except OSError as exc:
        os.close(fd)
        raise _named(exc, at) from None
    except BaseException:
        os.close(fd)
        raise
    return fd


def is_plain(fd: int) -> bool:
    st = os.fstat(fd)
    return stat.S_ISREG(st.st_mode) and st.st_nlink == 1


def anchor_of(job_dir: Path) -> Path:
    """What a job folder's files are opened from: the owner's home for ``<home>/jobs/<task>`` (the shape
    every task has), else the folder's parent."""
    return job_dir.parents[1] if job_dir.parent.name == "jobs" and len(job_dir.parents) >= 2 else job_dir.parent


def anchor_for(path: Path) -> Path:
    """The anchor of a file anywhere in a job folder (``<home>/jobs/<task>/…``): the owner's home; else the
    file's folder."""
    for d in path.parents:
        if d.parent.name == "jobs" and len(d.parents) >= 2:
            return d.parents[1]
    return path.parent


def _rel(anchor: Path, path: Path) -> tuple[str, ...]:
    try:
        return path.relative_to(anchor).parts
    except ValueError:
        raise OSError(errno.EINVAL, f"{path} is not below {anchor}") from None


def open_dir(anchor: Path, path: Path, *, make: bool = False) -> int:
    """An fd on the folder ``path`` below ``anchor`` reached without links (``make``: ``mkdir -p`` on the way)."""
    return _walk(anchor, _rel(anchor, path), make)


def make_dirs(anchor: Path, path: Path) -> None:
    """``mkdir -p path`` below ``anchor``, never through a link."""
    os.close(open_dir(anchor, path, make=True))


def append_to(anchor: Path, path: Path, *, mode: int = 0o644) -> BinaryIO:
    """``path`` (below ``anchor``, its folders made) opened for appending, unbuffered: a plain file of its own,
    never a link, a FIFO, a device or a second name of another file (``OSError`` otherwise)."""
    fd = open_in_home(anchor, _rel(anchor, path), os.O_WRONLY | os.O_CREAT | os.O_APPEND, make_dirs=True, mode=mode)
    if not is_plain(fd):
        os.close(fd)
        raise OSError(errno.EPERM, f"{path.name} is not a plain file (a link, a FIFO or a device is refused)")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "ab", buffering=0)


def replace(anchor: Path, path: Path, data: bytes, *, mode: int = 0o644) -> None:
    """``path``'s content replaced atomically by ``data`` (a new file renamed over it, both in the folder
    reached without links: a planted link at ``path`` is replaced, never written through)."""
    rel = _rel(anchor, path)
    fd = _walk(anchor, rel[:-1], True)
    tmp = f".{rel[-1]}.{os.getpid()}.tmp"
    try:
        try:
            os.unlink(tmp, dir_fd=fd)  # a leftover of a killed writer with this pid (or something planted)
        except FileNotFoundError:
            pass
        out = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=fd)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(out, view):]
            os.fchmod(out, mode)
        finally:
            os.close(out)
        try:
            os.replace(tmp, rel[-1], src_dir_fd=fd, dst_dir_fd=fd)
        except OSError:
            os.unlink(tmp, dir_fd=fd)
            raise
    finally:
        os.close(fd)
