"""`argus team list | show | create | set | delete | add | remove | role | default` and
`argus priority-class list | create | set | delete` (issue 26).

Teams through the SDK (``Client.teams``): site admins create teams and set their weight, quotas and
budget; a team's admins add and remove members; anyone may leave a team or choose their default.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import typer

from argus.cli.common import Output, client, console, emit, handle_errors, output_option, sdk, table

team_app = typer.Typer(help="Teams: shared folders, GPU quotas and budgets, fair share between teams.",
                       no_args_is_help=True)


def _limit(value: Any, unit: str = "") -> str:
    return "—" if value is None else f"{value:g}{unit}" if isinstance(value, float) else f"{value}{unit}"


def _settings(weight: float | None, max_gpus: int | None, max_running: int | None, gpu_hours: float | None,
              quota: int | None, clear: list[str] | None) -> dict[str, Any]:
    out: dict[str, Any] = {k: v for k, v in (("weight", weight), ("max_gpus", max_gpus),
                                             ("max_running_tasks", max_running), ("gpu_hours_month", gpu_hours),
                                             ("quota_bytes", quota)) if v is not None}
    for key in clear or ():
        out[key.replace("-", "_")] = None  # the server names an unknown setting
    return out


def weight_opt() -> Any:
    return typer.Option(None, "--weight", help="share under contention (1 by default; 2 gets twice the share)")


def gpus_opt() -> Any:
    return typer.Option(None, "--max-gpus", help="GPUs the team's tasks may hold at once")


def running_opt() -> Any:
    return typer.Option(None, "--max-running", help="running tasks at once")


def hours_opt() -> Any:
    return typer.Option(None, "--gpu-hours-month", help="GPU-hours per calendar month (UTC)")


def quota_opt() -> Any:
    return typer.Option(None, "--quota-bytes", help="storage quota of the team folder")


@handle_errors
def team_list(output: Output = output_option()) -> None:
    """Your teams (a site admin: every team)."""
    out = sdk().teams.list()
    if emit(out, output):
        return
    if not out:
        console.print("you are in no team; a team admin or a site administrator adds you", markup=False)
        return
    table(["TEAM", "YOUR ROLE", "MEMBERS", "WEIGHT", "MAX GPUS", "MAX RUNNING", "GPU-H/MONTH"],
          ((t["name"], t["my_role"] or "(site admin)", t["member_count"], _limit(t["weight"]), _limit(t["max_gpus"]),
            _limit(t["max_running_tasks"]), _limit(t["gpu_hours_month"])) for t in out))


@handle_errors
def show(name: str, output: Output = output_option()) -> None:
    """A team's settings and members."""
    t = sdk().teams.get(name)
    if emit(t, output):
        return
    console.print(f"team {t['name']}: weight {t['weight']:g}, max GPUs {_limit(t['max_gpus'])}, max running "
                  f"{_limit(t['max_running_tasks'])}, GPU-hours/month {_limit(t['gpu_hours_month'])}", markup=False)
    table(["MEMBER", "ROLE", "DEFAULT TEAM"], ((m["name"], m["role"], "yes" if m["is_default"] else "")
                                              for m in t["members"]))


@handle_errors
def create(name: str, weight: float | None = weight_opt(), max_gpus: int | None = gpus_opt(),
           max_running: int | None = running_opt(), gpu_hours_month: float | None = hours_opt(),
           quota_bytes: int | None = quota_opt(), output: Output = output_option()) -> None:
    """Create a team (site administrators)."""
    out = sdk().teams.create(name, **_settings(weight, max_gpus, max_running, gpu_hours_month, quota_bytes, None))
    if not emit(out, output):
        console.print(f"created team {out['name']}; add members with `argus team add {out['name']} USER`",
                      markup=False)


@handle_errors
def set_(name: str, weight: float | None = weight_opt(), max_gpus: int | None = gpus_opt(),
         max_running: int | None = running_opt(), gpu_hours_month: float | None = hours_opt(),
         quota_bytes: int | None = quota_opt(),
         clear: list[str] | None = typer.Option(None, "--clear", help="remove a limit: max-gpus, max-running-tasks, "
                                                "gpu-hours-month, quota-bytes (repeat)"),
         output: Output = output_option()) -> None:
    """Change a team's weight, quotas or budget (site administrators)."""
    changes = _settings(weight, max_gpus, max_running, gpu_hours_month, quota_bytes, clear)
    if not changes:
        raise typer.BadParameter("name a setting to change, e.g. --weight 2 or --clear max-gpus")
    out = sdk().teams.update(name, **changes)
    if not emit(out, output):
        console.print(f"team {out['name']} changed", markup=False)


@handle_errors
def delete(name: str, yes: bool = typer.Option(False, "--yes", help="do not ask")) -> None:
    """Delete a team (site administrators); its members stay users."""
    if not yes:
        typer.confirm(f"delete team {name}?", abort=True)
    sdk().teams.delete(name)
    console.print(f"deleted team {name}", markup=False)


@handle_errors
def add(name: str, user: str, admin: bool = typer.Option(False, "--admin", help="as a team admin"),
        output: Output = output_option()) -> None:
    """Add USER to the team (the team's admins and site administrators)."""
    out = sdk().teams.add_member(name, user, "admin" if admin else "member")
    if not emit(out, output):
        console.print(f"added {out['name']} to {name} as {out['role']}", markup=False)


@handle_errors
def remove(name: str, user: str) -> None:
    """Remove USER from the team; your own name leaves it."""
    sdk().teams.remove_member(name, user)
    console.print(f"removed {user} from {name}", markup=False)


@handle_errors
def role(name: str, user: str, new_role: str = typer.Argument(..., metavar="ROLE", help="member or admin"),
         output: Output = output_option()) -> None:
    """Make USER a member or an admin of the team."""
    out = sdk().teams.set_role(name, user, new_role)
    if not emit(out, output):
        console.print(f"{out['name']} is now {out['role']} of {name}", markup=False)


@handle_errors
def default(name: str) -> None:
    """Charge your tasks to this team when a spec names none."""
    sdk().teams.make_default(name)
    console.print(f"{name} is your default team", markup=False)


def _seg(name: str) -> str:
    """One URL path segment (a name such as ``..`` must not reach another endpoint)."""
    return quote(name, safe="").replace(".", "%2E")


class_app = typer.Typer(help="Priority classes: admin-defined classes (e.g. urgent) that order work across users "
                        "and teams. A spec names one with `priority_class: NAME`.", no_args_is_help=True)


def _class_fields(value: int | None, description: str | None, users: str | None, teams: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {"value": value, "description": description}
    for key, names in (("users", users), ("teams", teams)):
        if names is not None:
            out[key] = [n.strip() for n in names.split(",") if n.strip()]
    return {k: v for k, v in out.items() if v is not None}


def users_opt() -> Any:
    return typer.Option(None, "--users", help="who may use it: user names, comma-separated (\"\": nobody by name)")


def teams_opt() -> Any:
    return typer.Option(None, "--teams", help="members of these teams may use it, comma-separated")


@handle_errors
def class_list(output: Output = output_option()) -> None:
    """Every priority class, highest first, and whether you may use it."""
    out = client().get("/api/v2/priority-classes")
    if emit(out, output):
        return
    if not out:
        console.print("no priority classes; an administrator defines them (argus priority-class create)",
                      markup=False)
        return
    table(["CLASS", "VALUE", "YOU MAY USE", "USERS", "TEAMS", "DESCRIPTION"],
          ((c["name"], c["value"], "yes" if c["may_use"] else "no", ",".join(c["users"]) or "—",
            ",".join(c["teams"]) or "—", c["description"] or "") for c in out), wrap=("DESCRIPTION",))


@handle_errors
def class_create(name: str, value: int = typer.Option(..., "--value", help="1–1000; higher goes first"),
                 description: str | None = typer.Option(None, "--description"), users: str | None = users_opt(),
                 teams: str | None = teams_opt(), output: Output = output_option()) -> None:
    """Define a priority class (administrators). Without --users and --teams everyone may use it."""
    out = client().post("/api/v2/priority-classes", json={"name": name, **_class_fields(value, description, users,
                                                                                         teams)})
    if not emit(out, output):
        console.print(f"created priority class {out['name']} (value {out['value']})", markup=False)


@handle_errors
def class_set(name: str, value: int | None = typer.Option(None, "--value"),
              description: str | None = typer.Option(None, "--description"), users: str | None = users_opt(),
              teams: str | None = teams_opt(), output: Output = output_option()) -> None:
    """Change a priority class (administrators); queued tasks keep the value they were queued with."""
    out = client().request("PATCH", f"/api/v2/priority-classes/{_seg(name)}",
                           json=_class_fields(value, description, users, teams))
    if not emit(out, output):
        console.print(f"priority class {out['name']} changed", markup=False)


@handle_errors
def class_delete(name: str) -> None:
    """Delete a priority class (administrators)."""
    client().delete(f"/api/v2/priority-classes/{_seg(name)}")
    console.print(f"deleted priority class {name}", markup=False)


def register(app: typer.Typer) -> None:
    class_app.command("list")(class_list)
    class_app.command("create")(class_create)
    class_app.command("set")(class_set)
    class_app.command("delete")(class_delete)
    app.add_typer(class_app, name="priority-class")
    team_app.command("list")(team_list)
    team_app.command("show")(show)
    team_app.command("create")(create)
    team_app.command("set")(set_)
    team_app.command("delete")(delete)
    team_app.command("add")(add)
    team_app.command("remove")(remove)
    team_app.command("role")(role)
    team_app.command("default")(default)
    app.add_typer(team_app, name="team")
