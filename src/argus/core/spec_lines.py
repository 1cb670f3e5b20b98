"""Which line of a submitted YAML spec an admission error is about (issue 12: errors shown in the editor).

Errors name fields the way admission does (``nnodes``, ``overrides[3]`` or ``overrides.3``, ``command:
data.train_files``, ``command``); this module maps such a name back to a 1-based line of the text the
user wrote, using the marks of the YAML node tree (composed with the spec loader, so what parses here is
exactly what admission read). It never raises: a name it cannot place (a missing field, ``(verl)``, a
JSON body, text that does not parse) simply gets no line.

* a top-level field: the line of its key (the last one, as YAML keeps the last of duplicate keys);
* an item of a list (``overrides[3]``): the line where that item starts;
* ``command: <key>``: the line inside the command (a ``|`` block, a plain or a quoted scalar) where
  ``<key>=`` is written (with ``+``/``++``/``~`` prefixes or quotes allowed; never a ``#`` comment line
  of the block: issue 37 pinned an error to an old value kept in a comment), else the ``command`` key;
* ``command`` with a text value: the first command line containing that text, else the ``command`` key.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import yaml

from argus.core.taskspec import compose_spec_yaml
from argus.errors import FieldError

_ITEM = re.compile(r"^(?P<name>[^\[\].:]+)(?:\[(?P<i>\d+)\]|\.(?P<j>\d+))$")
_COMMAND_KEY = re.compile(r"^command: (?P<key>\S+)$")


class SpecLines:
    """Line lookups for one YAML text (compose once, answer many)."""

    def __init__(self, text: str) -> None:
        self._lines = text.splitlines()
        self._top: dict[str, tuple[yaml.Node, yaml.Node]] = {}
        try:
            root = compose_spec_yaml(text)
        except (yaml.YAMLError, RecursionError, MemoryError):
            return
        if isinstance(root, yaml.MappingNode):
            for key, value in root.value:
                if isinstance(key, yaml.ScalarNode):
                    self._top[str(key.value)] = (key, value)

    def line_of(self, field: str, value: Any = None) -> int | None:
        """The 1-based line an error about ``field`` (with the offending ``value``) points at, or None."""
        if field in self._top:
            key, node = self._top[field]
            if field == "command" and isinstance(value, str) and value.strip():
                return self._find_in(node, re.compile(re.escape(value.strip()))) or key.start_mark.line + 1
            return key.start_mark.line + 1
        if m := _COMMAND_KEY.match(field):
            if "command" not in self._top:
                return None
            key, node = self._top["command"]
            pattern = re.compile(r"(?:^|(?<=[\s'\"]))(?:\+\+|\+|~)?" + re.escape(m.group("key")) + r"(?==|\s|$|['\"])")
            return self._find_in(node, pattern) or key.start_mark.line + 1
        if m := _ITEM.match(field):
            entry = self._top.get(m.group("name"))
            index = int(m.group("i") or m.group("j"))
            if entry is None:
                return None
            key, node = entry
            if isinstance(node, yaml.SequenceNode) and index < len(node.value):
                return node.value[index].start_mark.line + 1
            return key.start_mark.line + 1
        return None

    def _find_in(self, node: yaml.Node, pattern: re.Pattern[str]) -> int | None:
        """The first source line of ``node`` (a block scalar's lines follow its ``|``) matching ``pattern``."""
        first = node.start_mark.line
        last = node.end_mark.line if node.end_mark.column > 0 else node.end_mark.line - 1
        for n in range(first, min(last, len(self._lines) - 1) + 1):
            text = self._lines[n]
            if n == first:  # the key's own line: search only after where the value starts
                text = " " * node.start_mark.column + text[node.start_mark.column:]
            if text.strip().startswith("#"):
                continue  # a comment line of a `|` command (admission skips it too): a key named there is not set
            if pattern.search(text):
                return n + 1
        return None


def with_lines(errors: list[FieldError], text: str, content_type: str | None = None) -> list[FieldError]:
    """``errors`` with ``line`` filled where it can be found; JSON bodies are left as they are."""
    if (content_type and "json" in content_type) or all(e.line is not None for e in errors):
        return errors
    lines = SpecLines(text)
    return [e if e.line is not None else replace(e, line=lines.line_of(e.field, e.value)) for e in errors]
