"""Operating the platform (issue 14): `argus admin audit`, `argus admin prune`, `argus checkpoints rm`."""

from __future__ import annotations

import re
from typing import Any

import typer

from argus.cli.admin import local_app
from argus.cli.common import Output, client, console, emit, handle_errors, output_option, table, when

checkpoints_app = typer.Typer(help="A task's checkpoints ($HOME/jobs/<task>/checkpoints).", no_args_is_help=True)


@handle_errors
def audit(
    action: str | None = typer.Option(None, "--action", help="only this action, e.g. user.disabled"),
    actor: str | None = typer.Option(None, "--actor", help="only events by this user"),
    since: str | None = typer.Option(None, "--since", help="ISO 8601 time, e.g. 2026-11-01 (UTC)"),
    limit: int = typer.Option(50, "--limit", min=1, max=500, help="events per page"),
    cursor: str | None = typer.Option(None, "--cursor", help="next_cursor of the previous page"),
    output: Output = output_option(),
) -> None:
    """The audit log (admin): user and token changes, SSH keys, sign-in lockouts, cancels by others."""
    params: dict[str, Any] = {"limit": limit}
    for key, value in (("action", action), ("actor", actor), ("since", since), ("cursor", cursor)):
        if value is not None:
            params[key] = value
    page = client().get("/api/v2/audit", params=params)
    if emit(page, output):
        return
    table(["TIME", "ACTOR", "ACTION", "TARGET", "FROM", "DETAIL"],
          ((when(e["at"]), e["actor"], e["action"], e["target"] or "", e["source_ip"] or "",
            " ".join(f"{k}={v}" for k, v in (e["detail"] or {}).items())) for e in page["events"]),
          wrap=("DETAIL",))
    if page["next_cursor"]:
        console.print(f"more: --cursor {page['next_cursor']}", highlight=False)


_AGE = re.compile(r"([0-9]+(?:\.[0-9]+)?)\s*([dhw]?)")


def parse_age_days(text: str) -> float:
    """``90d``, ``12h``, ``2w`` or a plain number of days → days."""
    m = _AGE.fullmatch(text.strip().lower())
    if m is None or float(m.group(1)) <= 0:
        raise typer.BadParameter(f"{text!r}: give an age such as 90d, 36h or 2w")
    return float(m.group(1)) * {"": 1.0, "d": 1.0, "h": 1 / 24, "w": 7.0}[m.group(2)]


@handle_errors
def prune(
    older_than: str | None = typer.Option(None, "--older-than", help="e.g. 90d, 36h, 2w [default: the server's "
                                          "prune_older_than_days, 90]"),
    before: str | None = typer.Option(None, "--before", help="an absolute cutoff (ISO 8601), e.g. a dry run's"),
    dry_run: bool = typer.Option(False, "--dry-run", help="list what would be removed; remove nothing"),
    output: Output = output_option(),
) -> None:
    """Remove timeline events and attempt logs of tasks that ended before the cutoff (admin).

    Task rows, checkpoints and other files stay. A dry run prints its cutoff: `--before <it>` then removes
    exactly what it listed."""
    if older_than is not None and before is not None:
        raise typer.BadParameter("give --older-than or --before, not both")
    body: dict[str, Any] = {"dry_run": dry_run}
    if older_than is not None:
        body["older_than_days"] = parse_age_days(older_than)
    if before is not None:
        body["before"] = before
    out = client().post("/api/v2/admin/prune", json=body)
    if emit(out, output):
        return
    table(["TASK", "USER", "ENDED", "EVENTS", "LOG FILES"],
          ((t["task_id"], t["user"], when(t["finished_at"]), t["events"],
            " ".join(f["name"] for f in t["logs"])) for t in out["tasks"]), wrap=("LOG FILES",))
    verb = "would remove" if out["dry_run"] else "removed"
    console.print(f"{verb}: {out['events']} events and {out['log_files']} log files ({out['log_bytes']} bytes) "
                  f"of {len(out['tasks'])} tasks that ended before {out['before']}", highlight=False)
    if out["dry_run"]:
        console.print(f"to remove exactly this: argus admin prune --before {out['before']}", highlight=False)


@handle_errors
def checkpoints_rm(task_id: str, yes: bool = typer.Option(False, "--yes", "-y", help="do not ask")) -> None:
    """Delete an ended task's checkpoints ($HOME/jobs/<id>/checkpoints); only its owner can."""
    if not yes:
        typer.confirm(f"delete every checkpoint of {task_id}?", abort=True)
    out = client().delete(f"/api/v2/tasks/{task_id}/checkpoints")
    console.print(f"deleted {out['removed']}", highlight=False, markup=False)


def register(app: typer.Typer) -> None:
    local_app.command("audit")(audit)
    local_app.command("prune")(prune)
    checkpoints_app.command("rm")(checkpoints_rm)
    app.add_typer(checkpoints_app, name="checkpoints")
