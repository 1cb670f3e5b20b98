"""/api/v2/files over real HTTP: listing, Range, streaming upload, quota, and traversal (never a 500)."""

from __future__ import annotations

import os

from sqlalchemy import text


def _put(c, path, data, **kw):
    return c.put("/api/v2/files/content", params={"path": path}, content=data, **kw)


def test_list_stat_upload_download(live):
    alice = live.new_user("alice")
    root = live.ctx.settings.root
    r = alice.get("/api/v2/files", params={"path": "/"})
    assert r.status_code == 200 and r.json()["type"] == "dir"
    assert [e["name"] for e in r.json()["entries"]] == ["code", "common", "datasets", "jobs", "models"]
    common = next(e for e in r.json()["entries"] if e["name"] == "common")
    assert common["writable"] is False
    data = os.urandom(3 * 1024 * 1024 + 17)

    def chunks():
        for i in range(0, len(data), 65536):
            yield data[i:i + 65536]

    r = _put(alice, "/datasets/x.bin", chunks())  # chunked transfer: no Content-Length
    assert r.status_code == 201 and r.json()["size"] == len(data)
    assert (root / "users/alice/datasets/x.bin").read_bytes() == data
    assert alice.get("/api/v2/files", params={"path": "/datasets/x.bin"}).json()["type"] == "file"
    r = alice.get("/api/v2/files/content", params={"path": "/datasets/x.bin"})
    assert r.status_code == 200 and r.content == data and r.headers["accept-ranges"] == "bytes"


def test_range_requests(live):
    alice = live.new_user("alice")
    assert _put(alice, "/code/r.txt", b"0123456789").status_code == 201
    get = lambda rng: alice.get("/api/v2/files/content", params={"path": "/code/r.txt"},  # noqa: E731
                                headers={"Range": rng})
    r = get("bytes=2-5")
    assert r.status_code == 206 and r.content == b"2345" and r.headers["content-range"] == "bytes 2-5/10"
    assert get("bytes=7-").content == b"789"
    assert get("bytes=-3").content == b"789"
    assert get("bytes=8-100").content == b"89"
    r = get("bytes=10-")
    assert r.status_code == 416 and r.headers["content-range"] == "bytes */10"
    assert get("items=1-2").status_code == 200


def test_mkdir_move_delete(live):
    alice = live.new_user("alice")
    assert alice.post("/api/v2/files/mkdir", json={"path": "/code/pkg"}).status_code == 201
    assert alice.post("/api/v2/files/mkdir", json={"path": "/code/pkg"}).status_code == 409
    _put(alice, "/code/pkg/a.py", b"x = 1")
    r = alice.post("/api/v2/files/move", json={"src": "/code/pkg", "dst": "/models/pkg"})
    assert r.status_code == 200 and r.json()["path"] == "/models/pkg"
    _put(alice, "/code/b.py", b"y")
    assert alice.post("/api/v2/files/move", json={"src": "/code/b.py", "dst": "/models/pkg/a.py"}).status_code == 409
    assert alice.delete("/api/v2/files", params={"path": "/models/pkg"}).status_code == 409  # not empty
    assert alice.delete("/api/v2/files", params={"path": "/models/pkg", "recursive": True}).status_code == 204
    assert alice.get("/api/v2/files", params={"path": "/models/pkg"}).status_code == 404


def test_traversal_and_other_users_never_500(live):
    alice = live.new_user("alice")
    live.new_user("bob")
    root = live.ctx.settings.root
    (root / "users/bob/datasets/bob.txt").write_text("bob")
    os.symlink(root / "users/bob", root / "users/alice/jobs/bob")
    bad = ["/../bob/datasets/bob.txt", "../../etc/passwd", "/common/../../bob", str(root / "users/bob"),
           "/jobs/bob/datasets/bob.txt", "/common/nothing", "/code/\x00x", "/etc/passwd"]
    for path in bad:
        for r in (alice.get("/api/v2/files", params={"path": path}),
                  alice.get("/api/v2/files/content", params={"path": path}),
                  _put(alice, path, b"x"),
                  alice.delete("/api/v2/files", params={"path": path}),
                  alice.post("/api/v2/files/move", json={"src": "/code", "dst": path})):
            assert r.status_code in (400, 403, 404, 409), (path, r.status_code, r.text)
    assert (root / "users/bob/datasets/bob.txt").read_text() == "bob"
    assert os.listdir(root / "users/bob/datasets") == ["bob.txt"]
    r = _put(alice, "/common/datasets/x", b"x")
    assert r.status_code == 403 and r.json()["detail"]["code"] == "read_only"
    assert alice.get("/api/v2/files").status_code == 200
    with live.client() as anon:
        assert anon.get("/api/v2/files", params={"path": "/"}).status_code == 401


def test_quota_over_http_leaves_no_partial_file(live):
    alice = live.new_user("alice")
    with live.ctx.db.session() as s:
        s.execute(text("UPDATE users SET quota_bytes = 100000 WHERE name = 'alice'"))
    home = live.ctx.settings.root / "users/alice/datasets"
    r = _put(alice, "/datasets/big", b"x" * 200_000)  # declared length: refused before reading
    assert r.status_code == 413 and r.json()["detail"]["code"] == "quota_exceeded"
    r = _put(alice, "/datasets/big", (b"x" * 50_000 for _ in range(4)))  # chunked: refused mid-stream
    assert r.status_code == 413
    assert list(home.iterdir()) == []
    assert _put(alice, "/datasets/ok", b"x" * 60_000).status_code == 201
    assert _put(alice, "/datasets/ok", b"y" * 60_000).status_code == 201  # replacing frees the old size
    assert _put(alice, "/datasets/ok2", b"y" * 60_000).status_code == 413
    assert sorted(p.name for p in home.iterdir()) == ["ok"]


def test_mkdir_parents(live):
    alice = live.new_user("alice")
    r = alice.post("/api/v2/files/mkdir", json={"path": "/datasets/a/b/c", "parents": True})
    assert r.status_code == 201 and r.json()["type"] == "dir"
    assert alice.post("/api/v2/files/mkdir", json={"path": "/datasets/a/b/c", "parents": True}).status_code == 201
    assert alice.post("/api/v2/files/mkdir", json={"path": "/x/y"}).status_code == 404  # no -p: parent must exist
    # -p never escapes or writes where the user may not
    assert alice.post("/api/v2/files/mkdir", json={"path": "/common/datasets/new", "parents": True}).status_code == 403
    r = alice.post("/api/v2/files/mkdir", json={"path": "/datasets/../../bob/x", "parents": True})
    assert r.status_code in (400, 403)
    _put(alice, "/datasets/f", b"1")
    assert alice.post("/api/v2/files/mkdir", json={"path": "/datasets/f/sub", "parents": True}).status_code in (400, 409)


def test_mkdir_parents_racing_its_twin_never_fails(live):
    """A folder upload asks ``mkdir -p`` of ``run1`` and ``run1/ckpt/step_1`` at once (CI saw the loser of
    that race get 409 "already exists", and the file under it never arrived)."""
    from concurrent.futures import ThreadPoolExecutor

    alice = live.new_user("alice")
    for round_ in range(20):
        paths = [f"/models/r{round_}", f"/models/r{round_}/ckpt/step_1"] * 4
        with ThreadPoolExecutor(len(paths)) as pool:
            codes = list(pool.map(lambda p: alice.post("/api/v2/files/mkdir", json={"path": p, "parents": True})
                                  .status_code, paths))
        assert codes == [201] * len(paths), codes
