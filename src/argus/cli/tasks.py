"""Task commands: submit, tasks, task, spec, events, cancel."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from argus.cli.common import client, console, dump, handle_errors, table


@handle_errors
def submit(
    file: Path = typer.Argument(..., help="task spec (YAML or JSON); '-' reads standard input"),
) -> None:
    """Submit a task spec; prints the task id and any warnings, or every problem found."""
    text = sys.stdin.read() if str(file) == "-" else file.read_text()
    ctype = "application/json" if file.suffix == ".json" else "application/yaml"
    out = client().post("/api/v2/tasks", content=text.encode(), headers={"Content-Type": ctype})
    console.print(f"[green]accepted[/green] {out['task_id']} ({out['status']})")
    for w in out.get("warnings", []):
        console.print(f"  [yellow]warning[/yellow]: {w}")
    for key, value in (out.get("info") or {}).items():
        console.print(f"  {key}: {value}")


@handle_errors
def tasks(
    status: str | None = typer.Option(None, "--status", "-s", help="e.g. QUEUED,RUNNING"),
    workload: str | None = typer.Option(None, "--workload", "-w"),
    user: str | None = typer.Option(None, "--user", "-u", help="admin: one user's tasks"),
    limit: int = typer.Option(50, "--limit", "-n"),
    offset: int = typer.Option(0, "--offset"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """List your tasks, newest first (an admin sees everyone's)."""
    params: dict[str, object] = {"limit": limit, "offset": offset}
    if status:
        params["status"] = status
    if workload:
        params["workload"] = workload
    if user:
        params["user"] = user
    out = client().get("/api/v2/tasks", params=params)
    if as_json:
        dump(out)
        return
    table(
        ["TASK", "USER", "STATUS", "GPUS", "CREATED", "REASON / WHY WAITING"],
        (
            (t["task_id"], t["user"], t["status"], f"{t['nnodes']}×{t['n_gpus_per_node']}",
             t["created_at"][:19].replace("T", " "),
             t["pending_reason"] or t["status_message"] or t["termination_reason"] or "")
            for t in out["items"]
        ),
    )
    shown = len(out["items"])
    if out["total"] > shown:
        console.print(f"[dim]{shown} of {out['total']} (use --offset/--limit)[/dim]")


@handle_errors
def task(task_id: str, as_json: bool = typer.Option(False, "--json")) -> None:
    """Show one task: status, reason, why it waits, attempts."""
    t = client().get(f"/api/v2/tasks/{task_id}")
    if as_json:
        dump(t)
        return
    console.print(f"[bold]{t['task_id']}[/bold]  {t['status']}  ({t['kind']} {t['workload']}, "
                  f"{t['nnodes']}×{t['n_gpus_per_node']} GPUs, priority {t['priority']}, user {t['user']})")
    for label, key in (("name", "name"), ("reason", "termination_reason"), ("message", "status_message"),
                       ("waiting", "pending_reason"), ("created", "created_at"), ("started", "started_at"),
                       ("finished", "finished_at")):
        if t.get(key):
            console.print(f"  {label:9} {t[key]}")
    for w in t.get("warnings") or []:
        console.print(f"  [yellow]warning[/yellow]  {w}")
    if t.get("attempts"):
        table(["ATTEMPT", "SUBMISSION", "STATUS", "NODE", "EXIT", "STARTED", "FINISHED"],
              ((a["attempt"], a["submission_id"], a["status"], a.get("hostname") or a.get("node_id"),
                a.get("exit_code"), a.get("started_at"), a.get("finished_at")) for a in t["attempts"]))


@handle_errors
def spec(
    task_id: str,
    view: str = typer.Option("all", "--view", help="raw | resolved | command | all"),
) -> None:
    """Show a task's spec: as submitted, resolved, and the command before/after $HOME expansion."""
    s = client().get(f"/api/v2/tasks/{task_id}/spec")
    if view == "raw":
        sys.stdout.write(s["raw"])
        return
    if view == "resolved":
        dump(s["resolved"])
        return
    if view in ("all", "command"):
        if view == "all":
            console.rule("raw spec")
            console.print(s["raw"], markup=False)
            console.rule("resolved")
            dump(s["resolved"])
        console.rule("command (as written)")
        console.print(s["command_raw"], markup=False)
        console.rule("command (expanded)")
        console.print(s["command_expanded"], markup=False)


@handle_errors
def events(task_id: str) -> None:
    """Show a task's timeline: every status change, when, why and by whom."""
    rows = client().get(f"/api/v2/tasks/{task_id}/events")
    table(["AT", "FROM", "TO", "REASON", "BY", "MESSAGE"],
          ((e["at"][:23].replace("T", " "), e["from_status"] or "", e["to_status"], e["reason"] or "",
            e["actor"], e["message"] or "") for e in rows))


@handle_errors
def cancel(task_id: str) -> None:
    """Cancel a task in any state (idempotent)."""
    out = client().post(f"/api/v2/tasks/{task_id}/cancel")
    console.print(f"{out['task_id']}: {out['status']}")


def register(app: typer.Typer) -> None:
    for fn in (submit, tasks, task, spec, events, cancel):
        app.command(fn.__name__)(fn)
