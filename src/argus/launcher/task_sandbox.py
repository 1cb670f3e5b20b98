"""How a task attempt's processes are started on a node: the sandbox argv, the environment, the private Ray.

The launcher (:mod:`argus.launcher.driver`) on the task's first node and each node actor of a
multi-node task (:mod:`argus.launcher.gang`) build one :class:`Sandbox` from the launcher's
arguments and what Ray gave the process on that node (``CUDA_VISIBLE_DEVICES``), then start
the task's command (or its node of the private Ray) through :meth:`Sandbox.wrap`.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
from pathlib import Path

from argus.core.launch import LaunchSpec
from argus.core.resources import CPU_TRAINING_RAY_CPUS
from argus.launcher import dashboard_record, jail

PRIVATE_RAY = str(Path(__file__).with_name("private_ray.py"))
SHM_MIN = 1 << 30  # a sandbox's /dev/shm: at least 1 GiB (NCCL, torch DataLoader workers) …
SHM_SHARE = 0.5  # … or half the task's memory, of which the private Ray's object store gets most
OBJECT_STORE_SHARE = 0.7
BASE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
RAY_WORKER_PORTS = (10002, 19999)  # Ray's default --min-worker-port/--max-worker-port
ARGUS_SRC = str(Path(__file__).resolve().parents[2])
# Runs an Argus module (stdlib only) in a training environment that has no Argus: the source goes last on
# the path, so the environment's own packages win; -I keeps the job folder and PYTHONPATH out.
_RUN_MODULE = ("import runpy, sys; sys.path.append(sys.argv.pop(1)); "
               "runpy.run_module(sys.argv.pop(1), run_name='__main__', alter_sys=True)")


def module_argv(python: str, module: str, args: list[str]) -> list[str]:
    """``python -I -m module args`` for an environment that need not have Argus installed."""
    return [python, "-I", "-c", _RUN_MODULE, ARGUS_SRC, module, *args]


def environment_paths(python: str | None) -> list[str]:
    """What a training environment's interpreter needs to run: its prefix and its base installation."""
    if not python:
        return []
    py = Path(python)
    return sorted({str(py.parent.parent), str(py.resolve().parent.parent)})


def free_ports(count: int, avoid: tuple[int, int] = RAY_WORKER_PORTS) -> list[int]:
    """``count`` distinct ports nobody listens on now, outside ``avoid`` (Ray's worker port range, which
    the kernel's ephemeral range overlaps). Used for the platform's and the tasks' private Ray heads."""
    lo, hi = avoid
    held: list[socket.socket] = []
    try:
        while len(held) < count:
            sock = socket.socket()
            sock.bind(("", 0))
            if lo <= sock.getsockname()[1] <= hi:
                sock.close()
                continue
            held.append(sock)
        return [sock.getsockname()[1] for sock in held]
    finally:
        for sock in held:
            sock.close()


def private_ray_share(spec: LaunchSpec) -> tuple[float, int]:
    """(CPUs, GPUs) the task's private Ray advertises on this node: the task's share, except for CPU training
    (``--device cpu``), whose GPUs are logical (one per CPU training worker) and whose CPUs are at least
    ``CPU_TRAINING_RAY_CPUS`` slots: verl places a ``{"CPU": 3, "GPU": 1}`` bundle per worker and one CPU per
    TransferQueue, agent-loop and reward actor, which share the cores the node gave the task."""
    if spec.device == "cpu":
        return max(float(spec.cpus), float(CPU_TRAINING_RAY_CPUS)), spec.gpus
    return spec.cpus, spec.gpus


class Sandbox:
    """How this attempt's command is started: the sandbox argv and environment, and its scratch folder."""

    def __init__(self, spec: LaunchSpec, job_dir: Path, *, scratch_suffix: str = "") -> None:
        self.spec = spec
        self.node_ip = "127.0.0.1"  # where the task's private Ray head listens (routable for a gang)
        self.gcs_port = 0
        self.dashboard_port = 0
        self.dashboard_record: Path | None = None
        self.cfg: jail.JailConfig | None = None
        self.scratch: Path | None = None
        self.active = False  # wrap() put the command in a sandbox
        self.note = ""
        path = os.environ.get(jail.CONFIG_ENV)
        if path:
            self.cfg = jail.JailConfig.load(path)
        self.problem = None
        if spec.sandbox and self.cfg is None:
            self.problem = (f"this task must run in {spec.user}'s sandbox, but the worker node has no Argus sandbox "
                            f"config ({jail.CONFIG_ENV} unset): start workers with `argus worker`/`argus up` and "
                            f"install bubblewrap there")
        if self.cfg is not None and spec.user:
            self.scratch = Path(self.cfg.scratch_dir) / "-".join(
                p for p in (job_dir.name, f"a{spec.attempt}", scratch_suffix) if p)
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        ids = [g for g in (visible or "").split(",") if g]
        self.devices = jail.gpu_device_files(ids) if self.cfg is not None else []
        self.mask = jail.other_gpu_proc_dirs(ids) if self.devices else []
        # the GPUs as the task sees them: renumbered 0..n-1 when only its device files exist
        self.gpu_files = len(ids) if self.devices else 0
        self.cuda_visible = ",".join(str(i) for i in range(len(ids))) if self.devices else visible
        self.ray_token = secrets.token_hex(24)
        self.env_paths = environment_paths(spec.python)

    def shm_bytes(self) -> int:
        return max(SHM_MIN, int(self.spec.memory * SHM_SHARE))

    def env(self, base: dict[str, str], path_prefix: str) -> dict[str, str]:
        """The task's whole environment: the node's allowlisted variables, then the task's, then ours."""
        keep = self.cfg.env_keep if self.cfg is not None else list(jail.NODE_ENV_KEEP)
        task = dict(kv.split("=", 1) for kv in self.spec.setenv if "=" in kv)
        env = jail.sandbox_env(base, keep, task)
        env["PATH"] = os.pathsep.join(p for p in (path_prefix, base.get("PATH") or BASE_PATH) if p)
        env.setdefault("PYTHONUNBUFFERED", "1")
        if self.spec.user:
            env.setdefault("USER", f"argus-{self.spec.user}")
            env.setdefault("LOGNAME", env["USER"])
        if self.spec.device == "cpu":
            # CPU training: the private Ray's GPUs are logical, and Ray refuses to advertise GPUs that an empty
            # CUDA_VISIBLE_DEVICES (a launcher holding none) says are not there
            env.pop("CUDA_VISIBLE_DEVICES", None)
        elif self.cuda_visible is not None:
            env["CUDA_VISIBLE_DEVICES"] = self.cuda_visible
        if self.spec.private_ray:
            env.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=self.ray_token, RAY_USAGE_STATS_ENABLED="0")
        return env

    def inner(self, python: str, argv: list[str]) -> list[str]:
        """``private_ray.py`` in front of the command: the task's own Ray first when it uses Ray."""
        spec = self.spec
        if not spec.private_ray:
            return argv
        self.gcs_port, client, dashboard = free_ports(3)
        self.dashboard_port = dashboard if spec.ray_dashboard else 0
        store = int(self.shm_bytes() * OBJECT_STORE_SHARE)
        cpus, gpus = private_ray_share(spec)
        return [python, "-I", PRIVATE_RAY, "--head", str(self.gcs_port), "--client-port", str(client),
                "--cpus", str(cpus), "--gpus", str(gpus), *(["--memory", str(spec.memory)] if spec.memory else []),
                "--object-store", str(store), "--node-ip", self.node_ip, "--wait-nodes", str(max(spec.nnodes, 1)),
                *(["--dashboard-port", str(self.dashboard_port)] if self.dashboard_port else []), "--", *argv]

    def wrap(self, argv: list[str], env: dict[str, str]) -> tuple[list[str], dict[str, str]]:
        """(argv, environment) that start ``argv`` with ``env`` inside the sandbox (as they are without one)."""
        if self.cfg is None or not self.spec.user:
            return argv, env
        assert self.scratch is not None
        self.scratch.mkdir(parents=True, exist_ok=True)
        self.scratch.chmod(0o700)
        self.active = True
        teams = self.spec.teams
        prefix = jail.sandbox_argv(self.cfg, user=self.spec.user, scratch=self.scratch, env=env, devices=self.devices,
                                   mask=self.mask, shm_bytes=self.shm_bytes(), bind_ro=self.env_paths, teams=teams,
                                   tmp_bytes=self.spec.tmp_size)
        shown = f", team folder(s) {', '.join(teams)} read-write" if teams else ""
        self.note = (f"sandbox: {self.spec.user}'s home read-write{shown}, shared datasets/hf read-only, no other home; own "
                     f"PID/IPC/UTS{'/user' if self.cfg.user_ns else ''} namespaces, no capabilities, "
                     f"{self.gpu_files} GPU device file(s), "
                     f"/dev/shm {self.shm_bytes() >> 20} MiB, cleared environment")
        return [*prefix, *argv], {"PATH": BASE_PATH}

    def data_root(self, job_dir: Path) -> Path:
        """The data root, whose ``.argus`` folder holds what the server reads out of the owner's reach."""
        # <root>/users/<user>/jobs/<task>: the data root, when no sandbox config names it
        return Path(self.cfg.data_root) if self.cfg is not None else job_dir.parents[3]

    def record_dashboard(self, job_dir: Path, attempt: int) -> None:
        """Where this attempt's own Ray dashboard listens and its token, for the server's proxy
        (``dashboard_record.write_dashboard_record``: a platform folder of the data root, never the owner's home)."""
        if not self.dashboard_port:
            return
        root = self.data_root(job_dir)
        self.dashboard_record = dashboard_record.write_dashboard_record(root, job_dir.name, attempt, self.dashboard_port,
                                                            self.ray_token)

    def cleanup(self) -> None:
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)
        if self.dashboard_record is not None:
            self.dashboard_record.unlink(missing_ok=True)


