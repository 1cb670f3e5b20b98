"""The registry of training environments (argus.envs.registry) and the probe each environment's interpreter runs."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from argus.envs.registry import BUILTIN, EnvError, Registry, run_probe
from argus.launcher.jail import safe_binds
from tests.envs_fixtures import built, install_env


def test_builtin_is_always_there_and_is_the_default(tmp_path: Path) -> None:
    reg = Registry(tmp_path, sys.executable)
    env = reg.resolve(None, "alice")
    assert env.name == BUILTIN and env.source == "builtin" and env.python == sys.executable
    assert env.verl and env.ok, env.probe


def test_unknown_names_are_refused_with_what_exists(tmp_path: Path) -> None:
    install_env(tmp_path, "verl-0.4.1-cpu")
    reg = Registry(tmp_path, sys.executable)
    with pytest.raises(EnvError, match=r"no environment 'verl-0.4.2-cpu'; available: argus, verl-0.4.1-cpu"):
        reg.resolve("verl-0.4.2-cpu", "alice")
    with pytest.raises(EnvError, match="lower-case letters"):
        reg.resolve("../../etc", "alice")
    broken = Registry(tmp_path, sys.executable, default="gone")
    with pytest.raises(EnvError, match="default environment 'gone' does not exist"):
        broken.resolve(None, "alice")


def test_a_users_own_environment_is_theirs_alone(tmp_path: Path) -> None:
    env = install_env(tmp_path, "verl-0.4.1-cpu")
    env.owner, env.name = "alice", "mine"
    env.python = str(tmp_path / "users" / "alice" / "envs" / "mine" / "venv" / "bin" / "python")
    env.dump(tmp_path / "users" / "alice" / "envs" / "mine")
    reg = Registry(tmp_path, sys.executable)
    assert reg.resolve("~/envs/mine", "alice").owner == "alice"
    assert "~/envs/mine" in [e.name for e in reg.visible("alice")]
    with pytest.raises(EnvError, match="no environment '~/envs/mine'"):
        reg.resolve("~/envs/mine", "bob")
    assert "~/envs/mine" not in [e.name for e in reg.visible("bob")]
    # a manifest in bob's home that claims to be alice's is nobody's
    env.owner = "alice"
    env.dump(tmp_path / "users" / "bob" / "envs" / "forged")
    with pytest.raises(EnvError):
        reg.resolve("~/envs/forged", "bob")


def test_a_broken_environment_is_refused_with_its_problems(tmp_path: Path) -> None:
    env = install_env(tmp_path, "verl-0.4.1-cpu", as_name="old")
    env.probe = {**env.probe, "problems": ["import verl fails: ImportError: libfoo.so"]}
    env.dump(tmp_path / "envs" / "old")
    with pytest.raises(EnvError, match="failed its last check: import verl fails"):
        Registry(tmp_path, sys.executable).resolve("old", "alice")


def test_register_checks_the_interpreter_first(tmp_path: Path) -> None:
    reg = Registry(tmp_path, sys.executable)
    no_verl = Path(sys.base_prefix) / "bin" / "python3"  # the base installation: no verl, no torch
    with pytest.raises(EnvError, match="verl is not installed"):
        reg.register("bare", str(no_verl))
    with pytest.raises(EnvError, match="does not exist"):
        reg.register("gone", str(tmp_path / "nope" / "bin" / "python"))
    with pytest.raises(EnvError, match="not 'argus'"):
        reg.register(BUILTIN, sys.executable)
    env = reg.register("old", built("verl-0.4.1-cpu").python, description="0.4 scripts")
    assert env.verl == "0.4.1" and env.templates is False and env.probe["import_s"]["verl"] > 0
    assert reg.get("old").python == env.python  # the manifest on the shared filesystem
    trash = reg.remove("old")
    assert reg.get("old") is None and trash.exists()


def test_probe_reports_versions_engines_and_what_a_module_lookup_finds() -> None:
    python = built("verl-0.4.1-cpu").python
    report = run_probe(python, imports=False, find=("verl.trainer.fsdp_sft_trainer", "vllm", "os;rm"))
    assert report["versions"]["verl"] == "0.4.1" and report["versions"]["tensordict"] == "0.6.2"
    assert report["rollout_engines"] == [] and "no rollout engine" in report["notes"][0]
    assert report["found"] == {"verl.trainer.fsdp_sft_trainer": True, "vllm": False, "os;rm": False}
    assert report["lm_eval"] is False and "lm-eval" not in report["versions"]
    assert report["ok"] is True and report["prefix"] == str(Path(python).parent.parent)


def test_probe_runs_isolated_from_the_callers_folder(tmp_path: Path) -> None:
    """-I: a ``verl.py`` in the working folder (a user's job dir) is not what the probe reports."""
    (tmp_path / "importlib").mkdir()
    (tmp_path / "importlib" / "__init__.py").write_text("raise SystemExit('shadowed')\n")
    from argus.envs.registry import PROBE

    done = subprocess.run([built("verl-0.4.1-cpu").python, "-I", PROBE], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    assert json.loads(done.stdout)["versions"]["verl"] == "0.4.1"


@pytest.mark.hostile
def test_safe_binds_never_show_hidden_trees_or_other_homes(tmp_path: Path) -> None:
    root, state = tmp_path / "root", tmp_path / "state"
    for d in (root / "envs" / "a" / "venv", root / "users" / "bob" / "envs" / "x", root / "users" / "alice",
              state / "db", tmp_path / "opt" / "venv"):
        d.mkdir(parents=True)
    (root / "users" / "alice" / "link").symlink_to(state / "db")  # a venv symlink into the state dir
    kw = {"hidden": [state], "root": root, "open_under": [root / "envs", root / "users" / "alice"]}
    assert safe_binds([str(root / "envs" / "a" / "venv"), str(tmp_path / "opt" / "venv")], **kw) == [
        str(root / "envs" / "a" / "venv"), str(tmp_path / "opt" / "venv")]
    assert safe_binds([str(state / "db"), str(root / "users" / "bob" / "envs" / "x"), str(root),
                       str(root / "users" / "alice" / "link")], **kw) == []


@pytest.mark.hostile
def test_safe_binds_in_embedded_mode_show_the_environments_inside_the_hidden_state_dir(tmp_path: Path) -> None:
    """Embedded mode's data root is ``<state>/private``: its ``envs`` and the owner's home are shown, nothing else of
    the state dir, and a hidden tree inside an open folder stays hidden."""
    state = tmp_path / "state"
    root = state / "private"
    secret = root / "users" / "alice" / ".ssh"
    for d in (root / "envs" / "a" / "venv", root / "users" / "alice" / "envs" / "mine", root / "users" / "bob",
              state / "jail", secret):
        d.mkdir(parents=True)
    (state / "argus.db").write_text("the database")
    (root / "envs" / "a" / "venv" / "db").symlink_to(state / "argus.db")  # a link out of the open folder
    kw = {"hidden": [state, secret], "root": root, "open_under": [root / "envs", root / "users" / "alice"]}
    shown = [str(root / "envs" / "a" / "venv"), str(root / "users" / "alice" / "envs" / "mine")]
    assert safe_binds(shown, **kw) == shown
    assert safe_binds([str(state), str(state / "argus.db"), str(state / "jail"), str(root), str(root / "users" / "bob"),
                       str(root / "envs" / "a" / "venv" / "db"), str(secret)], **kw) == []


@pytest.mark.hostile
def test_a_users_manifest_cannot_name_an_interpreter_outside_their_environment(tmp_path: Path) -> None:
    """bob's own manifest pointing at alice's environment (or the state dir) is broken, never used."""
    env = install_env(tmp_path, "verl-0.4.1-cpu")
    env.owner = "alice"
    env.python = str(tmp_path / "users" / "alice" / "envs" / "mine" / "venv" / "bin" / "python")
    env.dump(tmp_path / "users" / "alice" / "envs" / "mine")
    reg = Registry(tmp_path, sys.executable)
    assert reg.resolve("~/envs/mine", "alice").python == env.python
    for target in (env.python, str(tmp_path / "state" / "bin" / "python"),
                   str(tmp_path / "users" / "bob" / "envs" / "evil" / ".." / ".." / ".." / "alice" / "x")):
        env.owner, env.python = "bob", target
        env.dump(tmp_path / "users" / "bob" / "envs" / "evil")
        with pytest.raises(EnvError, match="is not inside"):
            reg.resolve("~/envs/evil", "bob")


@pytest.mark.hostile
def test_an_interpreter_that_links_where_no_sandbox_shows_is_refused_at_admission(tmp_path: Path) -> None:
    """Issue 33: bob's own environment whose python links into alice's home or the state dir could never start
    in his task's sandbox: admission says so, instead of a task failing on a node."""
    root, state = tmp_path / "state" / "private", tmp_path / "state"
    reg = Registry(root, sys.executable, state_dir=state)
    folder = root / "users" / "bob" / "envs" / "evil"
    targets = {"alice's home": root / "users" / "alice" / "envs" / "mine" / "venv" / "bin" / "python3",
               "the state dir": state / "venv" / "bin" / "python3",
               "a platform folder": root / ".argus" / "venv" / "bin" / "python3",
               "the system": Path(sys.executable).resolve()}
    for what, target in targets.items():
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists():
            target.symlink_to(Path(sys.executable).resolve())
        python = folder / "venv" / "bin" / "python3"
        shutil.rmtree(folder, ignore_errors=True)
        python.parent.mkdir(parents=True)
        python.symlink_to(target)
        env = install_env(tmp_path / "cache", "verl-0.4.1-cpu")
        env.owner, env.python = "bob", str(python)
        env.dump(folder)
        if what == "the system":
            assert reg.resolve("~/envs/evil", "bob").python == str(python)
        else:
            with pytest.raises(EnvError, match="links outside your home"):
                reg.resolve("~/envs/evil", "bob")


def test_argus_up_says_what_the_default_environment_can_run(tmp_path: Path) -> None:
    """The start's line about the default environment (issue 34): Argus's own has no rollout engine and the
    line says how to get one on a CPU machine; a CPU training one says device: cpu; a missing one is named."""
    reg = Registry(tmp_path, sys.executable, BUILTIN, tmp_path / "state")
    line = reg.default_line()
    assert line.startswith("default training environment: argus (verl ") and "no rollout engine" in line
    assert "argus up --default-env verl-0.9.1-vllm-cpu" in line
    from argus.envs.registry import Environment

    Environment(name="cpu-env", python=sys.executable, prefix=sys.prefix, source="catalog", templates=True,
                probe={"versions": {"verl": "0.9.1"}, "rollout_engines": ["vllm"], "cpu_platform": True,
                       "problems": []}).dump(reg.cluster_dir / "cpu-env")
    line = Registry(tmp_path, sys.executable, "cpu-env", tmp_path / "state").default_line()
    assert line == "default training environment: cpu-env (verl 0.9.1, rollout: vllm, trains on CPU: specs say device: cpu)"
    line = Registry(tmp_path, sys.executable, "nope", tmp_path / "state").default_line()
    assert line.startswith("default training environment: nope (not built): tasks without env: are refused")


def test_an_lm_eval_task_in_an_environment_probed_before_the_check_is_only_warned(tmp_path: Path) -> None:
    """A manifest written by an older Argus has no ``lm_eval`` fact: admission cannot tell, so it says how to."""
    from argus.core.admission import Admitted
    from argus.core.evaluation import LM_EVAL_MODULE
    from argus.core.taskspec import parse_taskspec
    from argus.envs.check import EnvCheck

    env = install_env(tmp_path, "verl-0.9.1-cpu", as_name="old-probe")
    del env.probe["lm_eval"]
    env.dump(tmp_path / "envs" / "old-probe")
    spec = parse_taskspec({"kind": "advanced", "workload": "job", "nnodes": 1, "n_gpus_per_node": 0, "env": "old-probe",
                       "command": f"python3 -m {LM_EVAL_MODULE} --tasks t"})
    out = EnvCheck(Registry(tmp_path, sys.executable))(Admitted(spec=spec, entry_module=LM_EVAL_MODULE), "alice", [])
    assert not out.errors and "argus env check old-probe" in out.warnings[0]
