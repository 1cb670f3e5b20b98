"""Task commands: submit, tasks, task, spec, events, cancel."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import typer
from rich.markup import escape

from argus.cli.common import (
    Output,
    client,
    console,
    dump,
    emit,
    err_console,
    handle_errors,
    json_flag,
    output_option,
    table,
    verbatim,
    when,
)


@handle_errors
def submit(
    file: Path = typer.Argument(..., help="task spec (YAML or JSON); '-' reads standard input"),
    dry_run: bool = typer.Option(False, "--dry-run", help="check the spec as a submit would (verl validation "
                                 "included) and print the verdict; nothing is queued. Exit 0: it would be "
                                 "accepted; 1: every problem, with its line"),
    output: Output = output_option(),
) -> None:
    """Submit a task spec; prints the task id and any warnings, or every problem found.

    Sends a fresh Idempotency-Key and retries for up to a minute while the server is unreachable or
    answers 502/503/504: a retried submit never queues the task twice."""
    text = sys.stdin.read() if str(file) == "-" else file.read_text()
    ctype = "application/json" if file.suffix == ".json" else "application/yaml"
    if dry_run:
        out = client().post("/api/v2/tasks", content=text.encode(), headers={"Content-Type": ctype},
                            params={"dry_run": "true"})
    else:  # one fresh key per invocation: retries after a lost reply can never queue the task twice
        def retrying(why: str, wait: float) -> None:
            err_console.print(f"{escape(why)}; retrying in {wait:.1f} s (same Idempotency-Key: never two tasks)")

        out = client().post_retrying("/api/v2/tasks", key=str(uuid.uuid4()), content=text.encode(),
                                     headers={"Content-Type": ctype}, on_retry=retrying)
    if emit(out, output):
        return
    if dry_run:
        console.print("[green]ok[/green]: the spec would be accepted (dry run: nothing was queued)")
        if out.get("command_expanded"):
            console.print("  command:")
            verbatim(out["command_expanded"])
    else:
        console.print(f"[green]accepted[/green] {escape(out['task_id'])} ({escape(out['status'])})")
    for w in out.get("warnings", []):
        console.print(f"  [yellow]warning[/yellow]: {escape(str(w))}")
    for key, value in (out.get("info") or {}).items():
        console.print(f"  {key}: {value}", markup=False)


@handle_errors
def tasks(
    status: str | None = typer.Option(None, "--status", "-s", help="e.g. QUEUED,RUNNING"),
    workload: str | None = typer.Option(None, "--workload", "-w"),
    user: str | None = typer.Option(None, "--user", "-u", help="admin: one user's tasks"),
    limit: int = typer.Option(50, "--limit", "-n"),
    offset: int = typer.Option(0, "--offset"),
    output: Output = output_option(),
    as_json: bool = json_flag(),
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
    if emit(out, output, as_json):
        return
    table(
        ["TASK", "USER", "STATUS", "GPUS", "CREATED", "REASON"],
        (
            (t["task_id"], t["user"], t["status"], f"{t['nnodes']}×{t['n_gpus_per_node']}", when(t["created_at"]),
             t["pending_reason"] or t["status_message"] or t["termination_reason"] or "")
            for t in out["items"]
        ),
        wrap=("REASON",),
    )
    shown = len(out["items"])
    if out["total"] > shown:
        console.print(f"[dim]{shown} of {out['total']} (use --offset/--limit)[/dim]")


@handle_errors
def task(task_id: str, output: Output = output_option(), as_json: bool = json_flag()) -> None:
    """Show one task: status, reason, why it waits, attempts."""
    t = client().get(f"/api/v2/tasks/{task_id}")
    if emit(t, output, as_json):
        return
    console.print(f"[bold]{escape(t['task_id'])}[/bold]  {escape(t['status'])}  ({escape(t['kind'])} "
                  f"{escape(t['workload'])}, {t['nnodes']}×{t['n_gpus_per_node']} GPUs, priority {t['priority']}, "
                  f"user {escape(t['user'])})")
    for label, key in (("name", "name"), ("reason", "termination_reason"), ("message", "status_message"),
                       ("waiting", "pending_reason"), ("created", "created_at"), ("started", "started_at"),
                       ("finished", "finished_at")):
        if t.get(key):
            console.print(f"  {label:9} {t[key]}", markup=False)
    for w in t.get("warnings") or []:
        console.print(f"  [yellow]warning[/yellow]  {escape(str(w))}")
    if t.get("attempts"):
        console.print()
        table(["ATTEMPT", "SUBMISSION", "STATUS", "NODE", "EXIT", "STARTED", "FINISHED"],
              ((a["attempt"], a["submission_id"], a["status"], a.get("hostname") or a.get("node_id"),
                a.get("exit_code"), when(a.get("started_at")), when(a.get("finished_at"))) for a in t["attempts"]))


@handle_errors
def spec(
    task_id: str,
    view: str = typer.Option("all", "--view", help="raw | resolved | command | all"),
    output: Output = output_option(),
) -> None:
    """Show a task's spec: as submitted, resolved, and the command before/after $HOME expansion.

    Nothing is wrapped: a long path or command stays one line (your terminal folds it for display).
    """
    s = client().get(f"/api/v2/tasks/{task_id}/spec")
    if emit(s, output):
        return
    if view not in ("raw", "resolved", "command", "all"):
        raise typer.BadParameter(f"{view!r}: use raw, resolved, command or all", param_hint="--view")
    if view == "raw":
        sys.stdout.write(s["raw"])
        return
    if view == "resolved":
        dump(s["resolved"])
        return
    if view == "all":
        console.rule("raw spec")
        verbatim(s["raw"])
        console.rule("resolved")
        dump(s["resolved"])
    console.rule("command (as written)")
    verbatim(s["command_raw"])
    console.rule("command (expanded)")
    verbatim(s["command_expanded"])


@handle_errors
def events(task_id: str, output: Output = output_option()) -> None:
    """Show a task's timeline: every status change, when, why and by whom."""
    rows = client().get(f"/api/v2/tasks/{task_id}/events")
    if emit(rows, output):
        return
    table(["AT", "FROM", "TO", "REASON", "BY", "MESSAGE"],
          ((e["at"][:23].replace("T", " "), e["from_status"] or "", e["to_status"], e["reason"] or "",
            e["actor"], e["message"] or "") for e in rows), wrap=("MESSAGE",))


@handle_errors
def cancel(task_id: str, output: Output = output_option()) -> None:
    """Cancel a task in any state (idempotent)."""
    out = client().post(f"/api/v2/tasks/{task_id}/cancel")
    if emit(out, output):
        return
    console.print(f"{out['task_id']}: {out['status']}", markup=False)


def register(app: typer.Typer) -> None:
    for fn in (submit, tasks, task, spec, events, cancel):
        app.command(fn.__name__)(fn)
