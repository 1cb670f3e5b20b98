"""Outage budget (issue 36): a task trains through a killed platform of 10 s, 120 s, 600 s, in one attempt.

    .venv/bin/python bench/outage.py [OUTAGE_S ...] [--step-seconds 1] [--tail 180] [--reps 20] [--keep]

For each outage length (default 10 120 600), on a fresh state dir:

1. ``argus up`` starts as the e2e suite starts it (tests/e2e/test_up_restart.py ``up()``: its own session,
   ``--gpus 0 --no-sftp``; the scheduler at its default tick), and the admin submits a synthetic trainer
   (``argus.jobs.steps``: one ``step:K`` line every ``--step-seconds``, for the outage + ``--tail`` s);
2. once it is RUNNING with a few steps in its log, ``argus up`` and every process of its Ray are SIGKILLed
   (tests/e2e/test_training_continuity.py ``_kill_platform``, plus ``argus up``'s own session), keeping the
   node agent and the task; nothing of the platform runs for the outage;
3. the launcher (``status.json`` ``driver_pid``) must still live and the log must have gained steps;
4. ``argus up`` starts again on the same state dir and port: seconds until ``/api/v2/health`` answers and
   until the API shows the task RUNNING and followed through its attempt record (scheduler/monitor.py
   ``FOLLOWED``); then the task must end SUCCEEDED with one attempt, the same launcher pid, and every step
   in its log once, in order.

One line per outage, then the node agent's memory (RSS/PSS) and CPU seconds at each run's end, and what the
attempt's cgroup costs a task start: the agent's create + limit + join + kill + remove around a trivial child
(``/bin/true``), against a plain ``Popen`` of it (root and a writable cgroup hierarchy needed; else skipped).
Every ``argus up`` is stopped with SIGTERM to its process group at the end, and no process naming the state
dir may be left (leftovers are killed and reported).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.waiting import wait_until  # noqa: E402 - after the path

from argus.scheduler.monitor import FOLLOWED  # noqa: E402

STEP_RE = re.compile(rb"^step:(\d+) - ", re.M)
FOLLOWED_EVENT = "followed through its attempt record"
TERMINAL = {"SUCCEEDED", "FAILED", "CANCELED"}


# -- the platform, as the e2e suite drives it -------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def up(state: Path, port: int, log: str) -> subprocess.Popen[bytes]:
    """``argus up`` on ``state`` in its own session (tests/e2e/test_up_restart.py ``up()``, default tick)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ARGUS_", "RAY_ADDRESS"))}
    env["ARGUS_VERL_VALIDATION"] = "off"
    state.mkdir(exist_ok=True)
    return subprocess.Popen([sys.executable, "-m", "argus.cli.main", "up", "--state-dir", str(state),
                             "--port", str(port), "--gpus", "0", "--no-sftp"],
                            env=env, stdout=open(state / log, "wb"), stderr=subprocess.STDOUT,  # noqa: SIM115
                            start_new_session=True)


def _tail(path: Path, n: int = 3000) -> str:
    try:
        return path.read_text(errors="replace")[-n:]
    except OSError:
        return f"(no {path.name})"


def wait_healthy(proc: subprocess.Popen[bytes], port: int, out: Path, timeout: float = 900) -> None:
    def healthy() -> bool:
        assert proc.poll() is None, f"argus up exited {proc.returncode}:\n{_tail(out)}"
        return httpx.get(f"http://127.0.0.1:{port}/api/v2/health", timeout=2).status_code == 200

    wait_until(healthy, timeout, every=0.2, ignore=(httpx.TransportError,),
               what=lambda: f"argus up healthy:\n{_tail(out)}")


def admin_token(proc: subprocess.Popen[bytes], out: Path, timeout: float = 900) -> str:
    """The first start prints the admin token once health answers (tests/e2e/test_two_up.py ``admin_token``)."""
    def token() -> str | None:
        said = out.read_text(errors="replace")
        assert proc.poll() is None, f"argus up exited {proc.returncode}:\n{said[-3000:]}"
        found = [line.split(": ", 1)[1] for line in said.splitlines() if line.startswith("admin token: ")]
        return found[0] if found else None

    return wait_until(token, timeout, every=0.2, what=lambda: f"the admin token:\n{_tail(out)}")


def processes_of(state: Path) -> list[psutil.Process]:
    """Every process whose command line names this state dir or its short Ray temp-dir link (test_two_up.py)."""
    link = f"argus-{hashlib.sha1(str(state / 'ray').encode()).hexdigest()[:12]}"  # noqa: S324 - a name
    found = []
    for p in psutil.process_iter(["cmdline"]):
        cmd = " ".join(p.info["cmdline"] or [])
        if str(state) in cmd or link in cmd:
            found.append(p)
    return found


def kill_platform(state: Path, up_pid: int, keep: set[int]) -> int:
    """SIGKILL ``argus up`` and every process of its Ray and of its own session, not ``keep``; how many."""
    record = json.loads((state / "embedded-ray.json").read_text())
    sessions = {n["pid"] for n in record["nodes"]} | {up_pid}
    victims = [up_pid]
    for p in psutil.process_iter():
        try:
            if p.pid in keep or p.pid == up_pid:
                continue
            if os.getsid(p.pid) in sessions or p.pid in sessions:
                victims.append(p.pid)
        except (psutil.Error, ProcessLookupError):
            continue
    for pid in victims:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return len(victims)


def stop_all(procs: list[subprocess.Popen[bytes]], state: Path) -> list[str]:
    """SIGTERM each live ``argus up``'s group, wait; then what was left naming the state dir (killed)."""
    terminate(procs)
    return kill_left(lambda: processes_of(state))


def terminate(procs: list[subprocess.Popen[bytes]]) -> None:
    """SIGTERM each live process's group and wait for it (SIGKILL after 300 s)."""
    for proc in procs:
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    for proc in procs:
        try:
            proc.wait(300)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)


def kill_left(processes: Callable[[], list[psutil.Process]]) -> list[str]:
    """Wait up to 60 s for ``processes()`` to be empty; then kill what is left and say what it was."""
    try:
        wait_until(lambda: not processes(), 60, every=0.5)
        return []
    except AssertionError:
        left = []
        for p in processes():
            try:
                left.append(f"{p.pid} {' '.join(p.cmdline())[:160]}")
                p.kill()
            except psutil.Error:
                pass
        return left


# -- one outage ----------------------------------------------------------------------------------------

def steps_of(log: Path) -> list[int]:
    try:
        return [int(m.group(1)) for m in STEP_RE.finditer(log.read_bytes())]
    except OSError:
        return []


def gap_of(steps: list[int], total: int) -> str:
    """'' when the log has every step 1..total once, in order; else what is wrong."""
    if steps == list(range(1, total + 1)):
        return ""
    seen = set(steps)
    missing = [k for k in range(1, total + 1) if k not in seen]
    repeated = sorted({k for k in steps if steps.count(k) > 1})
    out_of_order = any(b <= a for a, b in zip(steps, steps[1:], strict=False))
    return f"missing {missing[:10]}{'…' if len(missing) > 10 else ''} repeated {repeated[:10]} " \
           f"out of order {out_of_order} ({len(steps)} lines)"


def agent_usage(state: Path) -> dict[str, Any]:
    try:
        proc = psutil.Process(int((state / "agent" / "agent.pid").read_text()))
        mem, cpu = proc.memory_full_info(), proc.cpu_times()
        return {"pid": proc.pid, "rss_mib": mem.rss / 2**20, "pss_mib": getattr(mem, "pss", 0) / 2**20,
                "cpu_s": cpu.user + cpu.system, "age_s": time.time() - proc.create_time(),
                "threads": proc.num_threads()}
    except (OSError, ValueError, psutil.Error) as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}


def run_outage(outage: float, *, step_s: float, tail_s: float, keep: bool) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix=f"argus-outage-{int(outage)}-"))
    state, port = tmp / "state", free_port()
    total = math.ceil((outage + tail_s) / step_s)
    row: dict[str, Any] = {"outage_s": outage, "state": str(state), "total_steps": total}
    procs: list[subprocess.Popen[bytes]] = []
    try:
        first = up(state, port, "out1.log")
        procs.append(first)
        t = time.monotonic()
        token = admin_token(first, state / "out1.log")
        row["first_up_s"] = time.monotonic() - t
        client = httpx.Client(base_url=f"http://127.0.0.1:{port}", headers={"Authorization": f"Bearer {token}"},
                              timeout=60)
        home = state / "private" / "users" / client.get("/api/v2/me").json()["name"]
        command = (f"python3 -m argus.jobs.steps trainer.total_training_steps={total} step_seconds={step_s} "
                   "trainer.save_freq=0")
        body = ("kind: advanced\nworkload: job\nnnodes: 1\nn_gpus_per_node: 0\npriority: 0\n"
                f"name: outage-{int(outage)}\ncommand: {command}\n")
        r = client.post("/api/v2/tasks", content=body.encode(), headers={"Content-Type": "application/yaml"})
        assert r.status_code == 201, r.text
        tid = row["task"] = r.json()["task_id"]
        log, status_file = home / "jobs" / tid / "logs" / "attempt-1.log", home / "jobs" / tid / "status.json"

        def task() -> dict[str, Any]:
            return client.get(f"/api/v2/tasks/{tid}").json()

        def running_with_steps() -> bool:
            t = task()
            assert t["status"] not in TERMINAL, f"{tid} ended {t['status']}: {t.get('status_message')}"
            return t["status"] == "RUNNING" and len(steps_of(log)) >= 3

        wait_until(running_with_steps, 900, every=0.5, what=lambda: f"{tid} RUNNING with 3 steps in {log}")
        driver_pid = json.loads(status_file.read_text())["driver_pid"]
        agent_pid = int((state / "agent" / "agent.pid").read_text())
        training = {driver_pid, agent_pid, *(c.pid for c in psutil.Process(driver_pid).children(recursive=True))}

        row["killed"] = kill_platform(state, first.pid, keep=training)
        first.wait(30)
        before = steps_of(log)
        row["step_at_kill"] = before[-1] if before else None
        time.sleep(outage)
        row["launcher_alive"] = psutil.pid_exists(driver_pid)
        row["agent_alive"] = psutil.pid_exists(agent_pid)
        row["steps_during"] = len(steps_of(log)) - len(before)

        second = up(state, port, "out2.log")
        procs.append(second)
        t0 = time.monotonic()
        wait_healthy(second, port, state / "out2.log")
        row["healthy_s"] = time.monotonic() - t0

        def followed() -> dict[str, Any] | None:
            t = task()
            if t["status"] in TERMINAL:
                return t
            if t["status"] == "RUNNING" and (t.get("status_message") or "").startswith(FOLLOWED):
                return t
            return None

        seen = wait_until(followed, 900, every=0.25, ignore=(httpx.TransportError,),
                          what=lambda: f"{tid} followed: {task()}")
        row["followed_s"] = time.monotonic() - t0 if seen["status"] == "RUNNING" else None
        row["status_at_follow"] = seen["status"]

        final = wait_until(lambda: (t := task())["status"] in TERMINAL and t, total * step_s * 3 + 900, every=1,
                           what=lambda: f"{tid} to end")
        row["status"] = final["status"]
        row["message"] = final.get("status_message")
        row["attempts"] = len(final["attempts"])
        status = json.loads(status_file.read_text())
        row["same_pid"] = status.get("driver_pid") == driver_pid
        row["driver_pids"] = (driver_pid, status.get("driver_pid"))
        row["gap"] = gap_of(steps_of(log), total)
        row["events"] = [f"{e['to_status']}: {e['message']}" for e in client.get(f"/api/v2/tasks/{tid}/events").json()]
        row["followed_event"] = any(FOLLOWED_EVENT in e for e in row["events"])
        row["agent"] = agent_usage(state)
        row["up_again_adopted"] = "adopted" in _tail(state / "out2.log", 10**6)
    except Exception as exc:  # noqa: BLE001 - one outage's failure is reported with its logs, the next runs
        row["error"] = f"{type(exc).__name__}: {exc}"[:4000]
        keep = True
    finally:
        row["leftovers"] = stop_all(procs, state)
        row["exit_codes"] = [p.returncode for p in procs]
    if not keep and not row.get("leftovers") and row.get("attempts") == 1 and not row.get("gap"):
        shutil.rmtree(tmp, ignore_errors=True)
        row["state"] += " (removed)"
    return row


def line(row: dict[str, Any]) -> str:
    def s(v: float | None) -> str:
        return f"{v:.1f}" if isinstance(v, float) else "—"

    return (f"outage {row['outage_s']:>5.0f} s | steps during outage {row.get('steps_during', '—')} | "
            f"restart→healthy {s(row.get('healthy_s'))} s | restart→followed {s(row.get('followed_s'))} s | "
            f"final {row.get('status', '—')} | attempts {row.get('attempts', '—')} | "
            f"same pid {'yes' if row.get('same_pid') else 'no'} | gap {'yes' if row.get('gap') else 'no'}")


# -- the attempt's cgroup on task start ----------------------------------------------------------------

def cgroup_overhead(reps: int) -> dict[str, Any] | str:
    """The agent's own sequence around a trivial child (nodes/agent.py ``start`` and ``_finish``), vs a plain
    Popen: ``<attempt>`` + ``task`` + ``launcher`` created, ``task`` limited, the child joining ``launcher``
    between fork and exec, then the group killed (verified empty) and removed."""
    from argus.core.launch import Limits
    from argus.nodes import cgroups

    layout = cgroups.detect()
    if layout is None:
        return "skipped: no writable cgroup hierarchy here (needs root)"
    base = f"argus/bench-outage-{os.getpid()}"
    limits = Limits(memory_bytes=2 << 30, pids_max=4096, cpus=1.0)
    child = ["/bin/true"]
    plain, forked, grouped, setup, spawn, teardown, missing = [], [], [], [], [], [], set()
    for i in range(reps):
        t = time.perf_counter()
        subprocess.Popen(child, start_new_session=True, stdin=subprocess.DEVNULL).wait()
        plain.append(time.perf_counter() - t)
        t = time.perf_counter()  # any preexec_fn makes Popen fork + exec instead of a vfork/posix_spawn
        subprocess.Popen(child, start_new_session=True, stdin=subprocess.DEVNULL, preexec_fn=_nothing).wait()
        forked.append(time.perf_counter() - t)

        group = cgroups.Group(layout, f"{base}/a{i}")
        task, launcher = group.child("task"), group.child("launcher")
        t = time.perf_counter()
        group.create()
        task.create()
        launcher.create()
        missing.update(task.limit(limits))
        t_setup = time.perf_counter()
        proc = subprocess.Popen(child, start_new_session=True, stdin=subprocess.DEVNULL, preexec_fn=launcher.join)
        proc.wait()
        t_run = time.perf_counter()
        emptied = group.kill()
        gone = group.remove()
        t_end = time.perf_counter()
        assert emptied and gone, f"group {group.rel}: emptied {emptied}, removed {gone}"
        grouped.append(t_end - t)
        setup.append(t_setup - t)
        spawn.append(t_run - t_setup)
        teardown.append(t_end - t_run)
    cgroups.Group(layout, base).remove()
    return {"layout": layout.version, "hierarchies": len(layout.folders(base)), "reps": reps,
            "plain": plain, "forked": forked, "grouped": grouped, "setup": setup, "spawn": spawn, "teardown": teardown, "missing": sorted(missing)}


def _nothing() -> None:
    pass


def ms(xs: list[float]) -> str:
    return f"median {statistics.median(xs) * 1000:.1f} ms, max {max(xs) * 1000:.1f} ms"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outages", nargs="*", type=float, default=[10, 120, 600], help="head outage lengths (s)")
    ap.add_argument("--step-seconds", type=float, default=1.0, help="the trainer's seconds per step")
    ap.add_argument("--tail", type=float, default=180, help="training seconds beyond the outage")
    ap.add_argument("--reps", type=int, default=20, help="task starts timed with and without the cgroup")
    ap.add_argument("--keep", action="store_true", help="keep every state dir (a failed run's is always kept)")
    args = ap.parse_args()

    rows = []
    for outage in args.outages:
        load = os.getloadavg()[0]
        row = run_outage(outage, step_s=args.step_seconds, tail_s=args.tail, keep=args.keep)
        row["load_before"], row["load_after"] = load, os.getloadavg()[0]
        rows.append(row)
        print(line(row), flush=True)
        print(f"  details: {json.dumps({k: v for k, v in row.items() if k != 'events'}, default=str)}", flush=True)
        print(f"  events: {row.get('events')}", flush=True)
    print(f"\nload average 1 min before/after each run on {os.cpu_count()} CPUs: "
          + ", ".join(f"{r['outage_s']:.0f} s: {r['load_before']:.1f}/{r['load_after']:.1f}" for r in rows))
    print("outage budget:")
    for row in rows:
        print("  " + line(row))
    print("node agent at each run's end (after the task ended, before argus up's SIGTERM):")
    for row in rows:
        a = row.get("agent") or {"error": "not measured"}
        if "error" in a:
            print(f"  outage {row['outage_s']:.0f} s: {a['error']}")
        else:
            print(f"  outage {row['outage_s']:.0f} s: pid {a['pid']}, RSS {a['rss_mib']:.1f} MiB, PSS "
                  f"{a['pss_mib']:.1f} MiB, CPU {a['cpu_s']:.2f} s (user+system) over {a['age_s']:.0f} s, "
                  f"{a['threads']} threads")
    res = cgroup_overhead(args.reps)
    if isinstance(res, str):
        print(f"cgroup overhead on task start: {res}")
    else:
        extra = [g - p for g, p in zip(res["grouped"], res["plain"], strict=True)]
        print(f"cgroup overhead on task start ({res['layout']}, {res['hierarchies']} hierarchies, {res['reps']} reps, "
              f"child {'/bin/true'}):")
        print(f"  plain Popen+wait:                                   {ms(res['plain'])}")
        print(f"  Popen(preexec_fn=no-op)+wait:                       {ms(res['forked'])}")
        print(f"  create+limit+Popen(join)+wait+kill+remove:          {ms(res['grouped'])}")
        print(f"    of which create(3 groups)+limit:                  {ms(res['setup'])}")
        print(f"    of which Popen(preexec_fn=join)+wait:             {ms(res['spawn'])}")
        print(f"    of which kill(verify empty)+remove:               {ms(res['teardown'])}")
        print(f"  overhead per start vs plain Popen (paired):         {ms(extra)}")
        if res["missing"]:
            print(f"  limits that could not be set: {res['missing']}")
    if any(r.get("error") or r.get("attempts") != 1 or r.get("gap") or r.get("leftovers") for r in rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
