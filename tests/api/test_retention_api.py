"""Retention through real HTTP on a real SQLite file and data root: prune (dry run = real run), checkpoint removal."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import func, select

from argus.db.models import AuditEventModel, TaskEventModel, TaskModel, utcnow
from tests.api.test_tasks_api import ADV, submit

DAYS = timedelta(days=1)


def _age(live, tid, status, ended_days_ago, events_days_ago=None):
    """Make ``tid`` a task that ended (or, for QUEUED, was created) that long ago, with two old events."""
    at = utcnow() - ended_days_ago * DAYS
    with live.ctx.db.session() as s:
        t = s.get(TaskModel, tid)
        t.status, t.created_at, t.updated_at = status, at - DAYS, at
        t.finished_at = at if status != "QUEUED" else None
        for ev in s.scalars(select(TaskEventModel).where(TaskEventModel.task_id == tid)):
            ev.at = at - DAYS
        s.add(TaskEventModel(task_id=tid, at=at, from_status="RUNNING", to_status=status, actor="test"))


def _job(live, user, tid):
    return live.ctx.settings.root / "users" / user / "jobs" / tid


def _events(live, tid):
    with live.ctx.db.session() as s:
        return s.scalar(select(func.count()).select_from(TaskEventModel).where(TaskEventModel.task_id == tid))


def test_prune_removes_exactly_what_its_dry_run_listed(live):
    alice, bob = live.new_user("alice"), live.new_user("bob")
    old, recent, queued = (submit(alice, ADV).json()["task_id"] for _ in range(3))
    bobs = submit(bob, ADV).json()["task_id"]
    _age(live, old, "SUCCEEDED", 100)
    _age(live, recent, "FAILED", 10)
    _age(live, queued, "QUEUED", 200)  # not ended: kept whatever its age
    _age(live, bobs, "CANCELED", 200)
    logs = _job(live, "alice", old) / "logs"
    logs.mkdir(parents=True)
    for name in ("attempt-1.log", "attempt-2.log"):
        (logs / name).write_text("step:1 - loss:0.5\n" * 10)
    (logs / "notes.txt").write_text("not a log Argus wrote\n")
    (_job(live, "alice", old) / "checkpoints" / "global_step_1").mkdir(parents=True)
    (_job(live, "alice", recent) / "logs").mkdir(parents=True)
    (_job(live, "alice", recent) / "logs" / "attempt-1.log").write_text("recent\n")
    # bob's task replaced its logs folder with a link to alice's recent logs: never followed
    _job(live, "bob", bobs).mkdir(parents=True)
    (_job(live, "bob", bobs) / "logs").symlink_to(_job(live, "alice", recent) / "logs")

    with live.admin() as admin:
        dry = admin.post("/api/v2/admin/prune", json={"older_than_days": 90, "dry_run": True})
        assert dry.status_code == 200, dry.text
        plan = dry.json()
        listed = {t["task_id"]: t for t in plan["tasks"]}
        assert set(listed) == {old, bobs}
        assert listed[old]["events"] == 2 and [f["name"] for f in listed[old]["logs"]] == ["attempt-1.log",
                                                                                             "attempt-2.log"]
        assert listed[bobs]["events"] == 2 and listed[bobs]["logs"] == []
        assert plan["events"] == 4 and plan["log_files"] == 2 and plan["log_bytes"] == 2 * 180
        assert _events(live, old) == 2 and (logs / "attempt-1.log").exists()  # the dry run removed nothing

        real = admin.post("/api/v2/admin/prune", json={"before": plan["before"]})
        assert real.status_code == 200, real.text
        assert {**real.json(), "dry_run": True} == plan

    assert _events(live, old) == 0 and _events(live, bobs) == 0
    assert _events(live, recent) == 2 and _events(live, queued) == 2
    assert not (logs / "attempt-1.log").exists() and not (logs / "attempt-2.log").exists()
    assert (logs / "notes.txt").exists() and (_job(live, "alice", old) / "checkpoints" / "global_step_1").is_dir()
    assert (_job(live, "alice", recent) / "logs" / "attempt-1.log").read_text() == "recent\n"
    with live.ctx.db.session() as s:
        assert s.scalar(select(func.count()).select_from(TaskModel)) == 4  # task rows are never removed
        audit = s.scalars(select(AuditEventModel).where(AuditEventModel.action == "retention.prune")).all()
    assert len(audit) == 1 and audit[0].detail["events"] == 4 and audit[0].actor == "admin"
    with live.admin() as admin:  # nothing left to prune at that cutoff
        again = admin.post("/api/v2/admin/prune", json={"before": plan["before"], "dry_run": True}).json()
        assert again["tasks"] == [] and again["events"] == 0


def test_prune_is_admin_only_and_checks_its_input(live):
    alice = live.new_user("alice")
    r = alice.post("/api/v2/admin/prune", json={"dry_run": True})
    assert r.status_code == 403
    with live.admin() as admin:
        for body in ({"older_than_days": 0}, {"older_than_days": -3}, {"older_than_days": 5, "before": "2020-01-01T00:00:00Z"},
                     {"older": 5}):
            r = admin.post("/api/v2/admin/prune", json=body)
            assert r.status_code == 400, (body, r.text)
        r = admin.post("/api/v2/admin/prune", json={"dry_run": True})  # default: prune_older_than_days (90)
        assert r.status_code == 200
        assert abs((utcnow() - 90 * DAYS - _parse(r.json()["before"])).total_seconds()) < 60


def _parse(text):
    from datetime import datetime

    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _ended_task_with_checkpoints(live, client, user):
    tid = submit(client, ADV).json()["task_id"]
    _age(live, tid, "SUCCEEDED", 1)
    step = _job(live, user, tid) / "checkpoints" / "global_step_2" / "actor"
    step.mkdir(parents=True)
    (step / "model.pt").write_bytes(b"\0" * 1000)
    (_job(live, user, tid) / "logs").mkdir(parents=True)
    (_job(live, user, tid) / "logs" / "attempt-1.log").write_text("kept\n")
    return tid


def test_owner_deletes_an_ended_tasks_checkpoints(live):
    alice = live.new_user("alice")
    tid = _ended_task_with_checkpoints(live, alice, "alice")
    r = alice.delete(f"/api/v2/tasks/{tid}/checkpoints")
    assert r.status_code == 200, r.text
    assert r.json() == {"task_id": tid, "removed": f"$HOME/jobs/{tid}/checkpoints"}
    assert not (_job(live, "alice", tid) / "checkpoints").exists()
    assert (_job(live, "alice", tid) / "logs" / "attempt-1.log").exists()
    assert alice.get(f"/api/v2/tasks/{tid}").json()["status"] == "SUCCEEDED"
    assert alice.delete(f"/api/v2/tasks/{tid}/checkpoints").status_code == 404  # already gone
    with live.admin() as admin:
        events = admin.get("/api/v2/audit", params={"action": "checkpoints.removed"}).json()["events"]
    assert [(e["actor"], e["target"]) for e in events] == [("alice", tid)]


def test_checkpoint_removal_refuses_others_active_tasks_and_links(live):
    alice, bob = live.new_user("alice"), live.new_user("bob")
    tid = _ended_task_with_checkpoints(live, alice, "alice")
    assert bob.delete(f"/api/v2/tasks/{tid}/checkpoints").status_code == 404  # not bob's: not even shown
    with live.admin() as admin:
        r = admin.delete(f"/api/v2/tasks/{tid}/checkpoints")
        assert r.status_code == 403 and r.json()["detail"]["code"] == "not_owner"
    assert (_job(live, "alice", tid) / "checkpoints" / "global_step_2").is_dir()

    active = submit(alice, ADV).json()["task_id"]  # QUEUED
    (_job(live, "alice", active) / "checkpoints").mkdir(parents=True)
    r = alice.delete(f"/api/v2/tasks/{active}/checkpoints")
    assert r.status_code == 409 and r.json()["detail"]["code"] == "task_active"

    linked = submit(bob, ADV).json()["task_id"]
    _age(live, linked, "FAILED", 1)
    _job(live, "bob", linked).mkdir(parents=True)
    (_job(live, "bob", linked) / "checkpoints").symlink_to(_job(live, "alice", tid) / "checkpoints")
    r = bob.delete(f"/api/v2/tasks/{linked}/checkpoints")
    assert r.status_code == 400 and r.json()["detail"]["code"] == "not_directory", r.text
    assert (_job(live, "alice", tid) / "checkpoints" / "global_step_2" / "actor" / "model.pt").exists()
    assert (_job(live, "bob", linked) / "checkpoints").is_symlink()
