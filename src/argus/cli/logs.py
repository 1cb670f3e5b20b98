"""`argus logs [-f] ID` and `argus nodes`: read-only views over HTTP."""

from __future__ import annotations

import json
import sys

import typer

from argus.cli.common import Output, client, console, emit, handle_errors, json_flag, output_option, table
from argus.client.http import sse_events as _sse


@handle_errors
def logs(
    task_id: str,
    follow: bool = typer.Option(False, "--follow", "-f", help="keep printing until the task ends"),
    attempt: int | None = typer.Option(None, "--attempt", "-a", help="default: the latest attempt"),
    offset: int = typer.Option(0, "--offset", help="start at this byte offset"),
) -> None:
    """Print a task's log (stdout+stderr of its process), from the shared filesystem."""
    params: dict[str, object] = {"offset": offset}
    if attempt is not None:
        params["attempt"] = attempt
    out = sys.stdout.buffer
    c = client()
    if not follow:
        for chunk in c.stream("GET", f"/api/v2/tasks/{task_id}/logs", params=params):
            out.write(chunk)
        out.flush()
        return
    end: dict = {}
    for event, data in _sse(c.stream("GET", f"/api/v2/tasks/{task_id}/logs", params=params,
                                     headers={"Accept": "text/event-stream"}, timeout=None)):
        if event == "log":
            out.write((data + "\n").encode())
            out.flush()
        elif event == "end":
            end = json.loads(data)
    if end:
        why = end.get("status_message") or end.get("termination_reason") or ""
        console.print(f"── {task_id} attempt {end.get('attempt')}: {end.get('status')} {why}", style="dim",
                      markup=False)


@handle_errors
def nodes(output: Output = output_option(), as_json: bool = json_flag()) -> None:
    """Show worker nodes, their GPUs (total / allocated by Argus / free per Ray) and who holds them."""
    view = client().get("/api/v2/nodes")
    if emit(view, output, as_json):
        return
    if view.get("error"):
        console.print(view["error"], style="yellow", markup=False)
    table(["NODE", "HOST", "ALIVE", "GPUS", "ALLOCATED", "FREE (RAY)", "TASKS"],
          ((n["node_id"], n["hostname"], "yes" if n["alive"] else "no", n["gpus_total"], n["gpus_allocated"],
            n["gpus_free_ray"], ", ".join(t["task_id"] or "(another user)" for t in n["tasks"]))
           for n in view["nodes"]), wrap=("TASKS",))
    console.print(f"GPUs: {view['gpus_allocated']} of {view['gpus_total']} allocated by Argus")


def register(app: typer.Typer) -> None:
    for fn in (logs, nodes):
        app.command(fn.__name__)(fn)
