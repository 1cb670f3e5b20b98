"""POST /api/v2/tasks?dry_run=true through real HTTP: the submit verdict, nothing stored; errors with lines."""

from __future__ import annotations

import yaml
from sqlalchemy import func, select

from argus.db.models import IdCounterModel, TaskEventModel, TaskModel
from tests.api.test_tasks_api import ADV
from tests.helpers import CLIENT_TIMEOUT_S
from tests.waiting import slack

YAML = {"Content-Type": "application/yaml"}


def dry(c, body: str, ctype: str = "application/yaml"):
    return c.post("/api/v2/tasks", params={"dry_run": "true"}, content=body.encode(), headers={"Content-Type": ctype})


def _stored(live) -> tuple[int, int, list[int]]:
    with live.ctx.db.session() as s:
        return (s.scalar(select(func.count()).select_from(TaskModel)) or 0,
                s.scalar(select(func.count()).select_from(TaskEventModel)) or 0,
                list(s.scalars(select(IdCounterModel.next_value))))


def test_dry_run_answers_the_verdict_and_stores_nothing(live):
    alice = live.new_user("alice")
    before = _stored(live)
    r = dry(alice, ADV)
    assert r.status_code == 200, r.text
    body = r.json()
    assert set(body) == {"warnings", "warning_messages", "info", "resolved", "command_expanded", "checks"}
    assert body["checks"] == "all"  # every check a submit runs (issue 37: `checks=spec` answers the spec's own)
    assert any("ray_kwargs.ray_init.address" in w for w in body["warnings"])  # the same warnings as a submit
    assert body["resolved"]["entry_module"] == "verl.trainer.main_ppo" and body["resolved"]["nnodes"] == 1
    root = live.ctx.settings.root
    assert f"data.val_files={root}/users/alice/datasets/gsm8k/test.parquet" in body["command_expanded"]
    assert _stored(live) == before  # no task, no event, no id taken

    # the next real submit gets the first id of the day: the dry runs took none
    for _ in range(3):
        assert dry(alice, ADV).status_code == 200
    tid = alice.post("/api/v2/tasks", content=ADV.encode(), headers=YAML, timeout=slack(CLIENT_TIMEOUT_S)).json()["task_id"]
    assert tid.endswith("-0001")
    spec = alice.get(f"/api/v2/tasks/{tid}/spec").json()
    assert spec["resolved"] == body["resolved"] and spec["command_expanded"] == body["command_expanded"]
    assert alice.get("/api/v2/tasks").json()["total"] == 1


def test_dry_run_of_a_basic_spec_previews_the_command(live):
    alice = live.new_user("alice")
    spec = {"workload": "grpo", "model_id": "Qwen/Qwen2.5-0.5B-Instruct", "train_file": "$HOME/datasets/t.parquet",
            "val_file": "$HOME/datasets/v.parquet", "nnodes": 1, "n_gpus_per_node": 2}
    r = dry(alice, yaml.safe_dump(spec))
    assert r.status_code == 200, r.text
    cmd = r.json()["command_expanded"]
    assert cmd.startswith("python3 -m verl.trainer.main_ppo")
    assert f"data.train_files={live.ctx.settings.root}/users/alice/datasets/t.parquet" in cmd
    assert "'trainer.experiment_name=<task-id>'" in cmd  # the id is not taken before a real submit
    assert _stored(live)[0] == 0


def test_dry_run_rejects_exactly_like_submit_with_lines(live):
    alice = live.new_user("alice")
    bad = ADV.replace("nnodes: 1", "nnodes: 0").replace("data.val_files=$HOME", "data.val_files=/etc")
    r = dry(alice, bad)
    assert r.status_code == 400
    real = alice.post("/api/v2/tasks", content=bad.encode(), headers=YAML)
    assert real.status_code == 400 and real.json() == r.json()  # the same checks, the same answer
    by_field = {e["field"]: e for e in r.json()["detail"]["errors"]}
    assert by_field["nnodes"]["line"] == 4
    r = dry(alice, ADV.replace("data.val_files=$HOME", "data.val_files=/etc"))
    val = next(e for e in r.json()["detail"]["errors"] if "/etc" in str(e["value"]))
    assert ADV.splitlines()[val["line"] - 1].strip().startswith("data.val_files=")
    assert _stored(live)[0] == 0

    # a typo in a top-level field and an override list item
    basic = ("workload: grpo\nmodel_id: m/x\ntrain_file: $HOME/datasets/t.parquet\nval_file: $HOME/datasets/v.parquet\n"
             "nnodes: 1\nn_gpus_per_node: 2\nnnodez: 1\noverrides:\n  - trainer.val_before_train=False\n  - nokey\n")
    errs = {e["field"]: e for e in dry(alice, basic).json()["detail"]["errors"]}
    assert errs["nnodez"]["line"] == 7 and "did you mean 'nnodes'" in errs["nnodez"]["message"]

    errs = dry(alice, basic.replace("nnodez: 1\n", "")).json()["detail"]["errors"]
    assert [(e["field"], e["line"]) for e in errs] == [("overrides[1]", 9)]

    # YAML syntax errors carry their line; JSON bodies carry none
    e = dry(alice, "workload: grpo\nnnodes: [1\n").json()["detail"]["errors"][0]
    assert e["field"] == "(body)" and e["line"] == 3
    errs = dry(alice, '{"workload": "grpo",\n "nnodes": 0}', "application/json").json()["detail"]["errors"]
    assert errs and all("line" not in e for e in errs)


def test_dry_run_reveals_nothing_about_other_users_files(live):
    """Probing bob's home by dry runs: the answer is the same whether his file exists or not."""
    alice = live.new_user("alice")
    live.new_user("bob")
    bob_home = live.ctx.settings.root / "users" / "bob" / "datasets"
    (bob_home / "secret.parquet").write_bytes(b"PAR1")
    answers = []
    for name in ("secret.parquet", "missing.parquet"):
        path = f"{bob_home}/{name}"
        spec = ADV.replace("data.val_files=$HOME/datasets/gsm8k/test.parquet", f"data.val_files={path}")
        r = dry(alice, spec)
        assert r.status_code == 400
        answers.append([(e["field"], e["message"], e.get("line")) for e in r.json()["detail"]["errors"]])
    assert answers[0] == answers[1] and answers[0]


def test_dry_run_needs_authentication_and_csrf(live):
    import httpx

    r = httpx.post(f"{live.url}/api/v2/tasks?dry_run=true", content=ADV.encode(), headers=YAML, timeout=slack(CLIENT_TIMEOUT_S))
    assert r.status_code == 401
    alice = live.new_user("alice")
    assert alice.post("/api/v2/me/password", json={"password": "correct horse"}).status_code == 204
    with httpx.Client(base_url=live.url, timeout=slack(CLIENT_TIMEOUT_S)) as b:
        csrf = b.post("/api/v2/session", json={"user": "alice", "password": "correct horse"}).json()["csrf_token"]
        assert dry(b, ADV).status_code == 403  # a cookie write without X-CSRF-Token
        r = b.post("/api/v2/tasks", params={"dry_run": "true"}, content=ADV.encode(),
                   headers={**YAML, "X-CSRF-Token": csrf})
        assert r.status_code == 200, r.text


def test_dry_run_does_not_use_up_an_idempotency_key(live):
    alice = live.new_user("alice")
    key = {"Idempotency-Key": "check-then-submit-1"}
    r = alice.post("/api/v2/tasks", params={"dry_run": "true"}, content=ADV.encode(), headers={**YAML, **key})
    assert r.status_code == 200, r.text
    r = alice.post("/api/v2/tasks", content=ADV.encode(), headers={**YAML, **key})
    assert r.status_code == 201, r.text  # the real submit with the same key queues the task
    assert alice.get("/api/v2/tasks").json()["total"] == 1
