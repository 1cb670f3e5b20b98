"""The bubblewrap jail for the head-side processes that run or read user-controlled code.

Admission runs things on the head that a user can steer: the reward dry-run imports the user's
``reward.py`` (arbitrary code); the verl validator composes Hydra configs from the user's overrides
(verl turns parts of them into objects), and for a user's own environment it is that user's
interpreter. None may see what the server sees — the database and host key in the state dir, the
platform Ray's token, other users' homes, the server account's secrets and environment, the network
(the Ray dashboard and the Argus API listen on loopback) — nor undo what hides it. With
``settings.sandbox`` = ``auto`` (default) and ``bwrap`` on the PATH, each such process runs under
bubblewrap with the task sandbox's guarantees (launcher/jail.py):

* **never privileged**: every capability dropped (``--cap-drop ALL``) and, where the kernel allows a user
  namespace, an unprivileged uid in one (``SANDBOX_UID`` when the server runs as root, else the server's
  own) that may not make another (``--disable-userns``): the jail's mounts cannot be unmounted, remounted
  or covered, ``setns`` is refused;
* **files**: the root filesystem read-only; the state dir, the data root, the account's secrets and the
  host's (``HOST_SECRETS``) hidden behind empty tmpfs mounts or ``/dev/null``; only the paths the check
  needs bound back read-only; a private ``/tmp``;
* **namespaces**: new network, PID, IPC and UTS namespaces; its own session;
* **environment**: only ``child_env``'s allowlist (no ``ARGUS_*`` settings, no tokens);
* **budget**: a data-segment limit (``sandbox_memory_mb``) besides each caller's deadline.

``bwrap`` makes a missing bubblewrap an error; ``off`` runs without a jail (a single-user laptop).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path

from argus.core.envvars import NODE_ENV_KEEP, env_kept
from argus.launcher.jail import HOST_SECRETS, SANDBOX_UID, safe_binds, user_ns_works
from argus.settings import Settings

_SERVER_SECRETS = (".config", ".ray", ".ssh", ".argus", ".netrc", ".cache/huggingface/token")
# What a jailed process's environment keeps of the server's: the node allowlist, plus where Hugging Face
# files are and that nothing is downloaded. Never ARGUS_* (the admin token may be one) or a token.
_CHILD_ENV_KEEP = (*NODE_ENV_KEEP, "HOME", "TMPDIR", "HF_HOME", "HF_HUB_CACHE", "HF_HUB_OFFLINE",
                   "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE", "TRANSFORMERS_CACHE")


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
    args = [*_budget(settings), bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
            "--tmpfs", "/tmp", "--tmpfs", "/var/tmp", "--tmpfs", "/dev/shm",
            "--unshare-all", *_unprivileged(bwrap), "--cap-drop", "ALL", "--new-session",
            *(["--die-with-parent"] if die_with_parent else [])]
    hidden = [settings.state_dir, settings.root]
    home = Path.home()
    hidden += [home / name for name in _SERVER_SECRETS] + [Path(p) for p in HOST_SECRETS]
    for path in hidden:
        if os.path.exists(path):
            args += ["--tmpfs", str(path)] if path.is_dir() else ["--ro-bind", "/dev/null", str(path)]
    # Bound after the tmpfs mounts, so they show through them (a checkout or venv may live under /tmp).
    readable = [Path(p) for p in readable]
    # an environment's prefix comes from its manifest: never a path into what is hidden above (safe_binds)
    env_paths = safe_binds(_runtime_paths(python or settings.verl_python),
                           hidden=[settings.state_dir, *hidden[2:]], root=settings.root,
                           open_under=[settings.root / "envs", *readable])
    for path in [*env_paths, Path(__file__).resolve().parents[2], *readable]:
        if os.path.exists(path):  # False too where this account may not look (a pyenv under /root)
            args += ["--ro-bind", str(path), str(path)]
    return [*args, "--"]


def child_env(environ: Mapping[str, str] | None = None, **extra: str) -> dict[str, str]:
    """The environment of a jailed process: ``environ``'s (default: the server's) allowlisted variables and
    ``extra``."""
    environ = os.environ if environ is None else environ
    return {**{k: v for k, v in environ.items() if env_kept(k, _CHILD_ENV_KEEP)}, **extra}


@cache
def _user_ns(bwrap: str) -> tuple[bool, bool]:
    """(user namespaces work, this bubblewrap has ``--disable-userns`` (0.8.0 and later)), probed once."""
    if not user_ns_works(bwrap):
        return False, False
    try:
        done = subprocess.run([bwrap, "--ro-bind", "/", "/", "--unshare-user", "--disable-userns", "--", "true"],
                              capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return True, False
    return True, done.returncode == 0


def _unprivileged(bwrap: str) -> list[str]:
    """A user namespace in which the jail is not root and can make no other one; [] where the kernel refuses
    user namespaces (a root server's jail is then host root without capabilities: --cap-drop ALL). An older
    bubblewrap without ``--disable-userns`` leaves nested namespaces possible: they hold no more than the
    jail, because its mounts are locked to it."""
    works, can_disable = _user_ns(bwrap)
    if not works:
        return []
    uid, gid = (SANDBOX_UID, SANDBOX_UID) if os.getuid() == 0 else (os.getuid(), os.getgid())
    return ["--unshare-user", "--uid", str(uid), "--gid", str(gid), *(["--disable-userns"] if can_disable else [])]


def _budget(settings: Settings) -> list[str]:
    """``prlimit`` with the data-segment limit, inherited by everything the jail starts (no capability to
    raise it); [] when there is none or util-linux's prlimit is missing."""
    prlimit = shutil.which("prlimit")
    if not settings.sandbox_memory_mb or prlimit is None:
        return []
    return [prlimit, f"--data={settings.sandbox_memory_mb * 1024 * 1024}", "--"]


def _runtime_paths(interpreter: str) -> list[str]:
    """What the jailed interpreter needs: its venv and its base installation."""
    python = Path(interpreter)
    return [str(python.parent.parent), str(python.resolve().parent.parent)]
