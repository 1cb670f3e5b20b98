"""GET /api/v2/compare (specs aligned for the Compare page) and the ``times`` of GET /tasks/{id}/metrics."""

from __future__ import annotations

from argus.core.metrics import clock_line
from tests.helpers import live_server, submit_spec

SPEC = "kind: advanced\nworkload: job\nname: {name}\nnnodes: 1\nn_gpus_per_node: 0\ncommand: {command}\n"


def test_compare_aligns_specs_and_names_every_unknown_task(settings):
    with live_server(settings) as srv:
        alice, bob = srv.new_user("alice"), srv.new_user("bob")
        a = submit_spec(alice, SPEC.format(name="lr-small", command="python3 -m argus.jobs.steps lr=1 seed=7"))
        b = submit_spec(alice, SPEC.format(name="lr-big", command="python3 -m argus.jobs.steps seed=7 lr=3 extra=1"))
        hidden = submit_spec(bob, SPEC.format(name="bobs", command="python3 -m argus.jobs.steps"))

        r = alice.get("/api/v2/compare", params={"tasks": f"{a},{b},{a}"})
        assert r.status_code == 200, r.text
        body = r.json()
        assert [t["task_id"] for t in body["tasks"]] == [a, b]  # duplicates dropped, order kept
        assert [t["name"] for t in body["tasks"]] == ["lr-small", "lr-big"]
        rows = {(row["section"], row["key"]): row for row in body["rows"]}
        assert rows[("override", "lr")] == {"section": "override", "key": "lr", "values": ["1", "3"], "differs": True}
        assert rows[("override", "seed")]["differs"] is False
        assert rows[("override", "extra")]["values"] == [None, "1"]
        assert rows[("spec", "name")]["differs"] and not rows[("spec", "n_gpus_per_node")]["differs"]
        assert rows[("command", "argv")]["values"][0].endswith("-m argus.jobs.steps")

        # another user's task reads like one that does not exist; every unknown id is named with why, and
        # the others are still compared (issue 37: one stale id in a link blanked the Compare page)
        r = alice.get("/api/v2/compare", params={"tasks": f"{a},{hidden},t-nope"})
        assert r.status_code == 200, r.text
        body = r.json()
        assert [t["task_id"] for t in body["tasks"]] == [a] and body["rows"]
        assert [(m["task_id"], m["code"]) for m in body["missing"]] == [(hidden, "task_not_found"),
                                                                         ("t-nope", "task_not_found")]
        assert "check the id" in body["missing"][1]["message"] and "bobs" not in r.text
        assert body["missing"][0]["message"].replace(hidden, "X") == body["missing"][1]["message"].replace("t-nope", "X")
        admin = srv.admin().get("/api/v2/compare", params={"tasks": f"{a},{hidden}"})
        assert admin.status_code == 200 and admin.json()["missing"] == []
        # none can be shown: a 404 naming each
        r = alice.get("/api/v2/compare", params={"tasks": f"{hidden},t-nope"})
        assert r.status_code == 404
        detail = r.json()["detail"]
        assert detail["code"] == "task_not_found"
        assert [(e["field"], e["value"]) for e in detail["errors"]] == [("tasks", hidden), ("tasks", "t-nope")]
        assert hidden in detail["message"] and "bobs" not in r.text

        for params, fix in (({}, "separated by commas"), ({"tasks": " , "}, "separated by commas"),
                            ({"tasks": ",".join(f"t-{i}" for i in range(9))}, "remove 1")):
            r = alice.get("/api/v2/compare", params=params)
            assert r.status_code == 400, r.text
            err = r.json()["detail"]["errors"][0]
            assert err["field"] == "tasks" and fix in err["message"]
        assert bob.get("/api/v2/compare", params={"tasks": a}).status_code == 404
        # hostile ids are unknown tasks, never a 500
        for odd in ("x" * 5000, "../../etc/passwd", "%00", "' OR 1=1 --", "\u202e\u0000"):
            r = alice.get("/api/v2/compare", params={"tasks": f"{a},{odd}"})
            assert r.status_code == 200, (odd, r.text)
            assert r.json()["missing"][0]["task_id"] == odd.strip()
            r = alice.get("/api/v2/compare", params={"tasks": odd})
            assert r.status_code == 404, (odd, r.text)
            assert r.json()["detail"]["errors"][0]["value"] == odd.strip()


def test_metrics_carry_the_clock_times_and_stay_compatible(settings):
    with live_server(settings) as srv:
        alice = srv.new_user("alice")
        tid = submit_spec(alice, SPEC.format(name="m", command="python3 -m argus.jobs.steps"))
        log = settings.root / "users" / "alice" / "jobs" / tid / "logs" / "attempt-1.log"
        log.parent.mkdir(parents=True)
        text = b"step:1 - loss:0.5\nstep:2 - loss:nan\n"
        log.write_bytes(text)
        r = alice.get(f"/api/v2/tasks/{tid}/metrics")
        assert r.status_code == 200
        assert r.json()["points"] == {"loss": [[1, 0.5], [2, "nan"]]} and r.json()["times"] == {}
        log.with_suffix(".clock").write_bytes(clock_line(18, 1700000000.25) + clock_line(len(text), 1700000060.5))
        body = alice.get(f"/api/v2/tasks/{tid}/metrics", params={"key": "loss"}).json()
        assert body["times"] == {"1": 1700000000.25, "2": 1700000060.5}
        assert body["last_step"] == 2 and body["keys"] == ["loss"] and body["units"] == {}
        log.write_bytes(text + b"step:3 - loss:0.1 - timing_s/gen:1.5 - response_length/mean:300\n")
        body = alice.get(f"/api/v2/tasks/{tid}/metrics", params={"key": "loss"}).json()
        assert body["units"] == {"timing_s/gen": "s", "response_length/mean": "tokens"}  # every key's, not just the asked
