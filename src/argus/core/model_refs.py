"""Model registries (issue 38): the pure rules — names, references, which registry a version goes to, who may
move a team's aliases, and whether teammates can use a team version's files. Nothing here touches the database.

There is one registry per user and one per team. A user's own models keep their plain names (``tiny``,
``tiny:3``, ``tiny@production``); a team's are written with the team in front (``nlp/tiny``, ``nlp/tiny:3``,
``nlp/tiny@production``). Neither a model name nor a team name may hold a ``/``, so the first ``/`` of a
reference always ends the team's name and the two forms never overlap.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from argus.core.teams import TEAM_NAME_RE, TEAM_NAME_RULE, TeamRole
from argus.errors import ClientError, FieldError

NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
NAME_RULE = "1-64 letters, digits, '.', '_' or '-', starting with a letter or digit, e.g. gsm8k-grpo"
ALIAS_RE = re.compile(r"[a-z][a-z0-9_-]{0,31}")
ALIAS_RULE = "1-32 lower-case letters, digits, '_' or '-', starting with a letter, e.g. production"
REF_RULE = ("NAME, NAME:N or NAME@ALIAS for your own models; TEAM/NAME, TEAM/NAME:N or TEAM/NAME@ALIAS for a "
            "team's, e.g. nlp/gsm8k-grpo@production")
TEAM_FOLDER = "$HOME/teams/{team}/"  # a team's folder as every member writes it (core.paths.DataLayout)


@dataclass(frozen=True)
class ModelRef:
    """A parsed reference: ``team`` None for the caller's own registry; at most one of ``version`` and ``alias``."""

    team: str | None
    name: str
    version: int | None = None
    alias: str | None = None

    @property
    def model(self) -> str:
        """The model's name as written everywhere: ``name`` or ``team/name``."""
        return shown(self.team, self.name)


def shown(team: str | None, name: str, version: int | None = None, alias: str | None = None) -> str:
    """``name``, ``team/name``, with ``:N`` or ``@alias`` when given: how a version or alias is referred to."""
    out = f"{team}/{name}" if team else name
    if version is not None:
        out += f":{version}"
    if alias is not None:
        out += f"@{alias}"
    return out


def check_name(name: object, field: str = "name") -> str:
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        raise ClientError(f"bad model name {name!r}: {NAME_RULE}", code="bad_name",
                          errors=[FieldError(field, name, NAME_RULE)])
    return name


def check_team(team: object, field: str = "team") -> str:
    if not isinstance(team, str) or not TEAM_NAME_RE.fullmatch(team):
        raise ClientError(f"bad team name {team!r}", code="invalid_team",
                          errors=[FieldError(field, team, f"a team name {TEAM_NAME_RULE}, e.g. nlp")])
    return team


def check_alias(alias: object) -> str:
    if not isinstance(alias, str) or not ALIAS_RE.fullmatch(alias):
        raise ClientError(f"bad alias {alias!r}: {ALIAS_RULE}", code="bad_alias",
                          errors=[FieldError("alias", alias, ALIAS_RULE)])
    return alias


def parse_ref(ref: str, *, one_model: bool = False) -> ModelRef:
    """``[team/]name[:N | @alias]``, each part checked (field ``ref``, ``team`` or ``name``). ``one_model``: only
    ``[team/]name`` (an alias is moved on a model, not on a version)."""
    team, slash, rest = ref.partition("/")
    if not slash:
        team, rest = None, ref
    else:
        check_team(team)
    body, at, alias = rest.partition("@")
    name, colon, number = body.partition(":")
    check_name(name)
    if one_model and (at or colon):
        raise ClientError(f"bad model {ref!r}: name a model, not one version", code="bad_ref",
                          errors=[FieldError("ref", ref, "NAME or TEAM/NAME (the version goes in the body)")])
    if at and colon:
        raise ClientError(f"bad model reference {ref!r}", code="bad_ref", errors=[FieldError("ref", ref, REF_RULE)])
    if at:
        return ModelRef(team, name, alias=check_alias(alias))
    if colon:
        if not number.isascii() or not number.isdigit() or len(number) > 9 or int(number) < 1:
            raise ClientError(f"bad version in {ref!r}", code="bad_ref", errors=[FieldError(
                "ref", ref, f"the version after ':' is a whole number ≥ 1; {REF_RULE}")])
        return ModelRef(team, name, version=int(number))
    return ModelRef(team, name)


@dataclass(frozen=True)
class Choice:
    """The registry a new version goes to (``team`` None: the registrant's own) and why, in words for the answer."""

    team: str | None
    why: str | None


def choose_registry(*, requested: str | None, task_id: str | None, task_team: str | None,
                    folder_team: str | None) -> Choice:
    """Where a version belongs. Its files decide first: a folder in a team's folder is that team's (teammates read
    it there). Then a task charged to a team makes the version the team's — what a team's compute produced is
    the team's. Else the registry asked for (``team``), else the registrant's own. A ``team`` that contradicts
    either is refused, naming the field and the team it would have to be."""
    if folder_team is not None:
        if requested is not None and requested != folder_team:
            raise ClientError("the folder is another team's", code="team_mismatch", errors=[FieldError(
                "team", requested, f"the folder is in team {folder_team}'s folder, so it goes to {folder_team}'s "
                f"registry: give team {folder_team} or leave team out")])
        return Choice(folder_team, f"the folder is in team {folder_team}'s folder")
    if task_team is not None:
        if requested is not None and requested != task_team:
            raise ClientError("the task is charged to another team", code="team_mismatch", errors=[FieldError(
                "team", requested, f"task {task_id} is charged to team {task_team}, so its versions go to "
                f"{task_team}'s registry: give team {task_team} or leave team out")])
        return Choice(task_team, f"task {task_id} is charged to team {task_team}")
    if requested is not None:
        return Choice(requested, None)
    return Choice(None, None)


def may_move_alias(*, team: str | None, site_admin: bool, role: TeamRole | None) -> bool:
    """A user's own aliases are theirs to move. A team's aliases (``nlp/x@production``) say which model the team
    runs, so only the team's admins (and site admins, who manage every team) move them; a member registers."""
    return team is None or site_admin or role is TeamRole.ADMIN


def alias_refusal(team: str, role: TeamRole | None) -> str:
    held = f"you are a {role.value} of it" if role is not None else "you are not in it"
    return (f"moving an alias of team {team}'s models needs the team's admin role ({held}); ask one of its "
            f"admins (argus team show {team})")


def is_shared(team: str | None, path: str) -> bool:
    """Whether every member of ``team`` can read a version at ``path`` (as its registrant writes it): only a path
    in the team's folder. A path in the registrant's home is theirs alone, whatever registry names it."""
    return team is not None and path.startswith(TEAM_FOLDER.format(team=team))


def sharing_hint(*, team: str, name: str, kind: str, path: str, registrant: str, source_task: str | None,
                 step: int | None) -> str:
    """What makes a team version's files usable by the team, when they sit in the registrant's home. Nothing is
    copied by the registry: the registrant exports (or moves) the files into the team's folder and registers
    that folder as the next version."""
    folder = f"{TEAM_FOLDER.format(team=team)}models/{name}"
    where = f"in {registrant}'s home ($HOME there is {registrant}'s): other members of {team} cannot read it"
    if kind == "checkpoint" and source_task is not None:
        how = f"argus export {source_task}" + (f" --step {step}" if step is not None else "") + f" --to {folder}"
    else:  # `argus files` writes the layout without $HOME: /models/x, /teams/<team>/…
        how = f"argus files mv {path.removeprefix('$HOME') or '/'} /teams/{team}/models/{name}"
    return f"{where}; to share it, {registrant} runs `{how}`, then `argus model register {name} --path {folder}`"
