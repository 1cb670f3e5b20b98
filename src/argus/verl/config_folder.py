"""Reading a user's Hydra config folder (``--config-path=$HOME/code/<project>/config``) for validation.

The validator composes the user's config from a copy of its YAML files, sent with the
request, never from the folder itself: the files are read here, on the head, with the
same care as every other read of a user's home — no symlink is followed (neither in the
folder's path nor inside it), only regular ``.yaml``/``.yml`` files are read, and the size
is bounded — so a config cannot pull another user's file into an error message.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePosixPath

MAX_FILES = 256
MAX_BYTES = 2 * 1024 * 1024
_SUFFIXES = (".yaml", ".yml")


def read_config_folder(folder: str, home: PurePosixPath) -> dict[str, str] | str:
    """``{relative path: text}`` of every YAML file under ``folder``, or why it cannot be read."""
    root = Path(os.path.normpath(folder))
    if not root.is_relative_to(Path(home)) or root == Path(home):
        return "a config folder must be under your home, e.g. $HOME/code/<project>/config"
    if root.resolve() != root:  # a symlink somewhere on the way: judged by where it points, refused
        return "a config folder must be a real folder, not reached through a symbolic link"
    if not root.is_dir():
        return "no such folder (upload your configs there, or write config for verl's own)"
    files: dict[str, str] = {}
    total = 0
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if not name.endswith(_SUFFIXES):
                continue
            path = Path(dirpath, name)
            text = _read_regular(path)
            if text is None:
                continue  # a symlink, a fifo, unreadable: Hydra at run time would not get it from us either
            total += len(text)
            if len(files) >= MAX_FILES or total > MAX_BYTES:
                return f"holds more than {MAX_FILES} YAML files or {MAX_BYTES // 1024} KiB; keep only configs there"
            files[str(path.relative_to(root))] = text
    return files


def _read_regular(path: Path) -> str | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(MAX_BYTES + 1)
    finally:
        os.close(fd)
    try:
        return data.decode()
    except UnicodeDecodeError:
        return None
