"""A folder as a streamed tar archive (the Data page's folder download), built as it is sent.

The tree is walked through ``UserFiles`` (``list`` + ``open_read``), so the archive holds only what
the user may read over SFTP: symbolic links are stored as nothing (never followed, never
archived as links that could point anywhere), other special files and hard-linked files (rule 5 of
``services.files``) are skipped. Memory stays at one chunk: each member's header is written from
the size its open descriptor reports and its bytes are read in 1 MiB chunks; a file that shrinks
while being sent is padded with zeros, one that grows is cut at that size, so the stream always
stays a valid tar. No temp file, no whole-archive buffer.
"""

from __future__ import annotations

import tarfile
from collections.abc import Iterator

from argus.errors import ArgusError, ClientError
from argus.services.files import UserFiles

BLOCK = 512
CHUNK = 1 << 20


def _pad(n: int) -> bytes:
    return b"\0" * (-n % BLOCK)


def _header(name: str, *, size: int = 0, mtime: float = 0, is_dir: bool = False) -> bytes:
    info = tarfile.TarInfo(name + ("/" if is_dir else ""))
    info.size = 0 if is_dir else size
    info.mtime = int(mtime)
    info.mode = 0o755 if is_dir else 0o644
    info.type = tarfile.DIRTYPE if is_dir else tarfile.REGTYPE
    return info.tobuf(format=tarfile.PAX_FORMAT, encoding="utf-8", errors="surrogateescape")


def check_folder(files: UserFiles, path: object) -> str:
    """The folder's virtual path (errors before any byte is sent: not found, not a folder, /common)."""
    info = files.stat(path, follow=False)
    if info.type != "dir":
        raise ClientError(f"{info.path}: not a folder; download a file with /api/v2/files/content",
                          code="not_directory")
    return info.path


def stream_tar(files: UserFiles, folder: str) -> Iterator[bytes]:
    """The tar bytes of ``folder`` (members named ``<folder name>/...``)."""
    top = folder.rstrip("/").rsplit("/", 1)[-1] or "home"
    yield _header(top, is_dir=True)
    pending = [(folder, top)]
    while pending:
        vdir, adir = pending.pop()
        try:
            entries = files.list(vdir)
        except ArgusError:
            continue  # vanished or became unreadable meanwhile: leave it out
        for e in entries:
            if e.path == "/common":
                continue
            name = f"{adir}/{e.name}"
            if e.type == "dir":
                yield _header(name, mtime=e.mtime, is_dir=True)
                pending.append((e.path, name))
            elif e.type == "file":
                yield from _member(files, e.path, name, e.mtime)
    yield b"\0" * (2 * BLOCK)


def _member(files: UserFiles, vpath: str, name: str, mtime: float) -> Iterator[bytes]:
    try:
        handle = files.open_read(vpath)
    except ArgusError:
        return  # a hard-linked file, or gone: not archived
    with handle:
        size = handle.size
        yield _header(name, size=size, mtime=mtime)
        sent = 0
        while sent < size:
            data = handle.pread(sent, min(CHUNK, size - sent))
            if not data:
                break
            sent += len(data)
            yield data
        if sent < size:  # shrank while sending: keep the archive's framing
            yield b"\0" * (size - sent)
        yield _pad(size)
