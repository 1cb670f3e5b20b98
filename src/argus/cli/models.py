"""`argus model register NAME (--task ID [--step N | --best METRIC] | --path P) [--team T] | ls | show REF |
alias MODEL ALIAS N` (issue 38), on the SDK. A team's models are written TEAM/NAME (TEAM/NAME:N, TEAM/NAME@ALIAS)
wherever a model is named; which registry a version goes to, and who may move an alias, is the server's to say."""

from __future__ import annotations

from typing import Any

import typer
from rich.markup import escape

from argus.cli.common import Output, console, emit, handle_errors, output_option, sdk, table, when

model_app = typer.Typer(help="The model registries: your checkpoints and exported models, and your teams' (TEAM/NAME), "
                        "under names, versions and aliases (@candidate, @production), with their lineage and scores.",
                        no_args_is_help=True)


def _scores(scores: dict[str, Any] | None) -> str:
    if not scores:
        return ""
    core = {k: v for k, v in scores.items() if k.startswith("val-core/")} or scores
    return ", ".join(f"{k}={v:.4g}" for k, v in core.items())


@handle_errors
def register(
    name: str,
    task: str | None = typer.Option(None, "--task", help="a task of yours: its checkpoint, or an export's folder "
                                    "(a task charged to a team registers into the team's registry)"),
    step: int | None = typer.Option(None, "--step", min=0, help="with --task: the step [default: the latest]"),
    best: str | None = typer.Option(None, "--best", help="with --task: the step its evaluations scored best on"),
    mode: str = typer.Option("max", "--mode", help="with --best: max or min"),
    path: str | None = typer.Option(None, "--path", help="instead of --task: a Hugging Face folder in your home, or "
                                    "in a team's folder ($HOME/teams/TEAM/…: that team's registry)"),
    team: str | None = typer.Option(None, "--team", help="register into this team's registry (one of your teams)"),
    output: Output = output_option(),
) -> None:
    """Register the next version of NAME, with its lineage (task, spec, environment, verl, data hashes) and scores."""
    v = sdk().register_model(name, task_id=task, step=step, best=best, mode=mode, path=path, team=team)
    if emit(v, output):
        return
    console.print(f"[green]registered[/green] {escape(v['ref'])} ({v['kind']}) {escape(v['path'])}")
    if v.get("team"):
        why = f": {v['why']}" if v.get("why") else ""
        console.print(f"  in team {escape(v['team'])}'s registry{escape(why)}")
    if v.get("hint"):
        console.print(f"  not shared: {escape(v['hint'])}", style="yellow")
    if v.get("scores"):
        console.print(f"  scores: {escape(_scores(v['scores']))}")


@handle_errors
def ls(output: Output = output_option()) -> None:
    """Your models, and your teams' (TEAM/NAME)."""
    out = sdk().models()
    if emit(out, output):
        return
    if not out:
        console.print("no models yet (argus model register NAME --task ID)", style="dim")
        return
    table(["MODEL", "VERSIONS", "LATEST", "ALIASES"],
          ((m["ref"], m["versions"], m["latest"], ", ".join(f"@{a}={v}" for a, v in m["aliases"].items()))
           for m in out))


@handle_errors
def show(ref: str, output: Output = output_option()) -> None:
    """A model's versions ([TEAM/]NAME), or one ([TEAM/]NAME:N, [TEAM/]NAME@ALIAS): path, source, scores, aliases."""
    m = sdk().model(ref)
    if emit(m, output):
        return
    table(["VERSION", "KIND", "PATH", "FROM", "BY", "SCORES", "ALIASES", "REGISTERED"],
          ((v["ref"], v["kind"], v["path"], f"{v['source_task'] or '—'}" + (f" step {v['step']}" if v["step"]
                                                                          is not None else ""),
            v["registered_by"], _scores(v["scores"]), ", ".join(f"@{a}" for a in v["aliases"]), when(v["created_at"]))
           for v in m["versions"]), wrap=("PATH", "SCORES"))
    for v in m["versions"]:
        if v.get("hint"):
            console.print(f"{escape(v['ref'])} not shared: {escape(v['hint'])}", style="yellow")


@handle_errors
def alias(name: str = typer.Argument(..., metavar="MODEL", help="NAME, or TEAM/NAME for a team's model (its "
                                     "admins move its aliases)"),
          alias_name: str = typer.Argument(..., metavar="ALIAS"), version: int = typer.Argument(...),
          output: Output = output_option()) -> None:
    """Point MODEL@ALIAS at VERSION (audited; MODEL_ALIAS notified: your channels, or every team member's)."""
    m = sdk().set_alias(name, alias_name, version)
    if emit(m, output):
        return
    console.print(f"{escape(m['ref'])}@{escape(alias_name)} → version {version}")


def register_commands(app: typer.Typer) -> None:
    model_app.command("register")(register)
    model_app.command("ls")(ls)
    model_app.command("show")(show)
    model_app.command("alias")(alias)
    app.add_typer(model_app, name="model")
