"""The e2e stack: one real local Ray cluster per session + a live Argus server with real loops.

Everything that knows the cluster engineer's ``LocalCluster`` API is in :class:`Stack` so
the tests read as user stories. Polling helpers assert that every status a task shows is
reachable from the previous one by the transition table (ARCHITECTURE §5.10).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import httpx

from argus.core.states import TaskStatus, can_transition
from argus.scheduler.runner import SchedulerRunner
from argus.scheduler.wiring import Scheduler, build_scheduler
from argus.server import attach_scheduler
from argus.settings import Settings
from tests.helpers import LiveServer, live_server, submit_spec
from tests.waiting import wait_until


def spec(command: str, *, gpus: int = 0, nnodes: int = 1, priority: int = 0, name: str | None = None,
         workload: str = "job") -> str:
    lines = ["kind: advanced", f"workload: {workload}", f"nnodes: {nnodes}", f"n_gpus_per_node: {gpus}",
             f"priority: {priority}", f"command: {command}"]
    if name:
        lines.append(f"name: {name}")
    return "\n".join(lines) + "\n"


submit = submit_spec


def wait_status(c: httpx.Client, tid: str, want: set[str] | str, timeout: float = 60.0,
                seen: list[str] | None = None, until: Callable[[dict[str, Any]], bool] | None = None
                ) -> dict[str, Any]:
    """Poll until the task is in ``want`` (or ``until(task)``); every observed change must be legal."""
    want = {want} if isinstance(want, str) else set(want)
    seen = seen if seen is not None else []
    last: dict[str, Any] = {}

    def arrived() -> dict[str, Any] | None:
        t = last["task"] = c.get(f"/api/v2/tasks/{tid}").json()
        st = t["status"]
        if not seen or seen[-1] != st:
            if seen:
                assert can_transition(seen[-1], st) or _retry_hop(seen[-1], st), f"illegal {seen[-1]} → {st}: {seen}"
            seen.append(st)
        if st in want or (until is not None and until(t)):
            return t
        assert st not in {s.value for s in (TaskStatus.SUCCEEDED, TaskStatus.FAILED, TaskStatus.CANCELED)}, (
            f"{tid} ended {st} ({t['termination_reason']}: {t['status_message']}) waiting for {want}; {seen}")
        return None

    return wait_until(arrived, timeout, what=lambda: f"{tid} still {last['task']['status']} after {timeout}s "
                                                      f"(waiting for {want}); {last['task']}")


def _retry_hop(a: str, b: str) -> bool:
    """Polling may miss the QUEUED in RUNNING → QUEUED → SUBMITTED (a retry)."""
    return a in ("RUNNING", "SUBMITTED") and b in ("SUBMITTED", "RUNNING")


@dataclass
class Stack:
    cluster: Any  # argus.nodes.local.LocalCluster
    settings: Settings
    server: LiveServer | None = None
    scheduler: Scheduler | None = None
    users: dict[str, httpx.Client] = field(default_factory=dict)

    # -- cluster adapter (the only place that knows LocalCluster's API)
    @property
    def gcs_address(self) -> str:
        return self.cluster.gcs_address

    @property
    def dashboard_url(self) -> str:
        return self.cluster.dashboard_url

    @property
    def head_node_id(self) -> str:
        return self.cluster.head.node_id

    def add_worker(self, gpus: int, cpus: int | None = None) -> str:
        return self.cluster.add_worker(gpus=gpus, cpus=cpus).name

    def kill_worker(self, name: str) -> None:
        self.cluster.kill_worker(name)

    def restart_worker(self, name: str) -> None:
        self.cluster.restart_worker(name)

    @property
    def main_worker(self) -> str:
        return "worker-1"

    # -- Argus
    def user(self, name: str) -> httpx.Client:
        if name not in self.users:
            assert self.server is not None
            self.users[name] = self.server.new_user(name)
        return self.users[name]

    def ray_jobs(self) -> list[Any]:
        from ray.job_submission import JobSubmissionClient

        return JobSubmissionClient(self.dashboard_url, headers=self.cluster.auth_headers).list_jobs()

    @contextmanager
    def manual(self) -> Iterator[SchedulerRunner]:
        """Stop the scheduler thread; the test drives passes itself; a fresh thread starts after."""
        assert self.scheduler is not None
        self.scheduler.runner.stop()
        runner = self.scheduler.runner
        try:
            yield runner
        finally:
            fresh = SchedulerRunner(runner.ctx)
            fresh.recovered = True
            self.scheduler.runner = fresh
            assert self.server is not None
            self.server.ctx.wake = fresh.wake
            fresh.start()


@contextmanager
def argus_on(cluster: Any, settings: Settings) -> Iterator[Stack]:
    stack = Stack(cluster, settings)

    def configure(ctx):  # noqa: ANN001, ANN202
        sched = build_scheduler(ctx.db, ctx.settings, ray_address=stack.gcs_address,
                                dashboard=stack.dashboard_url)
        attach_scheduler(ctx, sched)  # as argus.server wires it
        stack.scheduler = sched

    with live_server(settings, configure) as srv:
        stack.server = srv
        assert stack.scheduler is not None
        stack.scheduler.runner.start()
        try:
            yield stack
        finally:
            stack.scheduler.runner.stop()
            for c in stack.users.values():
                c.close()


def _status_of(c: httpx.Client, tid: str) -> str:
    return c.get(f"/api/v2/tasks/{tid}").json()["status"]


def _timed_to_end(status: Callable[[], Any], t0: float, ended: Callable[[Any], bool], *, running: set[Any]
                  ) -> tuple[float | None, Any]:
    """Poll ``status()`` every 20 ms (the benchmark's resolution) until ``ended``.

    Returns (seconds from ``t0`` to the first status in ``running``, None if none was seen; the final
    status). The 600 s bound only stops a hang: the benchmark's runs take seconds.
    """
    first: list[float] = []
    last: list[Any] = []

    def done() -> Any:
        st = status()
        last[:] = [st]
        if not first and st in running:
            first.append(time.monotonic() - t0)
        return st if ended(st) else None

    st = wait_until(done, 600, every=0.02, what=lambda: f"the run to end (status {last})")
    return (first[0] if first else None), st


def argus_vs_ray(runs: int, tick_s: float = 1.0, task_jail: str = "auto",
                 programs: tuple[str, ...] = ("argus.jobs.sleep 0 --lines 1",),
                 extra: Callable[[Stack], dict[str, Any]] | None = None) -> dict[str, Any]:
    """The benchmark's real-Ray half: the same entry points, Argus vs JobSubmissionClient.

    Cluster and server share one state dir, as ``argus up`` does. The Ray-direct jobs run the
    entry point bare on the platform's Ray (a Ray program there uses the platform's cluster);
    Argus's run it in the task's sandbox, with a private Ray for a Ray program (issue 21).
    Per program: medians of submit→RUNNING and submit→SUCCEEDED on both sides, and the
    private Ray's start time from the task logs. ``extra(stack)`` adds figures of its own.
    """
    import re
    import sys
    import tempfile
    from pathlib import Path

    from ray.job_submission import JobStatus, JobSubmissionClient

    from tests.ray_fixtures import local_ray

    med = statistics.median
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp, local_ray(Path(tmp), task_jail=task_jail) as cluster:
        settings = Settings(state_dir=Path(tmp), sftp_enabled=False, verl_validation="off",
                            scheduler_tick_s=tick_s, task_jail=task_jail)
        with argus_on(cluster, settings) as stack:
            ray = JobSubmissionClient(stack.dashboard_url, headers=cluster.auth_headers)
            c = stack.user("bench")
            for program in programs:
                ray_times, argus_times, ray_up = [], [], []
                for i in range(runs):
                    t0 = time.monotonic()
                    sid = ray.submit_job(entrypoint=f"{sys.executable} -m {program}",
                                         submission_id=f"bench-ray-{i}-{int(t0 * 1000)}",
                                         entrypoint_resources={"worker_node": 1})
                    running, st = _timed_to_end(partial(ray.get_job_status, sid), t0, JobStatus.is_terminal,
                                                running={JobStatus.RUNNING, JobStatus.SUCCEEDED})
                    assert st == JobStatus.SUCCEEDED, ray.get_job_logs(sid)[-2000:]
                    ray_times.append((running, time.monotonic() - t0))
                    t0 = time.monotonic()
                    tid = submit(c, spec(f"python3 -m {program}"))
                    running, st = _timed_to_end(partial(_status_of, c, tid), t0,
                                                {"SUCCEEDED", "FAILED", "CANCELED"}.__contains__,
                                                running={"RUNNING", "SUCCEEDED"})
                    assert st == "SUCCEEDED", c.get(f"/api/v2/tasks/{tid}").json()
                    argus_times.append((running, time.monotonic() - t0))
                    m = re.search(r"private Ray cluster of this task: .* up in ([0-9.]+) s",
                                  c.get(f"/api/v2/tasks/{tid}/logs").text)
                    if m:
                        ray_up.append(float(m.group(1)))
                out[program] = {"ray_running": med(r for r, _ in ray_times), "ray_done": med(d for _, d in ray_times),
                                "argus_running": med(r for r, _ in argus_times),
                                "argus_done": med(d for _, d in argus_times),
                                "private_ray_up": med(ray_up) if ray_up else None}
            if extra is not None:
                out.update(extra(stack))
    return out
