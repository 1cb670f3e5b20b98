"""A task's saved checkpoints (verl's ``global_step_N/`` folders), read safely from its owner's home.

The rule for "complete" is verl's own tracker file (see ``core/checkpoints.py``). The folder is
written by the task, which can put anything there — links to another user's files, FIFOs,
millions of files — so it is read the way ``home_files`` reads a job folder: every directory
opened from the home with ``O_NOFOLLOW`` at each step, entries ``lstat``-ed and never followed,
a link counted as nothing, and at most ``MAX_ENTRIES`` entries walked per listing (sizes past
that are marked as lower bounds).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

from argus.core import checkpoints as ck
from argus.core.paths import DataLayout, is_under
from argus.core.states import TERMINAL, TaskStatus
from argus.errors import ClientError, Conflict, FieldError
from argus.services.home_files import open_in_home, read_plain

MAX_ENTRIES = 200_000  # per listing: a step of a large sharded run has a few thousand files
_DIR = os.O_RDONLY | os.O_DIRECTORY


@dataclass(frozen=True)
class Component:
    name: str  # the entry in the step folder: actor, critic, data.pt, model_world_size_1_rank_0.pt …
    kind: str  # actor | critic | dataloader | model | other
    size_bytes: int


@dataclass(frozen=True)
class Step:
    step: int
    path: str  # real path of the step folder
    state: str  # complete | writing (the task is still active) | incomplete (cut off mid-write)
    components: list[Component]
    size_bytes: int
    modified_at: datetime | None
    size_exact: bool = True

    @property
    def complete(self) -> bool:
        return self.state == "complete"


@dataclass(frozen=True)
class Listing:
    folder: str  # real path of trainer.default_local_dir
    latest: int | None  # what latest_checkpointed_iteration.txt says (None: absent or unreadable)
    steps: list[Step] = field(default_factory=list)

    def latest_complete(self) -> Step | None:
        done = [s for s in self.steps if s.complete]
        return done[-1] if done else None

    def pick(self, step: int | None) -> Step:
        """The step to resume or export from: ``step`` (must be complete) or the latest complete one."""
        done = [s.step for s in self.steps if s.complete]
        if step is None:
            found = self.latest_complete()
            if found is None:
                raise Conflict("this task has no complete checkpoint (verl writes one every trainer.save_freq "
                               "steps; a step being written is not offered)", code="no_checkpoint")
            return found
        found = next((s for s in self.steps if s.step == step), None)
        if found is None or not found.complete:
            why = "is still being written or was cut off" if found else "does not exist"
            have = ", ".join(map(str, done)) or "none"
            raise ClientError(f"checkpoint step {step} {why}", code="bad_step",
                              errors=[FieldError("step", step, f"{why}; complete steps: {have}")])
        return found


def _kind(name: str, is_dir: bool) -> str:
    if name in ("actor", "critic"):
        return name
    if name == "data.pt" or (name.startswith("data_") and name.endswith(".pt")):
        return "dataloader"
    if name.startswith(("model_", "optim_", "extra_state_")) or name in ("huggingface", "dist_ckpt", "fsdp_config.json"):
        return "model"
    return "other"


class _Walk:
    """Sizes and newest mtime below a directory fd, never following a link, bounded in entries."""

    def __init__(self) -> None:
        self.left = MAX_ENTRIES

    def size(self, dir_fd: int) -> tuple[int, float, bool]:
        total, newest, exact = 0, 0.0, True
        for name in os.listdir(dir_fd):
            if self.left <= 0:
                return total, newest, False
            self.left -= 1
            try:
                st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            except OSError:
                continue
            newest = max(newest, st.st_mtime)
            if stat.S_ISREG(st.st_mode):
                total += st.st_size
            elif stat.S_ISDIR(st.st_mode):
                inner = self.below(dir_fd, name)
                if inner is None:
                    continue
                t, n, e = inner
                total, newest, exact = total + t, max(newest, n), exact and e
        return total, newest, exact

    def below(self, dir_fd: int, name: str) -> tuple[int, float, bool] | None:
        """``size`` of the sub-directory ``name`` (None: it cannot be opened without following a link)."""
        try:
            sub = os.open(name, _DIR | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
        except OSError:
            return None
        try:
            return self.size(sub)
        finally:
            os.close(sub)


def list_folder(home: Path, folder: PurePosixPath, *, active: bool) -> Listing:
    """The ``global_step_N`` folders of ``folder`` (below ``home``), oldest first. A folder that is
    missing, outside the home or reached through a link lists nothing."""
    listing = Listing(str(folder), None)
    if not is_under(folder, PurePosixPath(home)) or folder == PurePosixPath(home):
        return listing
    rel = tuple(Path(folder).relative_to(home).parts)
    try:
        fd = open_in_home(home, rel, _DIR)
    except OSError:
        return listing
    try:
        latest = _tracker(home, folder)
        walk, steps = _Walk(), []
        for name in os.listdir(fd):
            n = ck.step_of(name)
            if n is None:
                continue
            try:
                sub = os.open(name, _DIR | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            except OSError:  # a link or a file named like a step: not a checkpoint
                continue
            try:
                steps.append(_step(sub, n, str(PurePosixPath(folder) / name), latest, active, walk))
            finally:
                os.close(sub)
    finally:
        os.close(fd)
    steps.sort(key=lambda s: s.step)
    return Listing(str(folder), latest, steps)


def _tracker(home: Path, folder: PurePosixPath) -> int | None:
    """The step verl's ``latest_checkpointed_iteration.txt`` names (None: absent, unreadable, not a number)."""
    raw = read_plain(home, Path(folder) / ck.TRACKER, 64)
    try:
        return int((raw or b"").decode().strip()) if raw else None
    except ValueError:
        return None


def complete_steps(layout: DataLayout, user: str, task_id: str, argv: list[str], *,
                   after: int | None = None) -> tuple[int | None, list[int]]:
    """(verl's tracker, the numbers of the complete steps past ``after``) of a task, oldest first — what a
    listing says is complete, read without sizing anything: the scheduler's look at ``evaluate_checkpoints``
    asks every pass, and a listing walks every file of every step. When the tracker has not passed ``after``,
    only the tracker is read."""
    home = Path(str(layout.home(user)))
    folder = ck.checkpoint_folder(argv, layout.job_dir(user, task_id))
    if not is_under(folder, PurePosixPath(home)) or folder == PurePosixPath(home):
        return None, []
    latest = _tracker(home, folder)
    if latest is None or (after is not None and latest <= after):
        return latest, []
    try:
        fd = open_in_home(home, tuple(Path(folder).relative_to(home).parts), _DIR)
    except OSError:
        return latest, []
    try:
        steps = [n for name in os.listdir(fd) if (n := ck.step_of(name)) is not None and n <= latest
                 and (after is None or n > after) and _holds_files(fd, name)]
    finally:
        os.close(fd)
    return latest, sorted(steps)


def _holds_files(dir_fd: int, name: str) -> bool:
    """A step folder (not a link) with a file or folder in it: a listing's complete step has components."""
    try:
        sub = os.open(name, _DIR | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError:
        return False
    try:
        with os.scandir(sub) as entries:
            return any(e.is_dir(follow_symlinks=False) or e.is_file(follow_symlinks=False) for e in entries)
    finally:
        os.close(sub)


def _step(fd: int, n: int, path: str, latest: int | None, active: bool, walk: _Walk) -> Step:
    comps, total, newest, exact = [], 0, 0.0, True
    for name in sorted(os.listdir(fd)):
        try:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except OSError:
            continue
        walk.left -= 1
        newest = max(newest, st.st_mtime)
        if stat.S_ISDIR(st.st_mode):
            inner = walk.below(fd, name)
            if inner is None:
                continue
            size, m, e = inner
            newest, exact = max(newest, m), exact and e
        elif stat.S_ISREG(st.st_mode):
            size = st.st_size
        else:
            continue  # links, FIFOs, sockets: not part of a checkpoint
        comps.append(Component(name, _kind(name, stat.S_ISDIR(st.st_mode)), size))
        total += size
    if latest is not None and n <= latest and comps:
        state = "complete"
    else:
        state = "writing" if active else "incomplete"
    when = datetime.fromtimestamp(newest, UTC) if newest else None
    return Step(n, path, state, comps, total, when, exact)


def task_listing(layout: DataLayout, user: str, task_id: str, argv: list[str], status: str) -> Listing:
    """A task's checkpoints: the folder its command writes them to (``core.checkpoints.checkpoint_folder``)."""
    folder = ck.checkpoint_folder(argv, layout.job_dir(user, task_id))
    active = TaskStatus(status) not in TERMINAL
    return list_folder(Path(str(layout.home(user))), folder, active=active)
