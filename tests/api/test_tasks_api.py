"""The task API through real HTTP against a real SQLite file."""

from pathlib import Path

import yaml

from tests.helpers import post_spec

ADV = """\
kind: advanced
workload: ppo
name: my run
nnodes: 1
n_gpus_per_node: 2
command: |
  PYTHONUNBUFFERED=1 python3 -m verl.trainer.main_ppo \\
    data.train_files=$HOME/common/datasets/gsm8k/train.parquet \\
    data.val_files=$HOME/datasets/gsm8k/test.parquet \\
    trainer.nnodes=1 trainer.n_gpus_per_node=2 \\
    +ray_kwargs.ray_init.address=auto
"""


submit = post_spec


def test_submit_read_spec_events_cancel(live):
    alice = live.new_user("alice")
    r = submit(alice, ADV)
    assert r.status_code == 201, r.text
    body = r.json()
    tid = body["task_id"]
    assert tid.startswith("ppo-") and len(tid.split("-")) == 3
    assert body["status"] == "QUEUED"
    assert any("ray_kwargs.ray_init.address" in w for w in body["warnings"])

    t = alice.get(f"/api/v2/tasks/{tid}").json()
    assert t["status"] == "QUEUED" and t["user"] == "alice" and t["name"] == "my run"
    assert t["attempts"] == [] and t["nnodes"] == 1 and t["n_gpus_per_node"] == 2

    s = alice.get(f"/api/v2/tasks/{tid}/spec").json()
    assert s["raw"] == ADV  # byte for byte as submitted
    root = str(live.ctx.settings.root)
    assert "$HOME/common/datasets/gsm8k/train.parquet" in s["command_raw"]
    assert f"data.train_files={root}/datasets/gsm8k/train.parquet" in s["command_expanded"]
    assert f"data.val_files={root}/users/alice/datasets/gsm8k/test.parquet" in s["command_expanded"]
    assert s["resolved"]["entry_module"] == "verl.trainer.main_ppo"

    r = alice.post(f"/api/v2/tasks/{tid}/cancel")
    assert r.status_code == 200 and r.json()["status"] == "CANCELED"
    r = alice.post(f"/api/v2/tasks/{tid}/cancel")  # idempotent
    assert r.status_code == 200 and r.json()["status"] == "CANCELED"
    ev = alice.get(f"/api/v2/tasks/{tid}/events").json()
    assert [(e["from_status"], e["to_status"]) for e in ev] == [(None, "QUEUED"), ("QUEUED", "CANCELED")]
    assert ev[1]["reason"] == "USER_CANCELED" and ev[1]["actor"] == "alice"


def test_rejection_lists_every_problem(live):
    alice = live.new_user("alice")
    bad = {"kind": "advanced", "workload": "ppo", "nnodes": 1, "n_gpus_per_node": 1,
           "command": "python3 -m os data.train_files=/private/users/bob/x.parquet; rm -rf ~"}
    r = submit(alice, yaml.safe_dump(bad))
    assert r.status_code == 400
    d = r.json()["detail"]
    assert d["code"] == "invalid_spec"
    assert all(set(e) - {"line", "code", "params"} == {"field", "value", "message"} for e in d["errors"])
    assert any("shell operator" in e["message"] for e in d["errors"])
    # a coded refusal (issue 37) says its code and params beside the same English message
    assert all(("code" in e) == ("params" in e) for e in d["errors"])

    r = submit(alice, '{"workload": "grpo", "nnodes": 0, "typo": 1}', "application/json")
    assert r.status_code == 400
    fields = {e["field"] for e in r.json()["detail"]["errors"]}
    assert {"nnodes", "typo", "model_id", "train_file", "n_gpus_per_node"} <= fields
    coded = {e["field"]: (e["code"], e["params"], e["message"]) for e in r.json()["detail"]["errors"]}
    assert coded["nnodes"] == ("spec.bound", {"op": "≥", "limit": 1}, "must be ≥ 1")
    assert coded["typo"][0] == "spec.unknown_field" and coded["typo"][2].startswith("unknown field; allowed fields: ")


def test_schema_errors_and_path_errors_come_together(live):
    """Issue 9 §5: a spec missing nnodes that also names another user's file hears about both at once."""
    alice = live.new_user("alice")
    root = live.ctx.settings.root
    bad = {"kind": "advanced", "workload": "ppo", "n_gpus_per_node": 1,
           "command": f"python3 -m verl.trainer.main_ppo data.train_files={root}/users/bob/x.parquet"}
    r = submit(alice, yaml.safe_dump(bad))
    assert r.status_code == 400
    errs = r.json()["detail"]["errors"]
    assert any(e["field"] == "nnodes" for e in errs), errs
    foreign = [e for e in errs if "another user's home" in e["message"]]
    assert foreign and foreign[0]["field"] == "command", errs
    assert str(root) not in foreign[0]["message"]  # the server's layout is never shown in the message


def test_list_search_by_name_or_id_prefix(live):
    alice = live.new_user("alice")
    ids = {}
    for name in ("Alpha run", "beta_run", "100% gamma"):
        r = submit(alice, ADV.replace("name: my run", f"name: '{name}'"))
        assert r.status_code == 201, r.text
        ids[name] = r.json()["task_id"]

    def found(q):
        r = alice.get("/api/v2/tasks", params={"q": q})
        assert r.status_code == 200, r.text
        return {t["task_id"] for t in r.json()["items"]}

    assert found("alpha") == {ids["Alpha run"]}
    assert found("a_r") == {ids["beta_run"]}  # "_" is a letter, not LIKE's wildcard
    assert found("0%") == {ids["100% gamma"]}
    assert found(ids["beta_run"][:-1]) >= {ids["beta_run"]}
    assert found("nothing-like-this") == set()
    assert alice.get("/api/v2/tasks", params={"q": "x" * 200}).status_code == 400  # validation errors are 400 here


def test_hostile_bodies_never_500(live):
    alice = live.new_user("alice")
    for body, ctype in [
        ("", "application/yaml"),
        ("\x00\x01", "application/yaml"),
        ("[[[[", "application/yaml"),
        ("null", "application/json"),
        ("{" * 5000, "application/json"),
        ("a: &a [*a]", "application/yaml"),
        ("kind: advanced\ncommand: 5\nnnodes: 1e99\nworkload: [1]", "application/yaml"),
        ("x" * 300_000, "text/plain"),
        ("nnodes: .nan\nn_gpus_per_node: .inf\nworkload: grpo", "application/yaml"),
        ('{"nnodes": NaN, "workload": "ppo"}', "application/json"),
    ]:
        r = submit(alice, body, ctype)
        assert r.status_code == 400, (body[:30], r.status_code, r.text[:300])
        assert r.json()["detail"]["code"]
    r = alice.post("/api/v2/tasks", content=b"\xff\xfe\xfa")
    assert r.status_code == 400


def test_isolation_and_admin_view(live):
    alice, bob = live.new_user("alice"), live.new_user("bob")
    tid = submit(alice, ADV).json()["task_id"]
    for path in (f"/api/v2/tasks/{tid}", f"/api/v2/tasks/{tid}/spec", f"/api/v2/tasks/{tid}/events"):
        r = bob.get(path)
        assert r.status_code == 404 and r.json()["detail"]["code"] == "task_not_found"
    assert bob.post(f"/api/v2/tasks/{tid}/cancel").status_code == 404
    assert bob.get("/api/v2/tasks").json()["total"] == 0
    assert alice.get("/api/v2/tasks").json()["total"] == 1
    with live.admin() as admin:
        assert admin.get(f"/api/v2/tasks/{tid}").status_code == 200
        assert admin.get("/api/v2/tasks", params={"user": "alice"}).json()["total"] == 1
        assert admin.get("/api/v2/tasks", params={"user": "bob"}).json()["total"] == 0


def test_list_filters_and_pagination(live):
    alice = live.new_user("alice")
    ids = [submit(alice, ADV).json()["task_id"] for _ in range(5)]
    grpo = ADV.replace("workload: ppo", "workload: grpo")
    gid = submit(alice, grpo).json()["task_id"]
    assert gid.startswith("grpo-")
    alice.post(f"/api/v2/tasks/{ids[0]}/cancel")
    page = alice.get("/api/v2/tasks", params={"limit": 2, "offset": 0}).json()
    assert page["total"] == 6 and len(page["items"]) == 2 and page["items"][0]["task_id"] == gid
    page2 = alice.get("/api/v2/tasks", params={"limit": 2, "offset": 2}).json()
    assert {t["task_id"] for t in page2["items"]}.isdisjoint({t["task_id"] for t in page["items"]})
    assert alice.get("/api/v2/tasks", params={"workload": "grpo"}).json()["total"] == 1
    assert alice.get("/api/v2/tasks", params={"status": "CANCELED"}).json()["total"] == 1
    assert alice.get("/api/v2/tasks", params={"status": "QUEUED,CANCELED"}).json()["total"] == 6
    r = alice.get("/api/v2/tasks", params={"status": "NOPE"})
    assert r.status_code == 400 and r.json()["detail"]["errors"][0]["field"] == "status"
    assert alice.get("/api/v2/tasks", params={"limit": 0}).status_code == 400
    # ids are unique and sequential
    nums = sorted(int(i.rsplit("-", 1)[1]) for i in ids)
    assert nums == list(range(nums[0], nums[0] + 5))


def test_basic_spec_through_api(live):
    alice = live.new_user("alice")
    spec = {"workload": "grpo", "model_id": "Qwen/Qwen2.5-0.5B-Instruct", "train_file": "$HOME/datasets/t.parquet",
            "val_file": "$HOME/datasets/v.parquet", "nnodes": 1, "n_gpus_per_node": 2, "priority": 5}
    r = submit(alice, yaml.safe_dump(spec))
    assert r.status_code == 201, r.text
    s = alice.get(f"/api/v2/tasks/{r.json()['task_id']}/spec").json()
    assert s["argv"][:3] == ["python3", "-m", "verl.trainer.main_ppo"]
    assert "data.train_files=$HOME/datasets/t.parquet" in s["command_raw"]
    assert f"{live.ctx.settings.root}/users/alice/datasets/t.parquet" in s["command_expanded"]
    assert s["resolved"]["priority"] == 5


def test_cancel_finished_task_conflicts(live):
    from argus.core.states import TaskStatus
    from argus.db.models import TaskModel
    from argus.services.tasks import switch_task_status

    alice = live.new_user("alice")
    tid = submit(alice, ADV).json()["task_id"]
    with live.ctx.db.session() as s:
        t = s.get(TaskModel, tid)
        switch_task_status(s, t, TaskStatus.SUBMITTED, actor="test")
        switch_task_status(s, t, TaskStatus.SUCCEEDED, actor="test")
    r = alice.post(f"/api/v2/tasks/{tid}/cancel")
    assert r.status_code == 409 and r.json()["detail"]["code"] == "task_finished"


def test_home_skeleton_created(live):
    live.new_user("carol")
    home = Path(live.ctx.settings.root) / "users" / "carol"
    assert sorted(p.name for p in home.iterdir()) == ["code", "datasets", "jobs", "models"]


def test_unresolvable_interpolation_and_env_are_refused_when_validation_is_off(live):
    """verl_validation=off: nothing resolves the config, so interpolations into paths are refused."""
    alice = live.new_user("alice")

    def errors(body):
        r = submit(alice, body)
        assert r.status_code == 400, r.text
        return {(e["field"], e["value"].split("=", 1)[0]): e["message"] for e in r.json()["detail"]["errors"]}

    errs = errors(ADV.replace("PYTHONUNBUFFERED=1 ", "CUDA_VISIBLE_DEVICES=0,1 LD_PRELOAD=$HOME/code/x.so "))
    assert "Ray gives this task" in errs[("command", "CUDA_VISIBLE_DEVICES")]
    assert "not allowed" in errs[("command", "LD_PRELOAD")]
    errs = errors(ADV.replace("+ray_kwargs.ray_init.address=auto",
                              "'+x=..' 'trainer.default_local_dir=$HOME/${x}/bob/ck'"))
    assert "cannot resolve the config" in errs[("command: trainer.default_local_dir", "trainer.default_local_dir")]
    ok = ADV.replace("+ray_kwargs.ray_init.address=auto", "trainer.experiment_name=e1 '+argus_note=${trainer.experiment_name}'")
    r = submit(alice, ok)
    assert r.status_code == 201, r.text


def test_submit_authenticates_before_it_reads_the_spec(live):
    """Authentication runs in the submit's own worker job (one thread hop): it still answers first."""
    alice = live.new_user("alice")
    bad_utf8 = b"kind: advanced\nname: \xff\xfe\n"
    with live.client() as anon:  # no credentials at all: 401 before the body is read
        r = anon.post("/api/v2/tasks", content=bad_utf8, headers={"Content-Type": "application/yaml"})
        assert r.status_code == 401 and r.json()["detail"]["code"] == "unauthorized"
    with live.client("argus_not-a-token") as forged:
        for path in ("/api/v2/tasks", "/api/v2/tasks?dry_run=true"):
            r = forged.post(path, content=bad_utf8, headers={"Content-Type": "application/yaml",
                                                             "Idempotency-Key": "k1"})
            assert r.status_code == 401, (path, r.text)
        r = forged.post("/api/v2/tasks", content=ADV.encode(), headers={"Content-Type": "application/yaml"})
        assert r.status_code == 401
    r = alice.post("/api/v2/tasks", content=bad_utf8, headers={"Content-Type": "application/yaml"})
    assert r.status_code == 400 and "UTF-8" in r.text
    assert alice.get("/api/v2/tasks").json()["total"] == 0
    with live.admin() as admin:  # a disabled user's token stops at once, also for submit
        assert admin.post("/api/v2/users/alice/disable").status_code == 200
    r = submit(alice, ADV)
    assert r.status_code == 401 and r.json()["detail"]["code"] == "user_disabled"
