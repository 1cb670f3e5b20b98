"""Every process's stack of a task attempt, captured by its launcher when the server asks (a stall).

A stalled run (an NCCL collective that never returns, a dataloader deadlock, a rollout engine waiting on a dead
worker) prints nothing, so its log cannot say where it hangs; each process's Python stack does. The server sees
only the shared filesystem, and the task's processes run on a worker, in a sandbox with a PID namespace of its
own (launcher/jail.py). The launcher runs outside that sandbox, as its parent, so it asks for the stacks through
the attempt's record folder (launcher/attempt_record: ``ask_for_stacks``) and the launcher answers:

* it lists the sandbox's processes by their **host** pids (psutil: the launcher's child and its descendants;
  a pid inside the sandbox means nothing out here) and runs ``py-spy dump --pid <host pid>`` against each Python
  one. py-spy reads the target through ``/proc/<pid>`` and ptrace, which a PID or user namespace does not hide
  from the host's root (measured: a bwrap ``--unshare-pid --unshare-user`` sandbox dumps like a plain process);
* where py-spy is missing, refused (no ptrace: a launcher that is not root under Yama ``ptrace_scope`` ≥ 1,
  gVisor, a seccomp profile) or too slow, the process is still named, with its state and the kernel function it
  waits in (psutil, ``/proc/<pid>/wchan``), and why it has no stack; so is every process that is not Python
  (bwrap, raylet), whose state alone often tells (``disk-sleep`` in ``nfs_wait_bit_killable``);
* bounded: ``PER_PROCESS_S`` per dump, ``TOTAL_S`` for the whole capture, ``MAX_DUMPED`` dumps of at most
  ``MAX_DUMP_BYTES`` each, ``WORKERS`` at a time (the task's own CPUs are busy, or should be).

The text goes to ``<job_dir>/stacks/attempt-<n>-<UTC time>.txt``, in the owner's home, where SFTP and the file
browser show it. The task can change everything there and the launcher may be root, so the file is made by a walk
from the home that follows no link, and never replaces a file. Nothing goes to the attempt's log: output there
counts as progress (scheduler/progress.py) and would clear the very stall being looked at.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import psutil

from argus import home_io
from argus.launcher import attempt_record

FOLDER = "stacks"  # in the task's folder: <job_dir>/stacks/attempt-<n>-<time>.txt
PER_PROCESS_S = 10.0  # one py-spy dump (a healthy one takes well under a second)
TOTAL_S = 60.0  # the whole capture; processes left when it is spent are named without a stack
MAX_DUMPED = 128  # Python processes dumped; the rest are named (a node's task rarely has more than ~60)
MAX_DUMP_BYTES = 64 * 1024  # of one dump's text (deep recursion, thousands of threads)
WORKERS = 4  # dumps at a time
_PYTHON = re.compile(r"^(python|pypy)(\d+(\.\d+)?)?[a-z]?$")


@dataclass(frozen=True)
class Capture:
    text: str
    processes: int  # listed (the launcher's child and all its descendants)
    python: int  # of them Python
    dumped: int  # of those, with a stack from py-spy


def find_py_spy() -> str | None:
    """The py-spy of the launcher's own environment (a pinned dependency of Argus), else one on PATH.

    The launcher runs with ``python -I`` and a PATH that need not hold its environment's ``bin``."""
    return shutil.which("py-spy", path=os.path.dirname(sys.executable)) or shutil.which("py-spy")


def processes(root_pid: int) -> list[psutil.Process]:
    """The process ``root_pid`` and all its descendants (host pids); [] when it is gone."""
    try:
        root = psutil.Process(root_pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


def is_python(proc: psutil.Process) -> bool:
    """A Python interpreter, by its executable's name (``/proc/<pid>/exe``: a Ray worker's rewritten title
    does not hide it), or by its first argument when that cannot be read."""
    try:
        exe = proc.exe()
    except psutil.Error:
        exe = ""
    if not exe:
        try:
            exe = (proc.cmdline() or [""])[0]
        except psutil.Error:
            return False
    return bool(_PYTHON.match(os.path.basename(exe)))


def _proc_file(pid: int, name: str) -> str:
    try:
        return Path(f"/proc/{pid}/{name}").read_text(errors="replace")
    except OSError:
        return ""


def describe(proc: psutil.Process) -> str:
    """One line naming the process: host pid (and the pid its sandbox sees), parent, name, state, what it waits
    in, threads, CPU time and command line (shortened)."""
    pid = proc.pid
    ns = next((line.split()[1:] for line in _proc_file(pid, "status").splitlines() if line.startswith("NSpid:")), [])
    inner = f" ({ns[-1]} in its sandbox)" if len(ns) > 1 else ""
    wchan = _proc_file(pid, "wchan").strip()
    try:
        with proc.oneshot():
            cpu = proc.cpu_times()
            facts = [f"parent {proc.ppid()}", proc.name(), proc.status(),
                     *([f"waiting in {wchan}"] if wchan and wchan != "0" else []),
                     f"{proc.num_threads()} thread(s)", f"CPU {cpu.user + cpu.system:.1f} s"]
            cmdline = " ".join(proc.cmdline()).replace("\n", "\\n")  # one line: a `python -c` script
    except psutil.Error as exc:
        return f"pid {pid}{inner}: gone or unreadable ({type(exc).__name__})"
    cmd = cmdline if len(cmdline) <= 300 else cmdline[:300] + " …"
    if facts[1] == "bwrap":  # the sandbox itself: its arguments are the platform's (the node's paths), not the task's
        cmd = "the task's sandbox (bubblewrap)"
    return f"pid {pid}{inner}: {', '.join(facts)}: {cmd}"


def dump(spy: str | None, pid: int, timeout_s: float) -> tuple[str | None, str | None]:
    """(py-spy's stack text, None) or (None, why there is none)."""
    if spy is None:
        return None, "py-spy is not installed for the launcher"
    if timeout_s <= 0:
        return None, f"not dumped: the capture's {TOTAL_S:g} s were spent"
    try:
        done = subprocess.run([spy, "dump", "--pid", str(pid)], stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return None, f"py-spy gave no stack within {timeout_s:.0f} s"
    except OSError as exc:
        return None, f"cannot run py-spy: {exc}"
    if done.returncode != 0:
        why = (done.stderr or done.stdout).decode(errors="replace").strip().splitlines()
        return None, f"py-spy refused (exit {done.returncode}): {why[-1][:300] if why else 'no message'}"
    text = done.stdout.decode(errors="replace")
    return (text if len(text) <= MAX_DUMP_BYTES else text[:MAX_DUMP_BYTES] + "\n… (cut)\n"), None


def capture(root_pid: int, spy: str | None, *, title: str = "") -> Capture:
    """Every process under ``root_pid``, each named, and each Python one's stack (within the bounds)."""
    started = time.monotonic()
    procs = processes(root_pid)
    python = [p for p in procs if is_python(p)]
    dumped_pids = {p.pid for p in python[:MAX_DUMPED]}

    def one(proc: psutil.Process) -> tuple[str | None, str | None]:
        if proc.pid not in dumped_pids:
            return None, f"not dumped: at most {MAX_DUMPED} Python processes are"
        return dump(spy, proc.pid, min(PER_PROCESS_S, TOTAL_S - (time.monotonic() - started)))

    with ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="argus-py-spy") as pool:
        stacks = dict(zip([p.pid for p in python], pool.map(one, python), strict=True))
    out = [title or f"Stacks of the processes under pid {root_pid}",
           f"captured {datetime.now(UTC):%Y-%m-%d %H:%M:%S} UTC on {socket.gethostname()} by the task's launcher; "
           f"{len(procs)} process(es), {len(python)} Python; pids as the node sees them (and as the sandbox "
           f"does, where that differs); stacks by {'py-spy dump' if spy else 'nobody (py-spy is missing)'}, innermost "
           "call first", ""]
    dumped = 0
    for proc in procs:
        out.append(f"=== {describe(proc)}")
        if proc.pid in stacks:
            text, why = stacks[proc.pid]
            dumped += text is not None
            out.append(text.rstrip("\n") if text is not None else f"(no Python stack: {why})")
        else:
            out.append("(not Python: its state above)")
        out.append("")
    if not procs:
        out.append(f"(no process: pid {root_pid} has ended)")
    return Capture("\n".join(out) + "\n", len(procs), len(python), dumped)


def write_file(home: Path, job_dir: Path, attempt: int, text: str, at: datetime) -> str:
    """``text`` in a new ``<job_dir>/stacks/attempt-<n>-<UTC time>.txt``; its path below ``home``.

    Walked from ``home`` (which the owner cannot replace) without following a link at any step, and created
    exclusively: a link the task planted there is refused (ELOOP, ENOTDIR, EEXIST), never written through."""
    fd = home_io.open_dir(home, job_dir / FOLDER, make=True)
    try:
        stem = f"attempt-{attempt}-{at.astimezone(UTC):%Y%m%dT%H%M%SZ}"
        for n in range(100):
            name = f"{stem}{f'-{n}' if n else ''}.txt"
            try:
                out = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644,
                              dir_fd=fd)
            except FileExistsError:
                continue
            with os.fdopen(out, "w", encoding="utf-8") as f:
                f.write(text)
            return "/".join((*job_dir.relative_to(home).parts, FOLDER, name))
        raise FileExistsError(f"{stem}.txt and 99 more exist")
    finally:
        os.close(fd)


class StackRequests:
    """The launcher's side of the server's stack requests (launcher/attempt_record), looked for at each poll.

    Each request is taken once and answered in a thread of its own: py-spy may take ``TOTAL_S``, and the
    heartbeat, a stop or the child's exit must never wait for it. One capture at a time; a request that comes
    meanwhile waits for the next poll after it."""

    def __init__(self, data_root: Path, job_dir: Path, attempt: int) -> None:
        self.root, self.job_dir, self.attempt = data_root, job_dir, attempt
        self.home = job_dir.parents[1]  # <root>/users/<user>: the driver has checked the job folder's place
        self.thread: threading.Thread | None = None

    def poll(self, pid: int) -> None:
        """Start answering a waiting request about the processes under ``pid`` (the launcher's child)."""
        if self.thread is not None and self.thread.is_alive():
            return
        token = attempt_record.take_stacks_request(self.root, self.job_dir.name, self.attempt)
        if token is None:
            return
        self.thread = threading.Thread(target=self.answer, args=(token, pid), name="argus-stacks", daemon=True)
        self.thread.start()

    def answer(self, token: str, pid: int) -> None:
        task = self.job_dir.name
        try:
            cap = capture(pid, find_py_spy(), title=f"Stacks of task {task}, attempt {self.attempt} "
                                                    f"(asked by the server at {token or '?'}: a stall)")
            rel = write_file(self.home, self.job_dir, self.attempt, cap.text, datetime.now(UTC))
        except Exception as exc:  # noqa: BLE001 - the server hears why; the task must never suffer for it
            attempt_record.answer_stacks(self.root, task, self.attempt, token, file=None,
                                         error=f"{type(exc).__name__}: {exc}"[:300])
            return
        attempt_record.answer_stacks(self.root, task, self.attempt, token, file=rel, processes=cap.processes,
                                     python=cap.python, dumped=cap.dumped)
