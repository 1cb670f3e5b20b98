"""Stall forensics on the server (scheduler/progress.py): a stall asks the attempt's driver for every process's
stack once, through the record folder (launcher/attempt_record), and a follow-up event names the file it wrote;
on_stall's cancel/requeue waits for it. Fake Ray, real SQLite, real record files; the driver's side is played
here (tests/launcher/test_stacks.py runs the real one)."""

from __future__ import annotations

from sqlalchemy import select

from argus.core.messages import render
from argus.db.models import TaskEventModel, TaskModel
from argus.launcher import attempt_record
from argus.scheduler.progress import STACKS_WAIT_S
from tests.scheduler.fakes import task
from tests.scheduler.test_autoresume import running

STALL_S = 60


def _stalling(ctx, ray, on_stall: str = "keep") -> tuple[str, object]:
    """A RUNNING task whose stall limits are a minute, watched once (the silence counts from there)."""
    tid, _sub, mon = running(ctx, ray, ["bash", "-lc", "python3 -m argus.jobs.steps"])
    with ctx.db.session() as s:
        s.get(TaskModel, tid).spec_resolved = {"stall_after": STALL_S, "stall_first_step": STALL_S,
                                               "on_stall": on_stall}
    mon.run_once()
    return tid, mon


def _beat(ctx, tid: str) -> None:
    """The driver's heartbeat in the attempt's record: it runs the attempt (on another machine)."""
    data = {"attempt": 1, "hostname": "w1-host", "driver_pid": 4242, "alive_at": ctx.now().isoformat(),
            "heartbeat_s": 15.0}
    assert attempt_record.write(attempt_record.record_path(ctx.settings.root, tid, 1), data) is None


def _events(ctx, tid: str) -> list[str]:
    with ctx.db.session() as s:
        return [e.message or "" for e in s.scalars(select(TaskEventModel).where(TaskEventModel.task_id == tid)
                                                   .order_by(TaskEventModel.id))]


def _answer(ctx, tid: str, token: str) -> None:
    """What the driver does (launcher/stacks.StackRequests): takes the request, writes the file, answers."""
    assert attempt_record.answer_stacks(ctx.settings.root, tid, 1, token, file=f"jobs/{tid}/stacks/attempt-1-x.txt",
                                        processes=7, python=3, dumped=3) is None


def test_a_stall_asks_for_stacks_once_and_the_file_is_named_in_a_follow_up_event(ctx, ray, clock) -> None:
    tid, mon = _stalling(ctx, ray)
    root = ctx.settings.root
    clock.advance(STALL_S + 1)
    _beat(ctx, tid)
    mon.run_once()
    t = task(ctx, tid)
    assert t.status == "RUNNING" and t.status_message.startswith("STALLED: no progress for"), t.status_message
    assert t.status_message.endswith("left running (on_stall: keep)")  # the message is the stall's, as before
    # coded (issue 37): the stall and what on_stall does are nested messages the page says in its language
    assert t.status_message_code == "status.stalled"
    assert t.status_message_params["stall"]["code"] == "part.stall"
    assert t.status_message_params["action"] == {"code": "part.on_stall_keep"}
    assert render(t.status_message_code, t.status_message_params) == t.status_message
    assert any(m.startswith("STALLED") and m.endswith("capturing its processes' stacks") for m in _events(ctx, tid))
    token = attempt_record.take_stacks_request(root, tid, 1)
    assert token == ctx.now().isoformat()
    clock.advance(5)
    _beat(ctx, tid)
    mon.run_once()
    assert not attempt_record.stacks_path(root, tid, 1).exists()  # once per stall
    _answer(ctx, tid, token)
    mon.run_once()
    said = _events(ctx, tid)
    follow = [m for m in said if m.startswith("stacks of the stalled attempt")]
    assert follow == [f"stacks of the stalled attempt's 7 processes (3 of 3 Python ones with their stack): "
                      f"jobs/{tid}/stacks/attempt-1-x.txt in your home"], said
    assert sum(m.startswith("STALLED") for m in said) == 1
    assert task(ctx, tid).status_message.startswith("STALLED")  # an event, not a new message
    mon.run_once()
    assert len([m for m in _events(ctx, tid) if m.startswith("stacks of")]) == 1


def test_on_stall_cancel_waits_for_the_stacks_then_stops_it(ctx, ray, clock) -> None:
    tid, mon = _stalling(ctx, ray, "cancel")
    clock.advance(STALL_S + 1)
    _beat(ctx, tid)
    mon.run_once()
    t = task(ctx, tid)
    assert t.status == "RUNNING" and ray.stops == [], "its stacks cannot be taken once it is stopped"
    assert "capturing its processes' stacks, then stopping it (on_stall: cancel)" in t.status_message
    token = attempt_record.take_stacks_request(ctx.settings.root, tid, 1)
    _answer(ctx, tid, token)
    mon.run_once()
    t = task(ctx, tid)
    assert (t.status, t.termination_reason) == ("FAILED", "STALLED") and ray.stops == [f"{tid}-a1"]
    assert t.status_message.endswith("stopping it (on_stall: cancel)") and "capturing" not in t.status_message
    assert (t.status_message_code, t.status_message_params["action"]) == ("status.stalled", {"code": "part.on_stall_cancel"})
    said = _events(ctx, tid)
    stacks = next(i for i, m in enumerate(said) if m.startswith("stacks of the stalled attempt"))
    assert stacks < len(said) - 1 and said[-1].startswith("STALLED"), said  # the file is named before the end


def test_a_driver_that_does_not_answer_is_waited_for_a_bounded_time(ctx, ray, clock) -> None:
    tid, mon = _stalling(ctx, ray, "requeue")
    clock.advance(STALL_S + 1)
    _beat(ctx, tid)
    mon.run_once()
    assert task(ctx, tid).status == "RUNNING"
    clock.advance(STACKS_WAIT_S + 1)
    mon.run_once()
    t = task(ctx, tid)
    assert (t.status, t.termination_reason) == ("QUEUED", "STALLED"), t.status_message
    assert f"no stacks of the stalled attempt: its driver did not answer within {STACKS_WAIT_S:g} s" in _events(ctx, tid)
    # coded (issue 37): the requeued task's reason and the stacks event say it in the reader's language
    assert (t.pending_reason, t.pending_reason_code) == ("requeued after a stall", "queue.requeued_after_stall")


def test_without_a_running_driver_nothing_is_asked_and_on_stall_acts_at_once(ctx, ray, clock) -> None:
    """No live attempt record (a driver from before records, or one run outside a data root): as before."""
    tid, mon = _stalling(ctx, ray, "cancel")
    clock.advance(STALL_S + 1)
    mon.run_once()
    t = task(ctx, tid)
    assert (t.status, t.termination_reason) == ("FAILED", "STALLED")
    assert not attempt_record.stacks_path(ctx.settings.root, tid, 1).exists()
    assert not any("stacks" in m for m in _events(ctx, tid))
