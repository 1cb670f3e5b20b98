"""CancelTasks against a fake Ray, real SQLite and real attempt records: each attempt is asked to stop once per
channel (its stop file, one Ray request), and is CANCELED as soon as its record or Ray says it ended."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from sqlalchemy import select, update

import argus.scheduler.cancel as cancel_mod
from argus.cluster.types import ClusterUnavailable, RayJobStatus
from argus.db.models import TaskAttemptModel, TaskModel
from argus.launcher import attempt_record
from argus.scheduler.cancel import CancelTasks
from argus.scheduler.submit import SubmitQueuedTasks
from argus.services.principal import Principal
from argus.services.tasks import cancel_task
from tests.scheduler.fakes import InlineExecutor, add_task, add_user, task
from tests.waiting import wait_until


class FakeTime:
    """The cancel module's clock (``time.monotonic``), moved by hand."""

    def __init__(self) -> None:
        self.t = 1000.0

    def monotonic(self) -> float:
        return self.t


@pytest.fixture
def clock_s(monkeypatch) -> FakeTime:
    fake = FakeTime()
    monkeypatch.setattr(cancel_mod, "time", fake)
    return fake


def attempts(ctx, tid):
    with ctx.db.session() as s:
        return list(s.scalars(select(TaskAttemptModel).where(TaskAttemptModel.task_id == tid)
                              .order_by(TaskAttemptModel.attempt)))


def canceling(ctx, ray, n: int = 1, status: RayJobStatus = RayJobStatus.RUNNING) -> list[tuple[str, str]]:
    """n submitted tasks (Ray: ``status``), canceled by their owners: [(task id, submission id)]."""
    users = [add_user(ctx, f"u{k}") for k in range(max(1, n // 10 + (n % 10 > 0)))]
    tids = [add_task(ctx, users[i // 10]) for i in range(n)]
    SubmitQueuedTasks(ctx).run_once()
    out = []
    for i, tid in enumerate(tids):
        sid = f"{tid}-a1"
        ray.set(sid, status)
        with ctx.db.session() as s:
            cancel_task(s, Principal(users[i // 10], f"u{i // 10}"), tid)
        out.append((tid, sid))
    return out


def record(ctx, tid: str, *, finished: int | None = None, pid: int = 4242) -> None:
    at = ctx.now().isoformat()
    data = {"attempt": 1, "hostname": "w1-host", "driver_pid": pid, "alive_at": at, "heartbeat_s": 15.0,
            "started_at": (ctx.now() - timedelta(seconds=30)).isoformat(),
            "finished_at": at if finished is not None else None, "exit_code": finished}
    assert attempt_record.write(attempt_record.record_path(ctx.settings.root, tid, 1), data) is None


def test_one_stop_per_attempt_across_many_passes_then_canceled_when_ray_says_stopped(ctx, ray, clock_s):
    [(tid, sid)] = canceling(ctx, ray)
    loop = CancelTasks(ctx, pool=InlineExecutor())
    assert loop.run_once() == 0
    assert ray.stops == [sid] and loop.stops_sent == 1
    assert attempt_record.stop_requested(ctx.settings.root, tid, 1)  # the driver's channel, written in the pass
    for _ in range(30):  # a minute of passes while Ray still reports it live: Ray's view asked, the stop never again
        clock_s.t += 2.0
        assert loop.run_once() == 0
    assert ray.stops == [sid] and loop.stops_sent == 1 and task(ctx, tid).status == "CANCELING"
    ray.set(sid, RayJobStatus.STOPPED)
    clock_s.t += cancel_mod.RAY_CHECK_S
    assert loop.run_once() == 1
    t = task(ctx, tid)
    assert (t.status, t.termination_reason, t.status_message) == ("CANCELED", "USER_CANCELED",
                                                                   "canceled; the Ray job stopped")
    assert (t.status_message_code, t.status_message_params) == ("status.canceled_stopped", {})  # issue 37
    assert attempts(ctx, tid)[0].status == "CANCELED"
    assert not attempt_record.stop_requested(ctx.settings.root, tid, 1)  # its work done
    assert loop.run_once() == 0 and ray.stops == [sid]


def test_a_job_ray_has_not_started_is_canceled_at_once_and_its_stop_file_stays_until_ray_ends_it(ctx, ray, clock_s):
    [(tid, sid)] = canceling(ctx, ray, status=RayJobStatus.PENDING)
    loop = CancelTasks(ctx, pool=InlineExecutor())
    assert loop.run_once() == 1  # Ray took the stop for a job it has not started; no driver has begun
    t = task(ctx, tid)
    assert (t.status, t.status_message) == ("CANCELED", "canceled before it started")
    a = attempts(ctx, tid)[0]
    assert (a.status, a.started_at, a.resource_seconds) == ("CANCELED", None, 0)
    for _ in range(10):  # Ray still has it: the stop file stays, in case its driver starts after all
        clock_s.t += 2.0
        assert loop.run_once() == 0
        assert attempt_record.stop_requested(ctx.settings.root, tid, 1)
    ray.set(sid, RayJobStatus.STOPPED)
    clock_s.t += 2.0
    loop.run_once()
    assert not attempt_record.stop_requested(ctx.settings.root, tid, 1) and not loop._attempts
    assert ray.stops == [sid] and loop.stops_sent == 1


def test_a_pending_job_whose_driver_began_or_whose_stop_ray_did_not_take_is_waited_for(ctx, ray, clock_s, monkeypatch):
    [(began, sid1), (untaken, sid2)] = canceling(ctx, ray, 2, status=RayJobStatus.PENDING)
    record(ctx, began)  # Ray has not said RUNNING yet, but the driver has written its record
    real_stop = ray.stop
    monkeypatch.setattr(ray, "stop", lambda sid: real_stop(sid) and sid != sid2)  # Ray: "not stopped"
    loop = CancelTasks(ctx, pool=InlineExecutor())
    for _ in range(10):
        assert loop.run_once() == 0
        clock_s.t += 2.0
    assert sorted(ray.stops) == sorted([sid1, sid2]) and loop.stops_sent == 2  # once each
    record(ctx, began, finished=143)
    ray.set(sid2, RayJobStatus.STOPPED)
    assert loop.run_once() == 2
    assert task(ctx, began).status_message == "canceled; its driver stopped it"
    assert task(ctx, untaken).status_message == "canceled; the Ray job stopped"


def test_canceled_as_soon_as_the_record_says_finished_while_ray_still_says_running(ctx, ray, clock_s):
    [(tid, sid)] = canceling(ctx, ray)
    record(ctx, tid)  # the driver runs it
    loop = CancelTasks(ctx, pool=InlineExecutor())
    assert loop.run_once() == 0 and attempt_record.stop_requested(ctx.settings.root, tid, 1)
    clock_s.t += 0.2
    assert loop.run_once() == 0 and task(ctx, tid).status == "CANCELING"
    record(ctx, tid, finished=143)  # it saw the stop file: SIGTERM, the task's 143
    clock_s.t += 0.2
    assert loop.run_once() == 1
    t = task(ctx, tid)
    assert (t.status, t.status_message) == ("CANCELED", "canceled; its driver stopped it")
    a = attempts(ctx, tid)[0]
    assert (a.status, a.exit_code, a.termination_reason) == ("CANCELED", 143, "USER_CANCELED")
    assert a.started_at is not None and a.finished_at is not None  # its run counted, from the record's times
    assert ray.stops == [sid] and not attempt_record.stop_requested(ctx.settings.root, tid, 1)


def test_a_gone_driver_of_this_machine_confirms_the_stop(ctx, ray, clock_s):
    import socket
    import subprocess
    import sys

    [(tid, sid)] = canceling(ctx, ray)
    dead = int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True).stdout)
    at = ctx.now().isoformat()
    attempt_record.write(attempt_record.record_path(ctx.settings.root, tid, 1),
                         {"attempt": 1, "hostname": socket.gethostname(), "driver_pid": dead, "alive_at": at,
                          "heartbeat_s": 15.0})
    assert CancelTasks(ctx, pool=InlineExecutor()).run_once() == 1
    assert task(ctx, tid).status_message == "canceled; its driver's process is gone"


def test_cancel_works_while_ray_is_unreachable_and_the_stop_goes_once_ray_answers(ctx, ray, clock_s):
    [(tid, sid), (tid2, sid2)] = canceling(ctx, ray, 2)
    ray.down = True
    loop = CancelTasks(ctx, pool=InlineExecutor())
    assert loop.run_once() == 0
    assert attempt_record.stop_requested(ctx.settings.root, tid, 1)  # Ray or not
    record(ctx, tid, finished=143)
    clock_s.t += 0.2
    assert loop.run_once() == 1 and task(ctx, tid).status == "CANCELED"  # no Ray needed
    for _ in range(10):
        clock_s.t += 0.2
        loop.run_once()  # Ray still down: nothing reaches it
    assert ray.stops == [] and loop.stops_sent == 0
    ray.down = False
    clock_s.t += cancel_mod.STOP_RETRY_S
    for _ in range(10):
        loop.run_once()
        clock_s.t += 1.0
    assert ray.stops == [sid2] and loop.stops_sent == 1  # the other one's, once; none for the one that ended


def test_a_stop_that_did_not_reach_ray_is_sent_once_more_and_only_once(ctx, ray, clock_s, monkeypatch):
    [(tid, sid)] = canceling(ctx, ray)
    tries: list[str] = []
    real_stop = ray.stop

    def stop(submission_id: str) -> bool:
        tries.append(submission_id)
        if len(tries) == 1:
            raise ClusterUnavailable("read timed out")
        return real_stop(submission_id)

    monkeypatch.setattr(ray, "stop", stop)
    loop = CancelTasks(ctx, pool=InlineExecutor())
    loop.run_once()
    assert tries == [sid] and loop.stops_sent == 0
    clock_s.t += cancel_mod.STOP_RETRY_S - 0.5
    loop.run_once()
    assert tries == [sid]  # not before STOP_RETRY_S
    for _ in range(20):
        clock_s.t += 1.0
        loop.run_once()
    assert tries == [sid, sid] and ray.stops == [sid] and loop.stops_sent == 1


def test_cancel_of_a_job_that_already_finished(ctx, ray, clock_s):
    [(tid, sid)] = canceling(ctx, ray)
    ray.set(sid, RayJobStatus.SUCCEEDED, driver_exit_code=0)
    CancelTasks(ctx, pool=InlineExecutor()).run_once()
    assert task(ctx, tid).status == "CANCELED" and ray.stops == []
    assert attempts(ctx, tid)[0].status == "SUCCEEDED"
    t = task(ctx, tid)  # issue 37: the English as before, with its code; Ray's status a parameter
    assert (t.status_message, t.status_message_code, t.status_message_params) == (
        "canceled; the Ray job had already ended (SUCCEEDED)", "status.canceled_job_ended", {"status": "SUCCEEDED"})


def test_a_record_that_had_ended_before_the_cancel_is_settled_without_any_stop(ctx, ray, clock_s):
    [(tid, sid)] = canceling(ctx, ray)
    record(ctx, tid, finished=0)
    assert CancelTasks(ctx, pool=InlineExecutor()).run_once() == 1
    t = task(ctx, tid)
    assert (t.status, t.status_message) == ("CANCELED", "canceled; the task had already ended (exit code 0)")
    assert (t.status_message_code, t.status_message_params) == ("status.canceled_task_ended", {"exit_code": "0"})
    assert attempts(ctx, tid)[0].status == "SUCCEEDED" and ray.stops == []


def test_a_pass_does_not_wait_for_slow_ray_calls_and_they_run_at_once(ctx, ray):
    """50 cancels with a dashboard that takes its time: the stops run concurrently in the pool, a pass returns
    without them, and each attempt still gets exactly one."""
    pairs = canceling(ctx, ray, 50)
    gate = threading.Event()
    lock = threading.Lock()
    now_in, most = [0], [0]
    real_stop = ray.stop

    def slow_stop(submission_id: str) -> bool:
        with lock:
            now_in[0] += 1
            most[0] = max(most[0], now_in[0])
        try:
            gate.wait(60)
            return real_stop(submission_id)
        finally:
            with lock:
                now_in[0] -= 1

    ray.stop = slow_stop  # type: ignore[method-assign]
    loop = CancelTasks(ctx)
    try:
        first = threading.Thread(target=loop.run_once)
        first.start()
        first.join(30)
        assert not first.is_alive(), "a pass waited for Ray's stop requests"
        assert task(ctx, pairs[0][0]).status == "CANCELING"
        wait_until(lambda: most[0] == cancel_mod.RAY_THREADS, 30, what="the pool's calls running at once")
        assert all(attempt_record.stop_requested(ctx.settings.root, tid, 1) for tid, _ in pairs)
        gate.set()
        wait_until(lambda: loop.run_once() is not None and len(ray.stops) == 50, 60, every=0.2,
                   what="every attempt's stop")
        for _, sid in pairs:
            ray.set(sid, RayJobStatus.STOPPED)
        wait_until(lambda: loop.run_once() is not None and loop.pending == 0, 60, every=0.2, what="all CANCELED")
        assert sorted(ray.stops) == sorted(sid for _, sid in pairs) and loop.stops_sent == 50
        assert {task(ctx, tid).status for tid, _ in pairs} == {"CANCELED"}
    finally:
        gate.set()
        loop.close()


def test_a_stop_for_another_reason_keeps_its_message_first_coded(ctx, ray, clock_s):
    """A sweep's early stop ends CANCELED with its own message, then how it ended (issue 37: status.stop_note, its
    parts nested where coded, as text where not)."""
    [(tid, sid)] = canceling(ctx, ray)
    with ctx.db.session() as s:
        s.execute(update(TaskModel).where(TaskModel.id == tid).values(
            termination_reason="SWEEP_STOPPED", status_message="early-stopped by its sweep at step 2",
            status_message_code=None, status_message_params=None))
    ray.set(sid, RayJobStatus.STOPPED)
    assert CancelTasks(ctx, pool=InlineExecutor()).run_once() == 1
    t = task(ctx, tid)
    assert (t.status, t.termination_reason, t.status_message) == (
        "CANCELED", "SWEEP_STOPPED", "early-stopped by its sweep at step 2; canceled; the Ray job stopped")
    assert (t.status_message_code, t.status_message_params) == ("status.stop_note", {
        "message": "early-stopped by its sweep at step 2", "note": {"code": "status.canceled_stopped"}})
