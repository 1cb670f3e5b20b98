"""/api/v2/teams over real HTTP (issue 26, first slice): teams, members, roles, default teams, the audit
log, and a team that is invisible to users outside it."""

from __future__ import annotations

import pytest

from tests.helpers import LiveServer


def errors_of(r) -> list[tuple[str, object]]:  # noqa: ANN001
    return [(e["field"], e["value"]) for e in r.json()["detail"]["errors"]]


@pytest.fixture
def people(live: LiveServer):  # noqa: ANN201
    return {n: live.new_user(n) for n in ("alice", "bob", "carol")}


def test_admin_creates_a_team_a_team_admin_manages_members(live: LiveServer, people) -> None:  # noqa: ANN001
    admin, alice, bob = live.admin(), people["alice"], people["bob"]  # carol exists, outside the team
    r = admin.post("/api/v2/teams", json={"name": "nlp", "weight": 2, "max_gpus": 16, "gpu_hours_month": 5000})
    assert r.status_code == 201, r.text
    assert r.json() | {"members": None} == {"name": "nlp", "weight": 2.0, "max_gpus": 16, "max_running_tasks": None,
                                            "gpu_hours_month": 5000.0, "quota_bytes": None, "my_role": None,
                                            "member_count": 0, "members": None, "running_tasks": 0,
                                            "gpus_held": 0, "gpu_hours_used_month": 0.0}
    assert admin.post("/api/v2/teams", json={"name": "nlp"}).status_code == 409
    assert alice.post("/api/v2/teams", json={"name": "mine"}).status_code == 403

    assert admin.post("/api/v2/teams/nlp/members", json={"user": "alice", "role": "admin"}).status_code == 201
    # alice (team admin) adds only people already in a team she administers: not bob while he is in none
    r = alice.post("/api/v2/teams/nlp/members", json={"user": "bob"})
    assert r.status_code == 403 and errors_of(r) == [("user", "bob")]
    admin.post("/api/v2/teams", json={"name": "ops"})
    admin.post("/api/v2/teams/ops/members", json={"user": "alice", "role": "admin"})
    r = admin.post("/api/v2/teams/ops/members", json={"user": "bob"})
    assert r.json()["is_default"] is True  # a site admin's enrolment in a first team makes it the default
    r = alice.post("/api/v2/teams/nlp/members", json={"user": "bob"})
    assert r.status_code == 201 and r.json() == {"name": "bob", "role": "member", "is_default": False}
    # bob (member) may not add carol
    r = bob.post("/api/v2/teams/nlp/members", json={"user": "carol"})
    assert r.status_code == 403 and "admins of team 'nlp'" in r.json()["detail"]["message"]
    r = alice.post("/api/v2/teams/nlp/members", json={"user": "bob"})
    assert r.status_code == 409 and errors_of(r) == [("user", "bob")]
    r = admin.post("/api/v2/teams/nlp/members", json={"user": "nobody"})
    assert r.status_code == 404

    team = bob.get("/api/v2/teams/nlp").json()
    assert team["my_role"] == "member" and [(m["name"], m["role"]) for m in team["members"]] == [
        ("alice", "admin"), ("bob", "member")]
    # a team admin cannot raise their own team's weight; a site admin can
    r = alice.patch("/api/v2/teams/nlp", json={"weight": 10})
    assert r.status_code == 403
    r = admin.patch("/api/v2/teams/nlp", json={"weight": 3, "max_gpus": None})
    assert r.status_code == 200 and (r.json()["weight"], r.json()["max_gpus"]) == (3.0, None)

    actions = [(e["action"], e["target"]) for e in admin.get("/api/v2/audit", params={"limit": 50}).json()["events"]
               if e["action"].startswith("team.")]
    assert ("team.created", "nlp") in actions and ("team.changed", "nlp") in actions
    assert actions.count(("team.member_added", "nlp")) == 2


def test_a_team_is_invisible_outside_it(live: LiveServer, people) -> None:  # noqa: ANN001
    admin, alice, carol = live.admin(), people["alice"], people["carol"]
    admin.post("/api/v2/teams", json={"name": "vision"})
    admin.post("/api/v2/teams/vision/members", json={"user": "alice", "role": "admin"})
    assert [t["name"] for t in carol.get("/api/v2/teams").json()] == []
    assert [t["name"] for t in alice.get("/api/v2/teams").json()] == ["vision"]
    for method, path, body in (("GET", "/api/v2/teams/vision", None),
                               ("POST", "/api/v2/teams/vision/members", {"user": "carol"}),
                               ("DELETE", "/api/v2/teams/vision/members/alice", None),
                               ("PATCH", "/api/v2/teams/vision", {"weight": 5}),
                               ("POST", "/api/v2/teams/vision/default", None)):
        r = carol.request(method, path, json=body)
        assert r.status_code == 404, (method, path, r.text)
        assert r.json()["detail"]["message"] in ("no team named 'vision'", "you are not in a team named 'vision'")
    # the same answer as a team that does not exist: nothing leaks
    assert carol.get("/api/v2/teams/nosuch").json()["detail"]["message"] == "no team named 'nosuch'"


def test_settings_and_names_are_validated_with_every_reason(live: LiveServer) -> None:
    admin = live.admin()
    r = admin.post("/api/v2/teams", json={"name": "Bad Name!", "weight": 0})
    assert r.status_code == 400 and errors_of(r) == [("name", "Bad Name!")]
    r = admin.post("/api/v2/teams", json={"name": "ok", "weight": -1, "max_gpus": -2, "gpu_hours_month": -5})
    assert r.status_code == 400
    assert {f for f, _ in errors_of(r)} == {"weight", "max_gpus", "gpu_hours_month"}
    assert all("must be" in e["message"] for e in r.json()["detail"]["errors"])
    r = admin.post("/api/v2/teams", json={"name": "ok", "colour": "red"})
    assert r.status_code == 400 and errors_of(r)[0][0] == "colour"
    r = admin.post("/api/v2/teams", json={"name": "ok"})
    r = admin.post("/api/v2/teams/ok/members", json={"user": "admin-less", "role": "owner"})
    assert r.status_code == 400 and errors_of(r) == [("role", "owner")]


def test_default_team_roles_and_the_last_team_admin(live: LiveServer, people) -> None:  # noqa: ANN001
    admin, alice, bob = live.admin(), people["alice"], people["bob"]
    for name in ("a-team", "b-team"):
        admin.post("/api/v2/teams", json={"name": name})
        admin.post(f"/api/v2/teams/{name}/members", json={"user": "alice", "role": "admin"})
    admin.post("/api/v2/teams/a-team/members", json={"user": "bob"})

    def defaults(client) -> dict[str, bool]:  # noqa: ANN001
        return {t["name"]: next(m["is_default"] for m in client.get(f"/api/v2/teams/{t['name']}").json()["members"]
                                if m["name"] == "alice") for t in client.get("/api/v2/teams").json()}

    assert defaults(alice) == {"a-team": True, "b-team": False}  # the first team joined
    assert alice.post("/api/v2/teams/b-team/default").status_code == 204
    assert defaults(alice) == {"a-team": False, "b-team": True}

    # the last team admin cannot step down or leave; after making bob admin, alice can leave
    r = alice.patch("/api/v2/teams/a-team/members/alice", json={"role": "member"})
    assert r.status_code == 409 and r.json()["detail"]["code"] == "last_team_admin"
    assert alice.delete("/api/v2/teams/a-team/members/alice").status_code == 409
    assert alice.patch("/api/v2/teams/a-team/members/bob", json={"role": "admin"}).status_code == 200
    assert alice.delete("/api/v2/teams/a-team/members/alice").status_code == 204
    # bob, a member, leaves b-team? he is not in it: 404; he may leave a-team himself
    assert bob.delete("/api/v2/teams/b-team/members/bob").status_code == 404
    # leaving the default team moves the default: delete b-team (alice's default) → a-team? she left it
    assert admin.delete("/api/v2/teams/b-team").status_code == 204
    assert alice.get("/api/v2/teams").json() == []
    admin.post("/api/v2/teams/a-team/members", json={"user": "alice"})
    assert defaults(alice) == {"a-team": True}
    assert alice.get("/api/v2/teams/b-team").status_code == 404


SPEC = ("kind: advanced\nworkload: job\nname: t\nnnodes: 1\nn_gpus_per_node: 2\n"
        "command: python3 -m argus.jobs.sleep 1\n")


def submit(client, spec: str):  # noqa: ANN001, ANN201
    return client.post("/api/v2/tasks", content=spec.encode(), headers={"Content-Type": "application/yaml"})


def spend(live: LiveServer, task_id: str, hours: float) -> None:
    """Record a finished attempt of ``task_id`` this month that used its GPUs for ``hours``."""
    from datetime import UTC, datetime, timedelta

    from argus.db.models import TaskAttemptModel, TaskModel

    # from the start of this month (UTC), so the whole attempt falls inside the budget's month whenever it runs
    start = datetime.now(UTC).replace(day=1, hour=0, minute=1, second=0, microsecond=0)
    with live.ctx.db.session() as s:
        task = s.get(TaskModel, task_id)
        task.status, task.attempts = "SUCCEEDED", 1
        s.add(TaskAttemptModel(task_id=task_id, attempt=1, submission_id=f"sub-{task_id}", status="SUCCEEDED",
                               started_at=start, finished_at=start + timedelta(hours=hours)))


def test_tasks_are_charged_to_a_team_and_a_spent_budget_refuses_at_submit(live: LiveServer, people) -> None:  # noqa: ANN001
    admin, alice, carol = live.admin(), people["alice"], people["carol"]
    # alice in no team: her tasks are charged to none
    r = submit(alice, SPEC)
    assert r.status_code == 201, r.text
    assert alice.get(f"/api/v2/tasks/{r.json()['task_id']}").json()["team"] is None

    admin.post("/api/v2/teams", json={"name": "nlp", "gpu_hours_month": 1})
    admin.post("/api/v2/teams", json={"name": "vision"})
    admin.post("/api/v2/teams/nlp/members", json={"user": "alice"})
    admin.post("/api/v2/teams/vision/members", json={"user": "alice"})
    r = submit(alice, SPEC)
    first = r.json()["task_id"]
    assert alice.get(f"/api/v2/tasks/{first}").json()["team"] == "nlp"  # her first team is her default
    r = submit(alice, SPEC + "team: vision\n")
    assert alice.get(f"/api/v2/tasks/{r.json()['task_id']}").json()["team"] == "vision"

    r = submit(carol, SPEC + "team: nlp\n")
    assert r.status_code == 400 and errors_of(r) == [("team", "nlp")]
    assert "your teams: none" in r.json()["detail"]["errors"][0]["message"]

    spend(live, first, 0.3)  # 2 GPUs × 0.3 h = 0.6 of 1 GPU-hour: still room
    r = submit(alice, SPEC)
    assert r.status_code == 201, r.text
    spend(live, r.json()["task_id"], 0.3)  # now 1.2 GPU-hours of 1
    r = submit(alice, SPEC)
    assert r.status_code == 400 and r.json()["detail"]["code"] == "team_budget_exhausted"
    [err] = r.json()["detail"]["errors"]
    assert err["field"] == "team" and err["value"] == "nlp"
    assert "has used 1.2 of its 1 GPU-hours for" in err["message"] and "--gpu-hours-month" in err["message"]
    assert submit(alice, SPEC + "team: vision\n").status_code == 201  # another team of hers still works
    admin.patch("/api/v2/teams/nlp", json={"gpu_hours_month": 10})
    assert submit(alice, SPEC).status_code == 201

    # usage reports per team: every member sees the whole team's use; others are told it is no team of theirs
    admin.post("/api/v2/teams/nlp/members", json={"user": "bob"})
    r = people["bob"].get("/api/v2/usage", params={"team": "nlp", "group_by": "user"})
    assert r.status_code == 200, r.text
    assert [(row["key"], row["gpu_hours"]) for row in r.json()["rows"]] == [("alice", 1.2)]
    r = carol.get("/api/v2/usage", params={"team": "nlp"})
    assert r.status_code == 404 and errors_of(r) == [("team", "nlp")]
    rows = admin.get("/api/v2/usage", params={"group_by": "team"}).json()["rows"]
    assert [(row["key"], row["gpu_hours"]) for row in rows] == [("nlp", 1.2)]

    text = admin.get("/metrics").text  # the month's figures per team, for dashboards and alerts
    assert 'argus_team_gpu_hours_month{team="nlp"} 1.2' in text
    assert 'argus_team_gpu_hours_budget{team="nlp"} 10.0' in text
    assert 'argus_team_gpus_held{team="vision"} 0.0' in text
    assert 'argus_team_gpu_hours_budget{team="vision"}' not in text

    # the Teams page's figures and CSV links: use this month against the budget, tasks and GPUs held now
    r = people["bob"].get("/api/v2/usage", params={"team": "nlp", "group_by": "user", "format": "csv"})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/csv"), r.text
    assert 'attachment; filename="argus-usage-user-nlp-' in r.headers["content-disposition"]
    lines = r.text.splitlines()
    assert lines[0] == "user,gpu_hours,cpu_hours,attempts" and lines[1].startswith("alice,1.2000,0.0000,"), lines
    assert carol.get("/api/v2/usage", params={"team": "nlp", "format": "csv"}).status_code == 404
    from sqlalchemy import select

    from argus.db.models import TaskModel

    with live.ctx.db.session() as s:  # one of vision's tasks (2 GPUs) running now
        s.scalars(select(TaskModel).where(TaskModel.team == "vision").limit(1)).one().status = "RUNNING"
    teams = {t["name"]: t for t in alice.get("/api/v2/teams").json()}
    assert (teams["nlp"]["gpu_hours_used_month"], teams["nlp"]["running_tasks"]) == (1.2, 0)
    assert (teams["vision"]["running_tasks"], teams["vision"]["gpus_held"]) == (1, 2), teams["vision"]
    assert people["bob"].get("/api/v2/teams/nlp").json()["gpu_hours_used_month"] == 1.2


def test_priority_classes_who_may_use_them_and_tasks_that_carry_them(live: LiveServer, people) -> None:  # noqa: ANN001
    admin, alice, bob = live.admin(), people["alice"], people["bob"]
    admin.post("/api/v2/teams", json={"name": "nlp"})
    admin.post("/api/v2/teams/nlp/members", json={"user": "alice"})
    r = admin.post("/api/v2/priority-classes", json={"name": "urgent", "value": 100, "teams": ["nlp"],
                                                    "description": "paper deadline"})
    assert r.status_code == 201, r.text
    r = admin.post("/api/v2/priority-classes", json={"name": "bad", "value": 0, "users": ["Not A Name"]})
    assert r.status_code == 400 and {f for f, _ in errors_of(r)} == {"value", "users"}
    assert {e["code"] for e in r.json()["detail"]["errors"]} == {"priority.value_rule", "priority.names_rule"}
    assert r.json()["detail"]["message_code"] == "priority.invalid"
    assert alice.post("/api/v2/priority-classes", json={"name": "mine", "value": 5}).status_code == 403
    assert [(c["name"], c["may_use"]) for c in alice.get("/api/v2/priority-classes").json()] == [("urgent", True)]
    assert [(c["name"], c["may_use"]) for c in bob.get("/api/v2/priority-classes").json()] == [("urgent", False)]

    r = submit(alice, SPEC + "priority_class: urgent\n")
    assert r.status_code == 201, r.text
    assert alice.get(f"/api/v2/tasks/{r.json()['task_id']}").json()["priority_class"] == "urgent"
    r = submit(bob, SPEC + "priority_class: urgent\n")
    assert r.status_code == 400 and errors_of(r) == [("priority_class", "urgent")]
    assert "you may not use" in r.json()["detail"]["errors"][0]["message"]
    e = r.json()["detail"]["errors"][0]  # coded (issue 37): the page says it in the reader's language
    assert (e["code"], e["params"]) == ("priority.not_yours", {"classes": []})
    r = submit(bob, SPEC + "priority_class: nosuch\n")
    assert "is not a priority class; classes you may use: none" in r.json()["detail"]["errors"][0]["message"]
    assert r.json()["detail"]["errors"][0]["code"] == "priority.not_a_class"
    assert admin.patch("/api/v2/priority-classes/urgent", json={"users": ["bob"]}).status_code == 200
    assert submit(bob, SPEC + "priority_class: urgent\n").status_code == 201
    assert admin.delete("/api/v2/priority-classes/urgent").status_code == 204
    r = admin.delete("/api/v2/priority-classes/urgent")
    assert r.status_code == 404 and r.json()["detail"]["message"] == "no priority class named 'urgent'"
    assert (r.json()["detail"]["message_code"], r.json()["detail"]["message_params"]) == (
        "priority.not_found", {"name": "'urgent'"})


def test_a_dry_run_says_which_team_and_class_and_refuses_both_at_once(live: LiveServer, people) -> None:  # noqa: ANN001
    admin, alice = live.admin(), people["alice"]
    admin.post("/api/v2/teams", json={"name": "nlp"})
    admin.post("/api/v2/teams/nlp/members", json={"user": "alice"})

    def dry(spec: str):  # noqa: ANN202
        return alice.post("/api/v2/tasks", params={"dry_run": "true"}, content=spec.encode(),
                          headers={"Content-Type": "application/yaml"})

    r = dry(SPEC)
    assert r.status_code == 200 and r.json()["info"]["team"] == "nlp" and r.json()["info"]["priority_class"] is None
    r = dry(SPEC + "team: vision\npriority_class: urgent\n")
    assert r.status_code == 400
    errs = {e["field"]: e for e in r.json()["detail"]["errors"]}
    assert set(errs) == {"team", "priority_class"}
    assert errs["team"]["line"] == 7 and errs["priority_class"]["line"] == 8
    assert alice.get("/api/v2/tasks").json()["total"] == 0  # nothing stored
