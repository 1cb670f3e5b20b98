"""The shared-filesystem layout and ``$HOME`` macro expansion.

Users write paths as they see them over SFTP (``$HOME/datasets/x``,
``$HOME/common/datasets/y``, ``$HOME/teams/<team>/z``); the training process sees the real
filesystem. ``DataLayout`` is the one place that knows both views (seed 000 §2.3, §4).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath

USER_NAME_RE = re.compile(r"^[a-z][a-z0-9_-]{1,31}$")
HOME_DIRS = ("datasets", "models", "code", "jobs")

# `$HOME` or `${HOME}` not followed by more identifier characters ($HOMEDIR is another variable).
_HOME = r"(?:\$HOME(?![A-Za-z0-9_])|\$\{HOME\})"
# A shared folder name must end the path component: $HOME/common/datasetsX is not shared.
_END = r"(?=/|$|[^A-Za-z0-9_.\-])"
_COMMON_DATASETS = re.compile(_HOME + r"/common/datasets" + _END)
_COMMON_HF = re.compile(_HOME + r"/common/hf" + _END)
_TEAMS = re.compile(_HOME + r"/teams" + _END)
_HOME_ONLY = re.compile(_HOME)
# A leading tilde at a word start (`~`, `~/x`) means the user's home for the user; `~name` is rejected
# by admission because bash would expand it to a Unix account's home.
_TILDE_HOME = re.compile(r"(?<![^\s=,'\"\[(:])~(?=/|\s|$|[,'\"\])])")


@dataclass(frozen=True)
class DataLayout:
    """Where things live under the data root (``/private`` in cluster mode).

    ``teams``: the teams of the user whose paths are judged (``with_teams``); their folders count as that
    user's own files in the path rules (``core.pathrules``). Empty: no team folder is anyone's."""

    root: PurePosixPath
    teams: frozenset[str] = field(default=frozenset(), compare=False)

    @classmethod
    def at(cls, root: str | PurePosixPath) -> DataLayout:
        return cls(PurePosixPath(str(root)))

    def with_teams(self, teams: Iterable[str]) -> DataLayout:
        """The same layout as seen by a member of ``teams``."""
        return replace(self, teams=frozenset(teams))

    @property
    def users_dir(self) -> PurePosixPath:
        return self.root / "users"

    @property
    def datasets_dir(self) -> PurePosixPath:
        return self.root / "datasets"

    @property
    def hf_dir(self) -> PurePosixPath:
        return self.root / "hf"

    @property
    def legacy_datasets_dir(self) -> PurePosixPath:
        """``<root>/common/datasets``: the v3.0 location, still accepted (seed §8.2)."""
        return self.root / "common" / "datasets"

    @property
    def teams_dir(self) -> PurePosixPath:
        """``<root>/teams``: one folder per team, shown to members as ``$HOME/teams/<team>``."""
        return self.root / "teams"

    def team_dir(self, team: str) -> PurePosixPath:
        return self.teams_dir / team

    def team_of(self, path: PurePosixPath) -> str | None:
        """The team whose folder holds ``path`` (normalised); "" for the teams folder itself; None elsewhere."""
        if not is_under(path, self.teams_dir):
            return None
        return "" if path == self.teams_dir else path.relative_to(self.teams_dir).parts[0]

    def own_areas(self, user: str) -> tuple[PurePosixPath, ...]:
        """Where ``user``'s own files are: their home and their teams' folders (read-write for them)."""
        return (self.home(user), *(self.team_dir(t) for t in sorted(self.teams)))

    def home(self, user: str) -> PurePosixPath:
        return self.users_dir / user

    def code_dir(self, user: str) -> PurePosixPath:
        return self.home(user) / "code"

    def job_dir(self, user: str, task_id: str) -> PurePosixPath:
        return self.home(user) / "jobs" / task_id

    def attempt_log(self, user: str, task_id: str, attempt: int) -> PurePosixPath:
        """Where the driver (``launcher/driver.py``, given the job dir) writes an attempt's output."""
        return self.job_dir(user, task_id) / "logs" / f"attempt-{attempt}.log"

    def expand(self, text: str, user: str) -> str:
        """Expand ``$HOME`` macros in the documented order (common folders first)."""
        text = _COMMON_DATASETS.sub(lambda _m: str(self.datasets_dir), text)
        text = _COMMON_HF.sub(lambda _m: str(self.hf_dir), text)
        text = _TEAMS.sub(lambda _m: str(self.teams_dir), text)
        home = str(self.home(user))
        text = _HOME_ONLY.sub(lambda _m: home, text)
        return _TILDE_HOME.sub(lambda _m: home, text)

    def to_virtual(self, real: str, user: str) -> str:
        """Inverse of ``expand`` for one path: how the user would write it (for messages)."""
        p = PurePosixPath(posixpath.normpath(real))
        for base, shown in (
            (self.datasets_dir, "$HOME/common/datasets"),
            (self.hf_dir, "$HOME/common/hf"),
            (self.teams_dir, "$HOME/teams"),
            (self.home(user), "$HOME"),
        ):
            if p == base or base in p.parents:
                rel = p.relative_to(base)
                return shown if str(rel) == "." else f"{shown}/{rel}"
        return real


def normalize(path: str, cwd: PurePosixPath | None = None) -> PurePosixPath:
    """Lexically normalise a path the way the kernel would walk it (``..``, ``.``, ``//``)."""
    if not path.startswith("/") and cwd is not None:
        path = f"{cwd}/{path}"
    return PurePosixPath(posixpath.normpath(re.sub(r"/+", "/", path)))


def is_under(path: PurePosixPath, base: PurePosixPath) -> bool:
    return path == base or base in path.parents
