"""What the Data page's quota bar and bulk move rely on (issue 25), over real HTTP.

The bar colours what ``GET /api/v2/files/usage`` says in ``level``; bulk move is one
``POST /api/v2/files/move`` per item, so its per-item errors are this endpoint's: they must name the
path and the fix, and the path rules (traversal, another user's home, links) stay the server's.
"""

from __future__ import annotations

import os

import pytest

from argus.services.quota import usage_level


def _put(c, path, data):
    r = c.put("/api/v2/files/content", params={"path": path}, content=data)
    assert r.status_code == 201, r.text


def test_usage_level_thresholds() -> None:
    assert usage_level(10**12, None) == "ok"  # no quota: never coloured
    assert usage_level(0, 100) == "ok" and usage_level(79, 100) == "ok"
    assert usage_level(80, 100) == "near" and usage_level(94, 100) == "near"
    assert usage_level(95, 100) == "full" and usage_level(500, 100) == "full"


def test_usage_reports_the_level_the_bar_shows(live) -> None:
    alice = live.new_user("alice")
    assert alice.get("/api/v2/files/usage").json()["level"] == "ok"
    _put(alice, "/datasets/a.bin", os.urandom(9000))
    with live.admin() as a:
        assert a.patch("/api/v2/users/alice", json={"quota_bytes": 10_000}).status_code == 200
    u = alice.get("/api/v2/files/usage").json()
    assert u["quota_bytes"] == 10_000 and u["used_bytes"] >= 9000 and u["level"] == "near"
    _put(alice, "/datasets/b.bin", os.urandom(600))
    assert alice.get("/api/v2/files/usage").json()["level"] == "full"


def test_move_errors_name_the_path_and_the_fix(live) -> None:
    alice = live.new_user("alice")
    for name in ("a.txt", "b.txt"):
        _put(alice, f"/datasets/{name}", b"x")
    assert alice.post("/api/v2/files/mkdir", json={"path": "/datasets/target/inner", "parents": True}).status_code == 201
    _put(alice, "/datasets/target/b.txt", b"old")
    r = alice.post("/api/v2/files/move", json={"src": "/datasets/b.txt", "dst": "/datasets/target/b.txt"})
    assert r.status_code == 409
    msg = r.json()["detail"]["message"]
    assert "/datasets/target/b.txt" in msg and "already exists" in msg and "delete" in msg
    # a folder into itself (or below itself): 400 naming both, nothing moved
    r = alice.post("/api/v2/files/move", json={"src": "/datasets/target", "dst": "/datasets/target/inner/target"})
    assert r.status_code == 400 and r.json()["detail"]["code"] == "move_into_itself"
    assert "/datasets/target" in r.json()["detail"]["message"]
    assert alice.get("/api/v2/files", params={"path": "/datasets/target/b.txt"}).status_code == 200
    # a sibling whose name starts the same is not "into itself"
    r = alice.post("/api/v2/files/move", json={"src": "/datasets/target", "dst": "/datasets/target2"})
    assert r.status_code == 200 and r.json()["path"] == "/datasets/target2"


@pytest.mark.hostile
def test_bulk_move_targets_outside_the_home_are_refused(live, tmp_path) -> None:
    """What the page's bulk move sends for a typed target: traversal, another user's home, a link out."""
    alice, bob = live.new_user("alice"), live.new_user("bob")
    _put(alice, "/datasets/mine.txt", b"secret")
    _put(bob, "/datasets/bobs.txt", b"bob")
    root = live.ctx.settings.root
    os.symlink(root / "users" / "bob" / "datasets", root / "users" / "alice" / "datasets" / "to-bob")
    for dst in ("/../bob/datasets/mine.txt", "/../../users/bob/datasets/mine.txt", "/datasets/to-bob/mine.txt",
                "/common/datasets/mine.txt", "/common"):
        r = alice.post("/api/v2/files/move", json={"src": "/datasets/mine.txt", "dst": dst})
        assert r.status_code in (400, 403, 404), (dst, r.status_code, r.text)
        assert r.json()["detail"]["message"], dst
    for src in ("/../bob/datasets/bobs.txt", "/datasets/to-bob/bobs.txt"):
        r = alice.post("/api/v2/files/move", json={"src": src, "dst": "/datasets/stolen.txt"})
        assert r.status_code in (400, 403, 404), (src, r.status_code, r.text)
    assert (root / "users/alice/datasets/mine.txt").read_bytes() == b"secret"
    assert (root / "users/bob/datasets/bobs.txt").read_bytes() == b"bob"
    assert not (root / "users/alice/datasets/stolen.txt").exists()
    assert sorted(p.name for p in (root / "users/bob/datasets").iterdir()) == ["bobs.txt"]


def test_small_and_streamed_uploads_keep_the_same_rules(live) -> None:
    """A body up to SMALL_UPLOAD is written in one thread job; the rules are those of the streamed path."""
    from argus.api.routers.files import SMALL_UPLOAD

    alice = live.new_user("alice")
    home = live.ctx.settings.root / "users" / "alice"
    for size in (0, 1, SMALL_UPLOAD, SMALL_UPLOAD + 1):
        data = os.urandom(size)
        r = alice.put("/api/v2/files/content", params={"path": f"/datasets/s{size}.bin"}, content=data)
        assert r.status_code == 201 and r.json()["size"] == size, (size, r.text)
        assert (home / f"datasets/s{size}.bin").read_bytes() == data
    r = alice.put("/api/v2/files/content", params={"path": "/datasets"}, content=b"x")  # a folder's name
    assert r.status_code == 400 and r.json()["detail"]["code"] == "is_directory"
    r = alice.put("/api/v2/files/content", params={"path": "/../bob/x.txt"}, content=b"x")
    assert r.status_code == 403
    with live.client() as anon:  # no credentials: refused before the body is read or anything written
        r = anon.put("/api/v2/files/content", params={"path": "/datasets/anon.bin"}, content=b"x" * 1000)
        assert r.status_code == 401
    with live.admin() as a:
        assert a.patch("/api/v2/users/alice", json={"quota_bytes": SMALL_UPLOAD * 3}).status_code == 200
    r = alice.put("/api/v2/files/content", params={"path": "/datasets/over.bin"}, content=os.urandom(SMALL_UPLOAD))
    assert r.status_code == 413 and r.json()["detail"]["code"] == "quota_exceeded"
    leftovers = [p.name for p in (home / "datasets").iterdir() if p.name.startswith(".argus-")]
    assert leftovers == [] and not (home / "datasets/over.bin").exists()
