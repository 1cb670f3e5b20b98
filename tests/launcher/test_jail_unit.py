"""The task sandbox's parts (issue 21): what the bwrap argv holds, and what a real sandbox shows and hides."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from argus.core.envvars import NODE_ENV_KEEP
from argus.launcher import jail, ray_auth

pytestmark = pytest.mark.hostile  # the hostile-input suite: grows with every hole found

needs_bwrap = pytest.mark.skipif(jail.bwrap_available() is None, reason="bubblewrap is not installed")


def _config(tmp_path: Path, bwrap: str = "/usr/bin/bwrap") -> jail.JailConfig:
    root = tmp_path / "private"
    for d in ("users/alice", "users/bob", "datasets", "hf", ".argus"):
        (root / d).mkdir(parents=True)
    state = tmp_path / "state"
    (state / "sandboxes").mkdir(parents=True)
    (state / "argus.db").write_text("db")
    return jail.node_config(data_root=root, state_dirs=[state], python=sys.executable, scratch_dir=state / "sandboxes",
                            bwrap=bwrap)


def _argv(cfg: jail.JailConfig, tmp_path: Path, **kw) -> list[str]:
    scratch = Path(cfg.scratch_dir) / "t-1"
    scratch.mkdir(parents=True, exist_ok=True)
    args = {"user": "alice", "scratch": scratch, "env": {"A": "1"}, "devices": [], "shm_bytes": 64 << 20, **kw}
    return jail.sandbox_argv(cfg, **args)


def test_the_sandbox_hides_the_root_then_shows_only_the_owners_home_and_shared_data(tmp_path: Path) -> None:
    cfg = _config(tmp_path)
    argv = _argv(cfg, tmp_path)
    root = tmp_path / "private"
    text = " ".join(argv)
    assert argv[-1] == "--" and f"--tmpfs {root}" in text
    assert f"--bind {root}/users/alice {root}/users/alice" in text
    assert f"--ro-bind {root}/datasets {root}/datasets" in text and f"--ro-bind {root}/hf {root}/hf" in text
    assert "users/bob" not in text
    assert text.index(f"--tmpfs {root}") < text.index(f"--bind {root}/users/alice")  # hide first, then show
    state = tmp_path / "state"  # hidden: a tmpfs over it, or (under /tmp) gone with the host's /tmp
    assert f"--tmpfs {state}" in text or (str(state).startswith("/tmp/") and f" {state} " not in text)
    assert text.index("/tmp /tmp") < text.index(f"--tmpfs {root}")  # the private /tmp first: a root under it
    assert "--setenv ARGUS_JAILED alice" in text and "--setenv A 1" in text and "--clearenv" in text


def test_the_sandbox_has_its_own_namespaces_no_capabilities_and_a_private_tmp_and_shm(tmp_path: Path) -> None:
    cfg = _config(tmp_path)
    text = " ".join(_argv(cfg, tmp_path, shm_bytes=123 << 20))
    for flag in ("--unshare-pid", "--unshare-ipc", "--unshare-uts", "--cap-drop ALL", "--die-with-parent",
                 "--new-session", "--dev /dev", "--proc /proc", "--tmpfs /run"):
        assert flag in text, flag
    assert f"--bind {cfg.scratch_dir}/t-1/tmp /tmp" in text
    assert f"--size {123 << 20} --tmpfs /dev/shm" in text
    assert ("--unshare-user" in text) == cfg.user_ns


def test_only_the_tasks_gpu_device_files_are_shown(tmp_path: Path) -> None:
    """NVML index → /dev/nvidia<minor> through /proc/driver/nvidia/gpus, which may disagree with the index."""
    proc, dev = tmp_path / "proc", tmp_path / "dev"
    dev.mkdir()
    for i, (bus, minor) in enumerate([("0000:1a:00.0", 3), ("0000:3b:00.0", 0), ("0000:5c:00.0", 1)]):
        (proc / bus).mkdir(parents=True)
        (proc / bus / "information").write_text(f"Model: H100\nDevice Minor: {minor}\nBus Location: {bus}\n")
        (dev / f"nvidia{i}").write_text("")
    (dev / "nvidia3").write_text("")
    for name in ("nvidiactl", "nvidia-uvm"):
        (dev / name).write_text("")
    files = jail.gpu_device_files(["0", "2"], proc=proc, dev=dev)
    assert files == [str(dev / "nvidia3"), str(dev / "nvidia1"), str(dev / "nvidiactl"), str(dev / "nvidia-uvm")]
    assert jail.gpu_device_files([], proc=proc, dev=dev) == []  # a CPU task: no NVIDIA node at all
    assert jail.gpu_device_files(["0"], proc=tmp_path / "none", dev=dev) == []  # no NVIDIA driver here
    assert jail.other_gpu_proc_dirs(["0", "2"], proc=proc) == [str(proc / "0000:3b:00.0")]


def test_the_environment_is_the_node_allowlist_plus_the_tasks_own() -> None:
    node = {"PATH": "/usr/bin", "LANG": "C.UTF-8", "NCCL_SOCKET_IFNAME": "eth0", "ARGUS_ADMIN_TOKEN": "secret",
            "ARGUS_DATABASE_URL": "postgresql://u:pw@db/argus", "RAY_AUTH_TOKEN_PATH": "/private/.argus/t",
            "AWS_SECRET_ACCESS_KEY": "k", "ARGUS_JAIL_CONFIG": "/s/node.json"}
    env = jail.sandbox_env(node, NODE_ENV_KEEP, {"HOME": "/private/users/alice"})
    assert env == {"PATH": "/usr/bin", "LANG": "C.UTF-8", "NCCL_SOCKET_IFNAME": "eth0", "HOME": "/private/users/alice"}


def test_the_platform_ray_token_is_made_once_and_private(tmp_path: Path) -> None:
    token = ray_auth.ensure_ray_token(tmp_path)
    assert ray_auth.ensure_ray_token(tmp_path) == token == ray_auth.read_ray_token(tmp_path) and len(token) == 64
    assert ray_auth.token_path(tmp_path).stat().st_mode & 0o777 == 0o600
    assert ray_auth.platform_ray_env(tmp_path) == {"RAY_AUTH_MODE": "token",
                                                   "RAY_AUTH_TOKEN_PATH": str(ray_auth.token_path(tmp_path)),
                                                   "RAY_enable_metrics_collection": "0", "DASHBOARD_METRIC_PORT": "65536"}
    with pytest.raises(ray_auth.NoRayToken, match="no Ray auth token"):
        ray_auth.platform_ray_env(tmp_path / "elsewhere")


def _run(cfg: jail.JailConfig, tmp_path: Path, code: str, **kw) -> subprocess.CompletedProcess[str]:
    argv = _argv(cfg, tmp_path, **kw)
    return subprocess.run([*argv, sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin"})


@needs_bwrap
def test_a_real_sandbox_shows_the_owners_home_and_nothing_of_another_or_the_platform(tmp_path: Path) -> None:
    cfg = _config(tmp_path, jail.bwrap_available() or "")
    root = tmp_path / "private"
    (root / "users" / "bob" / "secret").write_text("bob's")
    (root / ".argus" / "ray-auth-token").write_text("tok")
    probe = (f"import os; print(sorted(os.listdir({str(root / 'users')!r}))); "
             f"print(os.path.exists({str(root / 'users/bob/secret')!r})); "
             f"print(os.path.exists({str(root / '.argus/ray-auth-token')!r})); "
             f"print(os.path.exists({str(tmp_path / 'state' / 'argus.db')!r})); "
             f"open({str(root / 'users/alice/mine')!r}, 'w').write('ok')")
    out = _run(cfg, tmp_path, probe)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:4] == ["['alice']", "False", "False", "False"]
    assert (root / "users" / "alice" / "mine").read_text() == "ok"


@needs_bwrap
def test_a_real_sandbox_sees_only_its_own_processes_and_has_no_capabilities(tmp_path: Path) -> None:
    cfg = _config(tmp_path, jail.bwrap_available() or "")
    probe = ("import os; pids = [p for p in os.listdir('/proc') if p.isdigit()]; print(len(pids) <= 4); "
             "print(os.getuid() != 0 or not " + repr(cfg.user_ns) + "); "
             "caps = [l for l in open('/proc/self/status') if l.startswith('CapEff')][0].split()[1]; "
             "print(int(caps, 16)); "
             f"print(os.path.exists('/proc/{os.getpid()}/root/etc')); print(sorted(os.environ))")
    out = _run(cfg, tmp_path, probe)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[:3] == ["True", "True", "0"], out.stdout
    assert lines[3] == "False" or os.getpid() < 10  # the test's own pid is not there (unless it is tiny)
    assert set(eval(lines[4])) - {"LC_CTYPE", "PWD"} == {"A", "ARGUS_JAILED", "TMPDIR"}  # noqa: S307 - our probe's


@needs_bwrap
def test_a_real_sandbox_has_a_private_tmp_and_a_sized_shm(tmp_path: Path) -> None:
    cfg = _config(tmp_path, jail.bwrap_available() or "")
    (Path("/dev/shm") / f"argus-test-{os.getpid()}").write_text("host shm")
    try:
        probe = ("import os, shutil; open('/tmp/mine', 'w').write('x'); print(os.listdir('/dev/shm')); "
                 "print(shutil.disk_usage('/dev/shm').total >> 20); print(sorted(os.listdir('/dev')))")
        out = _run(cfg, tmp_path, probe, shm_bytes=32 << 20)
    finally:
        (Path("/dev/shm") / f"argus-test-{os.getpid()}").unlink()
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[:2] == ["[]", "32"]
    assert not any(d.startswith("nvidia") for d in eval(lines[2]))  # noqa: S307 - our own probe's list
    assert (Path(cfg.scratch_dir) / "t-1" / "tmp" / "mine").read_text() == "x"  # on the node's disk, per task


@needs_bwrap
def test_a_real_sandbox_shows_the_owners_team_folders_and_no_other_team(tmp_path: Path) -> None:
    """Issue 26: a member's task reads and writes its team's folder, at <root>/teams/<team> and at
    $HOME/teams/<team>; another team's folder (alice is not in it) is not there at all."""
    cfg = _config(tmp_path, jail.bwrap_available() or "")
    root = tmp_path / "private"
    for team in ("nlp", "vision"):
        (root / "teams" / team).mkdir(parents=True)
    (root / "teams" / "nlp" / "data.txt").write_text("bob's rows")
    (root / "teams" / "vision" / "secret").write_text("vision only")
    home = root / "users" / "alice"
    probe = (f"import os; print(open({str(root / 'teams/nlp/data.txt')!r}).read()); "
             f"print(open({str(home / 'teams/nlp/data.txt')!r}).read()); "
             f"print(sorted(os.listdir({str(root / 'teams')!r}))); "
             f"print(os.path.exists({str(root / 'teams/vision/secret')!r})); "
             f"open({str(home / 'teams/nlp/out.txt')!r}, 'w').write('alice wrote')")
    out = _run(cfg, tmp_path, probe, teams=["nlp", "../users/bob"])
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[:4] == ["bob's rows", "bob's rows", "['nlp']", "False"]
    assert (root / "teams" / "nlp" / "out.txt").read_text() == "alice wrote"  # in the team's folder for real


def test_team_binds_skip_links_and_names_that_are_not_teams(tmp_path: Path) -> None:
    root, home = tmp_path / "private", tmp_path / "private" / "users" / "alice"
    home.mkdir(parents=True)
    (root / "teams" / "nlp").mkdir(parents=True)
    (root / "teams" / "linked").symlink_to(root / "users")
    args = jail.team_binds(root, home, ["nlp", "linked", "../users", "Bad"])
    assert args == ["--bind", str(root / "teams/nlp"), str(root / "teams/nlp"),
                    "--bind", str(root / "teams/nlp"), str(home / "teams/nlp")]
    new = str(root / "teams/newteam")
    assert jail.team_binds(root, home, ["newteam"])[:3] == ["--bind", new, new]
    assert (root / "teams" / "newteam").is_dir()  # made when missing: no member has opened it yet
    (home / "teams").symlink_to(tmp_path)  # $HOME/teams made a link: the team is still shown at its own path
    assert jail.team_binds(root, home, ["nlp"]) == ["--bind", str(root / "teams/nlp"), str(root / "teams/nlp")]
