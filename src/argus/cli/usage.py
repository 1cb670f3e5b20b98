"""`argus usage`: GPU-hours and CPU-hours per user, workload, day or team (yours, or a team's you are in;
an admin's: everyone's). ``--csv`` writes the rows as CSV for a spreadsheet."""

from __future__ import annotations

import csv
import sys
from enum import StrEnum

import typer

from argus.cli.common import Output, client, console, emit, handle_errors, output_option, table


class By(StrEnum):
    user = "user"
    workload = "workload"
    day = "day"
    team = "team"


@handle_errors
def usage(
    start: str | None = typer.Option(None, "--from", help="start: a date (2026-11-01) or ISO time, UTC "
                                     "[default: 30 days before --to]"),
    end: str | None = typer.Option(None, "--to", help="end (exclusive) [default: now]"),
    by: By = typer.Option(By.user, "--by", case_sensitive=False, help="one row per user, workload, day or team"),
    user: str | None = typer.Option(None, "--user", help="admins (or with --team, its members): only this user"),
    team: str | None = typer.Option(None, "--team", help="one team's tasks, all its members' (a team you are in)"),
    csv_out: bool = typer.Option(False, "--csv", help="print the rows as CSV (key, GPU-hours, CPU-hours, attempts)"),
    output: Output = output_option(),
) -> None:
    """Show GPU-hours (nnodes × GPUs per node × running time) and CPU-hours of CPU jobs."""
    params = {k: v for k, v in {"from": start, "to": end, "group_by": by.value, "user": user,
                                "team": team}.items() if v}
    out = client().get("/api/v2/usage", params=params)
    if emit(out, output):
        return
    if csv_out:
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow([by.value, "gpu_hours", "cpu_hours", "attempts"])
        for r in out["rows"]:
            writer.writerow([r["key"], f"{r['gpu_hours']:.4f}", f"{r['cpu_hours']:.4f}", r["attempts"]])
        return
    console.print(f"{out['start'][:19]} → {out['end'][:19]} UTC", markup=False)
    rows = [*out["rows"], out["total"]]
    table([by.value.upper(), "GPU-HOURS", "CPU-HOURS", "ATTEMPTS"],
          ((r["key"], f"{r['gpu_hours']:.2f}", f"{r['cpu_hours']:.2f}", r["attempts"]) for r in rows))


def register(app: typer.Typer) -> None:
    app.command("usage")(usage)
