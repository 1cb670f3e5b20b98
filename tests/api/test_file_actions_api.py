"""Each listed entry says what its user may do to it (``actions``), by the rules that refuse the rest
(services/file_actions.py): every action is tried on every entry of the listings a page shows, and the
server refuses exactly the ones not offered (issue 37: team-folder rows offered Rename/Delete the server refused)."""

from __future__ import annotations

import pytest

from tests.helpers import LiveServer


def entries(c, path: str) -> list[dict]:  # noqa: ANN001
    r = c.get("/api/v2/files", params={"path": path})
    assert r.status_code == 200, r.text
    return r.json()["entries"]


def try_rename(c, path: str) -> bool:  # noqa: ANN001
    moved = path.rstrip("/") + "-renamed"
    r = c.post("/api/v2/files/move", json={"src": path, "dst": moved})
    if r.status_code == 200:
        assert c.post("/api/v2/files/move", json={"src": moved, "dst": path}).status_code == 200
        return True
    assert r.status_code in (403, 404, 409), r.text  # refused with a reason, never a 500
    return False


@pytest.fixture
def member(live: LiveServer):  # noqa: ANN201
    admin = live.admin()
    alice = live.new_user("alice")
    assert admin.post("/api/v2/teams", json={"name": "nlp"}).status_code == 201
    assert admin.post("/api/v2/teams/nlp/members", json={"user": "alice"}).status_code == 201
    assert alice.post("/api/v2/files/mkdir", json={"path": "/teams/nlp/runs"}).status_code == 201
    assert alice.put("/api/v2/files/content", params={"path": "/teams/nlp/notes.txt"}, content=b"x").status_code == 201
    assert alice.post("/api/v2/files/mkdir", json={"path": "/code/proj"}).status_code == 201
    return admin, alice


def test_offered_actions_are_exactly_what_the_server_does(live: LiveServer, member) -> None:  # noqa: ANN001
    admin, alice = member
    seen = {}
    for who, c, folders in (("alice", alice, ("/", "/common", "/teams", "/teams/nlp", "/code")),
                            ("admin", admin, ("/common",))):
        for folder in folders:
            for e in entries(c, folder):
                offered = e["actions"]
                assert set(offered) <= {"rename", "delete"}
                seen[(who, e["path"])] = offered
                assert try_rename(c, e["path"]) == ("rename" in offered), (who, e["path"], offered)
    # the rows that were wrongly offered: a team's folder, the shared areas' roots (even for an admin who
    # may write inside them), the platform's own /common and /teams
    for key in (("alice", "/teams/nlp"), ("alice", "/teams"), ("alice", "/common"), ("alice", "/common/datasets"),
                ("admin", "/common/datasets"), ("admin", "/common/hf")):
        assert seen[key] == [], key
    assert seen[("alice", "/teams/nlp/runs")] == ["rename", "delete"] == seen[("alice", "/code/proj")]
    # delete: refused where not offered, done where offered
    for (who, path), offered in seen.items():
        c = alice if who == "alice" else admin
        if "delete" in offered or path in ("/", ):
            continue
        r = c.delete("/api/v2/files", params={"path": path, "recursive": "true"})
        assert r.status_code in (403, 404, 409), (who, path, r.text)
    for path in ("/teams/nlp/runs", "/teams/nlp/notes.txt", "/code/proj"):
        assert "delete" in seen[("alice", path)]
        assert alice.delete("/api/v2/files", params={"path": path, "recursive": "true"}).status_code == 204, path
