"""Resumable transfers with the real OpenSSH client: `reput` continues an interrupted upload, `reget` a download.

An interrupted upload is a real one cut short: paramiko writes the first part of a new file and the
connection drops with the handle open. The file must not appear (not over SFTP, not over HTTP, not
on disk under its name) until `reput` completes it; the kept bytes are continued, not sent again
(they are marked: the finished file starts with the marked bytes). A fresh `put` discards the partial.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from argus.services.files import FileStore
from argus.services.principal import Principal
from argus.services.uploads import resume_name
from argus.services.users import ensure_home, ensure_layout
from tests.sftp.conftest import SftpEnv
from tests.waiting import wait_until

MB = 1 << 20


def interrupted_upload(env: SftpEnv, remote: str, data: bytes) -> Path:
    """Upload ``data`` to ``remote`` over paramiko and drop the connection mid-file; the kept partial's path."""
    c = env.paramiko("alice")
    s = c.open_sftp()
    f = s.open(remote, "wb")
    for i in range(0, len(data), 32768):
        f.write(data[i:i + 32768])
    c.get_transport().close()  # the client vanishes with the handle open: no CLOSE
    folder = env.home("alice") / Path(remote).parent.relative_to("/")
    partial = folder / resume_name(Path(remote).name)
    wait_until(partial.exists, 10, every=0.05, what=lambda: f"{partial.name}; in the folder: "
               f"{sorted(p.name for p in folder.iterdir())}")
    return partial


@pytest.mark.hostile
def test_interrupted_upload_stays_hidden_and_reput_continues_it(env: SftpEnv) -> None:
    data = os.urandom(3 * MB)
    (env.tmp / "big.bin").write_bytes(data)
    # the first MiB as received before the cut, marked so that a restart from zero would show
    partial = interrupted_upload(env, "/datasets/big.bin", b"x" * MB)
    assert partial.stat().st_size == MB
    # not visible as the file: not on disk under its name, not in listings, not over HTTP
    assert not (env.home("alice") / "datasets" / "big.bin").exists()
    ls = env.sftp("alice", "ls -a /datasets\n").stdout
    assert "big.bin" not in ls and ".argus-part" not in ls
    with env.live.admin() as admin:
        token = admin.post("/api/v2/users/alice/tokens", json={}).json()["token"]
    with env.live.client(token) as alice:
        assert alice.get("/api/v2/files", params={"path": "/datasets/big.bin"}).status_code == 404
        assert alice.get("/api/v2/files/content", params={"path": "/datasets/big.bin"}).status_code == 404
        # nor by the partial's own exact name (issue 33): over HTTP, SFTP's stat and get
        hidden = f"/datasets/{partial.name}"
        for path in ("/api/v2/files", "/api/v2/files/content", "/api/v2/files/preview"):
            r = alice.get(path, params={"path": hidden})
            assert r.status_code == 404, (path, r.status_code, r.text[:200])
    got = env.sftp("alice", f"get {hidden} {env.tmp / 'stolen'}\n", check=False)
    assert not (env.tmp / "stolen").exists(), got.stdout + got.stderr
    assert "No such file" in got.stderr or "not found" in got.stderr, got.stderr
    env.sftp("alice", "reput big.bin /datasets/big.bin\n")
    final = env.home("alice") / "datasets" / "big.bin"
    assert final.read_bytes() == b"x" * MB + data[MB:]  # continued at 1 MiB, the kept bytes not sent again
    assert not partial.exists()


def test_a_fresh_put_discards_the_partial(env: SftpEnv) -> None:
    data = os.urandom(2 * MB)
    (env.tmp / "f.bin").write_bytes(data)
    partial = interrupted_upload(env, "/code/f.bin", b"x" * MB)
    env.sftp("alice", "put f.bin /code/f.bin\n")
    assert (env.home("alice") / "code" / "f.bin").read_bytes() == data
    assert not partial.exists()


def test_reget_continues_an_interrupted_download(env: SftpEnv) -> None:
    data = os.urandom(3 * MB)
    (env.home("alice") / "datasets" / "d.bin").write_bytes(data)
    # a download cut after 1 MiB; marked (zeros) so the test sees that reget kept it and fetched the rest only
    (env.tmp / "d.bin").write_bytes(bytes(MB))
    env.sftp("alice", "reget /datasets/d.bin d.bin\n")
    assert (env.tmp / "d.bin").read_bytes() == bytes(MB) + data[MB:]


def test_only_bytes_received_without_a_gap_are_kept(tmp_path: Path) -> None:
    """Pipelined SFTP writes can land out of order; reput appends at the kept size, so nothing after a gap."""
    root = tmp_path / "root"
    ensure_layout(root)
    ensure_home(root, "alice")
    files = FileStore(root).for_user(Principal(1, "alice"))
    up = files.create_upload("/code/g.bin", truncate=False)
    up.write(b"a" * 100, 0)
    up.write(b"c" * 100, 200)  # arrives before the bytes at 100
    assert up.keep_partial()
    kept = root / "users" / "alice" / "code" / resume_name("g.bin")
    assert kept.read_bytes() == b"a" * 100
    assert files.stat_partial("/code/g.bin").size == 100  # what SFTP's stat answers reput
    up = files.create_upload("/code/g.bin", truncate=False)  # reput: continues the partial
    assert up.size == 100
    up.write(b"b" * 100)
    up.write(b"c" * 100)
    up.commit()
    assert (root / "users" / "alice" / "code" / "g.bin").read_bytes() == b"a" * 100 + b"b" * 100 + b"c" * 100
    assert not kept.exists() and files.stat_partial("/code/g.bin") is None
    # replacing an existing file is never kept as a partial (stat would show the old file, not it)
    up = files.create_upload("/code/g.bin", truncate=True)
    up.write(b"new")
    assert not up.keep_partial() and not kept.exists()
