"""Hostile input over real HTTP: every answer is a 400 in the house shape naming the field, never a 500."""

from __future__ import annotations

import json
import os
import time

import pytest

from argus.services.fs_paths import MAX_NEW_DEPTH, MAX_PATH_BYTES

pytestmark = pytest.mark.hostile  # the hostile-input suite: grows with every hole found

HUGE = "100000000000000000000"  # > 2**63: SQLite cannot bind it


def _field_error(r, field: str) -> dict:
    assert r.status_code == 400, (r.status_code, r.text[:500])
    detail = r.json()["detail"]
    assert {"code", "message", "errors"} <= set(detail), detail
    errs = {e["field"]: e for e in detail["errors"]}
    assert field in errs, detail
    assert {"field", "value", "message"} <= set(errs[field])
    return errs[field]


def _yaml(c, body: str):
    return c.post("/api/v2/tasks", content=body.encode(), headers={"Content-Type": "application/yaml"})


def _json(c, body: str):
    return c.post("/api/v2/tasks", content=body.encode(), headers={"Content-Type": "application/json"})


def test_deeply_nested_specs_are_400(live):
    alice = live.new_user("alice")
    err = _field_error(_yaml(alice, "a: " + "[" * 5000 + "]" * 5000 + "\n"), "(body)")
    assert "nested deeper than" in err["message"]
    err = _field_error(_json(alice, '{"a": ' + "[" * 50_000 + "]" * 50_000 + "}"), "(body)")
    assert "nested deeper than" in err["message"]
    err = _field_error(_json(alice, "[" * 50_000), "(body)")  # unbalanced too
    assert "nested deeper than" in err["message"]


def test_task_list_paging_bounds_are_400(live):
    alice = live.new_user("alice")
    err = _field_error(alice.get("/api/v2/tasks", params={"offset": HUGE}), "offset")
    assert "less than or equal" in err["message"]
    _field_error(alice.get("/api/v2/tasks", params={"limit": HUGE}), "limit")
    _field_error(alice.get("/api/v2/tasks", params={"offset": "-1"}), "offset")
    assert alice.get("/api/v2/tasks", params={"offset": "1000000"}).status_code == 200


def test_huge_ids_and_offsets_elsewhere_are_not_500(live):
    alice = live.new_user("alice")
    body = ("kind: advanced\nworkload: job\nnnodes: 1\nn_gpus_per_node: 0\n"
            "command: python3 -m argus.jobs.sleep 1\n")
    tid = _yaml(alice, body).json()["task_id"]
    logs = live.ctx.settings.root / "users" / "alice" / "jobs" / tid / "logs"
    logs.mkdir(parents=True)
    (logs / "attempt-1.log").write_text("hello\n")
    for params in ({"offset": HUGE}, {"limit": HUGE}, {"attempt": HUGE}):
        r = alice.get(f"/api/v2/tasks/{tid}/logs", params=params)
        assert r.status_code in (200, 400, 404), (params, r.status_code, r.text)  # past the end: empty
        if r.status_code == 400:
            _field_error(r, next(iter(params)))
    r = alice.delete(f"/api/v2/me/keys/{HUGE}")
    assert r.status_code in (400, 404), r.text
    with live.admin() as a:
        r = a.delete(f"/api/v2/users/alice/tokens/{HUGE}")
        assert r.status_code in (400, 404), r.text


@pytest.mark.parametrize("name", ["a\x00b", "ab\n", "x\u001b[2J"])
def test_spec_name_with_control_characters_is_400(live, name):
    alice = live.new_user("alice")
    spec = {"kind": "advanced", "workload": "job", "nnodes": 1, "n_gpus_per_node": 0,
            "command": "python3 -m argus.jobs.sleep 1", "name": name}
    err = _field_error(_json(alice, json.dumps(spec)), "name")
    assert "control characters" in err["message"]
    yaml_name = json.dumps(name)  # a YAML double-quoted scalar with escapes
    err = _field_error(_yaml(alice, "kind: advanced\nworkload: job\nnnodes: 1\nn_gpus_per_node: 0\n"
                                   f"command: python3 -m argus.jobs.sleep 1\nname: {yaml_name}\n"), "name")


def test_lone_surrogate_in_a_spec_is_400(live):
    alice = live.new_user("alice")
    body = ('{"kind": "advanced", "workload": "job", "nnodes": 1, "n_gpus_per_node": 0, '
            '"command": "python3 -m argus.jobs.sleep 1 \\ud800"}')
    _field_error(_json(alice, body), "command")


@pytest.mark.parametrize("name", ["ab\n", "ab\x00", "a\nb"])
def test_user_names_are_matched_whole(live, name):
    with live.admin() as a:
        _field_error(a.post("/api/v2/users", json={"name": name}), "name")
        assert "ab" not in [u["name"] for u in a.get("/api/v2/users").json()]


def test_mkdir_parents_is_linear_and_capped(live):
    alice = live.new_user("alice")
    home = live.ctx.settings.root / "users" / "alice"
    deep = "/datasets/" + "/".join(["d"] * 1200)
    err = _field_error(alice.post("/api/v2/files/mkdir", json={"path": deep, "parents": True}), "path")
    assert f"at most {MAX_NEW_DEPTH}" in err["message"]
    assert not (home / "datasets" / "d").exists()
    long = "/datasets/" + "/".join(["n" * 200] * 25)  # 25 levels but > 4096 bytes
    err = _field_error(alice.post("/api/v2/files/mkdir", json={"path": long, "parents": True}), "path")
    assert str(MAX_PATH_BYTES) in err["message"]
    ok = "/datasets/" + "/".join(["d"] * (MAX_NEW_DEPTH - 1))  # 256 levels with /datasets
    t0 = time.monotonic()
    r = alice.post("/api/v2/files/mkdir", json={"path": ok, "parents": True})
    elapsed = time.monotonic() - t0
    assert r.status_code == 201, r.text
    # a denial-of-service guard, not a benchmark: the quadratic walk took 66 s of CPU for 1200 levels
    assert elapsed < 30, elapsed
    assert (home / "datasets" / ("d/" * (MAX_NEW_DEPTH - 1))).is_dir()
    assert alice.post("/api/v2/files/mkdir", json={"path": ok, "parents": True}).status_code == 201  # exists: ok


def test_mkdir_parents_still_confined(live, tmp_path):
    alice = live.new_user("alice")
    live.new_user("bob")
    root = live.ctx.settings.root
    home = root / "users" / "alice"
    os.symlink(root / "users" / "bob", home / "datasets" / "tobob")  # planted by a task
    r = alice.post("/api/v2/files/mkdir", json={"path": "/datasets/tobob/x/y", "parents": True})
    assert r.status_code == 403, r.text
    assert not (root / "users" / "bob" / "x").exists()
    os.symlink(home / "models", home / "datasets" / "tomodels")  # stays inside her home: followed
    r = alice.post("/api/v2/files/mkdir", json={"path": "/datasets/tomodels/a/b", "parents": True})
    assert r.status_code == 201, r.text
    assert (home / "models" / "a" / "b").is_dir()
    r = alice.post("/api/v2/files/mkdir", json={"path": "/datasets/.argus-part-x/y", "parents": True})
    assert r.status_code == 400
    r = alice.post("/api/v2/files/mkdir", json={"path": "/common/hf/a/b", "parents": True})
    assert r.status_code == 403
