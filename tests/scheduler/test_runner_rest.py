"""The scheduler thread under a burst of wakes: it rests after a slow pass, and answers a lone wake at once."""

from __future__ import annotations

import threading
import time

from argus.scheduler.runner import SchedulerRunner
from tests.waiting import wait_until


class TimedRunner(SchedulerRunner):
    """The real loop (``_loop``: waits, wakes, rests) around a pass of a chosen length."""

    def __init__(self, ctx, pass_s: float) -> None:  # noqa: ANN001
        super().__init__(ctx)
        self.pass_s = pass_s
        self.busy_s = 0.0
        self.ended: list[float] = []

    def run_pass(self) -> None:
        started = time.monotonic()
        time.sleep(self.pass_s)  # stands in for reading a 10 000-task queue
        self.busy_s += time.monotonic() - started
        self.ended.append(time.monotonic())


def test_a_burst_of_wakes_gets_the_loop_a_quarter_of_the_time_at_most(ctx):
    runner = TimedRunner(ctx, pass_s=0.05)
    runner.start()
    try:
        started = time.monotonic()
        while time.monotonic() - started < 2.0:  # a submit every 5 ms, each one waking the loop
            runner.wake()
            time.sleep(0.005)  # pacing the burst, not a wait
        elapsed = time.monotonic() - started
    finally:
        runner.stop()
    duty = runner.busy_s / elapsed
    # without the rest the loop would pass back to back (~100 % here); REST_FACTOR 3 → ≤ 25 % (+ timing slack)
    assert duty < 0.4, f"the loop ran {duty:.0%} of the time"
    assert len(runner.ended) >= 5  # and it still passed several times during the burst


def test_a_lone_wake_after_a_quick_pass_is_answered_at_once(ctx):
    runner = TimedRunner(ctx, pass_s=0.001)
    runner.start()
    try:
        wait_until(lambda: runner.ended, 5, every=0.01, what="the first pass, at start")
        time.sleep(0.2)  # the loop idles a while, so the wake comes alone: time passing is the input here
        before = len(runner.ended)
        woke_at = time.monotonic()
        runner.wake()
        wait_until(lambda: len(runner.ended) > before, 5, every=0.001, what="a pass after the wake")
        assert runner.ended[before] - woke_at < 0.1  # a quick pass earns ~no rest
    finally:
        runner.stop()


def test_stop_is_not_held_up_by_a_rest(ctx):
    runner = TimedRunner(ctx, pass_s=0.3)  # would rest up to MAX_REST_S after each pass
    runner.start()
    wait_until(lambda: runner.ended, 5, every=0.01, what="the first pass")
    runner.wake()  # a wake after a 0.3 s pass: the loop rests up to 0.9 s before the next one
    wait_until(lambda: not runner._wake.is_set(), 5, every=0.01, what="the loop to take the wake and rest")
    t0 = time.monotonic()
    stopper = threading.Thread(target=runner.stop)
    stopper.start()
    stopper.join(5)
    assert time.monotonic() - t0 < 1.0
