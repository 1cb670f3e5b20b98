"""Teams under hostile use (issues 26 and 33): a team member sees a teammate's task but cannot act as its owner;
an outsider sees nothing; leaving a team ends the view; names in paths cannot reach another endpoint; a team
admin cannot enrol someone outside their teams (and so charge, read and cancel their tasks); a removed member's
running tasks, which show the team's folder read-write, are stopped.

Every answer is 403/404 in the house shape, never a 500.
"""

from __future__ import annotations

import pytest

from argus.client import ApiError, Client
from tests.helpers import LiveServer

pytestmark = pytest.mark.hostile

SPEC = ("kind: advanced\nworkload: job\nname: t\nnnodes: 1\nn_gpus_per_node: 1\n"
        "command: python3 -m argus.jobs.sleep 600\nteam: nlp\n")


def submit(client, spec: str) -> str:  # noqa: ANN001
    r = client.post("/api/v2/tasks", content=spec.encode(), headers={"Content-Type": "application/yaml"})
    assert r.status_code == 201, r.text
    return r.json()["task_id"]


def test_a_teammate_reads_but_cannot_act_as_the_owner(live: LiveServer) -> None:
    admin = live.admin()
    alice, bob, lead, mallory = (live.new_user(n) for n in ("alice", "bob", "lead", "mallory"))
    admin.post("/api/v2/teams", json={"name": "nlp"})
    admin.post("/api/v2/teams/nlp/members", json={"user": "lead", "role": "admin"})
    for name in ("alice", "bob"):
        assert admin.post("/api/v2/teams/nlp/members", json={"user": name}).status_code == 201
    tid = submit(alice, SPEC)

    # bob (member) reads the team task: the task, spec, events, metrics, checkpoints; the team's list
    for path in (f"/api/v2/tasks/{tid}", f"/api/v2/tasks/{tid}/spec", f"/api/v2/tasks/{tid}/events",
                 f"/api/v2/tasks/{tid}/metrics", f"/api/v2/tasks/{tid}/checkpoints"):
        assert bob.get(path).status_code == 200, path
    assert [t["task_id"] for t in bob.get("/api/v2/tasks", params={"team": "nlp"}).json()["items"]] == [tid]

    # but nothing that acts as the owner
    r = bob.post(f"/api/v2/tasks/{tid}/cancel")
    assert r.status_code == 403 and "admins of team 'nlp'" in r.json()["detail"]["message"]
    for method, path, body in (("POST", f"/api/v2/tasks/{tid}/resume", {}),
                               ("POST", f"/api/v2/tasks/{tid}/export", {}),
                               ("DELETE", f"/api/v2/tasks/{tid}/checkpoints", None),
                               ("GET", f"/api/v2/tasks/{tid}/ray-dashboard/", None)):
        r = bob.request(method, path, json=body)
        assert r.status_code in (403, 404), (method, path, r.status_code, r.text[:300])

    # mallory (outsider) sees nothing, in any form
    for path in (f"/api/v2/tasks/{tid}", f"/api/v2/tasks/{tid}/spec", f"/api/v2/tasks/{tid}/logs",
                 f"/api/v2/tasks/{tid}/metrics", f"/api/v2/tasks/{tid}/events"):
        assert mallory.get(path).status_code == 404, path
    r = mallory.get("/api/v2/tasks", params={"team": "nlp"})
    assert r.status_code == 404 and r.json()["detail"]["errors"][0]["field"] == "team"
    assert mallory.post(f"/api/v2/tasks/{tid}/cancel").status_code == 404
    r = mallory.post("/api/v2/tasks", content=SPEC.encode(), headers={"Content-Type": "application/yaml"})
    assert r.status_code == 400 and r.json()["detail"]["errors"][0]["field"] == "team"

    # the team admin may cancel a member's task (recorded as a cancel by another)
    assert lead.post(f"/api/v2/tasks/{tid}/cancel").status_code == 200
    events = admin.get("/api/v2/audit", params={"action": "task.canceled_by_other"}).json()["events"]
    assert [(e["actor"], e["target"]) for e in events] == [("lead", tid)]

    # leaving the team ends the view at once
    assert bob.delete("/api/v2/teams/nlp/members/bob").status_code == 204
    assert bob.get(f"/api/v2/tasks/{tid}").status_code == 404
    assert bob.get("/api/v2/tasks", params={"team": "nlp"}).status_code == 404


def test_names_that_try_to_escape_their_path_segment(live: LiveServer) -> None:
    admin = live.admin()
    live.new_user("alice")
    for name in ("..", "../users", "nlp/../../users", "%2e%2e", "a" * 300, "nlp\n", "ñ"):
        r = admin.post("/api/v2/teams", json={"name": name})
        assert r.status_code == 400, (name, r.status_code)
        try:  # through the SDK, which sends a name as one path segment whatever it holds
            Client(live.url, live.admin_token).teams.get(name)
            raise AssertionError(f"{name!r} found")
        except ApiError as exc:
            assert exc.status in (400, 404), (name, exc.status)
        r = admin.post("/api/v2/teams/nlp/members", json={"user": name})
        assert r.status_code in (400, 404), (name, r.status_code)
    r = admin.post("/api/v2/priority-classes", json={"name": "x" * 40, "value": 10, "teams": ["../x"]})
    assert r.status_code == 400 and {e["field"] for e in r.json()["detail"]["errors"]} == {"name", "teams"}
    big = admin.post("/api/v2/teams", json={"name": "big", "max_gpus": 10**30, "weight": float("1e308")})
    assert big.status_code == 400


GPU_SPEC = ("kind: advanced\nworkload: job\nname: t\nnnodes: 1\nn_gpus_per_node: 1\n"
            "command: python3 -m argus.jobs.sleep 600\n")


def test_a_team_admin_cannot_enrol_someone_outside_their_teams(live: LiveServer) -> None:
    admin = live.admin()
    lead, victim, member = (live.new_user(n) for n in ("lead2", "victim", "member2"))
    for team in ("t-one", "t-two", "t-own"):
        admin.post("/api/v2/teams", json={"name": team})
    admin.post("/api/v2/teams/t-one/members", json={"user": "lead2", "role": "admin"})
    admin.post("/api/v2/teams/t-two/members", json={"user": "lead2", "role": "admin"})
    admin.post("/api/v2/teams/t-own/members", json={"user": "victim"})  # victim's own team, her default
    admin.post("/api/v2/teams/t-one/members", json={"user": "member2"})

    # victim is in no team lead2 administers; a name that does not exist gets the very same answer
    answers = []
    for who in ("victim", "no-such-user"):
        r = lead.post("/api/v2/teams/t-two/members", json={"user": who})
        assert r.status_code == 403 and r.json()["detail"]["errors"][0]["field"] == "user", r.text
        answers.append(r.json()["detail"]["message"].replace(who, "X"))
    assert answers[0] == answers[1]
    tid = submit(victim, GPU_SPEC)
    assert victim.get(f"/api/v2/tasks/{tid}").json()["team"] == "t-own"  # still charged to her own team
    assert lead.get(f"/api/v2/tasks/{tid}").status_code == 404
    assert lead.post(f"/api/v2/tasks/{tid}/cancel").status_code == 404

    # someone already in a team lead2 administers may be added; their default team does not move
    r = lead.post("/api/v2/teams/t-two/members", json={"user": "member2"})
    assert r.status_code == 201 and r.json()["is_default"] is False
    defaults = {t["name"]: next(m["is_default"] for m in member.get(f"/api/v2/teams/{t['name']}").json()["members"]
                                if m["name"] == "member2") for t in member.get("/api/v2/teams").json()}
    assert defaults == {"t-one": True, "t-two": False}


def test_a_removed_member_keeps_no_running_task_with_the_team_folder(live: LiveServer) -> None:
    from sqlalchemy import update

    from argus.db.models import TaskModel

    admin = live.admin()
    lead, gone = live.new_user("lead3"), live.new_user("gone")
    admin.post("/api/v2/teams", json={"name": "t-three"})
    admin.post("/api/v2/teams/t-three/members", json={"user": "lead3", "role": "admin"})
    admin.post("/api/v2/teams/t-three/members", json={"user": "gone"})
    running, queued = submit(gone, GPU_SPEC), submit(gone, GPU_SPEC)
    with live.ctx.db.session() as s:  # started while in the team: its sandbox shows the folder read-write
        s.execute(update(TaskModel).where(TaskModel.id == running).values(status="RUNNING"))
    assert lead.delete("/api/v2/teams/t-three/members/gone").status_code == 204
    task = gone.get(f"/api/v2/tasks/{running}").json()
    assert task["status"] == "CANCELING" and "left team 't-three'" in task["status_message"], task
    assert (task["status_message_code"], task["status_message_params"]) == ("status.left_team", {"team": "'t-three'"})
    assert gone.get(f"/api/v2/tasks/{queued}").json()["status"] == "QUEUED"  # starts with the teams of then
    removed = admin.get("/api/v2/audit", params={"action": "team.member_removed"}).json()["events"]
    assert any(e["detail"].get("stopped_tasks") == [running] for e in removed), removed
