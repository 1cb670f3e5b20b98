"""Issue 25 on the server: each did-you-mean carries its fix as an edit (`fix`), verl's keys are listed for the
editor's completion (GET /api/v2/verl/keys), and the templates' example files are one to-do (real verl)."""

from __future__ import annotations

from types import SimpleNamespace

import httpx

from tests.helpers import CLIENT_TIMEOUT_S
from tests.verl.test_verl_admission import PPO_ARGS, advanced
from tests.waiting import slack

YAML = {"Content-Type": "application/yaml"}


def block(args: list[str]) -> str:
    """An Advanced spec with the command as a `|` block, one override a line (as the template writes it)."""
    return ("kind: advanced\nworkload: grpo\nnnodes: 1\nn_gpus_per_node: 2\ncommand: |\n"
            "  python3 -m verl.trainer.main_ppo \\\n" + " \\\n".join(f"    {a}" for a in args) + "\n")


def dry(client, body: str):  # noqa: ANN001, ANN201
    return client.post("/api/v2/tasks", params={"dry_run": "true"}, content=body.encode(), headers=YAML)


def errors_at(r) -> dict[str, dict]:  # noqa: ANN001
    assert r.status_code == 400, r.text
    return {e["field"]: e for e in r.json()["detail"]["errors"]}


def test_each_single_fix_is_an_edit_the_editor_can_apply(verl_server, alice):
    body = block([a for a in PPO_ARGS if not a.startswith("data.max_prompt_length")]
                 + ["data.train_batch_sz=8", "+data.max_prompt_length=64",
                    "actor_rollout_ref.actor.fsdp_config.grad_offload='True'",
                    "actor_rollout_ref.actor.checkpoint.contents=['model']"])
    errs = errors_at(dry(alice, body))
    typo = errs["command: data.train_batch_sz"]
    assert typo["fix"] == {"replace": "data.train_batch_sz", "with": "data.train_batch_size"}
    assert "did you mean `data.train_batch_size`" in typo["message"]
    assert body.splitlines()[typo["line"] - 1].strip() == "data.train_batch_sz=8 \\"  # the line holds it
    plus = errs["command: data.max_prompt_length"]
    assert plus["fix"] == {"replace": "+data.max_prompt_length", "with": "data.max_prompt_length"}
    renamed = errs["command: actor_rollout_ref.actor.checkpoint.contents"]  # the value stays as typed
    assert renamed["fix"] == {"replace": "actor_rollout_ref.actor.checkpoint.contents",
                              "with": "actor_rollout_ref.actor.checkpoint.save_contents"}
    removed = errs["command: actor_rollout_ref.actor.fsdp_config.grad_offload"]  # deleted as typed, quotes too
    assert removed["fix"] == {"replace": "actor_rollout_ref.actor.fsdp_config.grad_offload='True'", "with": ""}
    # applying every fix gives a spec verl accepts: the fixes are the messages' own words, nothing more
    fixed = body
    for e in (typo, plus, renamed, removed):  # as new_task.js applies them: a line left empty goes
        fixed = fixed.replace(e["fix"]["replace"], e["fix"]["with"], 1)
    fixed = "\n".join(line for line in fixed.split("\n") if line.strip(" \\") or not line)
    r = dry(alice, fixed)
    assert r.status_code == 200, r.text


def test_a_problem_without_one_fix_has_none(verl_server, alice):
    errs = errors_at(dry(alice, advanced(PPO_ARGS, extra=["data.train_batch_size=many"], drop=("data.train_batch_size",))))
    assert "expects a number" in errs["command: data.train_batch_size"]["message"]
    assert all("fix" not in e for e in errs.values()), errs  # which number is the user's call: no one-click edit


def test_verl_keys_for_completion(verl_server, validator, alice):
    verl_server.ctx.extras["verl_validator"] = SimpleNamespace(get=lambda env: validator)  # argus up's pool
    r = alice.get("/api/v2/verl/keys", params={"workload": "grpo"})
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["config"] == "ppo_trainer" and out["env"] == "argus" and out["verl_version"]
    keys = {k["key"]: k for k in out["keys"]}
    assert keys["actor_rollout_ref.actor.ppo_mini_batch_size"]["type"] == "int"
    assert keys["data.train_batch_size"]["default"] == 1024
    old = keys["actor_rollout_ref.actor.ppo_micro_batch_size"]
    assert old["deprecated"] and old["use"] == "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu"
    assert not keys["actor_rollout_ref.actor.ppo_mini_batch_size"]["deprecated"]
    assert not any("_target_" in k for k in keys)
    sent = validator._next_id
    assert alice.get("/api/v2/verl/keys", params={"workload": "ppo"}).json()["keys"] == out["keys"]
    assert validator._next_id == sent  # the same config again: from the cache, no validator round trip
    sft = {k["key"] for k in alice.get("/api/v2/verl/keys", params={"workload": "sft"}).json()["keys"]}
    assert "data.micro_batch_size_per_gpu" in sft and "actor_rollout_ref.actor.ppo_mini_batch_size" not in sft

    bad = alice.get("/api/v2/verl/keys", params={"workload": "dpo"})
    assert bad.status_code == 400 and bad.json()["detail"]["errors"][0]["field"] == "workload"
    env = alice.get("/api/v2/verl/keys", params={"env": "nope"})
    assert env.status_code == 400
    assert env.json()["detail"]["errors"][0] == {"field": "env", "value": "nope",
                                                  "message": env.json()["detail"]["message"]}
    assert "argus" in env.json()["detail"]["message"]  # names what exists
    assert httpx.get(f"{verl_server.url}/api/v2/verl/keys", timeout=slack(CLIENT_TIMEOUT_S)).status_code == 401


def test_a_new_users_template_is_one_to_do_not_a_wall(verl_server):
    """bob's home is empty: the Basic GRPO template's example files are one problem pointing at the Data page;
    a real submit is refused the same way, and a path bob typed keeps its own error."""
    from argus.web.templates_catalog import spec_templates

    with verl_server.new_user("bob") as bob:
        template = spec_templates("en")["basic-grpo"]
        errs = list(errors_at(dry(bob, template)).values())
        assert len(errs) == 1, errs
        assert errs[0]["link"] == "/data" and errs[0]["field"] == "model_id" and errs[0]["line"] == 5
        assert "$HOME/datasets/gsm8k/train.parquet" in errs[0]["message"]
        real = bob.post("/api/v2/tasks", content=template.encode(), headers=YAML)
        assert real.status_code == 400 and real.json()["detail"]["errors"] == [errs[0]]
        typed = errors_at(dry(bob, template.replace("$HOME/datasets/gsm8k/test.parquet", "$HOME/mine/v.parquet")))
        assert "does not exist" in typed["val_file"]["message"] and "link" not in typed["val_file"]
        assert typed["model_id"]["link"] == "/data"


def test_a_guess_across_the_config_is_text_never_a_one_click_fix(verl_server, alice):
    """Issue 35: similarity across the config guessed ``retriever.url`` → ``reward.sandbox_fusion.url``: applied,
    it changes what the script means. Such a guess stays in the message; a fix is only the rename table's key
    or a spelling slip of a key under the same parent."""
    errs = errors_at(dry(alice, advanced(PPO_ARGS, extra=["retriever.url=http://127.0.0.1:8000/retrieve",
                                                          "data.max_prompt_lenght=64"])))
    guess = errs["command: retriever.url"]
    assert "did you mean" in guess["message"] and guess.get("fix") is None, guess
    slip = errs["command: data.max_prompt_lenght"]
    assert slip["fix"] == {"replace": "data.max_prompt_lenght", "with": "data.max_prompt_length"}
