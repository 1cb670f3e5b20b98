"""`argus pipeline submit FILE | ls | show ID | cancel ID` (issue 38), on the SDK.

``argus submit`` hands a ``kind: pipeline`` file here, so one command submits any spec.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape

from argus.cli.common import Output, console, emit, handle_errors, output_option, sdk, table, when

pipeline_app = typer.Typer(help="Pipelines: named steps (tasks, exports, evaluations, registrations) run in order, "
                           "each naming what earlier steps left ({{ steps.X.checkpoint }}), with gates and retries.",
                           no_args_is_help=True)


def _artifacts(a: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in a.items() if k != "scores")


def _steps(p: dict[str, Any]) -> None:
    table(["STEP", "DOES", "STATUS", "TASK", "TRIES", "NOTE"],
          ((s["name"], s["action"], s["status"], s["task_id"] or "—", s["tries"],
            s["message"] or s["gate"] or _artifacts(s["artifacts"])) for s in p["steps"]), wrap=("NOTE",))


def submit_text(text: str, *, dry_run: bool, output: Output) -> None:
    out = sdk().submit_pipeline(text if "\n" in text else text + "\n", dry_run=dry_run)
    if emit(out, output):
        return
    if out is None:
        console.print("[green]ok[/green]: the pipeline and its steps would be accepted (dry run: nothing stored)")
        return
    console.print(f"[green]accepted[/green] {escape(out['pipeline_id'])}: {len(out['steps'])} steps; the first start "
                  "on the scheduler's next look")
    _steps(out)


@handle_errors
def submit(
    file: Path = typer.Argument(..., help="pipeline spec (YAML or JSON); '-' reads standard input"),
    dry_run: bool = typer.Option(False, "--dry-run", help="check the pipeline and each step; store nothing"),
    output: Output = output_option(),
) -> None:
    """Submit a pipeline: every step's spec is checked (placeholders for what earlier steps leave) first."""
    submit_text(sys.stdin.read() if str(file) == "-" else file.read_text(), dry_run=dry_run, output=output)


@handle_errors
def ls(output: Output = output_option()) -> None:
    """Your pipelines, newest first."""
    out = sdk().pipelines()
    if emit(out, output):
        return
    if not out:
        console.print("no pipelines yet (argus submit FILE with kind: pipeline; see examples/pipeline-cpu.yaml)",
                      style="dim")
        return
    table(["PIPELINE", "NAME", "STATUS", "STEPS", "CREATED"],
          ((p["pipeline_id"], p["name"], p["status"], ", ".join(f"{s['name']}:{s['status']}" for s in p["steps"]),
            when(p["created_at"])) for p in out), wrap=("STEPS",))


@handle_errors
def show(pipeline_id: str, output: Output = output_option()) -> None:
    """One pipeline: each step's status, task, tries and what it left or why it stopped."""
    p = sdk().pipeline(pipeline_id)
    if emit(p, output):
        return
    console.print(f"{escape(p['pipeline_id'])} {escape(p['name'])}: {p['status']}"
                  + (f" — {escape(p['message'])}" if p.get("message") else ""))
    _steps(p)


@handle_errors
def cancel(pipeline_id: str, output: Output = output_option()) -> None:
    """Cancel a pipeline: its running step is stopped, the rest canceled."""
    p = sdk().cancel_pipeline(pipeline_id)
    if emit(p, output):
        return
    console.print(f"[yellow]canceled[/yellow] {escape(p['pipeline_id'])}")


def register(app: typer.Typer) -> None:
    pipeline_app.command("submit")(submit)
    pipeline_app.command("ls")(ls)
    pipeline_app.command("show")(show)
    pipeline_app.command("cancel")(cancel)
    app.add_typer(pipeline_app, name="pipeline")
