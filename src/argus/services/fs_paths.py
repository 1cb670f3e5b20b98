"""Path confinement primitives for the per-user virtual filesystem (used only by ``services.files``).

What a user sees (seed 000 §2.3.1, §4)::

    /                  <root>/users/<user>    read-write
    /common            synthetic, read-only, always lists datasets and hf
    /common/datasets   <root>/datasets        read-only (admins: writable if settings.admin_writes_shared)
    /common/hf         <root>/hf              idem
    /teams             synthetic, read-only, lists the user's teams (only when they are in one)
    /teams/<team>      <root>/teams/<team>    read-write, for the team's members only

``/common`` and ``/teams`` are synthetic: a real ``<home>/common`` directory (a task may create
one) is shadowed, never listed and unreachable here, exactly as task admission
expands ``$HOME/common/datasets`` (and ``$HOME/teams/<team>``) to the shared folder and not into the
home. A team the user is not in does not exist here (not found, never "forbidden"): team names are
not disclosed to non-members.

This module holds the path half of the confinement rules listed in
``services.files`` (rules 1-5): lexical normalisation, ``realpath`` + prefix
check against the user's areas, ``O_NOFOLLOW`` component-by-component opens
from the area root, and the regular-file / hard-link check. ``ConfinedPaths``
is the base of ``services.files.UserFiles``; nothing else should subclass or
call it directly, so confinement keeps living behind one service.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from argus.errors import ClientError, Conflict, FieldError, Forbidden, NotFound, QuotaExceeded

PART_PREFIX = ".argus-part-"
# An SFTP upload of a new file whose client vanished leaves its bytes under this prefix + a hash of the
# target name, for ``reput`` to continue (services/uploads.py); kept this long after its last write.
RESUME_PREFIX = PART_PREFIX + "resume-"
RESUME_TTL_S = 24 * 3600.0
SHARED = ("datasets", "hf")
SYNTHETIC = ("common", "teams")  # top-level names the platform shows in every home, shadowing real ones
TEAM_KEY = "team:"  # Area.key prefix of a team folder
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# Bounds on a directory a user creates: deeper trees serve no training job and every later
# access pays one openat per level (Linux refuses real paths over PATH_MAX=4096 anyway).
MAX_NEW_DEPTH = 256
MAX_PATH_BYTES = 4096


@dataclass(frozen=True)
class Area:
    """A real directory tree shown at a virtual mount point with one set of rights."""

    key: str  # "home" | "datasets" | "hf" | "team:<name>"
    real: str  # realpath of the area root
    virtual: str  # "/" | "/common/datasets" | "/common/hf" | "/teams/<name>"
    writable: bool

    @property
    def team(self) -> str | None:
        return self.key[len(TEAM_KEY):] if self.key.startswith(TEAM_KEY) else None

    def to_virtual(self, rel: tuple[str, ...]) -> str:
        base = "" if self.virtual == "/" else self.virtual
        return base + "/" + "/".join(rel) if rel else self.virtual


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


def check_regular(st: os.stat_result, vpath: str) -> None:
    """Only a regular file with a single name may be read or have its attributes changed (rules 4, 5)."""
    if stat.S_ISDIR(st.st_mode):
        raise ClientError(f"{vpath}: is a directory", code="is_directory")
    if stat.S_ISLNK(st.st_mode):
        raise Forbidden(f"{vpath}: symbolic links are not followed here", code="symlink_refused")
    if not stat.S_ISREG(st.st_mode):
        raise Forbidden(f"{vpath}: not a regular file (fifo, socket or device)", code="special_file")
    if st.st_nlink > 1:
        raise Forbidden(f"{vpath}: has several hard links; refused because another name may lie outside "
                        "your home (copy it instead of hard-linking)", code="hard_link")


class ConfinedPaths:
    """One user's areas and the resolution of virtual paths into confined directory fds."""

    def __init__(self, root: Path, user: str, *, shared_writable: bool, teams: tuple[str, ...] = ()) -> None:
        """``teams``: the teams ``user`` is a member of now (their folders are read-write)."""
        self.home = Area("home", str(root / "users" / user), "/", True)
        self.team_areas = tuple(Area(f"{TEAM_KEY}{t}", str(root / "teams" / t), f"/teams/{t}", True)
                                for t in sorted(teams))
        self.areas = (self.home, *(Area(k, str(root / k), f"/common/{k}", shared_writable) for k in SHARED),
                      *self.team_areas)

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

    _check_regular = staticmethod(check_regular)

    def _locate(self, parts: tuple[str, ...], write: bool = False) -> tuple[Area | None, tuple[str, ...]]:
        """The area a virtual path names and the components inside it; (None, ()) is ``/common`` or ``/teams``."""
        if parts and parts[0] == "common":
            if len(parts) == 1:
                return None, ()
            area = next((a for a in self.areas if a.key == parts[1] and a.key != "home"), None)
            if area is None and write:  # /common/anything-else: a write is refused, not "missing"
                raise Forbidden(f"{self.show(parts)}: /common is read-only", code="read_only")
            if area is None:
                raise NotFound(f"{self.show(parts)}: no such file or directory", code="not_found")
            return area, parts[2:]
        if parts and parts[0] == "teams":
            if len(parts) == 1:
                return None, ()
            area = next((a for a in self.team_areas if a.team == parts[1]), None)
            if area is None:  # another team's folder, or none: the same answer, so names stay private
                raise NotFound(f"{self.show(parts)}: no such file or directory (team folders are "
                               "/teams/<team> for the teams you are in)", code="not_found")
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
        if not write and any(comp.startswith(PART_PREFIX) for comp in parts):
            # an upload in progress or a kept SFTP partial is not a file yet, even by its exact name (issue 33)
            raise NotFound(f"{vpath}: no such file or directory", code="not_found")
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

    @classmethod
    def check_new_path(cls, parts: tuple[str, ...]) -> None:
        """Refuse creating a path deeper than MAX_NEW_DEPTH levels or longer than MAX_PATH_BYTES."""
        vpath = cls.show(parts)
        size = len(vpath.encode("utf-8", "surrogateescape"))
        if len(parts) > MAX_NEW_DEPTH or size > MAX_PATH_BYTES:
            what = (f"{len(parts)} levels deep (at most {MAX_NEW_DEPTH})" if len(parts) > MAX_NEW_DEPTH
                    else f"{size} bytes long (at most {MAX_PATH_BYTES})")
            shown = vpath if len(vpath) <= 200 else vpath[:200] + "…"
            raise ClientError(f"path is {what}", code="path_too_long",
                              errors=[FieldError("path", shown, f"is {what}; use a shallower folder layout")])

    def make_dirs(self, area: Area, rel: tuple[str, ...], mode: int, vpath: str) -> None:
        """``mkdir -p`` of ``area/rel`` in one O_NOFOLLOW walk from the area root: one openat (and at
        most one mkdirat) per level, so the cost is linear in depth; a link met on the way fails."""
        with os_errors(vpath):
            fd = os.open(area.real, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                for comp in rel:
                    try:
                        nfd = os.open(comp, _DIR_FLAGS, dir_fd=fd)
                    except FileNotFoundError:
                        if comp.startswith(PART_PREFIX):
                            raise ClientError(f"{vpath}: names starting with {PART_PREFIX} are reserved",
                                              code="bad_path") from None
                        try:
                            os.mkdir(comp, mode, dir_fd=fd)
                        except FileExistsError:  # created meanwhile: open it below like any other
                            pass
                        nfd = os.open(comp, _DIR_FLAGS, dir_fd=fd)
                    os.close(fd)
                    fd = nfd
            finally:
                os.close(fd)

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


__all__ = ["MAX_NEW_DEPTH", "MAX_PATH_BYTES", "PART_PREFIX", "RESUME_PREFIX", "RESUME_TTL_S", "SHARED", "SYNTHETIC", "TEAM_KEY", "Area", "ConfinedPaths", "check_regular", "os_errors"]
