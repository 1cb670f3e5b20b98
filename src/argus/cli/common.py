"""Shared CLI plumbing: the client from config, error printing, tables."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from functools import wraps
from typing import Any, TypeVar

import typer
from rich.console import Console
from rich.table import Table

from argus.cli.client import ApiError, ArgusClient, CliConfig

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)
F = TypeVar("F", bound=Callable[..., Any])


def client() -> ArgusClient:
    cfg = CliConfig.load()
    return ArgusClient(cfg.url, cfg.token or None)


def handle_errors(fn: F) -> F:
    """Print an API error as the user needs it (every field problem on its own line) and exit 1."""

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ApiError as exc:
            err_console.print(f"[red]error[/red]: {exc}")
            for e in exc.errors:
                value = "" if e.get("value") is None else f" = {json.dumps(e['value'])}"
                err_console.print(f"  • [bold]{e.get('field')}[/bold]{value}: {e.get('message')}")
            raise typer.Exit(1) from None

    return wrapper  # type: ignore[return-value]


def table(columns: list[str], rows: Iterable[Iterable[Any]]) -> None:
    t = Table(*columns, box=None, pad_edge=False)
    for row in rows:
        t.add_row(*["" if v is None else str(v) for v in row])
    console.print(t)


def dump(data: Any) -> None:
    console.print_json(json.dumps(data, default=str))
