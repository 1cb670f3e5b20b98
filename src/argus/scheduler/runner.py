"""The scheduler thread: recovery first, then cancel → monitor → sweeps → pipelines → evaluations → submit, woken or
ticking.

One thread runs every loop in sequence, so the loops never race one another inside this
process (the guarded status updates still protect against the API and other processes).
The API wakes it after each write (``AppContext.wake``); otherwise it ticks every
``scheduler_tick_s``, or every ``scheduler_fast_tick_s`` while a task is starting (SUBMITTED)
or being canceled, so "running" and "canceled" show up within a fraction of a second. A loop that raises is logged and retried on the next pass: one bad
task or a flaky Ray must not stop scheduling for everyone.
"""

from __future__ import annotations

import asyncio
import threading
import time

from argus.cluster.types import ClusterUnavailable
from argus.scheduler.cancel import CancelTasks
from argus.scheduler.common import LoopContext, log
from argus.scheduler.evaluations import WatchEvaluations
from argus.scheduler.monitor import MonitorActiveTasks
from argus.scheduler.pipelines import WatchPipelines
from argus.scheduler.recover import RecoverOnStart
from argus.scheduler.submit import SubmitQueuedTasks
from argus.scheduler.sweeps import WatchSweeps
from argus.services import telemetry


class SchedulerRunner:
    def __init__(self, ctx: LoopContext) -> None:
        self.ctx = ctx
        self.cancel = CancelTasks(ctx)
        self.monitor = MonitorActiveTasks(ctx)
        self.sweeps = WatchSweeps(ctx)
        self.pipelines = WatchPipelines(ctx)
        self.evaluations = WatchEvaluations(ctx)
        self.submit = SubmitQueuedTasks(ctx)
        self.recover = RecoverOnStart(ctx, cancel=self.cancel, monitor=self.monitor)
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.recovered = False
        self.passes = 0

    def wake(self) -> None:
        self._wake.set()

    def run_pass(self) -> None:
        """One full pass (also what tests call instead of starting the thread); its duration is the
        ``argus_scheduler_pass_seconds`` metric."""
        started = time.monotonic()
        try:
            self._run_pass()
        finally:
            telemetry.SCHEDULER_PASS.observe(time.monotonic() - started)

    def _run_pass(self) -> None:
        if not self.recovered:
            try:
                self.recover.run_once()
            except ClusterUnavailable as exc:
                # Nothing is submitted before recovery has seen Ray; queued tasks say why they wait.
                self.submit.wait_all(f"Ray cluster unreachable: {exc}")
                return
            self.recovered = True
        for loop in (self.cancel, self.monitor, self.sweeps, self.pipelines, self.evaluations, self.submit):
            try:
                loop.run_once()
            except Exception:  # noqa: BLE001 - e.g. Ray refusing one stop: the other loops still run
                log.exception("scheduler: %s failed; continuing with the next loop", type(loop).__name__)
        self.passes += 1

    def next_tick(self) -> float:
        s = self.ctx.settings
        busy = self.monitor.starting > 0 or self.cancel.pending > 0
        return min(s.scheduler_tick_s, s.scheduler_fast_tick_s) if busy else s.scheduler_tick_s

    # After a pass that took T, a wake waits until REST_FACTOR × T has passed since it ended (at most
    # MAX_REST_S): under a burst of submits (each one wakes the loop, and a queue that changed is read
    # whole: ~50 ms at 10 000 queued) the loop then holds the interpreter at most 1/(1+REST_FACTOR) of
    # the time instead of half of it, and a burst of wakes is one pass. A quick pass rests ~nothing.
    REST_FACTOR = 3.0
    MAX_REST_S = 1.0

    def _loop(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                self.run_pass()
            except Exception:  # noqa: BLE001 - logged; the next pass retries
                log.exception("scheduler pass failed")
            ended = time.monotonic()
            woken = self._wake.wait(max(0.0, self.next_tick() - (ended - started)))
            self._wake.clear()
            if woken:
                self._stop.wait(min(self.MAX_REST_S, self.REST_FACTOR * (ended - started) - (time.monotonic() - ended)))

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="argus-scheduler", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
        self.cancel.close()  # its Ray calls' threads


class SchedulerComponent:
    """``Component`` for ``argus.server``: runs the scheduler thread for the server's lifetime."""

    name = "scheduler"

    def __init__(self, runner: SchedulerRunner, *, owns_db: bool = False) -> None:
        self.runner = runner
        self.owns_db = owns_db  # the loops' own engine (wiring.build_scheduler): closed with them

    async def start(self) -> None:
        self.runner.start()

    async def stop(self) -> None:
        await asyncio.to_thread(self.runner.stop)
        if self.owns_db:
            self.runner.ctx.db.dispose()
