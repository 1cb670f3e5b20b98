"""What the task's answer tells a page (issue 37): ``can_cancel`` by the cancel endpoint's own rule, and a
stalled run as ``progress.stalled`` with no expected end (no "Estimated end: now" for a run that stopped).

No Ray here (``live``): tasks stay QUEUED; a RUNNING one and its stall message are written to the
database as the scheduler and the stall monitor (scheduler/progress.py) write them.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import update

from argus.db.models import TaskModel
from tests.helpers import LiveServer, submit_spec

SPEC = ("kind: advanced\nworkload: job\nname: {name}\nnnodes: 1\nn_gpus_per_node: 0\n{team}"
        "command: python3 -m argus.jobs.steps trainer.total_training_steps=100\n")


def test_can_cancel_follows_the_cancel_endpoints_rule(live: LiveServer) -> None:
    admin = live.admin()
    alice, bob, carol, dan = (live.new_user(n) for n in ("alice", "bob", "carol", "dan"))
    assert admin.post("/api/v2/teams", json={"name": "nlp"}).status_code == 201
    for who, role in (("alice", "member"), ("bob", "member"), ("carol", "admin")):
        assert admin.post("/api/v2/teams/nlp/members", json={"user": who, "role": role}).status_code == 201
    tid = submit_spec(alice, SPEC.format(name="shared", team="team: nlp\n"))
    said = {}
    for name, c in (("alice", alice), ("bob", bob), ("carol", carol), ("admin", admin)):
        r = c.get(f"/api/v2/tasks/{tid}")
        assert r.status_code == 200, r.text
        said[name] = r.json()["can_cancel"]
    assert said == {"alice": True, "bob": False, "carol": True, "admin": True}
    assert dan.get(f"/api/v2/tasks/{tid}").status_code == 404  # outside the team: not his to see at all
    # what the page is told is what the endpoint does
    r = bob.post(f"/api/v2/tasks/{tid}/cancel")
    assert r.status_code == 403 and r.json()["detail"]["code"] == "forbidden"
    assert carol.post(f"/api/v2/tasks/{tid}/cancel").json()["status"] == "CANCELED"
    for c in (alice, bob, carol, admin):  # over: nobody is offered Cancel
        assert c.get(f"/api/v2/tasks/{tid}").json()["can_cancel"] is False


def test_a_stalled_run_says_so_and_has_no_expected_end(live: LiveServer) -> None:
    alice = live.new_user("alice")
    tid = submit_spec(alice, SPEC.format(name="hangs", team=""))
    home = Path(live.ctx.settings.root) / "users" / "alice"
    (home / "jobs" / tid / "logs").mkdir(parents=True)
    (home / "jobs" / tid / "logs" / "attempt-1.log").write_text(
        "".join(f"step:{i} - training/global_step:{i} - timing_s/step:1.0\n" for i in range(1, 4)))
    started = datetime.now(UTC) - timedelta(hours=1)
    with live.ctx.db.session() as s:
        s.execute(update(TaskModel).where(TaskModel.id == tid).values(
            status="RUNNING", attempts=1, started_at=started, status_message="submitted Ray job x"))
    p = alice.get(f"/api/v2/tasks/{tid}").json()["progress"]
    assert p["step"] == 3 and p["stalled"] is False and p["eta_end"] is not None and p["last_step_at"]
    assert alice.get(f"/api/v2/tasks/{tid}").json()["can_cancel"] is True
    with live.ctx.db.session() as s:  # what the stall monitor writes
        s.execute(update(TaskModel).where(TaskModel.id == tid).values(
            status_message="STALLED: no progress for 31 min (no new step and no output; last step 3; limit "
                           "30 min); left running (on_stall: keep)"))
    t = alice.get(f"/api/v2/tasks/{tid}").json()
    assert t["progress"]["stalled"] is True and t["progress"]["eta_end"] is None
    assert t["progress"]["last_step_at"] == p["last_step_at"]
    with live.ctx.db.session() as s:  # output again: the monitor's "progressing again" clears it
        s.execute(update(TaskModel).where(TaskModel.id == tid).values(status_message="progressing again"))
    assert alice.get(f"/api/v2/tasks/{tid}").json()["progress"]["stalled"] is False
