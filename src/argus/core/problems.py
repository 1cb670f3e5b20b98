"""One answer per refused spec: each problem once, and in the user's words, never the server's layout.

A spec goes through several stages (admission's lexical rules, the environment, verl's config, the
files), and a problem one stage finds can be found again by the next: a path in another home is a
path rule at admission and again once verl resolved it. ``merge_problems`` keeps the first finding
per field. ``shown`` rewrites every absolute path in a message or value as the user writes it
(``$HOME/...``, ``$HOME/common/...``, ``<bob's home>/...``) and hides the server's own folders (the
state directory, Argus's install): the user never learns where the server keeps things, and a
message that names ``$HOME/code/x.py`` is one they can act on over SFTP.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import PurePosixPath
from typing import Any

from argus.core.messages import retext
from argus.core.pathrules import display
from argus.core.paths import DataLayout, is_under, normalize
from argus.errors import FieldError

# Fields that hold many problems of different things: only the same value there is the same problem.
GENERIC_FIELDS = frozenset({"command", "overrides", "(verl)", "(body)"})
# An absolute path in running text: starts after a space, quote, '=', '(' or ':', ends at a delimiter.
_PATH = re.compile(r"(?<![\w$.~/-])/[^\s'\"`,;()\[\]{}<>|*?]*")


def merge_problems(first: list[FieldError], later: list[FieldError]) -> list[FieldError]:
    """``first`` then the problems of ``later`` that ``first`` has not reported already."""
    out = list(first)
    fields = {e.field for e in first if e.field not in GENERIC_FIELDS}
    seen = {(e.field, str(e.value)) for e in first}
    for e in later:
        if e.field in fields or (e.field, str(e.value)) in seen:
            continue
        seen.add((e.field, str(e.value)))
        out.append(e)
    return out


def shown_text(text: str, user: str, layout: DataLayout, hidden: tuple[tuple[str, str], ...] = ()) -> str:
    """``text`` with each absolute path under the data root as the user writes it, and each path under a
    ``hidden`` folder as its label (``("/var/lib/argus", "<server>")``)."""

    def one(m: re.Match[str]) -> str:
        path = m.group(0)
        real = normalize(path)
        if is_under(real, layout.root):
            return display(path, user, layout)
        for prefix, label in hidden:
            base = PurePosixPath(prefix)
            if is_under(real, base):
                rel = real.relative_to(base)
                return label if str(rel) == "." else f"{label}/{rel}"
        return path

    return _PATH.sub(one, text) if "/" in text else text


def shown(errors: list[FieldError], user: str, layout: DataLayout,
          hidden: tuple[tuple[str, str], ...] = ()) -> list[FieldError]:
    """Every error's message and text value through ``shown_text``."""
    out = []
    for e in errors:
        value: Any = shown_text(e.value, user, layout, hidden) if isinstance(e.value, str) else e.value
        out.append(retext(replace(e, value=value), lambda text: shown_text(text, user, layout, hidden)))
    return out
