"""Task commands: submit, tasks, task, spec, events, cancel."""

from __future__ import annotations

import sys
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

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
    kind = _kind(text)
    if kind in ("sweep", "pipeline"):  # issue 38: their own endpoints
        from argus.cli import pipelines, sweeps

        (sweeps if kind == "sweep" else pipelines).submit_text(text, dry_run=dry_run, output=output)
        return
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


def _kind(text: str) -> str | None:
    """A document's ``kind``: a sweep or a pipeline (issue 38) goes to its own endpoint; anything unreadable is the
    server's to explain."""
    import yaml

    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError:
        return None
    return doc.get("kind") if isinstance(doc, dict) and isinstance(doc.get("kind"), str) else None


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
    queue = any(t.get("queue_position") is not None for t in out["items"])  # the column only when a row has one
    table(
        ["TASK", "USER", "STATUS", "GPUS", "CREATED", *(["QUEUE"] if queue else []), "REASON"],
        (
            (t["task_id"], t["user"], t["status"], f"{t['nnodes']}×{t['n_gpus_per_node']}", when(t["created_at"]),
             *([_queue_cell(t)] if queue else []),
             t["pending_reason"] or t["status_message"] or t["termination_reason"] or "")
            for t in out["items"]
        ),
        wrap=("REASON",),
    )
    shown = len(out["items"])
    if out["total"] > shown:
        console.print(f"[dim]{shown} of {out['total']} (use --offset/--limit)[/dim]")


def workers_line(t: dict) -> str:
    """``2×4 GPUs``, or for CPU training ``1×2 CPU training workers (device cpu)``: never ``1×0 GPUs``."""
    if t.get("device") == "cpu":
        return f"{t['nnodes']}×{t.get('workers_per_node', 0)} CPU training workers (device cpu)"
    return f"{t['nnodes']}×{t['n_gpus_per_node']} GPUs"


@handle_errors
def task(task_id: str, output: Output = output_option(), as_json: bool = json_flag()) -> None:
    """Show one task: status, reason, why it waits, attempts."""
    t = client().get(f"/api/v2/tasks/{task_id}")
    if emit(t, output, as_json):
        return
    console.print(f"[bold]{escape(t['task_id'])}[/bold]  {escape(t['status'])}  ({escape(t['kind'])} "
                  f"{escape(t['workload'])}, {workers_line(t)}, priority {t['priority']}, "
                  f"user {escape(t['user'])})")
    for label, key in (("name", "name"), ("reason", "termination_reason"), ("message", "status_message"),
                       ("waiting", "pending_reason"), ("created", "created_at"), ("started", "started_at"),
                       ("finished", "finished_at")):
        if t.get(key):
            console.print(f"  {label:9} {t[key]}", markup=False)
    if t.get("queue"):
        console.print(f"  {'queued':9} {queue_line(t['queue'])}", markup=False)
    if t.get("progress"):
        console.print(f"  {'progress':9} {progress_line(t['progress'])}", markup=False)
    if t.get("failure_kind"):
        console.print(f"  {'cause':9} {t['failure_kind']}", markup=False)
    if t.get("failure_hint"):
        console.print(f"  {'hint':9} {t['failure_hint']}", markup=False)
    if t.get("status") in ("RUNNING", "SUCCEEDED", "FAILED", "CANCELED") and t.get("attempt"):
        use = client().get(f"/api/v2/tasks/{task_id}/resources")
        if use.get("summary", {}).get("samples"):
            console.print(f"  {'resources':9} {resources_line(use['summary'])}", markup=False)
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


# ---------------------------------------------------------------- queue position and ETA (issue 24)


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th, 11th, 12th, 13th, 21st …"""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _parse(value: str | None) -> datetime | None:
    if not value:
        return None
    t = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return t if t.tzinfo else t.replace(tzinfo=UTC)


def _in(seconds: float) -> str:
    """``in 1 h 05 min``, ``in 12 min``, ``in 2 d 3 h``, ``now``."""
    m = int(seconds // 60)
    if m < 1:
        return "now"
    if m < 60:
        return f"in {m} min"
    if m < 48 * 60:
        return f"in {m // 60} h {m % 60:02d} min"
    return f"in {m // 1440} d {m % 1440 // 60} h"


def clock(at: datetime, now: datetime | None = None) -> str:
    """``14:20 UTC (in 1 h 05 min)``; the date too when it is not today (UTC)."""
    now = now or datetime.now(UTC)
    at = at.astimezone(UTC)
    day = "" if at.date() == now.date() else f"{at:%Y-%m-%d} "
    return f"{day}{at:%H:%M} UTC ({_in((at - now).total_seconds())})"


def queue_line(q: dict[str, Any], now: datetime | None = None) -> str:
    """``3rd of 7 competing for GPUs; estimated start 14:20 UTC (in 1 h 05 min)`` or ``… unknown (why)``."""
    head = f"{ordinal(q['position'])} of {q['competing']} competing for {q['resource']}s"
    eta = _parse(q.get("eta"))
    reason = str(q.get("eta_reason") or "")
    if eta is None:
        return f"{head}; estimated start unknown ({reason.removeprefix('unknown: ')})"
    now = now or datetime.now(UTC)
    if eta <= now:
        return f"{head}; estimated start now ({reason})"
    return f"{head}; estimated start {clock(eta, now)}"


def progress_line(p: dict[str, Any], now: datetime | None = None) -> str:
    """``step 120/500, 38 steps/h, 12.4 GPU-hours, estimated end 16:40 UTC (in 2 h 10 min)``."""
    step = "no step yet" if p.get("step") is None else f"step {p['step']}/{p.get('total_steps') or '?'}"
    rate, hours = p.get("steps_per_hour"), p["gpu_hours"]
    parts = [step, "step rate unknown" if rate is None else f"{rate:.0f} steps/h" if rate >= 10 else f"{rate:.2g} steps/h",
             f"{hours:.1f} GPU-hours" if hours >= 1 else f"{hours:.2f} GPU-hours"]
    end = _parse(p.get("eta_end"))
    if end is not None:
        parts.append(f"estimated end {clock(end, now)}")
    else:
        why = ("no trainer.total_training_steps in its command" if p.get("total_steps") is None else
               "no step logged yet" if p.get("step") is None else "no step rate yet")
        parts.append(f"estimated end unknown ({why})")
    return ", ".join(parts)


def _queue_cell(t: dict[str, Any]) -> str:
    """The list's QUEUE column: ``GPU #3, ETA 14:20 UTC`` for a queued task (the date when not today)."""
    if t.get("queue_position") is None:
        return ""
    head = f"{'GPU' if t['n_gpus_per_node'] > 0 else 'CPU'} #{t['queue_position']}"
    eta = _parse(t.get("eta"))
    if eta is None:
        return f"{head}, ETA unknown"
    now = datetime.now(UTC)
    if eta <= now:
        return f"{head}, ETA now"
    at = eta.astimezone(UTC)
    return f"{head}, ETA {'' if at.date() == now.date() else f'{at:%Y-%m-%d} '}{at:%H:%M} UTC"


def register(app: typer.Typer) -> None:
    for fn in (submit, tasks, task, spec, events, cancel):
        app.command(fn.__name__)(fn)


def resources_line(summary: dict[str, Any]) -> str:
    """``CPU 3.2 avg / 7.9 max, memory 41.2 GiB peak; GPU util 87 % avg, memory 61.0 GiB peak …; idle GPUs …``."""
    parts = []
    if summary.get("cpu_mean") is not None:
        parts.append(f"CPU {summary['cpu_mean']:g} avg / {summary.get('cpu_max') or 0:g} max")
    if summary.get("rss_max") is not None:
        parts.append(f"memory {summary['rss_max'] / 2**30:.1f} GiB peak")
    utils = [u for u in summary.get("gpu_util_mean") or [] if u is not None]
    if utils:
        mem = [m for m in summary.get("gpu_mem_max_mib") or [] if m is not None]
        parts.append(f"{len(utils)} GPU{'s' if len(utils) > 1 else ''}: util {sum(utils) / len(utils):.0f} % avg"
                     + (f", memory {max(mem) / 1024:.1f} GiB peak" if mem else ""))
    if summary.get("idle_since"):
        parts.append(f"idle GPUs since {datetime.fromtimestamp(summary['idle_since'], UTC):%H:%M} UTC")
    return "; ".join(parts) + f" ({summary.get('samples')} samples)"
