"""GET /api/v2/usage and PATCH /api/v2/users/{name} (limits) through real HTTP: who may see and set what."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import select

from argus.db.models import TaskAttemptModel, TaskModel, UserModel


def put_attempt(live, user: str, tid: str, *, gpus: int, hours: float, start: datetime) -> None:
    end = start + timedelta(hours=hours)
    with live.ctx.db.session() as s:
        uid = s.scalar(select(UserModel.id).where(UserModel.name == user))
        s.add(TaskModel(id=tid, user_id=uid, kind="advanced", workload="grpo", status="SUCCEEDED", priority=0, nnodes=1,
                        n_gpus_per_node=gpus, spec_raw="", spec_resolved={}, command_raw="x", command_expanded="x",
                        argv=["x"], warnings=[], attempts=1, created_at=start, updated_at=end))
        s.flush()
        s.add(TaskAttemptModel(task_id=tid, attempt=1, submission_id=f"{tid}-a1", status="SUCCEEDED", created_at=start,
                               started_at=start, finished_at=end, resource_kind="gpu",
                               resource_seconds=gpus * hours * 3600))


def test_usage_shows_a_user_only_their_own_and_an_admin_everyone(live):
    alice, bob = live.new_user("alice"), live.new_user("bob")
    # 01:00 two days ago: bob's hour must not cross midnight (group_by=day would split it in two)
    start = datetime.now(UTC).replace(hour=1, minute=0, second=0, microsecond=0) - timedelta(days=2)
    put_attempt(live, "alice", "grpo-a", gpus=8, hours=2, start=start)
    put_attempt(live, "bob", "grpo-b", gpus=4, hours=1, start=start)
    r = alice.get("/api/v2/usage")
    assert r.status_code == 200, r.text
    assert [(row["key"], row["gpu_hours"]) for row in r.json()["rows"]] == [("alice", 16.0)]
    assert r.json()["total"]["gpu_hours"] == 16.0  # bob's use is not in alice's total either
    r = alice.get("/api/v2/usage", params={"user": "bob"})
    assert r.status_code == 403 and r.json()["detail"]["code"] == "forbidden"
    assert alice.get("/api/v2/usage", params={"user": "alice"}).status_code == 200
    with live.admin() as a:
        rows = a.get("/api/v2/usage", params={"group_by": "user"}).json()["rows"]
        assert [(row["key"], row["gpu_hours"]) for row in rows] == [("alice", 16.0), ("bob", 4.0)]
        rows = a.get("/api/v2/usage", params={"user": "bob", "group_by": "day"}).json()["rows"]
        assert [row["gpu_hours"] for row in rows] == [4.0]
        assert a.get("/api/v2/usage", params={"user": "nobody"}).status_code == 404
    bob.close()


def test_usage_bad_input_names_the_field(live):
    alice = live.new_user("alice")
    r = alice.get("/api/v2/usage", params={"from": "last tuesday"})
    assert r.status_code == 400 and r.json()["detail"]["errors"][0]["field"] == "from"
    r = alice.get("/api/v2/usage", params={"from": "2026-11-10", "to": "2026-11-01"})
    assert r.status_code == 400 and r.json()["detail"]["errors"][0]["field"] == "from"
    r = alice.get("/api/v2/usage", params={"group_by": "planet"})
    assert r.status_code in (400, 422) and "group_by" in r.text
    assert alice.get("/api/v2/usage", params={"from": "2026-11-01", "to": "2026-11-02T00:00:00Z"}).status_code == 200


def test_only_an_admin_sets_limits_and_null_clears_them(live):
    alice = live.new_user("alice")
    r = alice.patch("/api/v2/users/alice", json={"max_gpus": 1000})
    assert r.status_code == 403  # not even one's own
    with live.admin() as a:
        r = a.patch("/api/v2/users/alice", json={"max_gpus": 16, "max_running_tasks": 4})
        assert r.status_code == 200, r.text
        assert (r.json()["max_gpus"], r.json()["max_running_tasks"]) == (16, 4)
        r = a.patch("/api/v2/users/alice", json={"max_gpus": None})  # back to the platform default
        assert (r.json()["max_gpus"], r.json()["max_running_tasks"]) == (None, 4)
        for bad in ({"max_gpus": 0}, {"max_gpus": -1}, {"max_running_tasks": "many"}, {"max_cpus": 3}):
            r = a.patch("/api/v2/users/alice", json=bad)
            assert r.status_code in (400, 422), (bad, r.text)
            assert next(iter(bad)) in r.text
        assert a.patch("/api/v2/users/nobody", json={"max_gpus": 1}).status_code == 404
        users = {u["name"]: u for u in a.get("/api/v2/users").json()}
        assert users["alice"]["max_running_tasks"] == 4 and users["alice"]["max_gpus"] is None
        events = a.get("/api/v2/audit", params={"action": "user.limits_changed"}).json()["events"]
        assert [(e["actor"], e["target"], e["detail"]) for e in events] == [  # newest first
            ("admin", "alice", {"max_gpus": [16, None]}),
            ("admin", "alice", {"max_gpus": [None, 16], "max_running_tasks": [None, 4]})]
    with live.ctx.db.session() as s:
        u = s.scalars(select(UserModel).where(UserModel.name == "alice")).one()
        assert (u.max_gpus, u.max_running_tasks) == (None, 4)
