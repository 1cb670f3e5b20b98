"""The jail every process of a task runs in, on every node (ARCHITECTURE §7).

A task's code — the driver, the trainer, every Ray worker and actor of its Ray job — runs
as the same OS account as every other task. What keeps Alice's reward function out of
Bob's home is a bubblewrap mount namespace per process, built here:

* the root filesystem read-only (the training environment included);
* the data root hidden behind an empty tmpfs, then the owner's home bound back
  read-write and the shared ``datasets/`` and ``hf/`` read-only — no other home, no
  ``<root>/.argus`` (the jail key, the discovery file);
* the server's state directory (database, SSH host key) and the account's secrets
  (``~/.ssh``, ``~/.ray``, …) hidden;
* a private ``/tmp``; the Ray temp/session directory bound back read-write (sockets,
  worker logs) and ``/dev`` as it is (``/dev/shm`` for the object store and NCCL, the GPU
  device files; which GPUs a process uses is set by Ray through ``CUDA_VISIBLE_DEVICES``).

Who the owner is comes from the job's ``runtime_env["argus_jail"]`` =
``{"user": name, "sig": HMAC(key, name)}``: Argus signs it when it submits the job, and
the plugin on each node (:mod:`argus.runtime.ray_plugin`) checks it with the key in
``<root>/.argus/jail.key``, which no jail can read. A task can copy its own token to an
actor but cannot forge another user's.

The node-side settings (bwrap path, data root, what to hide, the Ray temp dir) are a JSON
file named by ``ARGUS_JAIL_CONFIG`` in the environment of ``ray start``: the trusted side
writes it, the runtime-env agent reads it. Pure functions and the standard library only:
this module is imported by the agent, the server and the driver.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import shlex
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

CONFIG_ENV = "ARGUS_JAIL_CONFIG"
JAILED_ENV = "ARGUS_JAILED"  # set inside the jail to the owner's name
FIELD = "argus_jail"  # the runtime_env key that carries the signed owner
KEY_NAME = "jail.key"
USER_SECRETS = (".ssh", ".ray", ".argus", ".config", ".netrc", ".cache/huggingface/token", ".aws", ".docker")


class JailError(RuntimeError):
    """A process may not start: the message says why and what to do."""


@dataclass
class JailConfig:
    """What a node's jails look like; written by ``argus up`` / ``argus worker``, read by the agent."""

    bwrap: str
    data_root: str
    hide: list[str] = field(default_factory=list)  # dirs (tmpfs) or files (/dev/null) to hide
    bind_rw: list[str] = field(default_factory=list)  # shown read-write after hiding (Ray temp dir)
    bind_ro: list[str] = field(default_factory=list)  # shown read-only after hiding (venvs, the checkout)
    symlinks: list[tuple[str, str]] = field(default_factory=list)  # (target, link) recreated in /tmp

    @property
    def key_file(self) -> Path:
        return key_path(Path(self.data_root))

    def dump(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(asdict(self), indent=2) + "\n")
        os.replace(tmp, path)

    @classmethod
    def load(cls, path: str | Path) -> JailConfig:
        data = json.loads(Path(path).read_text())
        data["symlinks"] = [tuple(p) for p in data.get("symlinks", [])]
        return cls(**data)


def key_path(data_root: Path) -> Path:
    return data_root / ".argus" / KEY_NAME


def ensure_key(data_root: Path) -> bytes:
    """The jail key (created once, mode 0600, in ``<root>/.argus`` which jails never show)."""
    path = key_path(data_root)
    try:
        return path.read_bytes()
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{KEY_NAME}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(secrets.token_hex(32).encode())
    try:
        os.link(tmp, path)  # first writer wins; a concurrent creator reads the winner's key
    except FileExistsError:
        pass
    finally:
        tmp.unlink()
    return path.read_bytes()


def sign(key: bytes, user: str) -> dict[str, str]:
    """The ``runtime_env["argus_jail"]`` value for ``user``."""
    return {"user": user, "sig": hmac.new(key, user.encode(), hashlib.sha256).hexdigest()}


def verify(key: bytes, value: object) -> str:
    """The owner named by a signed ``argus_jail`` value; JailError if absent or forged."""
    if not isinstance(value, Mapping) or not isinstance(value.get("user"), str) or not isinstance(
            value.get("sig"), str):
        raise JailError(f"every process on an Argus node runs in its owner's jail, and this runtime_env has no "
                        f"valid '{FIELD}' (tasks inherit it from their job; do not override or remove it)")
    user = value["user"]
    if not hmac.compare_digest(sign(key, user)["sig"], value["sig"]):
        raise JailError(f"runtime_env['{FIELD}'] for user {user!r} has a wrong signature")
    if not user or "/" in user or user in (".", ".."):
        raise JailError(f"runtime_env['{FIELD}'] names an invalid user {user!r}")
    return user


def bwrap_available() -> str | None:
    return shutil.which("bwrap")


def jail_enabled(mode: str) -> bool:
    """``settings.task_jail``: ``auto`` follows whether bubblewrap is installed on this machine."""
    if mode == "off":
        return False
    found = bwrap_available() is not None
    if mode == "bwrap" and not found:
        raise JailError("task_jail = bwrap but bubblewrap is not installed (apt-get install bubblewrap)")
    return found


def jail_argv(cfg: JailConfig, user: str, env: Mapping[str, str] | None = None) -> list[str]:
    """``bwrap … --`` for a process of ``user``'s task; ``env`` is set inside the jail only.

    Order matters: bubblewrap applies mounts in sequence, so the hidden trees are covered
    first and the parts a task needs are bound back on top.
    """
    root = Path(cfg.data_root)
    home = root / "users" / user
    args = [cfg.bwrap, "--ro-bind", "/", "/", "--dev-bind", "/dev", "/dev", "--proc", "/proc",
            "--tmpfs", "/tmp", "--tmpfs", "/var/tmp", "--die-with-parent", "--new-session"]
    for path in cfg.hide:
        p = Path(path)
        if p.is_dir():
            args += ["--tmpfs", str(p)]
        elif p.exists():
            args += ["--ro-bind", "/dev/null", str(p)]
    args += ["--tmpfs", str(root)]
    for path in cfg.bind_ro:
        if Path(path).exists():
            args += ["--ro-bind", path, path]
    for path in cfg.bind_rw:
        if Path(path).exists():
            args += ["--bind", path, path]
    for target, link in cfg.symlinks:
        args += ["--symlink", target, link]
    args += ["--bind", str(home), str(home)]
    for shared in ("datasets", "hf"):
        if (root / shared).is_dir():
            args += ["--ro-bind", str(root / shared), str(root / shared)]
    args += ["--setenv", JAILED_ENV, user, "--setenv", "TMPDIR", "/tmp"]
    for name, value in (env or {}).items():
        args += ["--setenv", name, value]
    return [*args, "--"]


def wrap_command(cfg: JailConfig, user: str, command: str, env: Mapping[str, str] | None = None) -> str:
    """A shell command string that runs ``command`` (an executable plus arguments) inside the jail.

    ``command`` is split into words and every word is quoted, so nothing in it — a
    ``$(…)``, a ``;`` — is ever interpreted by the shell that starts the jail.
    """
    words = shlex.split(command)
    if not words:
        raise JailError("empty py_executable")
    return shlex.join([*jail_argv(cfg, user, env), *words])


def node_config(*, data_root: Path, state_dirs: Iterable[Path], ray_temp_dir: Path, python: str,
                bwrap: str | None = None) -> JailConfig:
    """The jail of one node: hide the state dirs and the account's secrets, show Ray's temp dir.

    ``python`` is the training interpreter: its venv and installation are bound back read-only
    in case they live under a hidden tree or ``/tmp`` (a checkout in /tmp, as CI has).
    """
    bwrap = bwrap or bwrap_available()
    if bwrap is None:
        raise JailError("bubblewrap is not installed on this node (apt-get install bubblewrap)")
    home = Path.home()
    hide = [str(p) for p in state_dirs] + [str(home / name) for name in USER_SECRETS]
    py = Path(python)
    source = Path(__file__).resolve().parents[2]
    bind_ro = [str(py.parent.parent), str(py.resolve().parent.parent), str(source)]
    temp_real = ray_temp_dir.resolve()
    symlinks: list[tuple[str, str]] = []
    if ray_temp_dir.is_symlink():
        symlinks.append((str(temp_real), str(ray_temp_dir)))
    return JailConfig(bwrap=bwrap, data_root=str(data_root), hide=hide, bind_rw=[str(temp_real)],
                      bind_ro=bind_ro, symlinks=symlinks)


def node_env(*, mode: str, data_root: Path, state_dir: Path, ray_temp_dir: Path, python: str) -> dict[str, str]:
    """The environment of ``ray start`` on a node whose tasks must be jailed ({} when ``mode`` turns it off).

    Writes the node's jail config to ``<state_dir>/jail/node.json``; the jail key must already
    exist in ``<data_root>/.argus`` (the head creates it; a worker only reads it).
    """
    if not jail_enabled(mode):
        return {}
    if not key_path(data_root).is_file():
        raise JailError(f"no jail key at {key_path(data_root)}: the head creates it on the shared filesystem; "
                        f"is it mounted at {data_root} here (argus worker --data-root)?")
    path = state_dir / "jail" / "node.json"
    node_config(data_root=data_root, state_dirs=[state_dir], ray_temp_dir=ray_temp_dir, python=python).dump(path)
    return {
        CONFIG_ENV: str(path),
        "RAY_RUNTIME_ENV_PLUGINS": json.dumps([{"class": "argus.runtime.ray_plugin.JailPlugin"}]),
    }
