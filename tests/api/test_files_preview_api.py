"""The Data page's extra endpoints over real HTTP (issue 13): preview, tree summary, usage; the account
and admin endpoints it uses (my tokens, admin password reset, storage per user). Same rules as the
other file endpoints: confined to the user's areas, symlinks never followed out, bounded answers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _put(c, path, data):
    parent = path.rsplit("/", 1)[0]
    if parent:
        assert c.post("/api/v2/files/mkdir", json={"path": parent, "parents": True}).status_code == 201
    r = c.put("/api/v2/files/content", params={"path": path}, content=data)
    assert r.status_code == 201, r.text
    return r


def test_parquet_preview_of_the_example_dataset_names_verls_columns(live, tmp_path):
    alice = live.new_user("alice")
    subprocess.run([sys.executable, str(REPO / "examples/make_dataset.py"), str(tmp_path), "--train", "40", "--test", "4"],
                   check=True, capture_output=True)
    _put(alice, "/datasets/gsm/train.parquet", (tmp_path / "train.parquet").read_bytes())
    r = alice.get("/api/v2/files/preview", params={"path": "/datasets/gsm/train.parquet", "rows": 5})
    assert r.status_code == 200, r.text
    p = r.json()
    assert p["kind"] == "parquet" and p["num_rows"] == 40 and len(p["rows"]) == 5
    assert {"prompt", "data_source", "reward_model", "reward_model.ground_truth"} <= set(p["verl_columns"])
    assert [c["name"] for c in p["columns"]][:2] == ["data_source", "prompt"]
    assert "Sam has" in p["rows"][0]["prompt"] and p["rows"][0]["data_source"] == "openai/gsm8k"


def test_text_preview_is_bounded_and_binary_is_named(live):
    alice = live.new_user("alice")
    _put(alice, "/code/log.txt", b"".join(b"line %d\n" % i for i in range(50_000)))
    p = alice.get("/api/v2/files/preview", params={"path": "/code/log.txt"}).json()
    assert p["kind"] == "text" and p["lines"][:2] == ["line 0", "line 1"] and len(p["lines"]) == 200 and p["truncated"]
    _put(alice, "/code/blob.bin", b"\x00\x01\x02" * 10)
    assert alice.get("/api/v2/files/preview", params={"path": "/code/blob.bin"}).json()["kind"] == "binary"
    _put(alice, "/code/fake.parquet", b"PAR1 not really PAR1")
    r = alice.get("/api/v2/files/preview", params={"path": "/code/fake.parquet"})
    assert r.status_code == 400 and r.json()["detail"]["code"] == "bad_parquet"


def test_preview_and_summary_never_follow_a_link_out_of_the_home(live):
    alice, _bob = live.new_user("alice"), live.new_user("bob")
    root = live.ctx.settings.root
    (root / "users/bob/code").mkdir(parents=True, exist_ok=True)
    (root / "users/bob/code/secret.txt").write_text("bob's secret\n")
    os.symlink(root / "users/bob/code/secret.txt", root / "users/alice/code/planted.txt")
    os.symlink(root / "users/bob", root / "users/alice/jobs/bobhome")
    r = alice.get("/api/v2/files/preview", params={"path": "/code/planted.txt"})
    assert r.status_code in (403, 404) and "secret" not in r.text
    r = alice.get("/api/v2/files/summary", params={"path": "/jobs/bobhome"})
    assert r.status_code in (200, 403, 404) and "secret" not in r.text
    if r.status_code == 200:  # the link itself, counted as one entry, never walked
        assert r.json()["dirs"] == 0
    r = alice.get("/api/v2/files/summary", params={"path": "/jobs"})
    assert r.status_code == 200 and r.json() == {"files": 1, "dirs": 0, "bytes": 0, "truncated": False}
    for bad in ("/../bob/code/secret.txt", "/code/../../bob"):
        assert alice.get("/api/v2/files/preview", params={"path": bad}).status_code in (403, 404)


def test_summary_counts_what_a_recursive_delete_removes(live):
    alice = live.new_user("alice")
    for i in range(3):
        _put(alice, f"/datasets/tree/a/f{i}.txt", b"x" * 10)
    _put(alice, "/datasets/tree/b/c/g.txt", b"y" * 5)
    s = alice.get("/api/v2/files/summary", params={"path": "/datasets/tree"}).json()
    assert s == {"files": 4, "dirs": 3, "bytes": 35, "truncated": False}


def test_usage_my_tokens_and_admin_endpoints(live):
    alice, bob = live.new_user("alice"), live.new_user("bob")
    _put(alice, "/datasets/u.bin", b"z" * 4096)
    u = alice.get("/api/v2/files/usage").json()
    assert u["used_bytes"] >= 4096 and "quota_bytes" in u
    made = alice.post("/api/v2/me/tokens", json={"name": "laptop"})
    assert made.status_code == 201 and made.json()["name"] == "laptop"
    tok = made.json()["token"]
    listed = alice.get("/api/v2/me/tokens").json()
    assert any(t["id"] == made.json()["id"] and t["revoked_at"] is None for t in listed)
    assert all("token" not in t for t in listed)  # the secret is shown once only
    with live.client(tok) as c:
        assert c.get("/api/v2/me").json()["name"] == "alice"
    assert bob.delete(f"/api/v2/me/tokens/{made.json()['id']}").status_code == 404  # not bob's
    assert alice.delete(f"/api/v2/me/tokens/{made.json()['id']}").status_code == 200
    with live.client(tok) as c:
        assert c.get("/api/v2/me").status_code == 401
    # admin-only: storage per user and password reset; a non-admin is refused
    assert alice.get("/api/v2/users/storage").status_code == 403
    assert alice.post("/api/v2/users/bob/password", json={"password": "x" * 20}).status_code == 403
    with live.admin() as a:
        rows = {r["name"]: r for r in a.get("/api/v2/users/storage").json()}
        assert rows["alice"]["used_bytes"] >= 4096
        assert a.post("/api/v2/users/bob/password", json={"password": "new-pass-123456"}).status_code == 204
        r = a.post("/api/v2/users/bob/password", json={"password": "short"})
        assert r.status_code == 400 and r.json()["detail"]["errors"][0]["field"] == "password"
        assert a.post("/api/v2/users/nobody/password", json={"password": "new-pass-123456"}).status_code == 404
    r = bob.post("/api/v2/session", json={"user": "bob", "password": "new-pass-123456"})
    assert r.status_code == 200, r.text


@pytest.mark.parametrize("path", ["/common/datasets/x.bin", "/common/x.bin", "/common"])
def test_upload_into_common_is_refused(live, path):
    alice = live.new_user("alice")
    r = alice.put("/api/v2/files/content", params={"path": path}, content=b"data")
    assert r.status_code in (403, 400) and r.status_code != 500


def test_folder_archive_streams_a_tar_without_links(live, tmp_path):
    import io
    import tarfile

    alice, _bob = live.new_user("alice"), live.new_user("bob")
    root = live.ctx.settings.root
    blob = os.urandom(1_500_000)
    _put(alice, "/models/run/ckpt/model.bin", blob)
    _put(alice, "/models/run/config.yaml", b"lr: 1\n")
    (root / "users/bob/code").mkdir(parents=True, exist_ok=True)
    (root / "users/bob/code/secret.txt").write_text("bob's secret\n")
    os.symlink(root / "users/bob/code/secret.txt", root / "users/alice/models/run/planted.txt")
    os.symlink(root / "users/bob", root / "users/alice/models/run/bobhome")
    r = alice.get("/api/v2/files/archive", params={"path": "/models/run"})
    assert r.status_code == 200 and r.headers["content-type"] == "application/x-tar"
    assert "run.tar" in r.headers["content-disposition"]
    with tarfile.open(fileobj=io.BytesIO(r.content)) as tar:
        names = sorted(tar.getnames())
        assert names == ["run", "run/ckpt", "run/ckpt/model.bin", "run/config.yaml"]
        assert tar.extractfile("run/ckpt/model.bin").read() == blob
    assert b"secret" not in r.content
    assert alice.get("/api/v2/files/archive", params={"path": "/models/run/config.yaml"}).status_code == 400
    assert alice.get("/api/v2/files/archive", params={"path": "/../bob"}).status_code in (403, 404)
