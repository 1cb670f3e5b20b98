"""Hydra/OmegaConf interpolations in a spec's text: which are allowed, and which keys hold paths.

Admission's literal path checks see the text a user wrote; verl sees the config after
OmegaConf resolves ``${...}``. ``+x=..`` plus ``trainer.default_local_dir=$HOME/${x}/bob``
is harmless text that resolves into another home. So (ARCHITECTURE §7) admission checks
the *resolved* config: the verl validator resolves it and core's path rules
(``core.pathrules``) judge every resolved path. This module is the text half, pure:

* **Resolvers.** Only interpolations that read the task's own config are allowed:
  plain ``${key.path}`` (also relative ``${.sibling}`` and nested ``${a.${b}}``), and the
  config-only resolvers in ``ALLOWED_RESOLVERS``: ``oc.select`` (verl's own YAML uses it
  everywhere), ``oc.dict.keys`` / ``oc.dict.values`` and Hydra's ``now`` (a date format).
  Everything else is refused before verl ever sees it: ``oc.env`` / ``env`` read the
  server's (and later the node's) environment; ``oc.decode`` / ``oc.create`` turn a
  string built at resolution time into new interpolations this scan never saw;
  ``hydra:`` reads Hydra's runtime (the process's cwd, output dir); any other name is a
  custom resolver, i.e. code. A resolver whose *name* is itself built by an interpolation
  (``${${a}:HOME}``, legal OmegaConf) is refused too. Every ``${`` is scanned, escaped
  ``\\${`` included: a literal ``${`` has no business in a task's config.
* **Path-like keys** (``is_path_key``): the last segment of the key, lower-cased, ends in
  ``path``, ``paths``, ``dir``, ``dirs``, ``file``, ``files``, ``filename`` or ``folder``
  (``data.train_files``, ``actor_rollout_ref.model.path``, ``tokenizer_path``,
  ``trainer.default_local_dir``, ``dump_dir``, ``hydra.run.dir``, ``hydra.searchpath``).
  Outputs (``is_output_key``) are the ``dir``/``dirs``/``save_path`` keys: verl writes there.
* **Without resolution** (verl validation off, unavailable, or not covering the entry
  module), ``unresolved_path_errors`` is conservative: an interpolation in a path-like
  key's value, an interpolation that reads a path-like key, and a ``/`` or ``..`` in the
  names verl's defaults build paths from (``trainer.project_name`` / ``experiment_name``
  make the default ``default_local_dir``) are refused, because nothing can check where
  they land.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from argus.core.messages import field_error, part
from argus.errors import FieldError

ALLOWED_RESOLVERS = frozenset({"oc.select", "oc.dict.keys", "oc.dict.values", "now"})
# Why the best-known refused resolvers are refused, in the user's terms (core.messages part.resolver_*).
_RESOLVER_WHY = {
    "oc.env": "part.resolver_env",  # it reads the server's environment variables
    "env": "part.resolver_env",
    "oc.decode": "part.resolver_decode",
    "oc.create": "part.resolver_create",
    "oc.deprecated": "part.resolver_deprecated",
    "hydra": "part.resolver_hydra",
}
_PATH_SUFFIXES = ("path", "paths", "dir", "dirs", "file", "files", "filename", "folder")
_OUTPUT_SUFFIXES = ("dir", "dirs")
_OUTPUT_LEAVES = frozenset({"save_path"})
# Keys verl's default YAML interpolates into a path (trainer.default_local_dir =
# checkpoints/${trainer.project_name}/${trainer.experiment_name}): they are path pieces.
VERL_PATH_PIECES = ("trainer.project_name", "trainer.experiment_name")
_PLAIN_KEY = re.compile(r"^\.*[A-Za-z_0-9][\w\-]*(?:\.[\w\-]+|\[[^\[\]]*\])*$")
_NESTED = "\0"  # stands for a nested ${...} while the outer one is inspected


@dataclass(frozen=True)
class Interpolation:
    """One ``${...}`` found in a value: its text, its resolver (None: a config key) and why it is refused (a
    core.messages part, ``part.interp_*``)."""

    text: str
    resolver: str | None
    refused: dict[str, Any] | None
    keys: tuple[str, ...] = ()


def is_path_key(key: str) -> bool:
    leaf = key.rsplit(".", 1)[-1].split("[", 1)[0].lower()
    return leaf.endswith(_PATH_SUFFIXES)


def is_output_key(key: str) -> bool:
    """A directory or file verl *writes*: must be in the owner's home (relative: in the job dir)."""
    leaf = key.rsplit(".", 1)[-1].split("[", 1)[0].lower()
    return leaf.endswith(_OUTPUT_SUFFIXES) or leaf in _OUTPUT_LEAVES


def find_interpolations(text: str) -> list[Interpolation]:
    """Every ``${...}`` in ``text`` (nested ones separately), each judged by the rules above."""
    found: list[Interpolation] = []
    start = text.find("${")
    while start != -1:
        end = _matching_brace(text, start + 2)
        whole = text[start:] if end is None else text[start : end + 1]
        found.append(_judge(whole, end is None))
        start = text.find("${", start + 2)
    return found


def _matching_brace(text: str, i: int) -> int | None:
    depth = 1
    while i < len(text):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return None


def _judge(whole: str, unterminated: bool) -> Interpolation:
    if unterminated:
        return Interpolation(whole, None, part("part.interp_unclosed"))
    body = _flatten_nested(whole[2:-1]).strip()
    name, colon, _args = body.partition(":")
    if colon:
        name = name.strip()
        if _NESTED in name:
            return Interpolation(whole, name, part("part.interp_built_resolver"))
        if name in ALLOWED_RESOLVERS:
            keys = _select_keys(whole) if name == "oc.select" else ()
            return Interpolation(whole, name, None, keys)
        why = part(_RESOLVER_WHY.get(name, "part.resolver_custom"))
        return Interpolation(whole, name, part("part.interp_resolver", resolver=name, why=why))
    if not body or not _PLAIN_KEY.match(body.replace(_NESTED, "x")):
        return Interpolation(whole, None, part("part.interp_not_a_key", resolvers=", ".join(sorted(ALLOWED_RESOLVERS))))
    return Interpolation(whole, None, None, (body,) if _NESTED not in body else ())


def _flatten_nested(body: str) -> str:
    """Replace each nested ``${...}`` by one marker character, so the outer structure can be read."""
    out, i = [], 0
    while i < len(body):
        if body.startswith("${", i):
            end = _matching_brace(body, i + 2)
            out.append(_NESTED)
            i = len(body) if end is None else end + 1
        else:
            out.append(body[i])
            i += 1
    return "".join(out)


def _select_keys(whole: str) -> tuple[str, ...]:
    args = whole[2:-1].partition(":")[2]
    first = args.split(",", 1)[0].strip()
    return (first,) if first and "$" not in first else ()


def check_interpolations(text: str, errors: list[FieldError], *, fld: str) -> None:
    """Refuse every resolver that reads the server's environment or runs code (see module doc)."""
    for interp in find_interpolations(text):
        if interp.refused:
            errors.append(field_error(fld, interp.text, "command.interpolation", refused=interp.refused))


def unresolved_path_errors(key: str, value: str, *, fld: str) -> list[FieldError]:
    """What must be refused for ``key=value`` when no one will resolve the config and check the result."""
    interps = find_interpolations(value)
    if interps and is_path_key(key):
        return [field_error(fld, f"{key}={value}", "command.path_interpolation", key=key,
                            interpolation=interps[0].text)]
    for interp in interps:
        for ref in interp.keys:
            if is_path_key(ref):
                return [field_error(fld, f"{key}={value}", "command.interpolation_reads_path",
                                    interpolation=interp.text, ref=ref)]
    if key in VERL_PATH_PIECES and (interps or "/" in value or ".." in value):
        return [field_error(fld, f"{key}={value}", "command.path_piece", key=key)]
    return []
