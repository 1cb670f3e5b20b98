"""A bubblewrap jail for the head-side processes that handle user-controlled input.

Admission runs two things on the head that a user can steer: the reward dry-run
imports the user's ``reward.py`` (arbitrary code), and the verl validator
composes Hydra configs from the user's overrides (verl turns parts of them into
objects). Neither may see what the server sees: the database and host key in
the state dir, other users' homes, the server account's credentials, or the
network (the Ray dashboard and the Argus API listen on loopback). With
``settings.sandbox`` = ``auto`` (default) and ``bwrap`` on the PATH, each such
process runs under bubblewrap with: the root filesystem read-only, the state
dir, the data root and the server account's secrets hidden behind empty tmpfs
mounts, only the paths the check needs bound back read-only, a private /tmp,
and new network/PID/IPC namespaces. ``bwrap`` makes a missing bubblewrap an
error; ``off`` runs without a jail (a single-user laptop).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from pathlib import Path

from argus.runtime.jail import safe_binds
from argus.settings import Settings

_SERVER_SECRETS = (".config", ".ray", ".ssh", ".argus", ".netrc", ".cache/huggingface/token")


class SandboxUnavailable(RuntimeError):
    """settings.sandbox = "bwrap" but bubblewrap is not installed."""


def sandbox_prefix(settings: Settings, *, readable: Iterable[str | Path] = (), die_with_parent: bool = True,
                   python: str | None = None) -> list[str]:
    """The argv prefix that runs a command inside the jail ([] when sandboxing is off).

    ``python``: the interpreter the jail runs (a training environment's; default ``verl_python``).
    ``die_with_parent`` ties the jail to the spawning *thread* (PR_SET_PDEATHSIG is per thread):
    right for a child waited on in place, wrong for a long-lived one spawned from a helper thread.
    """
    bwrap = shutil.which("bwrap")
    if settings.sandbox == "off" or (settings.sandbox == "auto" and bwrap is None):
        return []
    if bwrap is None:
        raise SandboxUnavailable("sandbox = bwrap but bubblewrap is not installed (apt-get install bubblewrap)")
    args = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
            "--tmpfs", "/tmp", "--tmpfs", "/var/tmp", "--tmpfs", "/dev/shm",
            "--unshare-all", "--new-session", *(["--die-with-parent"] if die_with_parent else [])]
    hidden = [settings.state_dir, settings.root]
    home = Path.home()
    hidden += [home / name for name in _SERVER_SECRETS]
    for path in hidden:
        if path.exists():
            args += ["--tmpfs", str(path)] if path.is_dir() else ["--ro-bind", "/dev/null", str(path)]
    # Bound after the tmpfs mounts, so they show through them (a checkout or venv may live under /tmp).
    readable = [Path(p) for p in readable]
    # an environment's prefix comes from its manifest: never a path into what is hidden above (safe_binds)
    env_paths = safe_binds(_runtime_paths(python or settings.verl_python),
                           hidden=[settings.state_dir, *hidden[2:]], root=settings.root,
                           open_under=[settings.root / "envs", *readable])
    for path in [*env_paths, Path(__file__).resolve().parents[2], *readable]:
        p = Path(path)
        if p.exists():
            args += ["--ro-bind", str(p), str(p)]
    return [*args, "--"]


def _runtime_paths(interpreter: str) -> list[str]:
    """What the jailed interpreter needs: its venv and its base installation."""
    python = Path(interpreter)
    return [str(python.parent.parent), str(python.resolve().parent.parent)]
