"""The scheduler thread under a burst of wakes: it rests after a slow pass, and answers a lone wake at once."""

from __future__ import annotations

import threading
import time

from argus.scheduler.runner import SchedulerRunner


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
            time.sleep(0.005)
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
        deadline = time.monotonic() + 5
        while not runner.ended and time.monotonic() < deadline:  # the first pass, at start
            time.sleep(0.01)
        time.sleep(0.2)
        before = len(runner.ended)
        woke_at = time.monotonic()
        runner.wake()
        while len(runner.ended) == before and time.monotonic() < deadline:
            time.sleep(0.001)
        assert len(runner.ended) > before
        assert runner.ended[before] - woke_at < 0.1  # a quick pass earns ~no rest
    finally:
        runner.stop()


def test_stop_is_not_held_up_by_a_rest(ctx):
    runner = TimedRunner(ctx, pass_s=0.3)  # would rest up to MAX_REST_S after each pass
    runner.start()
    time.sleep(0.35)
    runner.wake()
    time.sleep(0.05)
    t0 = time.monotonic()
    stopper = threading.Thread(target=runner.stop)
    stopper.start()
    stopper.join(5)
    assert time.monotonic() - t0 < 1.0
