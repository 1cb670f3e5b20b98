"""Accounting: every attempt's GPU-/CPU-seconds, exact across a server restart, and the usage report.

The loops run over a real database (SQLite, and PostgreSQL when its binaries are installed) with a
fake Ray at the JobsBackend boundary and a settable clock. The restart cases are the point: an
attempt that ended while the server was down is closed with the time Ray (``end_time``) or the
driver's ``status.json`` (``finished_at``) reports, not with the time the server noticed.
"""

from __future__ import annotations

import itertools
import json
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select, text

from argus.cluster.types import RayJobStatus
from argus.core import accounting
from argus.db.models import TaskAttemptModel, UserModel
from argus.errors import ClientError, Forbidden, NotFound
from argus.scheduler.cancel import CancelTasks
from argus.scheduler.monitor import MonitorActiveTasks
from argus.scheduler.submit import SubmitQueuedTasks
from argus.services.principal import Principal
from argus.services.tasks import cancel_task
from argus.services.usage import usage_report
from tests.pg import create_database
from tests.scheduler.fakes import Clock, FakeRay, InlineExecutor, add_task, add_user, make_ctx, task

_n = itertools.count()


@pytest.fixture(params=["sqlite", "postgres"])
def db_ctx(request, settings, tmp_path):
    s = settings.model_copy(update={"max_retries": 1, "start_timeout_s": 60})
    if request.param == "postgres":
        admin = request.getfixturevalue("pg_admin_url")
        url = create_database(admin, f"argus_acct_{next(_n)}")
        s = s.model_copy(update={"database_url": url})
    ray, clock = FakeRay(), Clock()
    ray.add_node("w1", 8)
    ctx = make_ctx(s, ray, clock)
    yield ctx, ray, clock
    ctx.db.dispose()


def attempt(ctx, sid: str) -> TaskAttemptModel:
    with ctx.db.session() as s:
        return s.scalars(select(TaskAttemptModel).where(TaskAttemptModel.submission_id == sid)).one()


def ms(t: datetime) -> int:
    return int(t.timestamp() * 1000)


def write_status(ctx, user: str, tid: str, **fields) -> None:
    jd = ctx.settings.root / "users" / user / "jobs" / tid
    jd.mkdir(parents=True, exist_ok=True)
    (jd / "status.json").write_text(json.dumps({"attempt": 1, **fields}))


def test_attempt_ended_while_the_server_was_down_is_closed_with_rays_end_time(db_ctx):
    ctx, ray, clock = db_ctx
    alice = add_user(ctx, "alice")
    tid = add_task(ctx, alice, gpus=4, nnodes=1)
    SubmitQueuedTasks(ctx).run_once()
    sid = f"{tid}-a1"
    clock.advance(5)
    ray.set(sid, RayJobStatus.RUNNING, driver_node_id="w1")
    MonitorActiveTasks(ctx).run_once()
    started = attempt(ctx, sid).started_at
    assert started == clock()

    # the server is killed; the task ends 30 min later; the server comes back 2 h after that
    end = datetime.fromtimestamp(ms(started + timedelta(minutes=30)) / 1000, UTC)  # Ray's times are in ms
    ray.set(sid, RayJobStatus.SUCCEEDED, driver_exit_code=0, end_time_ms=ms(end))
    clock.advance(2.5 * 3600)
    MonitorActiveTasks(ctx).run_once()  # a fresh process's first pass
    a = attempt(ctx, sid)
    assert task(ctx, tid).status == "SUCCEEDED"
    assert a.finished_at == end  # not the time the server noticed
    assert (a.resource_kind, a.resource_seconds) == ("gpu", pytest.approx(4 * 1800, abs=0.01))


def test_attempt_that_started_and_ended_while_the_server_was_down_uses_status_json(db_ctx):
    """No Ray end time (e.g. the job record was already gone from its node): the driver's times count."""
    ctx, ray, clock = db_ctx
    bob = add_user(ctx, "bob")
    tid = add_task(ctx, bob, gpus=0, nnodes=2)  # a CPU job: one CPU per node
    SubmitQueuedTasks(ctx).run_once()
    sid = f"{tid}-a1"
    t0 = clock()
    write_status(ctx, "bob", tid, started_at=(t0 + timedelta(seconds=10)).isoformat(),
                 finished_at=(t0 + timedelta(seconds=70)).isoformat(), exit_code=0)
    ray.set(sid, RayJobStatus.SUCCEEDED, driver_exit_code=0)
    clock.advance(600)
    MonitorActiveTasks(ctx).run_once()
    a = attempt(ctx, sid)
    assert (a.started_at, a.finished_at) == (t0 + timedelta(seconds=10), t0 + timedelta(seconds=70))
    assert (a.resource_kind, a.resource_seconds) == ("cpu", pytest.approx(2 * 60))


def test_a_time_the_task_wrote_cannot_bill_beyond_what_the_server_saw(db_ctx):
    ctx, ray, clock = db_ctx
    alice = add_user(ctx, "alice")
    tid = add_task(ctx, alice, gpus=8)
    SubmitQueuedTasks(ctx).run_once()
    sid = f"{tid}-a1"
    t0 = clock()
    # the task rewrote status.json: a start long before its attempt existed, an end in the future
    write_status(ctx, "alice", tid, started_at="2000-01-01T00:00:00+00:00", finished_at="2999-01-01T00:00:00+00:00")
    ray.set(sid, RayJobStatus.FAILED, driver_exit_code=1)
    clock.advance(100)
    MonitorActiveTasks(ctx).run_once()
    a = attempt(ctx, sid)
    assert a.started_at == a.created_at == t0 and a.finished_at == t0 + timedelta(seconds=100)
    assert a.resource_seconds == pytest.approx(8 * 100)


def test_an_attempt_that_never_ran_costs_nothing(db_ctx):
    ctx, ray, clock = db_ctx
    alice = add_user(ctx, "alice")
    tid = add_task(ctx, alice, gpus=2)
    ray.submit_error = RuntimeError("bad runtime_env")
    SubmitQueuedTasks(ctx).run_once()
    a = attempt(ctx, f"{tid}-a1")
    assert (a.status, a.resource_kind, a.resource_seconds) == ("FAILED", "gpu", 0.0)


# ---------------------------------------------------------------- the report


def put_attempt(ctx, user_id: int, *, gpus: int, nnodes: int, start: datetime, end: datetime | None,
                workload: str = "job", status: str = "SUCCEEDED") -> str:
    tid = add_task(ctx, user_id, gpus=gpus, nnodes=nnodes)
    with ctx.db.session() as s:
        s.execute(text("UPDATE tasks SET workload = :w, attempts = 1 WHERE id = :t"), {"w": workload, "t": tid})
        s.add(TaskAttemptModel(task_id=tid, attempt=1, submission_id=f"{tid}-a1", status=status, created_at=start,
                               started_at=start, finished_at=end,
                               resource_kind=accounting.kind(gpus) if end else None,
                               resource_seconds=accounting.seconds(nnodes, gpus, start, end) if end else None))
    return tid


def principal(ctx, name: str) -> Principal:
    with ctx.db.session() as s:
        u = s.scalars(select(UserModel).where(UserModel.name == name)).one()
        return Principal(id=u.id, name=u.name, is_admin=u.is_admin)


def test_usage_sums_clip_to_the_window_and_split_days(db_ctx):
    ctx, _, _ = db_ctx
    alice, bob = add_user(ctx, "alice"), add_user(ctx, "bob")
    with ctx.db.session() as s:
        s.execute(text("UPDATE users SET is_admin = :t WHERE name = 'bob'"), {"t": True})
    day = datetime(2026, 11, 10, tzinfo=UTC)
    # alice: 2 × 8 GPUs from 22:00 to 02:00 next day (4 h) = 64 GPU-hours, half on each day
    put_attempt(ctx, alice, gpus=8, nnodes=2, start=day + timedelta(hours=22), end=day + timedelta(hours=26),
                workload="grpo")
    # alice: a CPU job on 1 node, 1 h
    put_attempt(ctx, alice, gpus=0, nnodes=1, start=day + timedelta(hours=1), end=day + timedelta(hours=2))
    # bob: still running since 23:00 on the 11th, 4 GPUs; "now" is 01:00 on the 12th → 2 h so far
    put_attempt(ctx, bob, gpus=4, nnodes=1, start=day + timedelta(hours=47), end=None, status="RUNNING")
    now = day + timedelta(hours=49)

    admin = principal(ctx, "bob")
    with ctx.db.session() as s:
        r = usage_report(s, admin, start=day, end=day + timedelta(days=3), group_by="user", now=now)
        by = {row.key: row for row in r.rows}
        assert by["alice"].gpu_seconds == pytest.approx(64 * 3600)
        assert by["alice"].cpu_seconds == pytest.approx(3600)
        assert by["bob"].gpu_seconds == pytest.approx(4 * 2 * 3600)
        assert r.total.gpu_seconds == pytest.approx((64 + 8) * 3600) and r.total.attempts == 3

        d = usage_report(s, admin, start=day, end=day + timedelta(days=3), group_by="day", now=now)
        assert [(row.key, row.gpu_seconds / 3600) for row in d.rows] == [
            ("2026-11-10", pytest.approx(32)), ("2026-11-11", pytest.approx(32 + 4)), ("2026-11-12", pytest.approx(4))]
        assert d.total.attempts == 3  # an attempt split over two days is still one attempt

        # a window that cuts alice's long attempt: only 23:00–00:30 counts
        w = usage_report(s, admin, start=day + timedelta(hours=23), end=day + timedelta(hours=24.5), now=now)
        assert {row.key: row.gpu_seconds for row in w.rows} == {"alice": pytest.approx(16 * 1.5 * 3600)}

        wl = usage_report(s, admin, start=day, end=now, group_by="workload", now=now)
        assert {row.key for row in wl.rows} == {"grpo", "job"}

        # a user sees only their own, and may not ask for another's
        mine = usage_report(s, principal(ctx, "alice"), start=day, end=now, now=now)
        assert [row.key for row in mine.rows] == ["alice"]
        with pytest.raises(Forbidden):
            usage_report(s, principal(ctx, "alice"), start=day, end=now, user="bob", now=now)
        assert [row.key for row in usage_report(s, admin, start=day, end=now, user="alice", now=now).rows] == ["alice"]
        with pytest.raises(NotFound):
            usage_report(s, admin, start=day, end=now, user="nobody", now=now)
        with pytest.raises(ClientError) as e:
            usage_report(s, admin, start=now, end=day, now=now)
        assert e.value.errors[0].field == "from"


def test_a_task_canceled_before_the_server_saw_it_run_still_counts_its_run(db_ctx):
    ctx, ray, clock = db_ctx
    alice = add_user(ctx, "alice")
    tid = add_task(ctx, alice, gpus=2)
    SubmitQueuedTasks(ctx).run_once()
    sid, t0 = f"{tid}-a1", clock()
    with ctx.db.session() as s:
        owner = Principal(id=alice, name="alice", is_admin=False)
        cancel_task(s, owner, tid)  # SUBMITTED → CANCELING; the monitor never saw it RUNNING
    write_status(ctx, "alice", tid, started_at=(t0 + timedelta(seconds=2)).isoformat())
    clock.advance(60)
    ray.set(sid, RayJobStatus.STOPPED, end_time_ms=ms(t0 + timedelta(seconds=32)))
    CancelTasks(ctx, pool=InlineExecutor()).run_once()
    a = attempt(ctx, sid)
    assert task(ctx, tid).status == "CANCELED"
    assert a.resource_seconds == pytest.approx(2 * 30, abs=0.01)
