"""Symbolic links in a user's files, judged before admission opens anything on the head.

Admission's path rules (``core.pathrules``) are lexical: ``$HOME/datasets/x.parquet`` passes. But the
head then *opens* that file to count rows, read columns, sample prompts or load a tokenizer, with the
server's rights, and ``x.parquet`` may be a symbolic link a task of this user planted (a task can
``ln -s`` inside its home; SFTP and the file API refuse links, the jail on the nodes does not stop a
link's *text*). Without this check, submitting, or a dry run that leaves no trace, would read another
user's dataset and answer with its row count and column names.

So every path value is also judged where it really leads (``os.path.realpath``), by the same rules.
A target inside a shared folder that is itself a link (an admin's ``datasets -> /mnt/big/datasets``) is
mapped back into the layout first, so such installations keep working. The error shows the path as the
user wrote it, never where the link leads (a link chain may pass through another user's links).
"""

from __future__ import annotations

import os
from pathlib import PurePosixPath

from argus.core.command import split_list_value
from argus.core.pathrules import check_path_value, where
from argus.core.paths import DataLayout, is_under
from argus.errors import FieldError


def check_links(key: str, value: str, user: str, layout: DataLayout, *, fld: str) -> list[FieldError]:
    """Errors for the items of ``value`` (which passed the lexical rules) that lead through a link where
    they may not."""
    return [e for item in split_list_value(value) for e in _check_link(key, item, user, layout, fld=fld)]


def _check_link(key: str, value: str, user: str, layout: DataLayout, *, fld: str) -> list[FieldError]:
    path = where(value.strip(), user, layout)
    if path is None:
        return []
    try:
        target = PurePosixPath(os.path.realpath(path))
    except (OSError, ValueError):  # a loop or an unreadable component: nothing to open either
        return []
    target = _into_layout(target, layout)
    if target == path or not check_path_value(key, str(target), user, layout, fld=fld, resolved=True):
        return []
    return [FieldError(fld, value.strip(), f"{key}: {layout.to_virtual(str(path), user)} is a symbolic link (or "
                       "passes through one) that leads outside the files a task may use; replace it with the "
                       "file itself (upload it, or copy it within your home)")]


def _into_layout(target: PurePosixPath, layout: DataLayout) -> PurePosixPath:
    """``target`` expressed under the data root's own names when it lies where one of its folders really is."""
    bases = (layout.users_dir, layout.datasets_dir, layout.hf_dir, layout.legacy_datasets_dir, layout.root)
    for base in bases:  # most specific first: a linked shared folder maps back to its name in the layout
        real = PurePosixPath(os.path.realpath(base))
        if is_under(target, real):
            return base / target.relative_to(real)
    return target
