"""Operating the platform (issue 14): `argus admin audit`, `argus admin prune`, `argus checkpoints rm`."""

from __future__ import annotations

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


def register(app: typer.Typer) -> None:
    local_app.command("audit")(audit)
    app.add_typer(checkpoints_app, name="checkpoints")
