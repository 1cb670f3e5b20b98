"""`argus files put/get/ls/mv/rm` and `argus keys` against a live server (the CLI is HTTP only)."""

from __future__ import annotations

import os
import subprocess
import sys


def _argus(live, token, *args, stdin=None, cwd=None):  # noqa: ANN001, ANN202
    env = {**os.environ, "ARGUS_URL": live.url, "ARGUS_TOKEN": token, "HOME": str(cwd)}
    return subprocess.run([sys.executable, "-m", "argus.cli.main", *args], env=env, capture_output=True,
                          text=True, input=stdin, cwd=cwd, timeout=60)


def test_cli_files_and_keys(live, tmp_path):
    with live.admin() as a:
        a.post("/api/v2/users", json={"name": "alice"})
        token = a.post("/api/v2/users/alice/tokens", json={}).json()["token"]
    src = tmp_path / "data.bin"
    src.write_bytes(os.urandom(2_500_000))
    r = _argus(live, token, "files", "put", str(src), "/datasets/", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "data.bin" in _argus(live, token, "files", "ls", "/datasets", cwd=tmp_path).stdout
    assert _argus(live, token, "files", "mkdir", "/models/m", cwd=tmp_path).returncode == 0
    assert _argus(live, token, "files", "mv", "/datasets/data.bin", "/models/m/d.bin", cwd=tmp_path).returncode == 0
    out = tmp_path / "back.bin"
    assert _argus(live, token, "files", "get", "/models/m/d.bin", str(out), cwd=tmp_path).returncode == 0
    assert out.read_bytes() == src.read_bytes()
    r = _argus(live, token, "files", "put", str(src), "/common/datasets/x", cwd=tmp_path)
    assert r.returncode == 1 and "read-only" in r.stderr
    assert _argus(live, token, "files", "rm", "-r", "/models/m", cwd=tmp_path).returncode == 0
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "k")], check=True)
    assert _argus(live, token, "keys", "add", str(tmp_path / "k.pub"), cwd=tmp_path).returncode == 0
    assert "SHA256:" in _argus(live, token, "keys", "list", cwd=tmp_path).stdout
    r = _argus(live, token, "passwd", stdin="a long password\na long password\n", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
