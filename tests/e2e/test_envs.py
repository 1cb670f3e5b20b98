"""A task runs in the training environment it names, not in Argus's own (issue 22), on the real cluster.

The e2e stack's worker node runs the launcher in Argus's interpreter; the task's command, its
reward banner and its private Ray come from the environment's prefix, mounted read-only in
the sandbox. The doctor, run as a task, reports every environment as this node sees it.
"""

from __future__ import annotations

import re

import pytest

from tests.e2e.stack import Stack, spec, submit, wait_status
from tests.envs_fixtures import install_env

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def envs(stack: Stack) -> dict[str, str]:
    """verl 0.4.1 and verl 0.9.1 CPU environments on the stack's data root; their interpreters."""
    return {name: install_env(stack.settings.root, name).python for name in ("verl-0.4.1-cpu", "verl-0.9.1-cpu")}


def _in_env(env: str, command: str) -> str:
    return spec(command).replace("kind: advanced\n", f"kind: advanced\nenv: {env}\n")


def _run(client, body: str, timeout: float = 240) -> tuple[str, str]:  # noqa: ANN001
    """Submit ``body``, wait for it to end successfully; (task id, its log)."""
    tid = submit(client, body)
    t = wait_status(client, tid, {"SUCCEEDED", "FAILED"}, timeout=timeout)
    log = client.get(f"/api/v2/tasks/{tid}/logs").text
    assert t["status"] == "SUCCEEDED", log[-3000:]
    return tid, log


def test_a_tasks_processes_import_the_environments_verl(stack: Stack, envs: dict[str, str]) -> None:
    alice = stack.user("alice")
    tid, log = _run(alice, _in_env("verl-0.4.1-cpu", "python3 -m argus.jobs.doctor"))
    python = envs["verl-0.4.1-cpu"]
    assert f"python3={python} (environment verl-0.4.1-cpu)" in log
    assert "OK    python 3.11" in log and f"({python})" in log  # the doctor ran in the environment
    assert "OK    verl 0.4.1" in log and "OK    import verl.trainer.fsdp_sft_trainer" in log
    # the doctor per environment: each one this node sees, probed by its own interpreter
    assert re.search(r"OK    environment verl-0.4.1-cpu: verl 0.4.1, torch 2.13.0\+cpu", log), log
    assert re.search(r"OK    environment verl-0.9.1-cpu: verl 0.9.1", log), log
    spec_resolved = alice.get(f"/api/v2/tasks/{tid}/spec").json()
    assert spec_resolved["resolved"]["env"] == "verl-0.4.1-cpu"


def test_a_ray_program_gets_its_private_ray_from_the_environment(stack: Stack, envs: dict[str, str]) -> None:
    alice = stack.user("alice")
    _, log = _run(alice, _in_env("verl-0.9.1-cpu", "python3 -m argus.jobs.ray_gpus --gpus 0"))
    assert f"python3={envs['verl-0.9.1-cpu']} (environment verl-0.9.1-cpu)" in log
    assert "ray_gpus: cluster nodes=1" in log


def test_a_removed_environment_fails_the_task_naming_it(stack: Stack, envs: dict[str, str]) -> None:
    alice = stack.user("alice")
    install_env(stack.settings.root, "verl-0.4.1-cpu", as_name="short-lived")
    with stack.manual():  # accepted, then removed before the scheduler starts it
        tid = submit(alice, _in_env("short-lived", "python3 -m argus.jobs.sleep 1"))
        import shutil

        shutil.rmtree(stack.settings.root / "envs" / "short-lived")
    t = wait_status(alice, tid, {"FAILED", "SUCCEEDED"}, timeout=120)
    log = alice.get(f"/api/v2/tasks/{tid}/logs").text
    assert t["status"] == "FAILED"
    assert "environment 'short-lived' no longer exists" in log


def _put(client, path: str, data: bytes) -> None:
    client.post("/api/v2/files/mkdir", json={"path": path.rsplit("/", 1)[0], "parents": True})
    r = client.put("/api/v2/files/content", params={"path": path}, content=data)
    assert r.status_code in (200, 201), r.text


def test_a_user_builds_an_environment_of_their_own_that_only_they_can_name(stack: Stack,
                                                                          envs: dict[str, str]) -> None:
    """In their sandbox, from a requirements file in their home (here: Argus's verl 0.4.1 lock)."""
    from argus.envs import catalog

    alice, bob = stack.user("alice"), stack.user("bob")
    _put(alice, "/code/requirements.txt", catalog.entry("verl-0.4.1-cpu").lock.read_bytes())
    _, log = _run(alice, spec("python3 -m argus.jobs.build_env --name mine --requirements "
                              "$HOME/code/requirements.txt"), timeout=900)
    assert "build_env: ~/envs/mine ready" in log and "verl 0.4.1" in log
    mine = {e["name"]: e for e in alice.get("/api/v2/envs").json()["environments"]}["~/envs/mine"]
    assert mine["owner"] == "alice" and mine["verl"] == "0.4.1" and mine["ok"] and mine["source"] == "requirements"
    assert "~/envs/mine" not in {e["name"] for e in bob.get("/api/v2/envs").json()["environments"]}
    _, log = _run(alice, _in_env("~/envs/mine", "python3 -m argus.jobs.doctor"))
    assert "(environment ~/envs/mine)" in log and "OK    verl 0.4.1" in log
    refused = bob.post("/api/v2/tasks", content=_in_env("~/envs/mine", "python3 -m argus.jobs.doctor").encode(),
                       headers={"Content-Type": "application/yaml"})
    assert refused.status_code == 400
    assert [e["field"] for e in refused.json()["detail"]["errors"]] == ["env"]
