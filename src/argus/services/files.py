"""The per-user virtual filesystem: the ONE place that confines file access (SFTP and HTTP).

The virtual layout (``/``, ``/common/datasets``, ``/common/hf``, ``/teams/<team>``) and the path
primitives (rules 1-5 below) live in ``services.fs_paths``; this module holds the
operations built on them. Callers use only ``UserFiles`` (and the store helpers).

Confinement rules, in order:

1. Virtual paths are lexically normalised; NUL bytes are refused and a ``..``
   that would climb above ``/`` is Forbidden (no clamping: it is an attempt).
2. The real path is ``realpath``-ed and must lie inside one of the user's areas
   (their home, the datasets or hf folder, their teams' folders); it then takes *that* area's rights.
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

import os
import secrets
import shutil
import stat
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from argus.db.models import TeamMemberModel, TeamModel, UserModel
from argus.errors import ArgusError, ClientError, Conflict, Forbidden, NotFound
from argus.services.active_jobs import ActiveJobs
from argus.services.fs_paths import (
    PART_PREFIX,
    RESUME_TTL_S,
    SHARED,
    SYNTHETIC,
    Area,
    ConfinedPaths,
    os_errors,
)
from argus.services.principal import Principal
from argus.services.quota import UsageLedger, usage_level
from argus.services.uploads import Upload, resume_name
from argus.settings import Settings


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
    # a live task needs it (services/active_jobs.py): {"task", "status"}; it cannot be deleted or renamed
    protected: dict[str, str] | None = None

    def as_dict(self) -> dict:
        return {"name": self.name, "path": self.path, "type": self.type, "size": self.size,
                "mtime": self.mtime, "mode": oct(stat.S_IMODE(self.mode)), "writable": self.writable,
                "protected": self.protected}


def _kind(mode: int) -> str:
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "dir"
    return "symlink" if stat.S_ISLNK(mode) else "other"


class FileStore:
    """Process-wide: the data root, the policy settings and the usage ledger (shared by SFTP and HTTP)."""

    def __init__(self, root: Path, *, default_quota: int | None = None, admin_writes_shared: bool = True,
                 usage_ttl_s: float = 60.0) -> None:
        self.root = Path(os.path.realpath(root))
        self.default_quota = default_quota
        self.admin_writes_shared = admin_writes_shared
        self.ledger = UsageLedger(self.root / "users", ttl_s=usage_ttl_s)
        self.team_ledger = UsageLedger(self.root / "teams", ttl_s=usage_ttl_s, quota_name="team {}'s storage quota")

    @classmethod
    def from_settings(cls, settings: Settings) -> FileStore:
        return cls(settings.root, default_quota=settings.quota_bytes,
                   admin_writes_shared=settings.admin_writes_shared)

    def for_user(self, principal: Principal, quota: int | None = None,
                 teams: dict[str, int | None] | None = None, jobs: ActiveJobs | None = None) -> UserFiles:
        """``teams``: the user's teams and each one's storage quota (None: none); their folders are made
        here when missing, so a new team's folder exists the first time a member looks. ``jobs``: the
        user's live tasks, whose folders and logs are kept (None: no guard, for tools without a database)."""
        for team in teams or {}:
            team_folder(self.root, team)
        return UserFiles(self, principal, quota, teams or {}, jobs)


def retire_team_folder(root: Path, team: str) -> str | None:
    """Move a deleted team's folder aside (``teams/.deleted-<team>-<UTC time>``), so a team created later
    under the same name starts empty and never inherits its files; the name kept (None: no folder).
    No member's view or task reaches it (not a team name); an administrator removes it."""
    folder = root / "teams" / team
    if folder.is_symlink() or not folder.is_dir():
        return None
    kept = f".deleted-{team}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}"
    folder.rename(folder.with_name(kept))
    return kept


def team_folder(root: Path, team: str) -> Path:
    """``<root>/teams/<team>``, created (group-less, 0755 like homes) when missing."""
    folder = root / "teams" / team
    if not folder.is_dir():
        folder.mkdir(mode=0o755, parents=True, exist_ok=True)
    return folder


_STORE_LOCK = threading.Lock()


def _usable_partial(st: os.stat_result) -> bool:
    """A regular file only we link to, written to within ``RESUME_TTL_S``."""
    return stat.S_ISREG(st.st_mode) and st.st_nlink == 1 and time.time() - st.st_mtime < RESUME_TTL_S


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
    teams = dict(session.execute(
        select(TeamModel.name, TeamModel.quota_bytes).join(TeamMemberModel, TeamMemberModel.team_id == TeamModel.id)
        .where(TeamMemberModel.user_id == user.id)).all())
    return store.for_user(principal, quota, teams, ActiveJobs(session.get_bind(), user.id))


class UserFiles(ConfinedPaths):
    """One user's view. Every method takes a virtual path string and raises errors.py types."""

    def __init__(self, store: FileStore, principal: Principal, quota: int | None,
                 teams: dict[str, int | None] | None = None, jobs: ActiveJobs | None = None) -> None:
        shared_rw = principal.is_admin and store.admin_writes_shared
        self.team_quotas = dict(teams or {})
        super().__init__(store.root, principal.name, shared_writable=shared_rw, teams=tuple(self.team_quotas))
        self.store = store
        self.user = principal.name
        self.quota = quota
        self.jobs = jobs

    def _keep_task_files(self, path: object, *, field: str = "path", what: str = "delete") -> None:
        """409 when ``path`` (its last name as named, a link not followed) is a live task's folder, its
        ``logs`` or ``jobs`` itself (services/active_jobs.py): the running task's log would be lost."""
        if self.jobs is None:
            return
        area, rel, vpath = self.resolve(path, follow_last=False, write=True)
        if area is self.home:
            self.jobs.check(rel, vpath, field=field, what=what)

    def _account(self, area: Area) -> tuple[UsageLedger, str, int | None] | None:
        """Whose quota a write in ``area`` counts against: the home's owner, or the team of a team
        folder (ledger, key, quota); None for the shared folders, which have none."""
        if area is self.home:
            return self.store.ledger, self.user, self.quota
        if area.team is not None:
            return self.store.team_ledger, area.team, self.team_quotas.get(area.team)
        return None

    def _credit(self, area: Area, nbytes: int) -> None:
        account = self._account(area)
        if account is not None and nbytes:
            account[0].charge(account[1], -nbytes, None)

    def _forget(self, *areas: Area) -> None:
        for area in areas:
            account = self._account(area)
            if account is not None:
                account[0].invalidate(account[1])

    # ------------------------------------------------------------ reading

    def _info(self, name: str, vpath: str, st: os.stat_result, writable: bool) -> FileInfo:
        return FileInfo(name, vpath, _kind(st.st_mode), st.st_size, st.st_mtime, st.st_mode, writable, st)

    def _common_info(self, name: str = "common") -> FileInfo:
        st = os.stat(self.store.root)
        mode = stat.S_IFDIR | 0o555
        fake = os.stat_result((mode, 0, 0, 2, st.st_uid, st.st_gid, 0, st.st_atime, st.st_mtime, st.st_ctime),
                              {"st_atime_ns": st.st_atime_ns, "st_mtime_ns": st.st_mtime_ns,
                               "st_ctime_ns": st.st_ctime_ns})
        return FileInfo(name, f"/{name}", "dir", 0, st.st_mtime, mode, False, fake)

    def stat(self, path: object, *, follow: bool = True) -> FileInfo:
        parts = self.virtual(path)
        if parts == ("common",):
            return self._common_info()
        if parts == ("teams",):
            if not self.team_areas:
                raise NotFound("/teams: no such file or directory (you are in no team)", code="not_found")
            return self._common_info("teams")
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
        if parts == ("teams",):
            self.stat("/teams")  # not found when in no team
            return [self.stat(a.virtual) for a in self.team_areas]
        area, rel, vpath = self.resolve(path)
        fd = self.open_dir(area, rel, vpath)
        out: list[FileInfo] = []
        try:
            with os_errors(vpath):
                for entry in os.scandir(fd):
                    if entry.name.startswith(PART_PREFIX) or (area is self.home and not rel and entry.name in SYNTHETIC):
                        continue
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except FileNotFoundError:
                        continue
                    out.append(self._info(entry.name, area.to_virtual((*rel, entry.name)), st, area.writable))
        finally:
            os.close(fd)
        if area is self.home and self.jobs is not None and (not rel or rel[0] == "jobs") and len(rel) <= 2:
            marks = self.jobs.marks(rel, (f.name for f in out))
            out = [replace(f, protected=marks[f.name]) if f.name in marks else f for f in out]
        if area is self.home and not rel:
            out.append(self._common_info())
            if self.team_areas:
                out.append(self._common_info("teams"))
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

    # ------------------------------------------------------------ writing

    def create_upload(self, path: object, *, truncate: bool = True, exclusive: bool = False) -> Upload:
        """Start an atomic write: bytes go to a hidden temp file, ``commit`` renames it into place."""
        parts = self.virtual(path)
        if parts in (("common",), ("teams",)):
            raise Forbidden(f"/{parts[0]}: read-only", code="read_only")
        self._keep_task_files(path, what="write")  # a live task's log is appended to, never replaced
        with self._parent(path, follow_last=False, write=True) as (fd, name, area, vpath), os_errors(vpath):
            try:
                old = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                old = None
            if old is not None:
                if exclusive:
                    raise Conflict(f"{vpath}: already exists", code="exists")
                if stat.S_ISDIR(old.st_mode):
                    raise ClientError(f"{vpath}: is a directory; write the file under another name, or into "
                                      "that folder", code="is_directory")
                if not truncate:
                    self._check_regular(old, vpath)
            account = self._account(area)
            charged = account is not None
            # a new file: an interrupted upload of it is continued (reput: no TRUNC) or discarded (put)
            partial = self._take_partial(fd, name, area, keep=not (truncate or exclusive)) if old is None else None
            if partial is not None:
                tmp, wfd, partial_size = partial
            else:
                tmp = f"{PART_PREFIX}{secrets.token_hex(8)}"
                wfd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644,
                              dir_fd=fd)
            pfd = os.dup(fd)
        old_size = old.st_size if old is not None and stat.S_ISREG(old.st_mode) and old.st_nlink == 1 else 0
        ledger, key, quota = account or (self.store.ledger, self.user, None)
        upload = Upload(ledger, key, quota, pfd, wfd, tmp, name, vpath, old_size=old_size if charged else 0,
                        charged=charged)
        upload.resumable = old is None
        if partial is not None:
            upload.continue_partial(partial_size)
        if old is not None and not truncate:
            upload.copy_from_existing(old)
        return upload

    def _take_partial(self, fd: int, name: str, area: Area, *, keep: bool) -> tuple[str, int, int] | None:
        """The kept partial of ``name`` as (temp name, fd, size) to continue, when ``keep`` and it is usable;
        otherwise it is deleted. Renamed to a fresh temp name first, so two sessions never share one."""
        pname = resume_name(name)
        try:
            st = os.stat(pname, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return None
        if keep and _usable_partial(st):
            tmp = f"{PART_PREFIX}{secrets.token_hex(8)}"
            try:
                os.rename(pname, tmp, src_dir_fd=fd, dst_dir_fd=fd)
                wfd = os.open(tmp, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            except FileNotFoundError:  # another session took it first
                return None
            except OSError:  # not a file we made (a link a task put there)
                self._drop_partial(fd, tmp, None, area)
                return None
            fst = os.fstat(wfd)
            if (fst.st_dev, fst.st_ino) == (st.st_dev, st.st_ino):
                return tmp, wfd, fst.st_size
            os.close(wfd)
            pname, st = tmp, fst
        self._drop_partial(fd, pname, st, area)
        return None

    def _drop_partial(self, fd: int, pname: str, st: os.stat_result | None, area: Area) -> None:
        try:
            os.unlink(pname, dir_fd=fd)
        except FileNotFoundError:
            return
        if st is not None and stat.S_ISREG(st.st_mode) and st.st_nlink == 1:
            self._credit(area, st.st_size)

    def stat_partial(self, path: object) -> FileInfo | None:
        """A missing file with a kept partial upload, as SFTP shows it to ``reput`` (its size is where the
        upload continues); None otherwise. Listings, the HTTP API and tasks never see it."""
        parts = self.virtual(path)
        if not parts or parts in (("common",), ("teams",)):
            return None
        try:
            with self._parent(path, follow_last=False, write=True) as (fd, name, area, vpath):
                try:
                    os.stat(name, dir_fd=fd, follow_symlinks=False)
                    return None  # the file itself exists
                except FileNotFoundError:
                    pass
                pname = resume_name(name)
                try:
                    st = os.stat(pname, dir_fd=fd, follow_symlinks=False)
                except FileNotFoundError:
                    return None
                if not _usable_partial(st):
                    self._drop_partial(fd, pname, st, area)
                    return None
                return self._info(parts[-1], vpath, st, True)
        except (ArgusError, OSError):
            return None

    def mkdir(self, path: object, mode: int = 0o755, *, parents: bool = False) -> FileInfo:
        """Create a directory; with ``parents`` also the missing ones above it (``mkdir -p``).

        The parents are made in one O_NOFOLLOW walk from the area root (``make_dirs``), linear in
        depth; stat-ing and creating each level through the full resolve was quadratic (1200 levels:
        66 s of CPU). Depth and path length are capped (``check_new_path``).
        """
        parts = self.virtual(path)
        self.check_new_path(parts)
        if parents and len(parts) > 1:
            # one realpath of the parent (an in-area link keeps working), then one O_NOFOLLOW walk
            area, rel, vpath = self.resolve(path, follow_last=False, write=True)
            if rel[:-1]:
                if not area.writable:
                    raise Forbidden(f"{vpath}: read-only for you", code="read_only")
                self.make_dirs(area, rel[:-1], (mode & 0o777) | 0o700, vpath)
        if parents:
            try:
                info = self.stat(path)
            except NotFound:
                pass
            else:
                if info.type == "dir":
                    return info
        if parts in (("common",), ("teams",)):
            raise Conflict(f"/{parts[0]}: already exists", code="exists")
        try:
            with self._parent(path, follow_last=False, write=True) as (fd, name, _area, vpath), os_errors(vpath):
                os.mkdir(name, (mode & 0o777) | 0o700, dir_fd=fd)
        except Conflict as exc:
            # ``-p`` is idempotent even against a racing twin: a folder upload makes ``run1`` and
            # ``run1/ckpt`` in parallel requests, and the one that loses the race must not fail
            if not parents or exc.code != "exists" or self.stat(path).type != "dir":
                raise
        return self.stat(path)

    def remove(self, path: object, *, recursive: bool = False, expect: str | None = None) -> None:
        """Remove a file or link (never its target), an empty directory, or a tree if ``recursive``."""
        if self.virtual(path) in (("common",), ("teams",)):
            raise Forbidden(f"{self.show(self.virtual(path))}: read-only", code="read_only")
        self._keep_task_files(path)
        with self._parent(path, follow_last=False, write=True) as (fd, name, area, vpath), os_errors(vpath):
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            is_dir = stat.S_ISDIR(st.st_mode)
            if expect == "file" and is_dir:
                raise ClientError(f"{vpath}: is a directory", code="is_directory")
            if expect == "dir" and not is_dir:
                raise ClientError(f"{vpath}: not a directory", code="not_directory")
            if is_dir and recursive:
                shutil.rmtree(name, dir_fd=fd)  # fd-based walk on Linux: immune to symlink races
                self._forget(area)
            elif is_dir:
                os.rmdir(name, dir_fd=fd)
            else:
                os.unlink(name, dir_fd=fd)
                if stat.S_ISREG(st.st_mode) and st.st_nlink == 1:
                    self._credit(area, st.st_size)

    def move(self, src: object, dst: object, *, overwrite: bool = False) -> FileInfo:
        """Rename within the user's writable areas; a link is moved as a link, never followed."""
        sparts, dparts = self.virtual(src), self.virtual(dst)
        for p in (sparts, dparts):
            if p in (("common",), ("teams",)):
                raise Forbidden(f"/{p[0]}: read-only", code="read_only")
        if sparts and dparts[:len(sparts)] == sparts and dparts != sparts:
            raise ClientError(f"{self.show(dparts)}: cannot move {self.show(sparts)} into itself; pick a folder "
                              "outside it", code="move_into_itself")
        self._keep_task_files(src, field="src", what="rename or move")
        if overwrite:
            self._keep_task_files(dst, field="dst", what="replace")
        with self._parent(src, follow_last=False, write=True) as (sfd, sname, sarea, svpath), \
                self._parent(dst, follow_last=False, write=True) as (dfd, dname, darea, dvpath):
            with os_errors(svpath):
                os.stat(sname, dir_fd=sfd, follow_symlinks=False)
            with os_errors(dvpath):
                if not overwrite:
                    try:
                        os.stat(dname, dir_fd=dfd, follow_symlinks=False)
                        raise Conflict(f"{dvpath}: already exists; rename one of them or delete the one "
                                       "in the target first", code="exists")
                    except FileNotFoundError:
                        pass
                os.rename(sname, dname, src_dir_fd=sfd, dst_dir_fd=dfd)
        if sarea is not darea or overwrite:
            self._forget(sarea, darea)
        return self.stat(dst, follow=False)

    def setstat(self, path: object, *, mode: int | None = None, times_ns: tuple[int, int] | None = None) -> None:
        """chmod (permission bits only: no setuid/setgid/sticky) and utime; nothing else is settable.

        The modes of the home itself and of everything in the shared areas (``/common/…``, writable by
        admins) are the platform's: other users and every task read them, so chmod there is refused.
        """
        with self._parent(path, write=True, allow_root=True) as (fd, name, area, vpath), os_errors(vpath):
            if mode is not None and ((area is not self.home and area.team is None) or name == "."):
                where = ("your home folder itself" if area is self.home else
                         "a team folder itself" if area.team is not None else "/common")
                raise Forbidden(f"{vpath}: permission denied: the modes of {where} are set by the platform",
                                code="forbidden")
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if not stat.S_ISDIR(st.st_mode):
                self._check_regular(st, vpath)
            flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
            tfd = os.open(name, flags | (os.O_DIRECTORY if stat.S_ISDIR(st.st_mode) else 0), dir_fd=fd)
            try:
                opened = os.fstat(tfd)
                if (opened.st_ino, opened.st_dev) != (st.st_ino, st.st_dev):
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
        account = self._account(area)
        if account is None or account[2] is None or not rel:
            return
        ledger, key, quota = account
        try:
            old = self.stat(path, follow=False)
            nbytes -= old.size if old.type == "file" and old.st is not None and old.st.st_nlink == 1 else 0
        except NotFound:
            pass
        if nbytes > 0:
            ledger.charge(key, nbytes, quota)
            ledger.charge(key, -nbytes, None)

    def usage(self) -> dict:
        """Bytes used in the home, the quota (None: none) and ``level`` ("ok", "near", "full"); ``teams``: the
        same for each of the user's team folders."""
        used = self.store.ledger.usage(self.user)
        teams = []
        for area in self.team_areas:
            team_used, quota = self.store.team_ledger.usage(area.team), self.team_quotas.get(area.team)
            teams.append({"team": area.team, "path": area.virtual, "used_bytes": team_used, "quota_bytes": quota,
                          "level": usage_level(team_used, quota)})
        return {"used_bytes": used, "quota_bytes": self.quota, "level": usage_level(used, self.quota),
                "teams": teams}


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


__all__ = ["PART_PREFIX", "SHARED", "ArgusError", "Area", "FileInfo", "FileStore", "ReadHandle", "Upload", "UserFiles",
           "os_errors", "shared_store", "user_files"]
