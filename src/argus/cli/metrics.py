"""`argus metrics ID`: a task's training metrics (latest value per key, or one key's series)."""

from __future__ import annotations

import typer

from argus.cli.common import Output, client, console, emit, handle_errors, json_flag, output_option, table


@handle_errors
def metrics(
    task_id: str,
    key: list[str] = typer.Option(None, "--key", "-k", help="show these keys' full series"),
    output: Output = output_option(),
    as_json: bool = json_flag(),
) -> None:
    """Show verl's per-step metrics parsed from the task log."""
    params = {"key": ",".join(key)} if key else None
    out = client().get(f"/api/v2/tasks/{task_id}/metrics", params=params)
    if emit(out, output, as_json):
        return
    if not out["keys"]:
        console.print("no metrics yet (verl prints them after each training step)")
        return
    if key:
        for k, pts in out["points"].items():
            console.rule(k)
            table(["STEP", "VALUE"], ((s, _show(v)) for s, v in pts))
        return
    console.print(f"last step: {out['last_step']}")
    table(["KEY", "LAST STEP", "VALUE"],
          ((k, pts[-1][0], _show(pts[-1][1])) for k, pts in out["points"].items() if pts))


def _show(value: object) -> str:
    """The API sends NaN/±inf as the strings "nan"/"inf"/"-inf" (JSON has no NaN); show them as such."""
    if value is None:  # older servers sent null for NaN/inf
        return "nan"
    return str(value)


def register(app: typer.Typer) -> None:
    app.command("metrics")(metrics)
