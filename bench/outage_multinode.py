"""Outage of the platform head under a 2-node task (issue 36): both nodes train through it, in one attempt.

    .venv/bin/python bench/outage_multinode.py [OUTAGE_S ...] [--step-seconds 1] [--tail 120] [--keep]

For each outage length (default 30), on a fresh folder, as a real cluster runs on one host:

1. ``argus head`` (Ray head + server + scheduler, discovery file on the data root) and two ``argus worker``
   processes (``gpu-a``, ``gpu-b``: one logical GPU each, their own state dirs and node agents) that join it
   through the discovery file, as tests/e2e/test_gang_on_workers.py starts them (each in its own session);
2. the admin submits a 2 × 1-GPU task running ``argus.jobs.gang_steps``: one actor on each node of the task's
   private Ray, each printing ``step:K - node:N`` every ``--step-seconds`` and appending it to
   ``<job>/steps/node-N.log``, for the outage + ``--tail`` s;
3. once RUNNING with 3 steps on each node, the platform head is SIGKILLed: ``argus head`` and every process of
   its Ray's session (bench/outage.py ``kill_platform``). The workers are left as a dead head machine leaves
   them: their ``argus worker``, raylets, agents and the task's processes run on; each worker's watchdog
   notices the silent GCS and the new head generation by itself (nodes/watchdog.py) and re-joins;
4. after OUTAGE s ``argus head`` starts again on the same state dir and ports: seconds until
   ``/api/v2/health`` answers and until the API shows the task followed through its attempt record
   (scheduler/monitor.py ``FOLLOWED``), and until both workers are back in the head's node list;
5. checks: each node's launcher (node 1: ``status.json`` ``driver_pid``; node 2: its agent's record
   ``<task>.1.node-2``) and each node's trainer (the ``ray::Stepper`` process below it) have the same PID and
   start time before the kill and after the restart; steps advanced on both nodes during the outage; each
   node's ``steps/node-N.log`` and the task log's forwarded lines of each node hold every step once, in order;
   the task ends SUCCEEDED with one attempt; both nodes' agent records say the attempt ended and its cgroup was
   emptied (no attempt group left in any cgroup hierarchy); after a graceful stop of the workers and the head
   no process names the folder.

One line per outage with the figures; exit status 1 when a check failed (the line says which).

Measured on one 2-core host shared with other test runs (load 4-16), 1 s steps:

* outage 30 s: 30 steps on each node during it; restart → healthy 13-30 s, → followed 14-33 s, → both workers
  back in the node list 40-69 s; SUCCEEDED in one attempt, same PIDs, no gap (3 runs).
* outage 120 s: 120 steps on each node; healthy 56 s, followed 57 s, workers back 84 s; SUCCEEDED, one attempt.
  A second run (healthy 31 s, followed 32 s, workers back 50 s) went through the outage as well, then the task's
  private Ray's memory monitor killed a trainer actor (the host at 94 % from another tenant's vLLM run: Ray
  judges the host's memory, not the task's cgroup) — and in another run the platform Ray's killed the task's
  JobSupervisor, which failed the task while its launcher ran: not outage failures, but not shown away either.

What it found: node 2 of a task whose node actor went with the platform's Ray never ended (its join slept for
ever; now it follows its raylet: launcher/private_ray.py ``stay_joined``), and Ray ended the first node's launcher
60 s into the outage, since it held the gang's platform-Ray connection itself (the task came back as attempt 2;
now a child holds it: launcher/gang_keeper.py).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import psutil

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.outage import (  # noqa: E402
    FOLLOWED_EVENT,
    TERMINAL,
    _tail,
    free_port,
    gap_of,
    kill_left,
    kill_platform,
    terminate,
)
from tests.waiting import wait_until  # noqa: E402 - after the path

from argus.nodes.local import ray_temp_dir  # noqa: E402
from argus.scheduler.monitor import FOLLOWED  # noqa: E402

WORKERS = ("gpu-a", "gpu-b")
NODES = 2


# -- the cluster: argus head + two argus workers ---------------------------------------------------------

class Cluster:
    def __init__(self, tmp: Path) -> None:
        self.tmp, self.data = tmp, tmp / "data"
        self.head_state = tmp / "head"
        self.port, self.ray_port, self.dash_port = free_port(), free_port(), free_port()
        self.token = secrets.token_urlsafe(24)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("ARGUS_", "RAY_ADDRESS"))}
        self.env.update(ARGUS_DATA_ROOT=str(self.data), ARGUS_VERL_VALIDATION="off", ARGUS_TASK_JAIL="bwrap",
                        ARGUS_SFTP_ENABLED="false", ARGUS_ADMIN_TOKEN=self.token)
        self.heads: list[subprocess.Popen[bytes]] = []
        self.workers: list[subprocess.Popen[bytes]] = []

    def start_head(self, log: str) -> subprocess.Popen[bytes]:
        self.head_state.mkdir(parents=True, exist_ok=True)
        self.data.mkdir(parents=True, exist_ok=True)
        proc = subprocess.Popen(
            [sys.executable, "-m", "argus.cli.main", "head", "--state-dir", str(self.head_state), "--host", "127.0.0.1",
             "--port", str(self.port), "--ray-port", str(self.ray_port), "--dashboard-port", str(self.dash_port)],
            env=self.env, stdout=open(self.tmp / log, "wb"), stderr=subprocess.STDOUT,  # noqa: SIM115
            start_new_session=True)
        self.heads.append(proc)
        return proc

    def start_workers(self) -> None:
        for name in WORKERS:
            self.workers.append(subprocess.Popen(
                [sys.executable, "-m", "argus.cli.main", "worker", "--discovery", str(self.data / ".argus" / "head.json"),
                 "--data-root", str(self.data), "--name", name, "--gpus", "1", "--cpus", "2",
                 "--state-dir", str(self.tmp / name)],
                env=self.env, stdout=open(self.tmp / f"{name}.out", "ab"), stderr=subprocess.STDOUT,  # noqa: SIM115
                start_new_session=True))

    @property
    def head(self) -> subprocess.Popen[bytes]:
        return self.heads[-1]

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=f"http://127.0.0.1:{self.port}",
                            headers={"Authorization": f"Bearer {self.token}"}, timeout=60)

    def wait_healthy(self, out: str, timeout: float = 900) -> None:
        def healthy() -> bool:
            assert self.head.poll() is None, f"argus head exited {self.head.returncode}:\n{_tail(self.tmp / out)}"
            return httpx.get(f"http://127.0.0.1:{self.port}/api/v2/health", timeout=2).status_code == 200

        wait_until(healthy, timeout, every=0.2, ignore=(httpx.TransportError,),
                   what=lambda: f"argus head healthy:\n{_tail(self.tmp / out)}")

    def nodes_up(self, client: httpx.Client) -> int:
        view = client.get("/api/v2/nodes").json()
        return len([n for n in view.get("nodes", []) if n.get("alive", True) and n.get("gpus_total")])

    def agent_record(self, key: str) -> tuple[str, dict[str, Any]] | None:
        for name in WORKERS:
            path = self.tmp / name / "agent" / "attempts" / f"{key}.json"
            if path.is_file():
                return name, json.loads(path.read_text())
        return None

    def stop(self) -> list[str]:
        """SIGTERM the workers' and the heads' sessions, wait; what is left naming the folder (killed)."""
        terminate(self.workers)
        terminate(self.heads)
        return kill_left(self.processes)

    def processes(self) -> list[psutil.Process]:
        """Every process whose command line names the folder or one of its Ray temp-dir links."""
        names = [str(self.tmp), *(str(ray_temp_dir(d)) for d in (self.head_state, *(self.tmp / w for w in WORKERS))
                                  if (d / "ray").exists())]
        found = []
        for p in psutil.process_iter(["cmdline"]):
            cmd = " ".join(p.info["cmdline"] or [])
            if p.pid != os.getpid() and any(n in cmd for n in names):
                found.append(p)
        return found


# -- what runs the task on each node ---------------------------------------------------------------------

STEP_RE = re.compile(rb"^step:(\d+) - node:(\d+) pid:(\d+)$", re.M)
FORWARDED_RE = re.compile(rb"^(?:\x1b\[[\d;]*m)?\(Stepper pid=\d+[^)]*\)(?:\x1b\[[\d;]*m)? step:(\d+) - node:(\d+) pid:\d+",
                          re.M)  # Ray's prefix, coloured


def node_steps(job: Path, node: int) -> list[int]:
    try:
        return [int(m.group(1)) for m in STEP_RE.finditer((job / "steps" / f"node-{node}.log").read_bytes())]
    except OSError:
        return []


def node_trainer_pids(job: Path, node: int) -> set[int]:
    """The pids (in the sandbox) each node's trainer wrote with its steps: one, if one process did them all."""
    try:
        return {int(m.group(3)) for m in STEP_RE.finditer((job / "steps" / f"node-{node}.log").read_bytes())}
    except OSError:
        return set()


def forwarded_steps(log: Path, node: int) -> list[int]:
    try:
        return [int(m.group(1)) for m in FORWARDED_RE.finditer(log.read_bytes()) if int(m.group(2)) == node]
    except OSError:
        return []


def identity(pid: int) -> tuple[int, float] | None:
    try:
        return pid, psutil.Process(pid).create_time()
    except psutil.Error:
        return None


def trainers_below(pid: int) -> list[tuple[int, float]]:
    """The ``ray::Stepper`` processes (host pids, start times) below a node's launcher."""
    out = []
    try:
        for c in psutil.Process(pid).children(recursive=True):
            try:
                if " ".join(c.cmdline()).startswith("ray::Stepper"):
                    out.append((c.pid, c.create_time()))
            except psutil.Error:
                continue
    except psutil.Error:
        pass
    return sorted(out)


def launchers(cluster: Cluster, tid: str, job: Path) -> dict[int, int]:
    """Node → its launcher's pid: node 1's from status.json, node k's from its agent's record."""
    out = {1: json.loads((job / "status.json").read_text())["driver_pid"]}
    for k in range(2, NODES + 1):
        found = cluster.agent_record(f"{tid}.1.node-{k}")
        if found:
            out[k] = found[1]["pid"]
    return out


def cgroups_left(records: list[dict[str, Any]]) -> list[str]:
    from argus.nodes import cgroups

    layout = cgroups.detect()
    if layout is None:
        return []
    return [str(f) for r in records if r.get("cgroup") for f in layout.folders(r["cgroup"]) if f.exists()]


# -- one outage ------------------------------------------------------------------------------------------

def run_outage(outage: float, *, step_s: float, tail_s: float, keep: bool) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix=f"argus-mn-{int(outage)}-"))
    cluster = Cluster(tmp)
    total = math.ceil((outage + tail_s) / step_s)
    row: dict[str, Any] = {"outage_s": outage, "folder": str(tmp), "total_steps": total, "failed": []}
    fail = row["failed"].append
    try:
        cluster.start_head("head1.out")
        cluster.wait_healthy("head1.out")
        cluster.start_workers()
        client = cluster.client()
        wait_until(lambda: cluster.nodes_up(client) == NODES, 300, every=0.5,
                   what=lambda: f"both workers in the head's node list: {client.get('/api/v2/nodes').json()}")
        home = cluster.data / "users" / client.get("/api/v2/me").json()["name"]
        command = f"python3 -m argus.jobs.gang_steps nodes={NODES} total={total} step_seconds={step_s}"
        body = (f"kind: advanced\nworkload: job\nnnodes: {NODES}\nn_gpus_per_node: 1\npriority: 0\n"
                f"name: outage-mn-{int(outage)}\ncommand: {command}\n")
        r = client.post("/api/v2/tasks", content=body.encode(), headers={"Content-Type": "application/yaml"})
        assert r.status_code == 201, r.text
        tid = row["task"] = r.json()["task_id"]
        job = home / "jobs" / tid
        log = job / "logs" / "attempt-1.log"

        def task() -> dict[str, Any]:
            return client.get(f"/api/v2/tasks/{tid}").json()

        def running_with_steps() -> bool:
            t = task()
            assert t["status"] not in TERMINAL, f"{tid} ended {t['status']}: {t.get('status_message')}"
            return t["status"] == "RUNNING" and all(len(node_steps(job, k)) >= 3 for k in range(1, NODES + 1))

        wait_until(running_with_steps, 900, every=0.5,
                   what=lambda: f"{tid} RUNNING with 3 steps on each node:\n{_tail(log)}")
        pids = launchers(cluster, tid, job)
        if len(pids) != NODES:
            fail(f"launchers found for nodes {sorted(pids)} only")
        before = {k: (identity(p), trainers_below(p)) for k, p in pids.items()}
        row["launcher_pids"] = {k: p for k, p in pids.items()}
        row["trainer_pids"] = {k: [t[0] for t in v[1]] for k, v in before.items()}
        for k, (_, trainers) in before.items():
            if len(trainers) != 1:
                fail(f"node {k}: {len(trainers)} ray::Stepper processes below its launcher")
        keep_pids = {p.pid for k in pids for p in [psutil.Process(pids[k]), *psutil.Process(pids[k]).children(True)]}

        row["killed"] = kill_platform(cluster.head_state, cluster.head.pid, keep=keep_pids)
        t_kill = time.monotonic()
        cluster.head.wait(30)
        at_kill = {k: len(node_steps(job, k)) for k in range(1, NODES + 1)}
        row["step_at_kill"] = at_kill
        time.sleep(max(0.0, outage - (time.monotonic() - t_kill)))
        row["steps_during"] = {k: len(node_steps(job, k)) - at_kill[k] for k in range(1, NODES + 1)}
        for k, n in row["steps_during"].items():
            if n < 0.5 * outage / step_s:
                fail(f"node {k}: {n} steps during a {outage:.0f} s outage")
        row["alive_after_outage"] = {k: identity(p) == before[k][0] for k, p in pids.items()}

        cluster.start_head("head2.out")
        t0 = time.monotonic()
        cluster.wait_healthy("head2.out")
        row["healthy_s"] = time.monotonic() - t0

        def followed() -> dict[str, Any] | None:
            t = task()
            if t["status"] in TERMINAL or len(t["attempts"]) > 1:  # ended, or lost and retried: not followed
                return t
            if t["status"] == "RUNNING" and (t.get("status_message") or "").startswith(FOLLOWED):
                return t
            return None

        seen = wait_until(followed, 900, every=0.25, ignore=(httpx.TransportError,),
                          what=lambda: f"{tid} followed: {task()}")
        row["followed_s"] = time.monotonic() - t0 if seen["status"] == "RUNNING" and len(seen["attempts"]) == 1 else None
        if row["followed_s"] is None:
            fail(f"not followed after the restart: {seen['status']}, attempt {len(seen['attempts'])}: "
                 f"{seen.get('status_message')}")
        row["status_at_follow"] = seen["status"]
        try:
            wait_until(lambda: cluster.nodes_up(client) == NODES, 300, every=0.5)
            row["rejoined_s"] = time.monotonic() - t0
        except AssertionError:
            fail("the workers did not re-join the restarted head within 300 s")
        after = {k: (identity(p), trainers_below(p)) for k, p in pids.items()}
        for k in before:
            if after[k] != before[k]:
                fail(f"node {k}: launcher/trainer before {before[k]} after {after[k]}")
        steps_then = {k: len(node_steps(job, k)) for k in range(1, NODES + 1)}

        final = wait_until(lambda: (t := task())["status"] in TERMINAL and t, total * step_s * 3 + 900, every=1,
                           what=lambda: f"{tid} to end")
        row["status"], row["message"], row["attempts"] = final["status"], final.get("status_message"), len(final["attempts"])
        if final["status"] != "SUCCEEDED" or row["attempts"] != 1:
            fail(f"ended {final['status']} after {row['attempts']} attempt(s): {final.get('status_message')}")
        if any(len(node_steps(job, k)) <= steps_then[k] for k in steps_then):
            fail(f"no step after the restart on some node: {steps_then}")
        status = json.loads((job / "status.json").read_text())
        if status.get("driver_pid") != pids[1] or status.get("exit_code") != 0:
            fail(f"status.json: driver_pid {status.get('driver_pid')} (was {pids[1]}), exit {status.get('exit_code')}")
        for k in range(1, NODES + 1):
            gap = gap_of(node_steps(job, k), total)
            if gap:
                fail(f"node {k}'s steps/node-{k}.log: {gap}")
            if len(node_trainer_pids(job, k)) != 1:
                fail(f"node {k}'s steps come from pids {sorted(node_trainer_pids(job, k))}")
            gap = gap_of(forwarded_steps(log, k), total)
            if gap:
                fail(f"node {k}'s steps in the task log: {gap}")
        events = [f"{e['to_status']}: {e['message']}" for e in client.get(f"/api/v2/tasks/{tid}/events").json()]
        row["events"] = events
        if not any(FOLLOWED_EVENT in e for e in events):
            fail("no 'followed through its attempt record' event")
        keys = [f"{tid}.1", *(f"{tid}.1.node-{k}" for k in range(2, NODES + 1))]
        records = []
        for key in keys:
            try:
                found = wait_until(lambda key=key: (f := cluster.agent_record(key)) and f[1].get("finished_at") and f,
                                   120, every=0.5)
            except AssertionError:
                left = cluster.agent_record(key)
                fail(f"agent record {key}: not finished 120 s after the task: "
                     f"{left and {k: v for k, v in left[1].items() if k != 'argv'}}")
                continue
            rec = found[1]
            records.append(rec)
            row.setdefault("agent_records", {})[key] = {"worker": found[0], **{
                f: rec.get(f) for f in ("exit_code", "emptied", "stop_requested_at", "cgroup")}}
            if rec.get("emptied") is False or rec.get("exit_code") not in (0, 143):
                fail(f"agent record {key}: exit {rec.get('exit_code')}, emptied {rec.get('emptied')}")
        left = cgroups_left(records)
        if left:
            fail(f"cgroups left: {left}")
    except Exception as exc:  # noqa: BLE001 - one outage's failure is reported with its logs, the next runs
        fail(f"{type(exc).__name__}: {exc}"[:4000])
    finally:
        row["leftovers"] = cluster.stop()
        row["exit_codes"] = {"heads": [p.returncode for p in cluster.heads],
                             "workers": [p.returncode for p in cluster.workers]}
        if row["leftovers"]:
            fail(f"processes left: {row['leftovers']}")
    if not keep and not row["failed"]:
        shutil.rmtree(tmp, ignore_errors=True)
        row["folder"] += " (removed)"
    return row


def line(row: dict[str, Any]) -> str:
    def s(v: float | None) -> str:
        return f"{v:.1f}" if isinstance(v, float) else "—"

    during = row.get("steps_during") or {}
    return (f"outage {row['outage_s']:>5.0f} s | steps during outage "
            f"{' / '.join(f'node {k}: {n}' for k, n in during.items()) or '—'} | "
            f"restart→healthy {s(row.get('healthy_s'))} s | restart→followed {s(row.get('followed_s'))} s | "
            f"restart→both workers back {s(row.get('rejoined_s'))} s | final {row.get('status', '—')} | "
            f"attempts {row.get('attempts', '—')} | {'ok' if not row['failed'] else 'FAILED: ' + '; '.join(row['failed'])}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outages", nargs="*", type=float, default=[30], help="head outage lengths (s)")
    ap.add_argument("--step-seconds", type=float, default=1.0, help="the trainers' seconds per step")
    ap.add_argument("--tail", type=float, default=120, help="training seconds beyond the outage")
    ap.add_argument("--keep", action="store_true", help="keep every folder (a failed run's is always kept)")
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
    print("\nmulti-node outage budget:")
    for row in rows:
        print("  " + line(row))
    if any(r["failed"] for r in rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
