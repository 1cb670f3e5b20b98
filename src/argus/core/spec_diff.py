"""Align several tasks' specs key by key, for the Compare page (pure: dicts and argv in, rows out).

Two RL runs differ in a handful of the ~100 settings they print, and what a user wants to know is
*which* ones. The resolved spec (``GET /tasks/{id}/spec``'s ``resolved``) says the task's own
fields; the command line says what verl was told: verl is a Hydra program, so its ``argv`` after
the module is ``key=value`` overrides (``+key=v`` adds a key, ``++key=v`` forces it, ``~key``
deletes one). Comparing whole command strings would flag everything when one override moves or is
added in the middle, so each override becomes a row keyed by its Hydra key, and rows are aligned
across tasks by that key; a task that lacks a key shows ``None`` there (a difference too).

Sections, in this order: ``override`` (Hydra overrides from argv, the part users tune), ``spec``
(the resolved spec flattened to dotted keys, without ``command``/``overrides`` which the argv
already spells out), ``command`` (argv words that are not overrides: the program and its flags,
joined, so a different entry module or ``--config-name`` is one row). An advanced task runs its
command through a login shell (``bash -lc "<command>"``): that string is split into words as the
shell would, so its overrides align like a basic task's.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from typing import Any

SECTIONS = ("override", "spec", "command")
_SKIP_SPEC = {"command", "overrides"}
_SHELLS = {("bash", "-lc"), ("bash", "-c"), ("sh", "-c"), ("sh", "-lc")}


@dataclass(frozen=True)
class DiffRow:
    """One key across the tasks: ``values[i]`` is task i's value (``None``: the task does not set it)."""

    section: str
    key: str
    values: tuple[str | None, ...]

    @property
    def differs(self) -> bool:
        return len(set(self.values)) > 1


def _text(value: Any) -> str:
    """A value as the user wrote it: strings bare, everything else as JSON (``true``, ``[1, 2]``, ``null``)."""
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def flatten(data: dict[str, Any], prefix: str = "") -> dict[str, str]:
    """``{"a": {"b": 1}}`` → ``{"a.b": "1"}``; lists stay whole (their order is meaningful)."""
    out: dict[str, str] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            out.update(flatten(value, name + "."))
        else:
            out[name] = _text(value)
    return out


def split_argv(argv: list[str]) -> tuple[dict[str, str], str]:
    """Hydra overrides by key and the remaining words joined.

    ``~key`` (delete) is kept as key ``~key`` with an empty value so that deleting and setting a key
    are never taken for the same thing. A word with ``=`` that starts with ``-`` is a flag
    (``--config-name=x``) and stays with the command. A repeated key keeps its last value, as Hydra does.
    """
    overrides: dict[str, str] = {}
    rest: list[str] = []
    for word in argv:
        if word.startswith("~"):
            overrides[word.split("=", 1)[0]] = ""
            continue
        key, sep, value = word.partition("=")
        key = key.lstrip("+")
        if sep and key and not word.startswith("-") and " " not in key:
            overrides[key] = value
        else:
            rest.append(word)
    return overrides, " ".join(rest)


def command_words(argv: list[str]) -> list[str]:
    """The program's words: ``bash -lc "python3 -m x a=1"`` → ``[python3, -m, x, a=1]``; an unbalanced quote
    falls back to splitting on spaces (the diff must still show something)."""
    if len(argv) == 3 and tuple(argv[:2]) in _SHELLS:
        try:
            return shlex.split(argv[2], comments=True)
        except ValueError:
            return argv[2].split()
    return list(argv)


def spec_rows(resolved: dict[str, Any], argv: list[str]) -> dict[tuple[str, str], str]:
    """One task's ``(section, key) → value``."""
    overrides, command = split_argv(command_words(argv))
    rows: dict[tuple[str, str], str] = {("override", k): v for k, v in overrides.items()}
    spec = {k: v for k, v in resolved.items() if k not in _SKIP_SPEC}
    rows.update({("spec", k): v for k, v in flatten(spec).items()})
    rows[("command", "argv")] = command
    return rows


def align(tasks: list[dict[tuple[str, str], str]]) -> list[DiffRow]:
    """Rows over the union of keys, section order first, then key; differing or not, every key is kept
    (the page collapses identical rows; hiding them here would hide what is the same)."""
    keys = sorted({k for rows in tasks for k in rows}, key=lambda k: (SECTIONS.index(k[0]), k[1]))
    return [DiffRow(section, key, tuple(rows.get((section, key)) for rows in tasks)) for section, key in keys]
