"""GET /api/v2/nodes ``queue``: the oldest waiting tasks for the Nodes page, other users' redacted (issue 13)."""

from __future__ import annotations

from tests.helpers import submit_spec

SPEC = "kind: advanced\nworkload: job\nname: {name}\nnnodes: 1\nn_gpus_per_node: 0\ncommand: python3 -m argus.jobs.sleep 1\n"


def _submit(c, name):
    return submit_spec(c, SPEC.format(name=name))


def test_queue_head_is_oldest_first_and_redacted_for_other_users(live):
    alice, bob = live.new_user("alice"), live.new_user("bob")
    a1 = _submit(alice, "alice-first")
    b1 = _submit(bob, "bob <secret> name")
    a2 = _submit(alice, "alice-second")
    view = alice.get("/api/v2/nodes").json()  # no scheduler here: all three stay QUEUED
    assert view["queued_total"] == 3
    queue = view["queue"]
    assert [q["task_id"] for q in queue] == [a1, None, a2]
    other = queue[1]
    assert other["user"] is None and other["name"] is None and other["pending_reason"] is None
    assert other["pending_reason_code"] is None and other["pending_reason_params"] is None
    assert other["gpus"] == 0 and other["status"] == "QUEUED"
    assert "secret" not in alice.get("/api/v2/nodes").text and b1 not in alice.get("/api/v2/nodes").text
    with live.admin() as a:
        admin_queue = a.get("/api/v2/nodes").json()["queue"]
    assert [(q["task_id"], q["user"]) for q in admin_queue] == [(a1, "alice"), (b1, "bob"), (a2, "alice")]
