"""Every way out of the home, tried with real clients; each must fail with a permission/not-found error."""

from __future__ import annotations

import errno
import os

import paramiko
import pytest

pytestmark = pytest.mark.hostile  # the hostile-input suite: grows with every hole found

DENIED = (errno.EACCES, errno.ENOENT)


@pytest.fixture
def outside(env):
    """A secret outside every area, and bob's file: the targets of the escapes."""
    secret = env.tmp.parent / "outside-secret.txt"
    secret.write_text("TOP SECRET")
    bob = env.home("bob") / "datasets" / "bob.txt"
    bob.write_text("bob's data")
    return secret, bob


def _denied(fn) -> None:  # noqa: ANN001
    with pytest.raises(OSError) as exc:
        fn()
    assert exc.value.errno in DENIED or "denied" in str(exc.value).lower() or "outside" in str(exc.value), exc.value


def test_dotdot_and_absolute_paths(env, outside):
    secret, bob = outside
    with env.paramiko("alice") as c, c.open_sftp() as s:
        for p in ("/../bob/datasets/bob.txt", "/datasets/../../bob/datasets/bob.txt", "../../../etc/passwd",
                  "/common/../../bob/datasets/bob.txt", "/common/datasets/../../../etc/passwd", str(secret),
                  str(bob), "/etc/passwd"):
            _denied(lambda p=p: s.open(p).read())
        _denied(lambda: s.open("/../bob/datasets/evil.txt", "wb").write(b"x"))
        _denied(lambda: s.listdir("/../.."))
        _denied(lambda: s.rename("/datasets", "/../bob/datasets/mine"))
        with pytest.raises(OSError, match="NUL"):
            s.open("/datasets/a\x00b", "wb")
    assert bob.read_text() == "bob's data" and not (env.home("bob") / "datasets" / "evil.txt").exists()
    for cmd in ("get ../../bob/datasets/bob.txt x\n", f"get {secret} x\n", "ls ../../\n", "cd /..\nls\n"):
        p = env.sftp("alice", cmd, check=False)
        assert p.returncode != 0 or "bob" not in p.stdout, (cmd, p.stdout)
        assert not (env.tmp / "x").exists()


def test_symlink_and_link_requests_refused(env, outside):
    secret, _ = outside
    with env.paramiko("alice") as c, c.open_sftp() as s:
        with pytest.raises(PermissionError):
            s.symlink(str(secret), "/datasets/link")
        with pytest.raises(PermissionError):
            s.symlink("/datasets", "/code/inside-link")
    p = env.sftp("alice", f"symlink {secret} /datasets/l\n", check=False)
    assert p.returncode != 0 and "Permission denied" in p.stderr
    p = env.sftp("alice", "put /dev/null /code/a\nln /code/a /code/b\n", check=False)
    assert p.returncode != 0
    assert not os.path.lexists(env.home("alice") / "datasets" / "l")
    assert not os.path.lexists(env.home("alice") / "code" / "b")


def test_planted_symlinks_cannot_escape(env, outside):
    """Links a task could create in jobs/: to a file outside, to a directory outside, to bob's home."""
    secret, bob = outside
    jobs = env.home("alice") / "jobs"
    os.symlink(secret, jobs / "file-link")
    os.symlink(secret.parent, jobs / "dir-link")
    os.symlink(env.home("bob"), jobs / "bob-home")
    os.symlink("../../bob/datasets/bob.txt", jobs / "relative-link")
    with env.paramiko("alice") as c, c.open_sftp() as s:
        assert {"file-link", "dir-link", "bob-home", "relative-link"} <= set(s.listdir("/jobs"))
        for p in ("/jobs/file-link", "/jobs/relative-link", "/jobs/bob-home/datasets/bob.txt",
                  f"/jobs/dir-link/{secret.name}"):
            _denied(lambda p=p: s.open(p).read())
        _denied(lambda: s.open("/jobs/file-link", "ab").write(b"appended"))
        _denied(lambda: s.open("/jobs/bob-home/datasets/new.txt", "wb").write(b"x"))
        _denied(lambda: s.listdir("/jobs/dir-link"))
        _denied(lambda: s.listdir("/jobs/bob-home"))
        _denied(lambda: s.stat("/jobs/file-link"))
        _denied(lambda: s.chmod("/jobs/file-link", 0o777))
        _denied(lambda: s.readlink("/jobs/file-link"))
        # Writing a whole new file to the link's name replaces the link, never the target.
        with s.open("/jobs/file-link", "wb") as f:
            f.write(b"mine")
        # Removing a link removes the link only.
        s.remove("/jobs/bob-home")
    assert secret.read_text() == "TOP SECRET" and bob.read_text() == "bob's data"
    assert (jobs / "file-link").read_bytes() == b"mine" and not (jobs / "file-link").is_symlink()
    assert env.home("bob").is_dir()
    p = env.sftp("alice", "get /jobs/relative-link got\n", check=False)
    assert p.returncode != 0 and not (env.tmp / "got").exists()


def test_symlink_inside_home_works(env):
    """Links that stay inside an area (HF caches, `latest -> step_100`) are followed."""
    code = env.home("alice") / "code"
    (code / "real.txt").write_text("inside")
    os.symlink("real.txt", code / "alias.txt")
    (env.root / "datasets" / "d.txt").write_text("shared")
    os.symlink(env.root / "datasets" / "d.txt", code / "to-shared")
    with env.paramiko("alice") as c, c.open_sftp() as s:
        with s.open("/code/alias.txt") as f:
            assert f.read() == b"inside"
        assert s.readlink("/code/to-shared") == "/common/datasets/d.txt"
        with s.open("/code/to-shared") as f:
            assert f.read() == b"shared"


def test_hard_link_to_outside_file_refused(env, outside):
    secret, bob = outside
    os.link(bob, env.home("alice") / "datasets" / "hard.txt")
    with env.paramiko("alice") as c, c.open_sftp() as s:
        with pytest.raises(PermissionError):
            s.open("/datasets/hard.txt").read()
        with pytest.raises(PermissionError):
            s.open("/datasets/hard.txt", "ab").write(b"x")
        with pytest.raises(PermissionError):
            s.chmod("/datasets/hard.txt", 0o666)
    assert bob.read_text() == "bob's data"


def test_special_files_refused(env):
    fifo = env.home("alice") / "jobs" / "pipe"
    os.mkfifo(fifo)
    with env.paramiko("alice") as c, c.open_sftp() as s:
        with pytest.raises(PermissionError):
            s.open("/jobs/pipe").read()  # would block forever if the server opened it blindly
        assert "pipe" in s.listdir("/jobs")


def test_no_shell_exec_or_forwarding(env):
    with env.paramiko("alice") as c:
        with pytest.raises(paramiko.SSHException):
            c.exec_command("cat /etc/passwd")
        with pytest.raises(paramiko.SSHException):
            c.get_transport().open_channel("direct-tcpip", ("127.0.0.1", env.port), ("127.0.0.1", 0))
        with pytest.raises(paramiko.SSHException):
            c.invoke_shell()
