"""Admission per training environment, and /api/v2/envs, on a live server with verl validation required.

The same spec is refused by verl 0.9.1 and accepted by verl 0.4.1: each task is validated by
the verl of the environment it names (one warm validator per environment, argus.verl.pool).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from argus.settings import Settings
from tests.envs_fixtures import install_env
from tests.helpers import LiveServer, live_server, post_spec

# keys of verl 0.4-era launch scripts that verl 0.9 moved (tests/verl/test_worker_legacy_verl.py has more)
OLD_STYLE = ("python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo data.train_batch_size=8 "
             "actor_rollout_ref.rollout.n=4 actor_rollout_ref.actor.ppo_mini_batch_size=8 "
             "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=1 actor_rollout_ref.model.path=$HOME/models/tiny "
             "actor_rollout_ref.actor.use_kl_loss=True actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=1 "
             "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=1 ray_init.num_cpus=null "
             "critic.model.fsdp_config.param_offload=False trainer.n_gpus_per_node=1 trainer.nnodes=1")


def advanced(command: str, env: str | None, workload: str = "grpo") -> str:
    return (f"kind: advanced\nworkload: {workload}\nnnodes: 1\nn_gpus_per_node: 1\n"
            + (f"env: {env}\n" if env else "") + f"command: {command}\n")


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    settings = Settings(state_dir=tmp_path_factory.mktemp("envs"), sftp_enabled=False, verl_validation="required",
                        model_check="off")
    for name in ("verl-0.4.1-cpu", "verl-0.9.1-cpu", "verl-0.9.1-vllm-cpu"):
        install_env(settings.root, name)
    with live_server(settings) as s:
        yield s


@pytest.fixture(scope="module")
def alice(srv: LiveServer) -> Iterator[httpx.Client]:
    with srv.new_user("alice") as c:
        yield c


@pytest.fixture(scope="module")
def admin(srv: LiveServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=srv.url, headers={"Authorization": f"Bearer {srv.admin_token}"}, timeout=120) as c:
        yield c


def _errors(r: httpx.Response) -> list[dict]:
    return r.json()["detail"]["errors"]


def test_users_list_the_environments_they_can_name(alice: httpx.Client) -> None:
    out = alice.get("/api/v2/envs").json()
    assert out["default"] == "argus"
    by_name = {e["name"]: e for e in out["environments"]}
    assert set(by_name) == {"argus", "verl-0.4.1-cpu", "verl-0.9.1-cpu", "verl-0.9.1-vllm-cpu"}
    old = by_name["verl-0.4.1-cpu"]
    assert (old["verl"], old["torch"], old["templates"], old["ok"]) == ("0.4.1", "2.13.0+cpu", False, True)
    assert old["rollout_engines"] == [] and old["lock_sha256"]
    assert by_name["verl-0.9.1-cpu"]["templates"] is True
    cpu = by_name["verl-0.9.1-vllm-cpu"]  # issue 34: the one that trains on CPU, vLLM-CPU as its rollout
    assert (cpu["cpu_training"], cpu["rollout_engines"], cpu["ok"]) == (True, ["vllm"], True)
    assert by_name["verl-0.9.1-cpu"]["cpu_training"] is False


@pytest.mark.hostile
def test_a_user_sees_no_server_path_an_admin_does(srv: LiveServer, alice: httpx.Client, admin: httpx.Client) -> None:
    """Issue 33: the state dir, the data root and Argus's installation are the server's business."""
    import sys

    text = alice.get("/api/v2/envs").text
    for secret in (str(srv.ctx.settings.state_dir), str(srv.ctx.settings.root), sys.prefix, str(Path.cwd())):
        assert secret not in text, (secret, text[:2000])
    assert all(e["python"] is None for e in alice.get("/api/v2/envs").json()["environments"])
    pythons = [e["python"] for e in admin.get("/api/v2/envs").json()["environments"]]
    for python in pythons:
        assert python.startswith("/") and python not in text, pythons


def test_the_same_spec_is_refused_by_verl_091_and_accepted_by_verl_041(srv: LiveServer, alice: httpx.Client) -> None:
    new = post_spec(alice, advanced(OLD_STYLE, "verl-0.9.1-cpu"))
    assert new.status_code == 400, new.text
    refused = {e["field"] for e in _errors(new)}
    assert {"command: ray_init.num_cpus", "command: critic.model.fsdp_config.param_offload"} <= refused, new.text
    old = post_spec(alice, advanced(OLD_STYLE, "verl-0.4.1-cpu"))
    assert old.status_code == 201, old.text
    tid = old.json()["task_id"]
    assert alice.get(f"/api/v2/tasks/{tid}/spec").json()["resolved"]["env"] == "verl-0.4.1-cpu"
    # one warm validator per environment: 0.9.1's and 0.4.1's processes answered
    warm = srv.ctx.extras["verl_validator"].warm()
    pythons = {w["python"] for w in warm}
    assert any("verl-0.4.1-cpu" in p for p in pythons) and any("verl-0.9.1-cpu" in p for p in pythons), warm


def test_a_refusal_points_first_at_the_environment_that_accepts_the_spec_as_written(alice: httpx.Client) -> None:
    """Issue 35: a script for an older verl is told where it runs unchanged before it is told how to port it; a
    spec no environment accepts as written gets no such line."""
    r = post_spec(alice, advanced(OLD_STYLE, None))  # the default environment (verl 0.9.1 here)
    assert r.status_code == 400, r.text
    first, *rest = _errors(r)
    assert first["field"] == "env" and "accepted as written by verl 0.4.1" in first["message"], first
    assert "`env: verl-0.4.1-cpu`" in first["message"] and first.get("fix") is None
    assert {"command: ray_init.num_cpus", "command: critic.model.fsdp_config.param_offload"} <= {e["field"] for e in rest}
    bad = OLD_STYLE.replace("data.train_batch_size=8", "data.train_batch_size=3")  # refused by both verls
    r = post_spec(alice, advanced(bad, "verl-0.9.1-cpu"))
    assert r.status_code == 400 and not any(e["field"] == "env" for e in _errors(r)), r.text


def test_a_verl_041_rule_is_checked_by_verl_041(alice: httpx.Client) -> None:
    bad = OLD_STYLE.replace("data.train_batch_size=8", "data.train_batch_size=3")  # 3 × 4 rollouts < mini batch 8
    r = post_spec(alice, advanced(bad, "verl-0.4.1-cpu"))
    assert r.status_code == 400, r.text
    assert any("ppo_mini_batch_size" in e["message"] or "train_batch_size" in e["message"] for e in _errors(r)), r.text


def test_unknown_environments_and_templates_for_another_verl_are_refused_on_env(alice: httpx.Client) -> None:
    r = post_spec(alice, advanced(OLD_STYLE, "verl-0.4.2-cpu"))
    assert r.status_code == 400
    (e,) = [e for e in _errors(r) if e["field"] == "env"]
    assert e["value"] == "verl-0.4.2-cpu" and "available: argus, verl-0.4.1-cpu, verl-0.9.1-cpu, verl-0.9.1-vllm-cpu" in e["message"]
    basic = ("workload: grpo\nenv: verl-0.4.1-cpu\nmodel_id: Qwen/Qwen2.5-0.5B-Instruct\n"
             "train_file: $HOME/datasets/t.parquet\nval_file: $HOME/datasets/v.parquet\nnnodes: 1\nn_gpus_per_node: 1\n")
    r = post_spec(alice, basic)
    assert r.status_code == 400
    (e,) = [e for e in _errors(r) if e["field"] == "env"]
    assert "verl 0.9 config" in e["message"] and "kind: advanced" in e["message"]
    assert "line" in e  # points at the env: line of the YAML


CPU_GRPO = ("workload: grpo\ndevice: cpu\nenv: {env}\nmodel_id: $HOME/models/tiny\ntrain_file: $HOME/datasets/rl.parquet\n"
            "val_file: $HOME/datasets/rl.parquet\n"
            "nnodes: 1\nn_gpus_per_node: 1\ntrain_batch_size: 4\nrollout_n: 4\nmax_prompt_length: 64\n"
            "max_response_length: 32\n")


def test_cpu_training_is_validated_by_verl_and_reserves_no_gpu(srv: LiveServer, alice: httpx.Client) -> None:
    """Issue 34: a device: cpu GRPO template (with its CPU settings) passes verl's own validation in the CPU
    training environment; the task reserves no GPU, its n_gpus_per_node counts CPU training workers."""
    from tests.verl.conftest import make_tiny_model, write_rl_parquet

    home = srv.ctx.settings.root / "users" / "alice"
    (home / "datasets").mkdir(parents=True, exist_ok=True)
    write_rl_parquet(home / "datasets" / "rl.parquet", 8)
    if not (home / "models" / "tiny").exists():
        make_tiny_model(home / "models" / "tiny")
    r = post_spec(alice, CPU_GRPO.format(env="verl-0.9.1-vllm-cpu"))
    assert r.status_code == 201, r.text
    tid = r.json()["task_id"]
    task = alice.get(f"/api/v2/tasks/{tid}").json()
    assert task["n_gpus_per_node"] == 0
    spec = alice.get(f"/api/v2/tasks/{tid}/spec").json()
    assert spec["resolved"]["resources_per_node"] == {"gpus": 0, "cpus": 2.0, "memory": 0}
    assert "trainer.device=cpu" in spec["argv"] and "actor_rollout_ref.rollout.enforce_eager=True" in spec["argv"]
    alice.post(f"/api/v2/tasks/{tid}/cancel")


def test_cpu_training_and_cpu_environments_go_together(alice: httpx.Client) -> None:
    r = post_spec(alice, CPU_GRPO.format(env="verl-0.9.1-cpu"))
    assert r.status_code == 400
    (e,) = [e for e in _errors(r) if e["field"] == "device"]
    assert e["value"] == "cpu" and "cannot train on CPU" in e["message"] and "verl-0.9.1-vllm-cpu" in e["message"]
    r = post_spec(alice, CPU_GRPO.format(env="verl-0.9.1-vllm-cpu").replace("device: cpu\n", ""))
    assert r.status_code == 400
    (e,) = [e for e in _errors(r) if e["field"] == "device"]
    assert e["value"] == "gpu" and "trains on CPU only" in e["message"] and "add device: cpu" in e["message"]


def test_an_admin_registers_an_environment_after_it_is_checked(srv: LiveServer, alice: httpx.Client,
                                                                admin: httpx.Client) -> None:
    assert alice.post("/api/v2/envs", json={"name": "x", "python": sys.executable}).status_code == 403
    bare = str(Path(sys.base_prefix) / "bin" / "python3")
    r = admin.post("/api/v2/envs", json={"name": "bare", "python": bare})
    assert r.status_code == 400 and _errors(r)[0]["field"] == "python"
    assert "verl is not installed" in _errors(r)[0]["message"]
    r = admin.post("/api/v2/envs", json={"name": "relative", "python": "venv/bin/python"})
    assert r.status_code == 400 and "absolute" in r.text
    prefix = str(Path(install_env(srv.ctx.settings.root, "verl-0.4.1-cpu").python).parent.parent)
    r = admin.post("/api/v2/envs", json={"name": "old-scripts", "prefix": prefix, "description": "0.4 scripts"})
    assert r.status_code == 201, r.text
    assert r.json()["verl"] == "0.4.1" and r.json()["source"] == "registered"
    assert admin.post("/api/v2/envs", json={"name": "old-scripts", "prefix": prefix}).status_code == 400


def test_removing_an_environment_waits_for_its_tasks(alice: httpx.Client, admin: httpx.Client) -> None:
    tid = post_spec(alice, advanced(OLD_STYLE, "old-scripts")).json()["task_id"]
    assert alice.delete("/api/v2/envs/old-scripts").status_code == 403
    r = admin.delete("/api/v2/envs/old-scripts")
    assert r.status_code == 409 and tid in r.text and r.json()["detail"]["code"] == "env_in_use"
    assert alice.post(f"/api/v2/tasks/{tid}/cancel").status_code == 200
    assert admin.delete("/api/v2/envs/old-scripts").status_code == 200
    assert "old-scripts" not in {e["name"] for e in alice.get("/api/v2/envs").json()["environments"]}
    assert admin.delete("/api/v2/envs/argus").status_code == 409  # the built-in one stays
    assert admin.delete("/api/v2/envs/nope").status_code == 404


def test_start_up_warms_a_validator_for_each_verl_of_the_cluster(srv: LiveServer) -> None:
    """Issue 35: the 0.4.1 environment's validator starts with the server, not on the first spec that needs it
    (a refused spec is tried there; a first answer took 89 s on a busy head)."""
    import asyncio

    from argus.verl.component import VerlValidatorComponent
    from argus.verl.pool import ValidatorPool

    pool = ValidatorPool(srv.ctx.settings)
    try:
        asyncio.run(VerlValidatorComponent(pool, srv.ctx.extras["env_registry"]).start())
        pythons = [w["python"] for w in pool.warm()]
        assert len(pythons) == 2 and any("verl-0.4.1-cpu" in p for p in pythons), pythons  # 0.9.1 once, 0.4.1
    finally:
        pool.stop()


def test_a_task_is_rerun_in_another_environment_with_its_keys_moved(srv: LiveServer, alice: httpx.Client) -> None:
    """Issue 35: a task accepted in verl 0.4.1 re-run in 0.9.1: a preview shows the diff (env: and each key 0.9.1
    reads under another name) and what is left; the re-run queues that spec; nobody else can re-run it."""
    old = post_spec(alice, advanced(OLD_STYLE, "verl-0.4.1-cpu"))
    assert old.status_code == 201, old.text
    tid = old.json()["task_id"]
    preview = alice.post(f"/api/v2/tasks/{tid}/rerun", params={"dry_run": "true"}, json={"env": "verl-0.9.1-cpu"})
    assert preview.status_code == 200, preview.text
    plan = preview.json()
    assert "-env: verl-0.4.1-cpu" in plan["diff"] and "+env: verl-0.9.1-cpu" in plan["diff"], plan["diff"]
    assert "ray_kwargs.ray_init.num_cpus=null" in plan["spec"] and "critic.fsdp.param_offload" in plan["spec"]
    assert {e["field"] for e in plan["edits"]} >= {"command: ray_init.num_cpus",
                                                   "command: critic.model.fsdp_config.param_offload"}
    assert plan["errors"] == [], plan["errors"]
    done = alice.post(f"/api/v2/tasks/{tid}/rerun", json={"env": "verl-0.9.1-cpu"})
    assert done.status_code == 201, done.text
    new = done.json()["task_id"]
    spec = alice.get(f"/api/v2/tasks/{new}/spec").json()
    assert spec["resolved"]["env"] == "verl-0.9.1-cpu" and "ray_kwargs.ray_init.num_cpus" in spec["raw"]
    events = alice.get(f"/api/v2/tasks/{new}/events").json()
    assert any(f"re-run of {tid} in environment verl-0.9.1-cpu" in (e.get("message") or "") for e in events), events
    assert any(e["message_code"] in ("status.rerun_of", "status.rerun_of_moved") and e["message_params"]["task"] == tid
               and e["message_params"]["env"] == "verl-0.9.1-cpu" for e in events), events  # issue 37: coded
    bad = alice.post(f"/api/v2/tasks/{tid}/rerun", json={"env": "verl-9.9-cpu"})
    assert bad.status_code == 400 and any(e["field"] == "env" for e in bad.json()["detail"]["errors"]), bad.text
    with srv.new_user("mallory") as mallory:
        assert mallory.post(f"/api/v2/tasks/{tid}/rerun", json={"env": "verl-0.9.1-cpu"}).status_code == 404


def test_argus_rerun_shows_the_diff_and_asks_first(srv: LiveServer, alice: httpx.Client, monkeypatch,
                                                     tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from argus.cli.main import app

    tid = post_spec(alice, advanced(OLD_STYLE, "verl-0.4.1-cpu")).json()["task_id"]
    for name, value in (("HOME", str(tmp_path)), ("ARGUS_URL", srv.url), ("COLUMNS", "200"),
                        ("ARGUS_TOKEN", alice.headers["Authorization"].removeprefix("Bearer "))):
        monkeypatch.setenv(name, value)
    runner = CliRunner()
    no = runner.invoke(app, ["rerun", tid, "--env", "verl-0.9.1-cpu"], input="n\n")
    assert no.exit_code == 1 and "+env: verl-0.9.1-cpu" in no.output and "ray_kwargs.ray_init" in no.output, no.output
    yes = runner.invoke(app, ["rerun", tid, "--env", "verl-0.9.1-cpu"], input="y\n")
    assert yes.exit_code == 0 and f"re-runs {tid} in verl-0.9.1-cpu" in yes.output, yes.output


LM_EVAL = """\
kind: eval
model_id: $HOME/models/tiny
device: cpu
env: {env}
lm_eval: {{tasks: [tiny_arith], include_path: $HOME/code/lm_tasks, limit: 4}}
"""


def test_an_lm_eval_task_needs_an_environment_with_lm_eval(srv: LiveServer, alice: httpx.Client) -> None:
    """Refused at submit, naming the environments that have it, not failed on the import after the queue."""
    for folder in ("models/tiny", "code/lm_tasks"):
        (srv.ctx.settings.root / "users" / "alice" / folder).mkdir(parents=True, exist_ok=True)
    r = post_spec(alice, LM_EVAL.format(env="verl-0.9.1-cpu"))
    assert r.status_code == 400, r.text
    (e,) = [e for e in _errors(r) if e["field"] == "env"]
    assert e["value"] == "verl-0.9.1-cpu" and "no lm_eval package" in e["message"]
    assert "verl-0.9.1-vllm-cpu" in e["message"]  # the environment that has it
    r = post_spec(alice, LM_EVAL.format(env="verl-0.9.1-vllm-cpu"))
    assert r.status_code == 201, r.text
    alice.post(f"/api/v2/tasks/{r.json()['task_id']}/cancel")
