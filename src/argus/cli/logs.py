"""`argus logs [-f] ID` and `argus nodes`: read-only views over HTTP."""

from __future__ import annotations

import codecs
import json
import sys

import typer

from argus.cli.common import Output, client, console, emit, handle_errors, json_flag, output_option, table
from argus.client.http import sse_events as _sse
from argus.core.log_text import terminal_safe


@handle_errors
def logs(
    task_id: str,
    follow: bool = typer.Option(False, "--follow", "-f", help="keep printing until the task ends"),
    attempt: int | None = typer.Option(None, "--attempt", "-a", help="default: the latest attempt"),
    offset: int = typer.Option(0, "--offset", help="start at this byte offset"),
) -> None:
    """Print a task's log (stdout+stderr of its process), from the shared filesystem.

    The log is the task's own output: its escape sequences other than colours (window title, clipboard,
    screen clears) are printed as text, and colours only reach a terminal (``core.log_text.terminal_safe``).
    """
    params: dict[str, object] = {"offset": offset}
    if attempt is not None:
        params["attempt"] = attempt
    out = sys.stdout.buffer
    colours = sys.stdout.isatty()
    c = client()
    if not follow:  # whole lines to terminal_safe: a chunk may end inside a character or a sequence
        decode, rest = codecs.getincrementaldecoder("utf-8")(errors="replace").decode, ""
        for chunk in c.stream("GET", f"/api/v2/tasks/{task_id}/logs", params=params):
            lines, nl, rest = (rest + decode(chunk)).rpartition("\n")
            if nl:
                out.write((terminal_safe(lines, colours=colours) + "\n").encode())
        out.write(terminal_safe(rest + decode(b"", final=True), colours=colours).encode())
        out.flush()
        return
    end: dict = {}
    for event, data in _sse(c.stream("GET", f"/api/v2/tasks/{task_id}/logs", params=params,
                                     headers={"Accept": "text/event-stream"}, timeout=None)):
        if event == "log":
            out.write((terminal_safe(data, colours=colours) + "\n").encode())
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
