"""The Ray job entry point on a worker node: run one task attempt and keep its record on the shared FS.

    python -m argus.launcher.driver --job-dir <root>/users/<u>/jobs/<task_id> --attempt N \\
        [--python /path/to/train/python] -- argv...

Why it exists (ARCHITECTURE §2.4):

* Ray's own job log lives on the node's local disk and Ray answers HTTP 500 for it once the node
  is gone; ``logs/attempt-<n>.log`` on the shared filesystem survives node loss and head restarts
  and is readable over SFTP. The child's output is streamed (fixed-size chunks, flushed as they
  come), so memory stays flat for multi-GB logs; it is echoed to stdout so Ray's log has it too.
* Children must not outlive the task (on GPUs they would hold the GPUs): the child runs in its own
  process group with a parent-death signal, SIGTERM/SIGINT are forwarded to that group and
  escalated to SIGKILL after ``KILL_GRACE_S``, and whatever is left in the group when the child
  exits is killed.
* ``python3`` inside a task must be the training interpreter, never whatever PATH finds: with
  ``--python``, a bin directory (``<job_dir>/.argus-bin``) whose ``python3``/``python`` exec it goes first on PATH,
  followed by that interpreter's own bin directory (torchrun, ray...). They are two-line shell
  scripts, not symlinks: a symlink to a venv's python outside the venv's ``bin/`` loses the venv
  (Python looks for ``pyvenv.cfg`` next to the path it was started as). A login shell
  (``bash -lc``, how advanced commands run) resets PATH in /etc/profile, so for those the
  command itself starts with the PATH assignment (bash still execs the last command).
* ``status.json`` (node, host, ``CUDA_VISIBLE_DEVICES``, times, exit code) is replaced atomically,
  so a reader never sees half a file; while the task runs its ``alive_at`` is refreshed every
  ``HEARTBEAT_S``, so the monitor can tell a driver that stopped reporting.
* A jobs folder that refuses writes (full, read-only, over quota, I/O errors) never stops the
  output from being drained (launcher/tasklog.py): the driver keeps reading and counts what it
  drops, stops the task, and exits ``EX_IOERR`` (74) saying why in ``status.json`` and in its last
  stdout line, which Ray quotes in the job's message (core/log_write.py). A folder that refuses
  writes before the task starts gets the same answer, and the task is not started.
* It is platform code and runs outside the task (issue 21): the task's command runs in a
  sandbox this launcher starts (:mod:`argus.launcher.jail`: PID/IPC/UTS/user namespaces, no
  capabilities, the owner's files only, the task's GPU device files only, a cleared
  environment) and, for programs that use Ray, against a private Ray cluster started inside
  that sandbox (:mod:`argus.launcher.private_ray`). The launcher holds the task's whole share
  of the node in the platform's Ray (GPUs, CPUs, memory), so Ray's ``CUDA_VISIBLE_DEVICES``
  names the task's GPUs. With ``--sandbox`` it refuses to run on a node that has no sandbox
  config (one not started by ``argus up``/``argus worker``, or without bubblewrap). It is
  started with ``python -I``, so no user folder can shadow it.
* Basic templates (``--attention auto``) get the attention kernel the worker has, and a
  Ray trainer whose rollout engine is missing fails at once, naming it (launcher/kernels.py).

The exit status is the child's (128+N when a signal N killed it), so Ray's ``driver_exit_code`` is
the task's — except 74 when the log could not be written (``status.json`` then keeps the child's).
"""

from __future__ import annotations

import ctypes
import functools
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psutil

from argus import home_io
from argus.core import log_write
from argus.core.launch import AttemptStatus, LaunchSpec, LimitHit
from argus.launcher import attempt_record, kernels
from argus.launcher.stacks import StackRequests
from argus.launcher.task_bounds import Breach, TaskBounds, limits_for
from argus.launcher.task_sandbox import Sandbox, module_argv
from argus.launcher.tasklog import StatusFile, TaskLog
from argus.launcher.telemetry import Nvml, Sampler
from argus.nodes import attach
from argus.nodes.agent import ECHO_LIMIT_ENV, EXIT_FILE_ENV, KEY_ENV, NODE_ID_ENV
from argus.nodes.agent_client import AGENT_ENV

CHUNK = 64 * 1024
# Ray stops a job with SIGTERM and sends SIGKILL after RAY_JOB_STOP_WAIT_TIME_S (3 s by default);
# escalate a little earlier so the whole child group, not only the driver, is gone by then.
KILL_GRACE_S = 2.5
REWARD_BANNER_TIMEOUT_S = 120
HEARTBEAT_S = 15.0  # status.json's alive_at is refreshed this often while the task runs
POLL_S = 1.0  # how often the main thread looks up from waiting (heartbeat, a failed log)
PR_SET_PDEATHSIG = 1
ENV_PROBE = str(Path(__file__).resolve().parents[1] / "envs" / "probe.py")
ENV_PROBE_TIMEOUT_S = 60


def parse_args(args: list[str] | None = None) -> LaunchSpec:
    """The attempt the scheduler asked for (core/launch.LaunchSpec.flags wrote this command line)."""
    return LaunchSpec.parse(sys.argv[1:] if args is None else args, doc=__doc__.splitlines()[0])


def ray_node_id() -> str | None:
    """The Ray node id of the raylet this process descends from (Ray puts it in no env var); under the node
    agent the Ray job's entry point found it and passes it on (nodes/attach.py)."""
    if os.environ.get(NODE_ID_ENV):
        return os.environ[NODE_ID_ENV]
    pid = os.getppid()
    for _ in range(8):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return None
        for arg in cmdline:
            if arg.startswith(b"--node_id="):
                return arg.split(b"=", 1)[1].decode()
        pid = int(stat.rsplit(")", 1)[1].split()[1])  # field 4 (ppid), after the "(comm)" field
        if pid <= 1:
            return None
    return None


def python_bin_dir(job_dir: Path, python: str) -> str:
    """``<job_dir>/.argus-bin`` whose ``python3`` and ``python`` exec ``python``.

    In the job dir rather than /tmp: nothing to clean up when the driver is SIGKILLed, and no
    shared directory where another account could plant a ``python3``.
    """
    d = job_dir / ".argus-bin"
    for name in ("python3", "python"):  # never written through a link the task planted (argus/home_io.py)
        home_io.replace(home_io.anchor_for(d / name), d / name,
                        f"#!/bin/sh\nexec {shlex.quote(python)} \"$@\"\n".encode(), mode=0o755)
    return str(d)


def keep_path_in_login_shell(argv: list[str], path_prefix: str) -> list[str]:
    """``bash -lc CMD`` → ``bash -lc 'PATH=<prefix>:"$PATH"; CMD'``: /etc/profile would drop our PATH."""
    if len(argv) == 3 and os.path.basename(argv[0]) in ("bash", "sh") and argv[1].startswith("-") \
            and "l" in argv[1] and argv[1].endswith("c"):
        return [argv[0], argv[1], f'PATH={shlex.quote(path_prefix)}:"$PATH"; {argv[2]}']
    return argv


STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class EarlyStops:
    """The stop signals (``STOP_SIGNALS``) that come before the child is under supervision.

    Without this, a cancel under load could land between ``Popen`` and ``_supervise``'s forwarding
    handler (the sampler and NVML open in between): Python's default action killed the driver (-15, not
    the task's 143) and left the child to the parent-death SIGKILL, with no grace to stop. Kept here
    from the driver's first line: a stop before the start means the task is not started at all, one after
    it is forwarded as soon as supervision begins.
    """

    def __init__(self) -> None:
        self.signals: list[int] = []

    def install(self) -> None:
        for sig in STOP_SIGNALS:
            signal.signal(sig, self._keep)

    def _keep(self, signum: int, _frame: object) -> None:
        self.signals.append(signum)


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL when the driver dies, even by SIGKILL."""
    parent = os.getppid()
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the driver died before prctl took effect
        os._exit(137)


def _gpus_shown(value: str | None) -> str:
    """How the first log line shows the GPUs Ray gave the driver: ids, none, or Ray set nothing."""
    if value is None:
        return "<unset>"
    return value or "'' (no GPU)"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def pump_output(src: Any, log: TaskLog) -> None:
    """Copy the child's output to the log and our stdout as it comes, a chunk at a time, to its very end.

    Whatever the disk does: ``TaskLog.write`` never raises, so the pipe is always drained.
    """
    fd = src.fileno()
    while chunk := os.read(fd, CHUNK):
        log.write(chunk)


def reward_banner(spec: LaunchSpec, sandbox: Sandbox, env: dict[str, str], job_dir: Path) -> bytes:
    """``using customized reward function '<name>' from '<path>'`` (seed 000 §5.2), or why it cannot load.

    verl 0.9 no longer prints that line. The reward is loaded the way verl loads it, by
    ``argus.verl.reward_banner`` in a short subprocess of the training interpreter, in the task's
    sandbox, so user code never runs inside the launcher and a slow import cannot hold the task
    back for long.
    """
    if not any("custom_reward_function.path=" in a for a in spec.argv):
        return b""
    cmd, cmd_env = sandbox.wrap(module_argv(spec.python or sys.executable, "argus.verl.reward_banner", spec.argv), env)
    try:
        done = subprocess.run(cmd, cwd=job_dir, env=cmd_env, stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=REWARD_BANNER_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return f"[argus] loading the custom reward took over {REWARD_BANNER_TIMEOUT_S} s; not checked\n".encode()
    return done.stdout + (done.stderr[-2000:] if done.returncode else b"")


def environment_problem(spec: LaunchSpec) -> str | None:
    """Why the task's training environment cannot run here (its interpreter is not on this node)."""
    if spec.python is None:
        return None
    name = f"environment {spec.env!r}" if spec.env else "the training environment"
    if not spec.python:
        return f"{name} no longer exists (removed after this task was accepted?): see `argus env list`"
    if not os.access(spec.python, os.X_OK):
        return (f"{name}'s interpreter {spec.python} is not on this node: is the shared filesystem mounted here, "
                f"or was the environment removed? (argus env list; argus doctor on this node)")
    return None


def environment_report(spec: LaunchSpec, sandbox: Sandbox, env: dict[str, str], job_dir: Path
                       ) -> tuple[dict[str, Any], str | None]:
    """What the environment has (rollout engines, flash-attn), asked of its own interpreter inside the sandbox:
    a user's environment is their code, never run outside it. (report, why it cannot run)."""
    python = spec.python or sys.executable
    finds = [f"--find={m}" for m in (*kernels.ROLLOUT_PACKAGES.values(), "flash_attn")]
    cmd, cmd_env = sandbox.wrap([python, "-I", ENV_PROBE, *finds], env)
    try:
        done = subprocess.run(cmd, cwd=job_dir, env=cmd_env, stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=ENV_PROBE_TIMEOUT_S)
        report = json.loads(done.stdout.decode().strip().splitlines()[-1])
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError) as exc:
        return {}, f"cannot run the training environment's interpreter {python}: {exc}"
    return report, None


def preflight(spec: LaunchSpec, report: dict[str, Any]) -> tuple[list[str], list[str], str | None]:
    """(argv to run, lines for the log, a reason not to start): what the environment has on this worker."""
    notes: list[str] = []
    missing = kernels.missing_rollout_engine(spec.argv, report.get("found") or {})
    if missing:
        return spec.argv, notes, missing
    argv = spec.argv
    if spec.attention == "auto":
        flash = (report.get("versions") or {}).get("flash-attn") or \
            ("installed" if (report.get("found") or {}).get("flash_attn") else None)
        extra, note = kernels.attention_overrides(argv, flash)
        argv = kernels.insert_overrides(argv, extra)
        if note:
            notes.append(note + (f" — added {' '.join(extra)}" if extra else ""))
    return argv, notes, None


def run(spec: LaunchSpec) -> int:
    started = time.monotonic()
    early = EarlyStops()
    early.install()
    job_dir = Path(os.path.abspath(spec.job_dir))  # not resolved: a link in it is refused, never followed
    sys.stdout.flush()
    echo: Any = open(sys.stdout.fileno(), "wb", buffering=0, closefd=False)  # noqa: SIM115 - fd 1 stays open
    if os.environ.get(ECHO_LIMIT_ENV):
        echo = CappedEcho(sys.stdout.fileno(), int(os.environ[ECHO_LIMIT_ENV]))
    log = TaskLog(job_dir / "logs" / f"attempt-{spec.attempt}.log", job_dir, echo)
    argv, notes = spec.argv, []
    sandbox = Sandbox(spec, job_dir)
    refusal = sandbox.problem or environment_problem(spec)
    root = sandbox.data_root(job_dir)
    record = _record_path(root, job_dir, spec.attempt)
    stop_asked = functools.partial(attempt_record.stop_requested, root, job_dir.name, spec.attempt) if record else None
    stacks = StackRequests(root, job_dir, spec.attempt) if record else None  # the server's stall forensics
    status = StatusFile(job_dir / "status.json", AttemptStatus(
        attempt=spec.attempt,
        hostname=socket.gethostname(),
        node_id=ray_node_id(),
        cuda_visible_devices=os.environ.get("CUDA_VISIBLE_DEVICES"),
        driver_pid=os.getpid(),
        argv=list(spec.argv),
        python=spec.python,
        env=spec.env or None,
        started_at=_now(),
        notes=notes,
        error=refusal,
        heartbeat_s=HEARTBEAT_S,  # the monitor warns when alive_at stops changing (a hung driver)
        alive_at=_now(),
    ), record=record)
    if not log.open():
        return _log_failed(log, status, None)
    failed = status.save()
    if failed is not None:
        log.fail(failed, job_dir)
        return _log_failed(log, status, None)
    prefix = ""
    if spec.python:
        try:
            bin_dir = python_bin_dir(job_dir, spec.python)
        except OSError as exc:
            if exc.errno not in log_write.STORAGE_ERRNOS:
                raise  # not the disk (a file where the folder goes): the traceback says what
            log.fail(exc, job_dir)
            return _log_failed(log, status, None)
        prefix = os.pathsep.join([bin_dir, os.path.dirname(spec.python)])
    env = sandbox.env(dict(os.environ), prefix)
    python = spec.python or sys.executable
    if not refusal:
        report, refusal = environment_report(spec, sandbox, env, job_dir)
        if not refusal:
            argv, notes, refusal = preflight(spec, report)
        status.save(notes=notes, error=refusal)
    if prefix:
        argv = keep_path_in_login_shell(argv, prefix)
    gang = None
    if spec.nnodes > 1 and spec.private_ray and not refusal:
        from argus.launcher.gang_keeper import GangKeeper, Gone

        gang = GangKeeper(spec, job_dir)  # the platform Ray's connection in a child: Ray may end it, not us
        try:
            sandbox.node_ip = gang.head_ip()
        except Gone as exc:
            refusal = f"the platform's Ray connection that places the task's other nodes did not start: {exc}"
    command, command_env = sandbox.wrap(sandbox.inner(python, argv), env)
    sandbox.record_dashboard(job_dir, spec.attempt)  # for the server's proxy, out of the task's reach
    if sandbox.note:
        notes.append(sandbox.note)
    bounds = TaskBounds.create(f"argus-{job_dir.name}-a{spec.attempt}", limits_for(spec))
    notes.extend(bounds.notes())
    first = (f"[argus] attempt {spec.attempt} on {status.status.hostname} (ray node {status.status.node_id or '?'}), "
             f"CUDA_VISIBLE_DEVICES={_gpus_shown(status.status.cuda_visible_devices)}, "
             f"python3={spec.python or 'from PATH'}{f' (environment {spec.env})' if spec.env else ''}, cwd={job_dir}\n").encode()
    first += "".join(f"[argus] {n}\n" for n in notes).encode()
    log.write(first)
    code: int | None = None
    try:
        if gang is not None and not refusal:
            refusal = gang.start(f"{sandbox.node_ip}:{sandbox.gcs_port}", sandbox.ray_token)
            if not refusal:
                log.write(f"[argus] nodes 2-{spec.nnodes} of this task: one sandbox each, joining its private Ray "
                          f"(logs/attempt-{spec.attempt}.node-<k>.log)\n".encode())
        if refusal:
            log.write(f"[argus] error: {refusal}\n".encode())
            code = 126
        elif not log.error:
            log.write(reward_banner(spec, sandbox, env, job_dir))
            if not log.error:  # a log that fails before the task starts: do not start it
                code = _start(spec, command, command_env, job_dir, log, status, early, stop_asked, bounds,
                              sandboxed=sandbox.active, stacks=stacks)
    finally:
        if gang is not None:
            lost = gang.stop()
            if lost and code is not None:
                log.write(f"[argus] the platform's Ray connection that placed nodes 2-{spec.nnodes} ended during the "
                          f"attempt ({lost}; the platform's Ray restarted?): each of those nodes ends when its part of "
                          f"the task's private Ray loses this node's head, within about a minute\n".encode())
        bounds.remove()
        sandbox.cleanup()
    if log.error:
        return _log_failed(log, status, code)
    log.write(f"[argus] exit code {code} after {time.monotonic() - started:.1f} s\n".encode())
    log.close()
    assert code is not None
    status.save(finished_at=_now(), alive_at=_now(), exit_code=code)
    return code


def _log_failed(log: TaskLog, status: StatusFile, code: int | None) -> int:
    """The log could not be written: say why where the server can read it, and exit EXIT_CODE.

    ``code`` is the task's own exit status (None: it never started); ``status.json`` keeps it.
    The marker line is the last of our stdout: Ray quotes it in the failed job's message, the one
    channel left when the jobs folder takes no write at all.
    """
    why = log.summary() + ("; the task was not started" if code is None else f"; the task was stopped (exit code {code})")
    log.close()
    status.save(finished_at=_now(), alive_at=_now(), exit_code=code, log_error=why,
                log_dropped_bytes=log.dropped_bytes, log_dropped_lines=log.dropped_lines)
    log.echo(log_write.marker_line(why).encode())
    return log_write.EXIT_CODE


def _start(spec: LaunchSpec, argv: list[str], env: dict[str, str], job_dir: Path, log: TaskLog,
           status: StatusFile, early: EarlyStops, stop_asked: Callable[[], bool] | None, bounds: TaskBounds, *,
           sandboxed: bool = False, stacks: StackRequests | None = None) -> int:
    """The task's command under supervision, in its bounded cgroup (launcher/task_bounds.py); its exit code.
    A limit it hit ends it and is said so in the log and ``status.json`` (``limit_hit``, ``oom_kills``).
    A stop that came before (``early``) ends it here, not started: 128 + the signal, as if it had been."""
    if early.signals:
        bounds.remove()
        name = signal.Signals(early.signals[0]).name
        status.status.signal = name
        log.write(f"[argus] {name} before the task started: not started\n".encode())
        return 128 + early.signals[0]
    def preexec() -> None:
        _die_with_parent()
        bounds.join()

    try:
        child = subprocess.Popen(argv, cwd=job_dir, env=env, stdin=subprocess.DEVNULL,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 process_group=0, preexec_fn=preexec)
    except (OSError, subprocess.SubprocessError) as e:
        log.write(f"[argus] cannot start {spec.argv[0]!r}: {e}\n".encode())
        bounds.remove()
        return 127
    sampler = Sampler(child.pid, job_dir / "telemetry" / f"attempt-{spec.attempt}.jsonl",
                      os.environ.get("CUDA_VISIBLE_DEVICES"), Nvml.open())
    code = _supervise(child, log, status, sandboxed=sandboxed, sampler=sampler, early=early, stop_asked=stop_asked,
                      bounds=bounds, stacks=stacks)
    hit = bounds.breach(child.pid) if status.status.limit_hit is None else None
    if hit is not None:  # the limit ended the task before a poll saw it (the OOM killer took its only process)
        _limit_hit(hit, log, status, stopping=False)
    killed = bounds.counters().oom_kills
    if killed:
        status.save(oom_kills=killed, memory_limit=bounds.limits.memory_bytes)
    elif sandboxed and child.returncode < 0 and not status.status.signal and status.status.limit_hit is None \
            and not log.error:
        # bwrap itself killed, by no stop of ours: a task's own processes cannot reach it (its PID namespace's
        # init is below it), so something on the node did; everything in the sandbox ended with it
        log.write(f"[argus] error: the task's sandbox (bwrap, pid {child.pid}) was killed by "
                  f"{signal.Signals(-child.returncode).name} from outside the task; every process in it ended "
                  f"with it\n".encode())
    bounds.remove()
    return code


def _record_path(root: Path, job_dir: Path, attempt: int) -> Path | None:
    """The attempt's record (launcher/attempt_record), or None for a job folder outside a data root's
    ``users/<user>/jobs/`` (a driver run by hand): no platform folder to write there."""
    if len(job_dir.parents) < 4 or job_dir.parent.name != "jobs" or \
            job_dir.parents[2].resolve() != (root / "users").resolve():
        return None
    return attempt_record.record_path(root, job_dir.name, attempt)


def signal_tree(pid: int, sig: int) -> None:
    """``sig`` to a process, its process group and every descendant.

    A sandbox's processes are in sessions of their own (bwrap ``--new-session``, the private
    Ray's daemons), so the child's process group alone would miss them; from the node they are
    all descendants of the child. SIGKILL to the child (bwrap) ends the sandbox's PID
    namespace, and with it every process still in there.
    """
    try:
        tree = psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        tree = []
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
    for proc in tree:
        try:
            proc.send_signal(sig)
        except psutil.Error:
            pass


def polite(pid: int, sig: int, sandboxed: bool) -> None:
    """A stop signal the task can act on: to the child's process group, or in a sandbox to its main process.

    bwrap with ``--unshare-pid`` is two processes, the one we started and the PID namespace's
    init below it; the task's main process (``private_ray.py`` or the command, which passes the
    signal to its own group) is the init's child. A SIGTERM to bwrap itself would end the
    sandbox at once, with no time to stop.
    """
    try:
        if not sandboxed:
            os.killpg(pid, sig)
            return
        for init in psutil.Process(pid).children():
            for main in init.children():
                main.send_signal(sig)
    except (OSError, psutil.Error):
        pass


def _supervise(child: subprocess.Popen[bytes], log: TaskLog, status: StatusFile, *, sandboxed: bool = False,
               sampler: Sampler | None = None, early: EarlyStops | None = None,
               stop_asked: Callable[[], bool] | None = None, bounds: TaskBounds | None = None,
               stacks: StackRequests | None = None) -> int:
    """Wait for the child while pumping its output; forward stop signals to its whole group.

    A log that stops taking writes stops the task (SIGTERM to its group, SIGKILL after
    ``KILL_GRACE_S``): unobservable, it would hold its GPUs for nothing. The pump reads on to the
    end of the pipe meanwhile, so the child never blocks on its output. Every ``HEARTBEAT_S``
    ``status.json`` gets a fresh ``alive_at``, and ``sampler`` (launcher/telemetry.py) records what the
    task's processes and GPUs use (the newest sample also goes to ``status.json`` as ``usage``).
    """

    def kill_group(sig: int) -> None:
        signal_tree(child.pid, sig)

    def stop(sig: int) -> None:
        polite(child.pid, sig, sandboxed)
        timer = threading.Timer(KILL_GRACE_S, kill_group, args=(signal.SIGKILL,))
        timer.daemon = True
        timer.start()

    def forward(signum: int, _frame: object) -> None:
        status.status.signal = signal.Signals(signum).name  # no lock: this may interrupt a save
        stop(signum)

    def log_failed(why: str) -> None:  # in the pump thread, once: no file system calls here
        log.echo(f"[argus] {log_write.REASON}: {why}; stopping the task\n".encode())
        stop(signal.SIGTERM)

    for sig in STOP_SIGNALS:
        signal.signal(sig, forward)
    if early is not None and early.signals:  # came between the start and the line above
        forward(early.signals[0], None)
    log.on_error = log_failed
    pump = threading.Thread(target=pump_output, args=(child.stdout, log), daemon=True)
    pump.start()
    beat, told, asked = time.monotonic(), False, False
    while True:
        try:
            code = child.wait(timeout=POLL_S)
            break
        except subprocess.TimeoutExpired:
            pass
        if stop_asked is not None and not asked and stop_asked():
            # the server's stop (launcher/attempt_record: a cancel, or a retry that needs this attempt gone), which
            # reaches the attempt whether or not its Ray still knows the job: as a cancel's SIGTERM
            asked = True
            log.write(b"[argus] the server asked this attempt to stop: stopping\n")
            status.status.signal = "SIGTERM"
            stop(signal.SIGTERM)
        if stacks is not None:  # the server asks for every process's stack (a stall): launcher/stacks.py
            stacks.poll(child.pid)
        hit = bounds.breach(child.pid) if bounds is not None and status.status.limit_hit is None else None
        if hit is not None:
            _limit_hit(hit, log, status)
            stop(signal.SIGTERM)
        if time.monotonic() - beat >= HEARTBEAT_S or (log.error and not told):
            beat, told = time.monotonic(), told or bool(log.error)
            usage = sampler.record() if sampler is not None and sampler.failed is None else None
            failed = status.save(alive_at=_now(), log_error=log.error, log_dropped_bytes=log.dropped_bytes,
                                 log_dropped_lines=log.dropped_lines, **({"usage": usage} if usage else {}))
            if failed is not None and not log.error:
                log.write(f"[argus] cannot update status.json: {failed}\n".encode())
    kill_group(signal.SIGKILL)  # leftovers in the task's group (daemonised helpers) die with it
    pump.join(timeout=5)
    for sig in STOP_SIGNALS:
        signal.signal(sig, signal.SIG_DFL)
    return 128 - code if code < 0 else code


def _limit_hit(hit: Breach, log: TaskLog, status: StatusFile, *, stopping: bool = True) -> None:
    """A limit the task hit: said in its log and its status (the monitor's failure kind), before it is stopped."""
    log.write(f"[argus] {hit.message}{': stopping the task' if stopping else ''}\n".encode())
    status.save(limit_hit=LimitHit(hit.kind, hit.limit, hit.message))


class CappedEcho:
    """Our stdout under the node agent: a file on the node's disk kept under ``limit`` bytes (the task's log is
    the real record; this is what Ray's driver log gets at the end, nodes/attach.py). Starts over when full."""

    def __init__(self, fd: int, limit: int) -> None:
        self.fd, self.limit = fd, limit

    def write(self, data: bytes) -> int:
        try:
            if os.lseek(self.fd, 0, os.SEEK_CUR) + len(data) > self.limit:
                os.ftruncate(self.fd, 0)
                os.lseek(self.fd, 0, os.SEEK_SET)
            return os.write(self.fd, data[-self.limit:])
        except OSError:
            return len(data)  # an echo that cannot be written loses nothing: the task's log has it

    def flush(self) -> None:
        pass


def main(args: list[str] | None = None) -> int:
    """Under a node agent's socket (``ARGUS_AGENT_SOCKET``) and not yet started by it: the Ray job's entry
    point, which hands the attempt to the agent and follows it (nodes/attach.py). Otherwise run it here."""
    argv = sys.argv[1:] if args is None else args
    spec = parse_args(argv)
    sock = os.environ.get(AGENT_ENV)
    if sock and not os.environ.get(KEY_ENV):
        code = attach.follow(sock, argv, spec, ray_node_id())
        if code is not None:
            return code
    code = run(spec)
    exit_file = os.environ.get(EXIT_FILE_ENV)
    if exit_file:  # the agent's durable word on how this attempt ended, if it cannot wait for us
        try:
            Path(exit_file).write_text(f"{code}\n")
        except OSError:
            pass
    return code


if __name__ == "__main__":
    sys.exit(main())
