"""The jail's pure parts: who the owner is, what a jailed command looks like, what the plugin refuses."""

from __future__ import annotations

import asyncio
import json
import logging
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from ray._private.runtime_env.context import RuntimeEnvContext
from ray.runtime_env import RuntimeEnv

from argus.runtime import jail
from argus.runtime.ray_plugin import JailPlugin, expand_env, refuse_foreign_fields
from argus.runtime.worker_guard import jailed

pytestmark = pytest.mark.hostile  # the hostile-input suite: grows with every hole found


def test_a_signed_owner_verifies_and_a_forged_or_missing_one_does_not(tmp_path: Path) -> None:
    key = jail.ensure_key(tmp_path)
    assert jail.ensure_key(tmp_path) == key  # created once
    assert (jail.key_path(tmp_path).stat().st_mode & 0o777) == 0o600
    assert jail.verify(key, jail.sign(key, "alice")) == "alice"
    forged = {"user": "bob", "sig": jail.sign(key, "alice")["sig"]}
    for value in (forged, None, {}, {"user": "bob"}, "alice", {"user": "bob", "sig": 3}):
        with pytest.raises(jail.JailError):
            jail.verify(key, value)
    other_key = jail.ensure_key(tmp_path / "elsewhere")
    with pytest.raises(jail.JailError, match="wrong signature"):
        jail.verify(key, jail.sign(other_key, "alice"))


def _config(tmp_path: Path) -> jail.JailConfig:
    root = tmp_path / "private"
    for d in ("users/alice", "users/bob", "datasets", "hf"):
        (root / d).mkdir(parents=True)
    state = tmp_path / "state"
    (state / "ray").mkdir(parents=True)
    return jail.node_config(data_root=root, state_dirs=[state], ray_temp_dir=state / "ray",
                            python=sys.executable, bwrap="/usr/bin/bwrap")


def test_the_jail_hides_the_root_then_shows_only_the_owners_home_and_shared_data(tmp_path: Path) -> None:
    cfg = _config(tmp_path)
    argv = jail.jail_argv(cfg, "alice", {"A": "1"})
    root = tmp_path / "private"
    text = " ".join(argv)
    assert argv[-1] == "--" and f"--tmpfs {root}" in text
    assert f"--bind {root}/users/alice {root}/users/alice" in text
    assert f"--ro-bind {root}/datasets {root}/datasets" in text and f"--ro-bind {root}/hf {root}/hf" in text
    assert "users/bob" not in text
    assert text.index(f"--tmpfs {root}") < text.index(f"--bind {root}/users/alice")  # hide first, then show
    assert f"--tmpfs {tmp_path / 'state'}" in text and f"--bind {tmp_path / 'state' / 'ray'}" in text
    assert "--setenv ARGUS_JAILED alice" in text and "--setenv A 1" in text


def test_a_wrapped_interpreter_is_never_interpreted_by_the_shell(tmp_path: Path) -> None:
    cfg = _config(tmp_path)
    cmd = jail.wrap_command(cfg, "alice", "/usr/bin/python3 $(touch /tmp/x) ;rm")
    words = shlex.split(cmd)
    assert words[words.index("--") + 1:] == ["/usr/bin/python3", "$(touch", "/tmp/x)", ";rm"]
    assert "'$(touch'" in cmd  # quoted: bash -c "exec <cmd>" passes it on as a word
    assert jailed({"py_executable": cmd}, cfg.bwrap) and not jailed({"py_executable": sys.executable}, cfg.bwrap)


def test_fields_that_run_outside_the_jail_are_refused() -> None:
    refuse_foreign_fields({"env_vars": {"A": "1"}, "py_executable": "python", "argus_jail": {}, "working_dir": None})
    for field in ("pip", "uv", "conda", "container", "image_uri", "py_modules", "working_dir", "java_jars", "nsight"):
        with pytest.raises(jail.JailError, match=field):
            refuse_foreign_fields({field: ["x"]})


def test_env_vars_expand_as_ray_does_without_empty_path_entries() -> None:
    base = {"PYTHONPATH": "/site", "HOME": "/h"}
    assert expand_env({"PYTHONPATH": "/hook:${PYTHONPATH}"}, base) == {"PYTHONPATH": "/hook:/site"}
    assert expand_env({"PYTHONPATH": "/hook:${PYTHONPATH}"}, {}) == {"PYTHONPATH": "/hook"}  # no "" = cwd entry
    assert expand_env({"X": "$HOME/a ${NOPE}"}, base) == {"X": "/h/a "}


def test_the_plugin_runs_for_every_runtime_env_even_one_that_removes_its_field(tmp_path: Path, monkeypatch) -> None:
    cfg = _config(tmp_path)
    cfg.data_root = str(tmp_path / "private")
    key = jail.ensure_key(tmp_path / "private")
    path = tmp_path / "node.json"
    cfg.dump(path)
    monkeypatch.setenv(jail.CONFIG_ENV, str(path))
    from ray._private.runtime_env.agent import runtime_env_agent as agent

    monkeypatch.setattr(agent, "create_for_plugin_if_needed", agent.create_for_plugin_if_needed)
    plugin = JailPlugin()

    def setup(env: dict) -> RuntimeEnvContext:
        runtime_env = RuntimeEnv.deserialize(json.dumps(env))
        # as Ray's py_executable plugin (priority before ours) leaves it
        context = RuntimeEnvContext(env_vars=runtime_env.env_vars(), py_executable=runtime_env.get("py_executable"))
        asyncio.run(agent.create_for_plugin_if_needed(runtime_env, plugin, None, context, logging.getLogger()))
        return context

    context = setup({"argus_jail": jail.sign(key, "alice"), "py_executable": "/venv/bin/python -X dev",
                     "env_vars": {"LD_PRELOAD": "/x.so"}})
    assert context.env_vars == {}  # applied inside the jail only: nothing reaches bash or bwrap
    words = shlex.split(context.py_executable)
    assert words[0] == "/usr/bin/bwrap" and words[-3:] == ["/venv/bin/python", "-X", "dev"]
    assert "LD_PRELOAD" in words and jailed({"py_executable": context.py_executable}, "/usr/bin/bwrap")
    for env in ({"argus_jail": None, "env_vars": {"A": "1"}}, {"env_vars": {"A": "1"}}):
        with pytest.raises(jail.JailError, match="no valid 'argus_jail'"):
            setup(env)


@pytest.mark.skipif(jail.bwrap_available() is None, reason="bubblewrap is not installed")
def test_a_real_jail_shows_the_owners_home_and_nothing_of_another(tmp_path: Path) -> None:
    cfg = _config(tmp_path)
    cfg.bwrap = jail.bwrap_available()
    root = tmp_path / "private"
    (root / "users" / "bob" / "secret").write_text("bob's")
    probe = (f"import os; print(sorted(os.listdir({str(root / 'users')!r}))); "
             f"print(os.path.exists({str(root / 'users/bob/secret')!r})); "
             f"open({str(root / 'users/alice/mine')!r}, 'w').write('ok')")
    out = subprocess.run([*jail.jail_argv(cfg, "alice"), sys.executable, "-c", probe], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == ["['alice']", "False"]
    assert (root / "users" / "alice" / "mine").read_text() == "ok"
