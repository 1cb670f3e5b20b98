"""`argus checkpoints [ls] ID`, `argus evaluate ID [--step N]`, `argus resume ID [--step N | --best METRIC]`,
`argus rerun ID --env ENV`, `argus export ID [--step N | --best METRIC] [--to NAME]` (on the SDK).

``argus checkpoints`` is one command group (``rm`` lives in ``cli/ops.py``); a task id where a
sub-command would be means ``ls``, so ``argus checkpoints ID`` lists.
"""

from __future__ import annotations

from typing import Any

import click
import typer
from rich.markup import escape
from typer.core import TyperGroup

from argus.cli.common import Output, console, emit, handle_errors, output_option, sdk, table, when
from argus.cli.ops import checkpoints_app


class _ListByDefault(TyperGroup):
    """``argus checkpoints ID`` is ``argus checkpoints ls ID``."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            args = ["ls", *args]
        return super().parse_args(ctx, args)

    def format_usage(self, ctx: click.Context, formatter: Any) -> None:
        formatter.write_usage(ctx.command_path, "[ls] TASK_ID | COMMAND [ARGS]...")


def _size(n: int, exact: bool = True) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            text = f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
            return text if exact else f"≥ {text}"
        n /= 1024  # type: ignore[assignment]
    raise AssertionError


@handle_errors
def checkpoints(task_id: str, output: Output = output_option()) -> None:
    """List a task's saved checkpoints (verl's global_step_N folders): components, size, time, complete or not.

    A step is complete once verl's latest_checkpointed_iteration.txt has reached it; a later one is
    being written (or was cut off) and cannot be resumed or exported."""
    out = sdk().checkpoints(task_id)
    if emit(out, output):
        return
    console.print(f"{out['folder']}  (latest_checkpointed_iteration: {out['latest']})", markup=False)
    if not out["steps"]:
        console.print("no checkpoints yet (verl saves every trainer.save_freq steps)", style="dim")
        return
    table(["STEP", "STATE", "SIZE", "SAVED", "COMPONENTS", "EVALUATION"],
          ((s["step"], s["state"], _size(s["size_bytes"], s["size_exact"]), when(s["modified_at"]),
            ", ".join(c["name"] for c in s["components"]), _evaluations(s.get("evaluations") or []))
           for s in out["steps"]), wrap=("COMPONENTS", "EVALUATION"))


def _evaluations(evals: list[dict[str, Any]]) -> str:
    """The latest evaluation of a step: its core scores once it succeeded, else its task and status."""
    if not evals:
        return ""
    e = evals[-1]
    if not e.get("scores"):
        return f"{e['task_id']} {e['status']}"
    core = {k: v for k, v in e["scores"].items() if k.startswith("val-core/")} or e["scores"]
    return ", ".join(f"{k}={v:.4g}" for k, v in core.items())


_STEP = typer.Option(None, "--step", min=0, help="a complete step; default: the latest complete one")
_BEST = typer.Option(None, "--best", help="instead of --step: the step whose evaluation scored best on this metric "
                     "(e.g. val-core/openai/gsm8k/acc/mean@1)")
_MODE = typer.Option("max", "--mode", help="with --best: max (highest wins) or min (lowest, for a loss)")


@handle_errors
def evaluate(
    task_id: str,
    step: int | None = _STEP,
    val_file: str | None = typer.Option(None, "--val-file", help="the data to validate on [default: the task's own]"),
    reward_path: str | None = typer.Option(None, "--reward-path", help="a reward file under $HOME/code/ "
                                           "[default: the task's own]"),
    reward_name: str | None = typer.Option(None, "--reward-name", help="the function in it [default: compute_score]"),
    lm_tasks: str | None = typer.Option(None, "--lm-eval", help="evaluate with lm-eval instead: comma-separated "
                                        "task names (any task's checkpoint, merged first)"),
    include_path: list[str] = typer.Option([], "--include-path", help="with --lm-eval: a folder of task YAMLs"),
    limit: float | None = typer.Option(None, "--limit", help="with --lm-eval: examples per task"),
    num_fewshot: int | None = typer.Option(None, "--num-fewshot", help="with --lm-eval: few-shot examples"),
    output: Output = output_option(),
) -> None:
    """Evaluate a checkpoint as a queued task: a ppo/grpo one with verl's own validation (trainer.val_only), or
    any with lm-eval (--lm-eval TASKS).

    Its scores show on the step in `argus checkpoints ID` once it succeeded; pick the best step for resume
    or export with --best METRIC."""
    lm_eval = None
    if lm_tasks is not None:
        lm_eval = {"tasks": [t for t in lm_tasks.split(",") if t], "include_path": include_path or None,
                   "limit": None if limit is None else int(limit) if limit >= 1 else limit, "num_fewshot": num_fewshot}
        lm_eval = {k: v for k, v in lm_eval.items() if v is not None}
    out = sdk().evaluate(task_id, step, val_file=val_file, reward_path=reward_path, reward_name=reward_name,
                         lm_eval=lm_eval)
    if emit(out, output):
        return
    info = out.get("info") or {}
    console.print(f"[green]accepted[/green] {escape(out['task_id'])} ({escape(out['status'])}): evaluates "
                  f"{escape(task_id)} step {info.get('step')}")
    for w in out.get("warnings", []):
        console.print(f"  [yellow]warning[/yellow]: {escape(str(w))}")


@handle_errors
def resume(
    task_id: str,
    step: int | None = _STEP,
    best: str | None = _BEST,
    mode: str = _MODE,
    output: Output = output_option(),
) -> None:
    """Submit a new task with this ended task's spec, resuming from its checkpoint (verl's
    trainer.resume_mode=resume_path, trainer.resume_from_path). The new task shows resumed_from."""
    out = sdk().resume(task_id, step, best=best, mode=mode)
    if emit(out, output):
        return
    info = out.get("info") or {}
    console.print(f"[green]accepted[/green] {escape(out['task_id'])} ({escape(out['status'])}): resumes "
                  f"{escape(task_id)} from step {info.get('step')}")
    for w in out.get("warnings", []):
        console.print(f"  [yellow]warning[/yellow]: {escape(str(w))}")


@handle_errors
def rerun(
    task_id: str,
    env: str = typer.Option(..., "--env", help="the environment to re-run it in (argus env list)"),
    yes: bool = typer.Option(False, "--yes", "-y", help="submit without showing the diff and asking"),
    output: Output = output_option(),
) -> None:
    """Re-run a task in another training environment: its spec with env: set and the keys its verl reads under
    another name moved. Shows the diff and what is left to fix, then asks before submitting."""
    client = sdk()
    if not yes:
        plan = client.rerun(task_id, env, dry_run=True)
        if output != Output.text:
            emit(plan, output)
            return
        console.print(escape(plan["diff"]) if plan["diff"] else "(the spec as submitted already names it)")
        for e in plan.get("errors", []):
            console.print(f"  [red]problem[/red] {escape(e['field'])}: {escape(e['message'])}")
        if plan.get("errors"):
            console.print("[red]not submitted[/red]: fix these in a new spec (argus spec ID shows it)")
            raise typer.Exit(1)
        if not typer.confirm(f"submit this spec in {env}?"):
            raise typer.Exit(1)
    out = client.rerun(task_id, env)
    if emit(out, output):
        return
    console.print(f"[green]accepted[/green] {escape(out['task_id'])} ({escape(out['status'])}): re-runs "
                  f"{escape(task_id)} in {escape(env)}")
    for w in out.get("warnings", []):
        console.print(f"  [yellow]warning[/yellow]: {escape(str(w))}")


@handle_errors
def export(
    task_id: str,
    step: int | None = _STEP,
    best: str | None = _BEST,
    mode: str = _MODE,
    to: str | None = typer.Option(None, "--to", help="a name (→ $HOME/models/<name>) or a path in your home "
                                  "[default: $HOME/models/<task>-step<N>]"),
    output: Output = output_option(),
) -> None:
    """Export a checkpoint to a Hugging Face folder with verl.model_merger, as a queued CPU task (no GPU).

    Follow it with `argus logs -f <export task>`; the folder is then usable as a task's model_id."""
    out = sdk().export(task_id, step, to, best=best, mode=mode)
    if emit(out, output):
        return
    info = out.get("info") or {}
    console.print(f"[green]accepted[/green] {escape(out['task_id'])} ({escape(out['status'])}): exports "
                  f"{escape(task_id)} step {info.get('step')} ({escape(str(info.get('backend')))}) to "
                  f"{escape(str(info.get('target')))}")


def register(app: typer.Typer) -> None:
    """After ``ops.register`` (which adds the ``checkpoints`` group): ``ls`` into it; evaluate, resume, rerun and
    export at the top."""
    checkpoints_app.info.cls = _ListByDefault
    checkpoints_app.command("ls")(checkpoints)
    for fn in (evaluate, resume, rerun, export):
        app.command(fn.__name__)(fn)
