"""The sandbox every task runs in, one per task and node (ARCHITECTURE §7.1).

The platform's shared Ray cluster runs only platform code (the launcher,
:mod:`argus.launcher.driver`); a task's own processes — its command, its private Ray
cluster (:mod:`argus.launcher.private_ray`), every Ray worker and actor it starts — live in
one bubblewrap sandbox that the launcher starts and ends:

* **namespaces**: PID (the task sees its own processes only, and they all die with the
  sandbox), IPC, UTS, and a user namespace where the kernel allows it, so nothing inside is
  root; every capability dropped (``--cap-drop ALL``) either way;
* **files**: the root read-only; the data root hidden behind an empty tmpfs, then the
  owner's home read-write and ``datasets/``, ``hf/`` read-only; the node's state
  directories (database, keys, the platform Ray's session and token) and the account's
  secrets hidden; ``/run`` hidden (host daemons' sockets); a private ``/tmp`` (the private Ray's
  session and logs): a sized tmpfs (``task_tmp_mb``, issue 36), else ``<scratch>/<task>/tmp`` on the
  node's disk; and a sized private
  ``/dev/shm``;
* **devices**: a minimal ``/dev`` plus only the task's own GPU device files (and the NVIDIA
  control nodes), so a program that ignores ``CUDA_VISIBLE_DEVICES`` still finds only its GPUs;
* **environment**: cleared; what goes in is the documented allowlist of the node's
  variables (:data:`argus.core.envvars.NODE_ENV_KEEP`) and what the launcher sets.

The node-side settings (bwrap path, data root, what to hide, where scratch lives, whether
user namespaces work) are a JSON file named by ``ARGUS_JAIL_CONFIG`` in the environment of
the node's ``ray start``, written by ``argus up`` / ``argus worker``; the launcher (a Ray
worker of that node, so it inherits the variable) reads it. The platform Ray's auth token
(:mod:`argus.launcher.ray_auth`) and the tasks' dashboard records (:mod:`argus.launcher.dashboard_record`)
live in ``<root>/.argus`` beside the discovery file; no sandbox shows that folder.

Pure functions and the standard library only: this module is imported by the launcher on
every node and by the server.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

from argus.core.envvars import NODE_ENV_KEEP, env_kept
from argus.core.teams import TEAM_NAME_RE

CONFIG_ENV = "ARGUS_JAIL_CONFIG"
JAILED_ENV = "ARGUS_JAILED"  # set inside the sandbox to the owner's name
USER_SECRETS = (".ssh", ".ray", ".argus", ".config", ".netrc", ".cache/huggingface/token", ".aws", ".docker",
                ".kube", ".gnupg", ".pgpass")
SANDBOX_UID = 1000  # the uid inside a user-namespaced sandbox when Argus runs as root: never root inside
# The host's own secrets, hidden in every sandbox: a sandbox of a root platform is host uid 0 in the kernel's eyes
# (its user namespace maps SANDBOX_UID to it), so a file only root may read is still its owner's to read.
HOST_SECRETS = ("/etc/shadow", "/etc/gshadow", "/etc/ssh/ssh_host_rsa_key", "/etc/ssh/ssh_host_ecdsa_key",
                "/etc/ssh/ssh_host_ed25519_key", "/etc/ssh/ssh_host_dsa_key")
NVIDIA_CONTROL = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset",
                  "/dev/nvidia-caps")
NVIDIA_PROC = Path("/proc/driver/nvidia/gpus")


class JailError(RuntimeError):
    """A task may not start: the message says why and what to do."""


@dataclass
class JailConfig:
    """What a node's sandboxes look like; written by ``argus up`` / ``argus worker``, read by the launcher."""

    bwrap: str
    data_root: str
    scratch_dir: str  # <node state>/sandboxes: one folder per running task (its /tmp, passwd)
    hide: list[str] = field(default_factory=list)  # dirs (tmpfs) or files (/dev/null) to hide
    bind_ro: list[str] = field(default_factory=list)  # shown read-only after hiding (venvs, the checkout)
    user_ns: bool = False  # whether bwrap can unshare the user namespace here (probed at node start)
    env_keep: list[str] = field(default_factory=lambda: list(NODE_ENV_KEEP))

    def dump(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(asdict(self), indent=2) + "\n")
        os.replace(tmp, path)

    @classmethod
    def load(cls, path: str | Path) -> JailConfig:
        data = json.loads(Path(path).read_text())
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in data.items() if k in known})


# -- the node's sandbox config -----------------------------------------------------------------

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


def user_ns_works(bwrap: str) -> bool:
    """Whether this kernel lets bubblewrap unshare the user namespace (not on every host or container)."""
    try:
        done = subprocess.run([bwrap, "--ro-bind", "/", "/", "--unshare-user", "--unshare-pid", "--proc", "/proc",
                               "--", "true"], capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def node_config(*, data_root: Path, state_dirs: Iterable[Path], python: str, scratch_dir: Path,
                bwrap: str | None = None) -> JailConfig:
    """The sandboxes of one node: hide the state dirs and the account's secrets.

    ``python`` is the training interpreter: its venv and installation are bound back read-only
    in case they live under a hidden tree or ``/tmp`` (a checkout in /tmp, as CI has).
    """
    bwrap = bwrap or bwrap_available()
    if bwrap is None:
        raise JailError("bubblewrap is not installed on this node (apt-get install bubblewrap)")
    home = Path.home()
    hide = [str(p) for p in state_dirs] + [str(home / name) for name in USER_SECRETS] + list(HOST_SECRETS)
    py = Path(python)
    source = Path(__file__).resolve().parents[2]
    node = Path(sys.executable)  # this node's Argus (its uv builds a user's own environment: argus.jobs.build_env)
    bind_ro = sorted({str(py.parent.parent), str(py.resolve().parent.parent), str(node.parent.parent),
                      str(node.resolve().parent.parent), str(source)})
    return JailConfig(bwrap=bwrap, data_root=str(data_root), scratch_dir=str(scratch_dir), hide=hide,
                      bind_ro=bind_ro, user_ns=user_ns_works(bwrap))


def node_env(*, mode: str, data_root: Path, state_dir: Path, python: str) -> dict[str, str]:
    """The environment of ``ray start`` on a node whose tasks run sandboxed ({} when ``mode`` turns it off).

    Writes the node's config to ``<state_dir>/jail/node.json``; its launchers find it through
    ``ARGUS_JAIL_CONFIG``.
    """
    if not jail_enabled(mode):
        return {}
    path = state_dir / "jail" / "node.json"
    scratch = state_dir / "sandboxes"
    scratch.mkdir(parents=True, exist_ok=True)
    scratch.chmod(0o700)
    node_config(data_root=data_root, state_dirs=[state_dir], python=python, scratch_dir=scratch).dump(path)
    return {CONFIG_ENV: str(path)}


# -- one task's sandbox --------------------------------------------------------------------------

def gpu_device_files(visible: list[str], *, proc: Path = NVIDIA_PROC, dev: Path = Path("/dev")) -> list[str]:
    """The device files of the GPUs ``visible`` (Ray's ids = NVML indexes), plus the control nodes.

    NVML numbers GPUs by PCI bus id; ``/dev/nvidiaN`` is numbered by the driver's minor number,
    which need not agree, so the minor of each GPU is read from ``/proc/driver/nvidia/gpus``.
    [] on a node without NVIDIA devices (CPU machines, logical GPUs in tests) and for a task
    without GPUs: it gets no NVIDIA device file at all, not even the control nodes.
    """
    if not visible:
        return []
    try:
        entries = sorted(p for p in proc.iterdir() if (p / "information").is_file())
    except OSError:
        entries = []
    minors: list[str] = []
    for entry in entries:
        info = (entry / "information").read_text(errors="replace")
        minor = next((line.split(":", 1)[1].strip() for line in info.splitlines()
                      if line.startswith("Device Minor")), None)
        if minor is not None:
            minors.append(minor)
    if not minors:
        return []
    files: list[str] = []
    for gpu in visible:
        if gpu.isdigit() and int(gpu) < len(minors):
            files.append(str(dev / f"nvidia{minors[int(gpu)]}"))
    files += [str(dev / Path(p).name) for p in NVIDIA_CONTROL]
    return [f for f in files if Path(f).exists()]


def other_gpu_proc_dirs(visible: list[str], *, proc: Path = NVIDIA_PROC) -> list[str]:
    """``/proc/driver/nvidia/gpus/<bus id>`` of the GPUs not given to the task (masked in the sandbox)."""
    try:
        entries = sorted(p for p in proc.iterdir() if p.is_dir())
    except OSError:
        return []
    keep = {int(g) for g in visible if g.isdigit()}
    return [str(p) for i, p in enumerate(entries) if i not in keep]


def sandbox_env(node_env: Mapping[str, str], keep: Iterable[str], task_env: Mapping[str, str]) -> dict[str, str]:
    """What the task's processes see: the node's allowlisted variables, then the task's own."""
    keep = list(keep)
    env = {k: v for k, v in node_env.items() if env_kept(k, keep)}
    env.update(task_env)
    return env


def write_identity(scratch: Path, user: str, uid: int, gid: int, home: str) -> tuple[Path, Path]:
    """``passwd``/``group`` for the sandbox: the task's uid has a name (``getpass.getuser()``, torch's caches)."""
    etc = scratch / "etc"
    etc.mkdir(parents=True, exist_ok=True)
    passwd, group = etc / "passwd", etc / "group"
    name = f"argus-{user}"
    passwd.write_text(f"root:x:0:0:root:/root:/usr/sbin/nologin\n{name}:x:{uid}:{gid}:Argus user {user}:{home}:"
                      f"/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n")
    group.write_text(f"root:x:0:\n{name}:x:{gid}:\nnogroup:x:65534:\n")
    return passwd, group


def _under(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def safe_binds(paths: Iterable[str], *, hidden: Iterable[Path], root: Path, open_under: Iterable[Path]) -> list[str]:
    """The ``paths`` a sandbox may show read-only on top of what it hides: a training environment's
    prefix comes from a manifest, and a user's own manifest (or a symbolic link in their venv) could
    name the node's state directory or another home. A path passes when it and where it leads are both
    under an ``open_under`` folder (the cluster's environments, the owner's home) and under no hidden tree
    inside that folder, or under neither a hidden tree nor the data root.

    Open folders win over the hidden trees they lie in: in embedded mode the data root, its ``envs`` too, is
    ``<state dir>/private``, and the state dir is hidden (an environment built there was refused, so neither
    a task nor a reward check could start its interpreter)."""
    hidden = [Path(os.path.realpath(h)) for h in hidden]
    root = Path(os.path.realpath(root))
    opened = [Path(os.path.realpath(o)) for o in open_under]

    def shown(q: Path) -> bool:
        if any(_under(q, o) and not any(_under(q, h) and _under(h, o) for h in hidden) for o in opened):
            return True
        return not any(_under(q, h) for h in hidden) and not _under(q, root)

    return [path for path in paths
            if all(shown(q) for q in {Path(os.path.abspath(path)), Path(os.path.realpath(path))})]


def inside_ids(cfg: JailConfig) -> tuple[int, int]:
    """(uid, gid) of the task's processes: the launcher's own, except root becomes ``SANDBOX_UID`` when it can."""
    uid, gid = os.getuid(), os.getgid()
    if uid == 0 and cfg.user_ns:
        return SANDBOX_UID, SANDBOX_UID
    return uid, gid


def team_binds(root: Path, home: Path, teams: Iterable[str]) -> list[str]:
    """``--bind`` pairs that show each of ``teams``' folders (``<root>/teams/<team>``) read-write, at its own
    path (what ``$HOME/teams/<team>`` in a spec expands to) and at ``$HOME/teams/<team>`` (what a script
    that builds the path from ``$HOME`` at run time reaches). A team's folder is made when missing (no
    member has opened it yet); a name that is not a team name, or a link where the folder should be, is
    skipped; so is the ``$HOME/teams`` place when the user (or a task) made ``$HOME/teams`` something other
    than a plain folder."""
    args: list[str] = []
    in_home = home / "teams"
    try:
        home_ok = not in_home.is_symlink() and (not in_home.exists() or in_home.is_dir())
    except OSError:
        home_ok = False
    for team in teams:
        folder = root / "teams" / team
        if not TEAM_NAME_RE.match(team) or folder.is_symlink() or (root / "teams").is_symlink():
            continue
        if not folder.exists():
            folder.mkdir(mode=0o755, parents=True, exist_ok=True)
        if not folder.is_dir():
            continue
        args += ["--bind", str(folder), str(folder)]
        place = in_home / team
        if home_ok and not place.is_symlink() and (not place.exists() or place.is_dir()):
            args += ["--bind", str(folder), str(place)]
    return args


def sandbox_argv(cfg: JailConfig, *, user: str, scratch: Path, env: Mapping[str, str], devices: list[str],
                 mask: Iterable[str] = (), shm_bytes: int, bind_ro: Iterable[str] = (),
                 teams: Iterable[str] = (), tmp_bytes: int = 0) -> list[str]:
    """``bwrap … --`` for a process tree of ``user``'s task; ``env`` is its whole environment.

    ``tmp_bytes``: the private ``/tmp`` is a tmpfs of this size (its pages count in the task's memory
    cgroup), so a task cannot fill the node's disk through it; 0 keeps it a folder of the node's scratch.

    ``teams``: the owner's teams; their folders are shown read-write (``team_binds``), no other team's.

    ``bind_ro``: shown read-only on top of the node's own list — the task's training environment
    (its prefix and base installation), which may live under the hidden data root (``<root>/envs``).

    Order matters: bubblewrap applies mounts in sequence, so the hidden trees are covered
    first and the parts a task needs are bound back on top. The host name stays the node's
    (its own UTS namespace, so a change stays inside): vLLM, Gloo and torchrun resolve it.
    """
    root = Path(cfg.data_root)
    home = root / "users" / user
    uid, gid = inside_ids(cfg)
    passwd, group = write_identity(scratch, user, uid, gid, str(home))
    tmp = scratch / "tmp"
    if not tmp_bytes:
        tmp.mkdir(parents=True, exist_ok=True)
    args = [cfg.bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
            "--unshare-pid", "--unshare-ipc", "--unshare-uts",
            *(["--unshare-user", "--uid", str(uid), "--gid", str(gid)] if cfg.user_ns else []),
            "--cap-drop", "ALL", "--die-with-parent", "--new-session", "--clearenv"]
    # /tmp first: state dirs, a data root or a checkout may live under /tmp (CI does), and what is
    # bound after this lands on the private /tmp; what was under the host's /tmp is gone with it.
    if tmp_bytes:
        args += ["--perms", "1777", "--size", str(int(tmp_bytes)), "--tmpfs", "/tmp", "--tmpfs", "/var/tmp"]
    else:
        args += ["--bind", str(tmp), "/tmp", "--tmpfs", "/var/tmp"]
    for path in cfg.hide:
        p = Path(path)
        if _under(p, Path("/tmp")):
            continue
        if p.is_dir():
            args += ["--tmpfs", str(p)]
        elif p.exists():
            args += ["--ro-bind", "/dev/null", str(p)]
    for run in ("/run", "/var/run"):
        if Path(run).is_dir() and not Path(run).is_symlink():
            args += ["--tmpfs", run]
    if Path("/run/systemd/resolve").is_dir():  # DNS on hosts whose resolv.conf points there
        args += ["--ro-bind", "/run/systemd/resolve", "/run/systemd/resolve"]
    args += ["--tmpfs", str(root)]
    shown = safe_binds(bind_ro, hidden=[Path(h) for h in cfg.hide], root=root, open_under=[root / "envs", home])
    for path in [*cfg.bind_ro, *shown]:
        if Path(path).exists():
            args += ["--ro-bind", path, path]
    args += ["--bind", str(home), str(home)]
    args += team_binds(root, home, teams)
    for shared in ("datasets", "hf", "envs"):  # envs: the cluster's training environments (argus env list)
        if (root / shared).is_dir():
            args += ["--ro-bind", str(root / shared), str(root / shared)]
    args += ["--size", str(int(shm_bytes)), "--tmpfs", "/dev/shm",
             "--ro-bind", str(passwd), "/etc/passwd", "--ro-bind", str(group), "/etc/group"]
    for device in devices:
        args += ["--dev-bind", device, device]
    for path in mask:
        args += ["--tmpfs", path]
    for name, value in {**env, JAILED_ENV: user, "TMPDIR": "/tmp"}.items():
        args += ["--setenv", name, value]
    return [*args, "--"]
