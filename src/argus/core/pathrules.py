"""Argus's path rules applied to one config value, literal or resolved by verl's config.

The same rules judge a path the user wrote (``trainer.default_local_dir=$HOME/ck``) and
a path OmegaConf built (``$HOME/${x}/bob/ck`` with ``x=..``), so an interpolation can
never reach what a literal could not. For a value under key ``key``:

* every value: after ``~`` → the owner's home (the task's ``HOME``) and relative → the
  task's job dir (``$HOME/jobs/<task>``: the driver's cwd), it must not land in another
  user's home nor be the users directory itself; ``~name`` is refused (a Unix account);
* path-like keys (``core.interpolation.is_path_key``):
  - ``data.train_files`` / ``data.val_files``: own home or the shared datasets;
  - the custom reward file: under ``$HOME/code/``;
  - outputs (``*dir``, ``*dirs``, ``save_path``): inside the owner's home only — the
    shared datasets/hf are read-only and nothing outside the data root is the user's;
  - other inputs (model, tokenizer, configs): own home, shared datasets or hf; elsewhere
    in the data root is refused; outside the data root is left to the task's jail (the
    training environment is readable there, and verl has defaults such as
    ``/tmp/ray/.../prometheus.yml``).
* a team's folder (``$HOME/teams/<team>`` → ``<root>/teams/<team>``) counts as the owner's home when
  they are in the team (``DataLayout.with_teams``), with its own ``code/`` for reward files, and as
  another user's home otherwise;
* URLs (``hdfs://``, ``s3://``, ...) are not local paths and are not judged here.

Lexical by design, like the rest of admission: the jail on the nodes and the file
service enforce the real filesystem (symlinks).
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from argus.core.command import split_list_value
from argus.core.interpolation import is_output_key, is_path_key
from argus.core.messages import field_error, render
from argus.core.paths import DataLayout, is_under, normalize
from argus.errors import FieldError

TRAIN_KEYS = ("data.train_files", "data.val_files")
REWARD_KEYS = ("custom_reward_function.path", "reward.custom_reward_function.path")
JOB_PLACEHOLDER = "<task>"  # the task id is not known at admission; any one name has the same depth
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")


def team_refusal(real: PurePosixPath, layout: DataLayout) -> str | None:
    """Why ``real`` is not the owner's to use when it is in the teams folder outside their teams; else None."""
    why = team_refusal_code(real, layout)
    return None if why is None else render(why[0], why[1])


def team_refusal_code(real: PurePosixPath, layout: DataLayout) -> tuple[str, dict[str, str]] | None:
    """:func:`team_refusal` as a code and its params (core.messages ``path.all_teams``, ``path.other_team``; with
    ``_at`` appended, the same after the ``{at}`` a caller names)."""
    team = layout.team_of(real)
    if team is None or team in layout.teams:
        return None
    return ("path.all_teams", {}) if team == "" else ("path.other_team", {"team": team})


def code_dirs(user: str, layout: DataLayout) -> tuple[PurePosixPath, ...]:
    """Where a reward function file may live: ``$HOME/code/`` and each of the owner's teams' ``code/``."""
    return (layout.code_dir(user), *(layout.team_dir(t) / "code" for t in sorted(layout.teams)))


def where(value: str, user: str, layout: DataLayout) -> PurePosixPath | None:
    """The absolute path a task process would use for ``value`` (None: a URL or ``~name``)."""
    v = value.strip()
    if v.startswith("file://"):
        v = v[len("file://"):]
    elif _URL.match(v) or (v.startswith("~") and not v.startswith(("~/",)) and v != "~"):
        return None
    if v == "~" or v.startswith("~/"):
        v = str(layout.home(user)) + v[1:]
    return normalize(v, layout.job_dir(user, JOB_PLACEHOLDER))


def check_path_value(key: str, value: str, user: str, layout: DataLayout, *, fld: str,
                     resolved: bool = False) -> list[FieldError]:
    """Errors for one value of ``key`` (an item of a list value); see the module doc for the rules."""
    v = value.strip()
    if not v:
        return []
    shown = f"{key} resolves to {display(v, user, layout)}" if resolved else f"{key}={display(v, user, layout)}"
    if v.startswith("~") and not v.startswith("~/") and v != "~":
        return [_coded(fld, v, "path.tilde_at", shown, resolved)]
    real = where(v, user, layout)
    if real is None:
        return []
    seen = display(str(real), user, layout)
    at = f"{shown} ({seen})" if seen != display(v, user, layout) else shown
    if real == layout.users_dir or (is_under(real, layout.users_dir) and real.relative_to(layout.users_dir).parts[0] != user):
        return [_coded(fld, seen, "path.other_home", at, resolved)]
    team = team_refusal_code(real, layout)
    if team:
        return [_coded(fld, seen, team[0] + "_at", at, resolved, **team[1])]
    if not is_path_key(key):
        return []
    own = layout.own_areas(user)
    if key in TRAIN_KEYS:
        if not any(is_under(real, b) for b in (*own, layout.datasets_dir, layout.legacy_datasets_dir)):
            return [_coded(fld, seen, "path.train_outside", at, resolved)]
    elif key in REWARD_KEYS:
        if not any(is_under(real, code) and real != code for code in code_dirs(user, layout)):
            return [_coded(fld, seen, "path.reward_outside", at, resolved)]
    elif is_output_key(key):
        if not any(is_under(real, b) for b in own):
            return [_coded(fld, seen, "path.output_outside", at, resolved)]
    elif is_under(real, layout.root) and not any(
        is_under(real, b) for b in (*own, layout.datasets_dir, layout.hf_dir, layout.legacy_datasets_dir)
    ):
        return [_coded(fld, seen, "path.data_root", at, resolved)]
    return []


def _coded(fld: str, seen: str, code: str, at: str, resolved: bool, **more: str) -> FieldError:
    """A refusal of ``key=value`` as written, coded (core.messages ``path.*``; ``at`` is the key, the value and
    where it lands: no words); one about a resolved value (``at`` says "… resolves to …") keeps the same English
    text without a code."""
    if resolved:
        return FieldError(fld, seen, render(code, {"at": at, **more}))
    return field_error(fld, seen, code, at=at, **more)


def display(path: str, user: str, layout: DataLayout) -> str:
    """A path as the user may see it: ``$HOME/...``, ``$HOME/common/...``, ``<bob's home>/...``, never the
    server's layout of the data root."""
    virtual = layout.to_virtual(path, user)
    if virtual != path or not path.startswith("/"):
        return virtual
    real = normalize(path)
    if real == layout.users_dir:
        return "<the users folder>"
    if is_under(real, layout.users_dir):
        owner, *rest = real.relative_to(layout.users_dir).parts
        return "/".join([f"<{owner}'s home>", *rest])
    if is_under(real, layout.root):
        return "/".join(["<data root>", *real.relative_to(layout.root).parts])
    return path


def check_literal_path(key: str, value: str, user: str, layout: DataLayout, errors: list[FieldError], *,
                       fld: str) -> None:
    """Argus's path rules (core.pathrules) for a path-like key's literal value.

    Values with an interpolation are judged once resolved (verl validator), or refused when
    nothing resolves them (``Admitted.unresolved``); data and reward keys keep their own checks.
    """
    if not is_path_key(key) or key in TRAIN_KEYS or key in REWARD_KEYS or "${" in value:
        return
    for item in split_list_value(value):
        errors.extend(check_path_value(key, item, user, layout, fld=fld))
