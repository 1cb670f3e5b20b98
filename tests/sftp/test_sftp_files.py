"""Everyday SFTP use with real clients (paramiko and OpenSSH `sftp`): the layout, transfers, read-only common."""

from __future__ import annotations

import errno
import os

import pytest

from tests.sftp.conftest import PASSWORD


def test_root_lists_home_dirs_and_common(env):
    with env.paramiko("alice") as c, c.open_sftp() as s:
        assert s.listdir("/") == ["code", "common", "datasets", "jobs", "models"]
        assert sorted(s.listdir("/common")) == ["datasets", "hf"]
        assert s.normalize(".") == "/"
    out = env.sftp("alice", "ls -1 /\nls -1 /common\n").stdout
    for name in ("code", "common", "datasets", "jobs", "models", "/common/datasets", "/common/hf"):
        assert name in out


def test_real_common_dir_in_home_is_shadowed(env):
    """A task may create <home>/common; /common stays the synthetic shared folder and lists once."""
    (env.home("alice") / "common" / "secret").mkdir(parents=True)
    with env.paramiko("alice") as c, c.open_sftp() as s:
        assert s.listdir("/").count("common") == 1
        assert sorted(s.listdir("/common")) == ["datasets", "hf"]
        with pytest.raises(FileNotFoundError):
            s.listdir("/common/secret")
        with pytest.raises(OSError):
            s.mkdir("/common")


def test_upload_download_rename_remove_paramiko(env, tmp_path):
    data = os.urandom(300_000)
    with env.paramiko("alice") as c, c.open_sftp() as s:
        with s.open("/datasets/a.bin", "wb") as f:
            f.write(data)
        assert s.stat("/datasets/a.bin").st_size == len(data)
        assert (env.home("alice") / "datasets" / "a.bin").read_bytes() == data
        with s.open("/datasets/a.bin", "rb") as f:
            assert f.read() == data
        s.rename("/datasets/a.bin", "/models/b.bin")
        assert s.listdir("/datasets") == [] and s.listdir("/models") == ["b.bin"]
        s.mkdir("/code/pkg")
        s.put(__file__, "/code/pkg/t.py")
        with pytest.raises(OSError):
            s.rmdir("/code/pkg")  # not empty
        s.remove("/code/pkg/t.py")
        s.rmdir("/code/pkg")
        s.remove("/models/b.bin")
        assert s.listdir("/models") == []
        assert not [p for p in env.home("alice").rglob("*") if p.name.startswith(".argus-part-")]


def test_openssh_put_get_rename_rm(env):
    src = env.tmp / "local.jsonl"
    src.write_bytes(b'{"q": 1}\n' * 50_000)
    env.sftp("alice", "put local.jsonl /datasets/train.jsonl\nrename /datasets/train.jsonl /datasets/t2.jsonl\n"
                      "get /datasets/t2.jsonl back.jsonl\nmkdir /models/m\nrmdir /models/m\n")
    assert (env.tmp / "back.jsonl").read_bytes() == src.read_bytes()
    env.sftp("alice", "rm /datasets/t2.jsonl\n")
    assert not (env.home("alice") / "datasets" / "t2.jsonl").exists()


def test_common_is_readable_and_read_only(env):
    (env.root / "datasets" / "gsm8k.parquet").write_bytes(b"PAR1")
    (env.root / "hf" / "model").mkdir()
    with env.paramiko("alice") as c, c.open_sftp() as s:
        with s.open("/common/datasets/gsm8k.parquet") as f:
            assert f.read() == b"PAR1"
        assert s.listdir("/common/hf") == ["model"]
        assert s.stat("/common/datasets/gsm8k.parquet").st_mode & 0o222 == 0
        for op in (lambda: s.open("/common/datasets/new.txt", "wb"),
                   lambda: s.open("/common/datasets/gsm8k.parquet", "wb"),
                   lambda: s.remove("/common/datasets/gsm8k.parquet"),
                   lambda: s.mkdir("/common/hf/x"),
                   lambda: s.rename("/common/datasets/gsm8k.parquet", "/datasets/stolen"),
                   lambda: s.rename("/common/hf", "/x"),
                   lambda: s.chmod("/common/datasets/gsm8k.parquet", 0o777),
                   lambda: s.open("/common/new.txt", "wb"),
                   lambda: s.rmdir("/common")):
            with pytest.raises(PermissionError):
                op()
    assert (env.root / "datasets" / "gsm8k.parquet").read_bytes() == b"PAR1"
    assert sorted(os.listdir(env.root / "datasets")) == ["gsm8k.parquet"]
    (env.tmp / "f.txt").write_text("x")
    p = env.sftp("alice", "put f.txt /common/datasets/f.txt\n", check=False)
    assert p.returncode != 0 and "Permission denied" in p.stderr


def test_admin_writes_shared_folders(env):
    with env.live.admin() as a:
        r = a.put("/api/v2/files/content", params={"path": "/common/datasets/shared.txt"}, content=b"ok")
        assert r.status_code == 201, r.text
    assert (env.root / "datasets" / "shared.txt").read_bytes() == b"ok"


def test_setstat_safe_bits_only(env):
    with env.paramiko("alice") as c, c.open_sftp() as s:
        with s.open("/code/run.sh", "wb") as f:
            f.write(b"echo hi")
        s.chmod("/code/run.sh", 0o4755)
        assert s.stat("/code/run.sh").st_mode & 0o7777 == 0o755
        s.utime("/code/run.sh", (1_000_000, 1_000_000))
        assert int(s.stat("/code/run.sh").st_mtime) == 1_000_000


def test_append_and_resume_keep_content(env):
    with env.paramiko("alice") as c, c.open_sftp() as s:
        with s.open("/code/log.txt", "wb") as f:
            f.write(b"one\n")
        with s.open("/code/log.txt", "ab") as f:
            f.write(b"two\n")
        assert (env.home("alice") / "code" / "log.txt").read_bytes() == b"one\ntwo\n"


def test_password_login_and_other_user_invisible(env):
    (env.home("bob") / "datasets" / "bob.txt").write_text("bob's")
    with env.paramiko("alice", password=PASSWORD) as c, c.open_sftp() as s:
        for path in ("/../bob/datasets/bob.txt", "../bob/datasets/bob.txt", "/users/bob/datasets/bob.txt",
                     str(env.home("bob") / "datasets" / "bob.txt")):
            with pytest.raises(OSError) as exc:
                s.open(path).read()
            assert exc.value.errno in (errno.EACCES, errno.ENOENT), path
