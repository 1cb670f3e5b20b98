"""What every loop shares: its context, the attempt rows, the driver's status.json, the entry point.

Attempt rows (``task_attempts``) use the task status vocabulary, plus one state of their
own: ``QUEUED`` means "submission id stored, Ray not yet confirmed" — the window a crash
or a timed-out call can leave behind, repaired by asking Ray for that id (never by
inventing a new one). ``gpus`` records the placement the scheduler planned
(``{"per_node": g, "nodes": [...]}``) for the ledger, plus what the driver saw
(``visible``: ``CUDA_VISIBLE_DEVICES``).
"""

from __future__ import annotations

import functools
import logging
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from argus.cluster.types import JobsBackend, NodeInventory
from argus.core import accounting
from argus.core.gpu_binding import uses_ray
from argus.core.launch import LAUNCHER_MODULE, AttemptStatus, LaunchSpec
from argus.core.paths import DataLayout
from argus.core.resources import RESOURCES_KEY, NodeNeed, default_cpus, training_device
from argus.core.states import LIVE_ATTEMPT, TERMINAL, TaskStatus
from argus.db.models import TaskAttemptModel, TaskModel, utcnow
from argus.db.session import Database
from argus.envs.catalog import uv_bin
from argus.envs.registry import BUILTIN, Registry
from argus.launcher import jail
from argus.services.home_files import read_attempt_status
from argus.services.tasks import user_name_of
from argus.services.teams import teams_of
from argus.settings import Settings

log = logging.getLogger("argus.scheduler")

ACTOR = "scheduler"
UNCONFIRMED = TaskStatus.QUEUED.value
ATTEMPT_LIVE = LIVE_ATTEMPT
TERMINAL_VALUES = tuple(s.value for s in TERMINAL)
USER_PATH_DIR = str(Path(jail.__file__).with_name("userpath"))
ARGUS_SRC = str(Path(jail.__file__).resolve().parents[2])  # the folder holding the argus package


@dataclass
class LoopContext:
    """Everything a loop needs; built once by the composition root (tests pass fakes for Ray)."""

    db: Database
    settings: Settings
    jobs: JobsBackend
    inventory: NodeInventory
    ray_address: str | None = None  # the GCS address drivers must attach to (RAY_ADDRESS)
    sandbox: bool = False  # tasks must run in their sandbox (settings.task_jail on and bubblewrap here)
    now: Callable[[], datetime] = utcnow
    extra_env: dict[str, str] = field(default_factory=dict)
    # How a pipeline's steps, and the evaluations of evaluate_checkpoints, are admitted when they start: a callable
    # answering a services.pipelines.Admission (the server's policy and checks, set by argus.server.attach_scheduler);
    # None: both wait (a bare scheduler).
    admission: Callable[[], Any] | None = None

    @property
    def layout(self) -> DataLayout:
        return DataLayout.at(self.settings.root)

    @functools.cached_property
    def envs(self) -> Registry:
        """The training environments on the shared filesystem (argus.envs.registry)."""
        return Registry.for_settings(self.settings)

    def layout_home(self, user: str) -> Path:
        return Path(str(self.layout.home(user)))


def submission_id(task_id: str, attempt: int) -> str:
    """Derived, never random: the same attempt always has the same Ray id (idempotent submit)."""
    return f"{task_id}-a{attempt}"


def current_attempt(session: Session, task: TaskModel) -> TaskAttemptModel | None:
    if not task.attempts:
        return None
    return session.scalar(
        select(TaskAttemptModel).where(TaskAttemptModel.task_id == task.id,
                                       TaskAttemptModel.attempt == task.attempts)
    )


def attempt_by_sid(session: Session, sid: str) -> TaskAttemptModel | None:
    return session.scalar(select(TaskAttemptModel).where(TaskAttemptModel.submission_id == sid))


user_of = user_name_of  # the scheduler's name for the one lookup services.tasks owns


def close_attempt(session: Session, att: TaskAttemptModel, end: datetime) -> None:
    """Stamp an attempt's end and what it cost (accounting: GPU- or CPU-seconds, ``core.accounting``).

    Every place that ends an attempt calls this, so no attempt ends without its figure. An
    attempt that never ran (no ``started_at``) costs 0. ``end``: when it really ended
    (:func:`accounting.end_time`), which after a restart is earlier than now.
    """
    att.finished_at = att.finished_at or end
    task = session.get(TaskModel, att.task_id)
    if task is None:
        return
    att.resource_kind = accounting.kind(task.n_gpus_per_node)
    att.resource_seconds = accounting.seconds(task.nnodes, task.n_gpus_per_node, att.started_at, att.finished_at)


def job_dir(ctx: LoopContext, user: str, task_id: str) -> Path:
    return Path(str(ctx.layout.job_dir(user, task_id)))


def log_path(ctx: LoopContext, user: str, task_id: str, attempt: int) -> Path:
    return Path(str(ctx.layout.attempt_log(user, task_id, attempt)))


def read_driver_status(ctx: LoopContext, user: str, task_id: str, attempt: int) -> AttemptStatus | None:
    """The launcher's ``status.json`` for this attempt, typed, or None (services.home_files.read_attempt_status)."""
    return read_attempt_status(ctx.layout_home(user), job_dir(ctx, user, task_id), attempt)


def node_need(entry: str | None, nnodes: int, gpus: int, cpus: float | None, memory: float | None) -> tuple[float, int]:
    """(CPUs, memory bytes) per node; a task stored before issue 15 gets core.resources' default."""
    return (float(cpus) if cpus is not None else default_cpus(entry, nnodes, gpus)), int(memory or 0)


def task_node_need(task: TaskModel) -> NodeNeed:
    resources = (task.spec_resolved or {}).get(RESOURCES_KEY) or {}
    cpus, memory = node_need(task.entry_module, task.nnodes, task.n_gpus_per_node, resources.get("cpus"),
                             resources.get("memory"))
    return NodeNeed(cpus, memory)


@functools.cache
def uv_path() -> str:
    """The ``uv`` that comes with Argus (the same path on every node, like the launcher), or "" without one."""
    try:
        return uv_bin()
    except FileNotFoundError:
        return ""


def task_python(ctx: LoopContext, user: str, task: TaskModel) -> tuple[str, str]:
    """(environment name, its interpreter) for the task's ``env`` (checked at admission).

    A task from before environments runs in the built-in one. An environment removed since
    admission has no interpreter ("": the launcher refuses to start it, naming the environment).
    """
    name = str((task.spec_resolved or {}).get("env") or BUILTIN)
    env = ctx.envs.get(name, user)
    return name, env.python if env is not None else ""


def owner_teams(session: Session, task: TaskModel) -> list[str]:
    """The teams the task's owner is in now: their folders go into its sandbox (issue 26). Read when an
    attempt is submitted, so a member who left a team no longer reaches its folder from a later attempt."""
    return [name for name, _role, _default in teams_of(session, task.user_id)]


def driver_argv(ctx: LoopContext, user: str, task: TaskModel, attempt: int, teams: list[str] | None = None) -> list[str]:
    """``<launcher_python> -I -m argus.launcher.driver …`` with the task's argv after ``--``.

    The launcher is platform code and runs in Argus's own interpreter; the task's processes run in
    its training environment (``--python``, ``--env``), whose prefix the sandbox shows read-only.

    ``-I`` (isolated mode) ignores PYTHONPATH, so nothing in the user's ``code/`` folder can
    shadow the launcher; the user's code is on the path of the task's processes only.
    Basic templates ask the launcher to pick the attention kernel the worker really has.
    The task's share of a node (``--cpus/--gpus/--memory``) sizes its private Ray cluster.
    ``teams``: the owner's teams (``owner_teams``), whose folders the sandbox shows read-write.
    """
    return [ctx.settings.launcher_python, "-I", "-m", LAUNCHER_MODULE,
            *launch_spec(ctx, user, task, attempt, teams).flags()]


def launch_spec(ctx: LoopContext, user: str, task: TaskModel, attempt: int,
                teams: list[str] | None = None) -> LaunchSpec:
    """What the launcher is asked to do for this attempt (core/launch.LaunchSpec; ``driver_argv`` says why)."""
    need, ray = task_node_need(task), uses_ray(list(task.argv))
    env, python = task_python(ctx, user, task)
    device, gpus = task_device(task)
    settings = ctx.settings
    return LaunchSpec(
        job_dir=job_dir(ctx, user, task.id), attempt=attempt, argv=tuple(task.argv), python=python, env=env,
        attention="auto" if task.kind == "basic" else None, user=user, teams=tuple(teams or ()),
        sandbox=ctx.sandbox, private_ray=ray, ray_dashboard=ray and settings.task_ray_dashboard,
        device=device, cpus=need.cpus, gpus=gpus, nnodes=task.nnodes, memory=need.memory,
        pids_max=settings.task_pids_max,
        tmp_size=settings.task_tmp_mb << 20 if settings.task_tmp_mb and ctx.sandbox else 0,
        cpu_quota=settings.task_cpu_quota,
        setenv=tuple(f"{name}={value}" for name, value in task_env(ctx, user).items()))


TASK_HF_SCRATCH = "/tmp/argus-hf"  # in the task's sandbox: its private /tmp


def task_device(task: TaskModel) -> tuple[str, int]:
    """(``device``, the GPUs per node its private Ray advertises): for CPU training (``device: cpu``, issue 34)
    the spec's ``n_gpus_per_node`` logical GPUs, one per CPU training worker, while the platform reserved none."""
    return training_device(task.spec_resolved, task.n_gpus_per_node)


def task_env(ctx: LoopContext, user: str) -> dict[str, str]:
    """What the task's processes find in their environment, on top of the node's allowlist (core.envvars).

    * the user's ``code/`` on the path of every task process, *after* the installed packages
      (launcher/userpath/sitecustomize.py, first on PYTHONPATH), so it can never shadow Argus or
      Ray; the launcher runs with ``-I``;
    * the user's home and the shared Hugging Face cache (``$HOME/common/hf``, read-only; the caches HF
      libraries write go to the sandbox's ``/tmp``);
    * ``RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO``: a process of the private Ray that holds no GPU gets
      an empty ``CUDA_VISIBLE_DEVICES`` instead of seeing every GPU of the task.

    No ``RAY_ADDRESS``: a program that uses Ray gets its private cluster's from the sandbox, and
    nothing in a task ever names the platform's cluster.
    """
    return {
        "PYTHONPATH": USER_PATH_DIR,
        "ARGUS_USER_CODE": str(ctx.layout.code_dir(user)),
        "ARGUS_SRC": ARGUS_SRC,
        "ARGUS_UV": uv_path(),  # argus.jobs.build_env: a user's own environment
        "RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO": "1",
        "HOME": str(ctx.layout.home(user)),
        "HF_HOME": str(ctx.layout.hf_dir),
        # the shared HF cache is read-only in the sandbox: what the task's processes write beside it goes to the
        # sandbox's private /tmp (verl's datasets.load_dataset caches every parquet it reads; trust_remote_code
        # models compile their modules), removed with the attempt
        "HF_DATASETS_CACHE": TASK_HF_SCRATCH + "/datasets",
        "HF_MODULES_CACHE": TASK_HF_SCRATCH + "/modules",
        "ARGUS_USER": user,
        "PYTHONUNBUFFERED": "1",
        **ctx.extra_env,
    }


def runtime_env(ctx: LoopContext, user: str) -> dict[str, Any]:
    """The launcher's runtime_env: nothing of the task's (that goes into the sandbox through argv).

    ``RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO``: a launcher holding no GPU gets an empty
    ``CUDA_VISIBLE_DEVICES`` ("no GPU") rather than none ("every GPU of the node").
    """
    return {"env_vars": {"PYTHONUNBUFFERED": "1", "RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO": "1"}}


def entrypoint(argv: list[str]) -> str:
    """Ray runs the entry point through a shell: quote every word."""
    return shlex.join(argv)
