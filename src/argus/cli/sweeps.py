"""`argus sweep submit FILE | ls | show ID | cancel ID` (issue 38), on the SDK.

``argus submit`` hands a ``kind: sweep`` file to ``argus sweep submit``, so one command submits any spec.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.markup import escape

from argus.cli.common import Output, console, emit, handle_errors, output_option, sdk, table, when

sweep_app = typer.Typer(help="Sweeps: one base spec, a search space over its settings, trials run as tasks "
                        "(max_concurrent at once), stopped early at rungs or by a budget.", no_args_is_help=True)


def _params(params: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items())


def submit_text(text: str, *, dry_run: bool, output: Output) -> None:
    """Submit a sweep's text (YAML, or JSON: YAML reads it too) and print its trials."""
    out = sdk().submit_sweep(text if "\n" in text else text + "\n", dry_run=dry_run)  # a text, never a path
    if emit(out, output):
        return
    if dry_run:
        console.print(f"[green]ok[/green]: the sweep and its {len(out['trials'])} trials would be accepted "
                      "(dry run: nothing was queued)")
    else:
        console.print(f"[green]accepted[/green] {escape(out['sweep_id'])}: {len(out['trials'])} trials queued")
    table(["TRIAL", "TASK", "PARAMETERS"],
          ((t["trial"], t.get("task_id") or "—", _params(t["params"])) for t in out["trials"]), wrap=("PARAMETERS",))


@handle_errors
def submit(
    file: Path = typer.Argument(..., help="sweep spec (YAML or JSON); '-' reads standard input"),
    dry_run: bool = typer.Option(False, "--dry-run", help="check the sweep and every trial; queue nothing"),
    output: Output = output_option(),
) -> None:
    """Submit a sweep: every trial's spec is checked (verl validation included) before any is queued."""
    import sys

    text = sys.stdin.read() if str(file) == "-" else file.read_text()
    submit_text(text, dry_run=dry_run, output=output)


def _summary(s: dict[str, Any]) -> tuple[Any, ...]:
    states: dict[str, int] = {}
    for t in s["trials"]:
        states[t["status"]] = states.get(t["status"], 0) + 1
    return (s["sweep_id"], s["name"], s["status"], ", ".join(f"{n} {k.lower()}" for k, n in states.items()),
            f"{s['hours_used']:.3g}" + (f" / {s['budget_gpu_hours']:g}" if s["budget_gpu_hours"] else ""),
            s["best_task"] or "—", when(s["created_at"]))


@handle_errors
def ls(output: Output = output_option()) -> None:
    """Your sweeps, newest first."""
    out = sdk().sweeps()
    if emit(out, output):
        return
    if not out:
        console.print("no sweeps yet (argus sweep submit FILE; see examples/sweep-cpu.yaml)", style="dim")
        return
    table(["SWEEP", "NAME", "STATUS", "TRIALS", "HOURS", "BEST", "CREATED"], (_summary(s) for s in out),
          wrap=("NAME", "TRIALS"))


@handle_errors
def show(sweep_id: str, output: Output = output_option()) -> None:
    """One sweep: its trials, their parameters, status and the sweep's metric at each validated step."""
    s = sdk().sweep(sweep_id)
    if emit(s, output):
        return
    console.print(f"{escape(s['sweep_id'])} {escape(s['name'])}: {s['status']}"
                  + (f" — {escape(s['message'])}" if s.get("message") else ""))
    if s["metric"]:
        console.print(f"metric: {escape(s['metric'])} ({s['mode']}); best trial: {s['best_task'] or '—'}")
    table(["TRIAL", "TASK", "STATUS", "PARAMETERS", "METRIC (step=value)"],
          ((t["trial"], t["task_id"], t["status"] + (" (stopped)" if t["termination_reason"] == "SWEEP_STOPPED"
                                                     else ""), _params(t["params"]),
            " ".join(f"{step}={v:.4g}" if isinstance(v, float) else f"{step}={v}" for step, v in t["metric"]))
           for t in s["trials"]), wrap=("PARAMETERS", "METRIC (step=value)"))


@handle_errors
def cancel(sweep_id: str, output: Output = output_option()) -> None:
    """Cancel a sweep: its queued trials end now, its running ones are stopped."""
    s = sdk().cancel_sweep(sweep_id)
    if emit(s, output):
        return
    console.print(f"[yellow]canceled[/yellow] {escape(s['sweep_id'])}")


def register(app: typer.Typer) -> None:
    sweep_app.command("submit")(submit)
    sweep_app.command("ls")(ls)
    sweep_app.command("show")(show)
    sweep_app.command("cancel")(cancel)
    app.add_typer(sweep_app, name="sweep")
