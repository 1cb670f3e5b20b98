"""evaluate_checkpoints (issue 38) through real HTTP against a real SQLite file, no Ray: the test writes the run's
checkpoint folders and plays its status; the scheduler's look is WatchEvaluations.run_once, as in a pass."""

from datetime import UTC, datetime
from pathlib import Path

import yaml
from sqlalchemy import select

from argus.core.admission import CheckOutcome
from argus.db.models import TaskEventModel, TaskModel
from argus.errors import FieldError
from argus.scheduler.common import LoopContext
from argus.scheduler.evaluations import WatchEvaluations
from argus.services import evaluate_every
from argus.services.pipelines import Admission
from tests.helpers import post_spec, submit_spec
from tests.scheduler.fakes import FakeRay
from tests.services.test_checkpoints import write_step

PPO = {
    "kind": "advanced", "workload": "ppo", "name": "run", "nnodes": 1, "n_gpus_per_node": 2,
    "command": "python3 -m verl.trainer.main_ppo data.train_files=$HOME/datasets/gsm8k/train.parquet "
               "data.val_files=$HOME/datasets/gsm8k/test.parquet trainer.nnodes=1 trainer.n_gpus_per_node=2 "
               "trainer.default_local_dir=$HOME/runs/ppo trainer.save_freq=2",
    "evaluate_checkpoints": True,
}


def _dump(doc: dict) -> str:
    return yaml.safe_dump(doc, sort_keys=False)


def _files_exist(live):
    """A stand-in for the server's file checks (verl validation is off in these tests): a data.val_files that is
    not on disk is refused, as verl's dataset check refuses it."""
    root = Path(live.ctx.settings.root)

    def check(admitted, user, template) -> CheckOutcome:
        val = admitted.overrides.get("data.val_files")
        if val and not Path(val).exists():
            return CheckOutcome(errors=[FieldError("command: data.val_files", val.replace(str(root / "users" / user),
                                                                                          "$HOME"),
                                                   "no such file; upload it first")])
        return CheckOutcome()
    return check


def _watch(live, *, admits: bool = True, checks: tuple = ()) -> WatchEvaluations:
    """The scheduler's look as a fresh scheduler makes it (nothing kept between instances but the database)."""
    admission = (lambda: Admission(live.ctx.policy, checks, live.ctx.settings.max_spec_bytes)) if admits else None
    ray = FakeRay()
    return WatchEvaluations(LoopContext(db=live.ctx.db, settings=live.ctx.settings, jobs=ray, inventory=ray,
                                        admission=admission))


def _set_status(live, tid: str, status: str) -> None:
    with live.ctx.db.session() as s:
        s.get(TaskModel, tid).status = status


def _row(live, tid: str) -> TaskModel:
    with live.ctx.db.session() as s:
        return s.get(TaskModel, tid)


def _evaluations(live, tid: str) -> list[tuple[int, str]]:
    with live.ctx.db.session() as s:
        return [(r.evaluates_step, r.id) for r in s.scalars(select(TaskModel).where(TaskModel.evaluates_task == tid)
                                                             .order_by(TaskModel.created_at, TaskModel.id))]


def _notes(live, tid: str) -> list[str]:
    with live.ctx.db.session() as s:
        return [e.message for e in s.scalars(select(TaskEventModel).where(TaskEventModel.task_id == tid))
                if e.message and e.message.startswith("evaluate_checkpoints")]


def test_a_bad_option_is_refused_at_submit_with_its_field(live) -> None:
    alice = live.new_user("alice")
    for value, field in ((3, "evaluate_checkpoints"), ({"val_fil": "$HOME/x.parquet"}, "evaluate_checkpoints.val_fil"),
                         ({"val_file": "/etc/passwd"}, "evaluate_checkpoints.val_file")):
        r = post_spec(alice, _dump({**PPO, "evaluate_checkpoints": value}))
        assert r.status_code == 400, r.text
        assert [e["field"] for e in r.json()["detail"]["errors"]] == [field], r.text
    r = post_spec(alice, _dump({**PPO, "command": PPO["command"].replace("trainer.save_freq=2", "trainer.save_freq=-1")}))
    assert r.status_code == 400 and r.json()["detail"]["errors"][0]["field"] == "command: trainer.save_freq", r.text
    sft = {"workload": "sft", "nnodes": 1, "n_gpus_per_node": 1, "model_id": "Qwen/Qwen2.5-0.5B-Instruct",
           "train_file": "$HOME/datasets/t.parquet", "save_freq": 10, "evaluate_checkpoints": True}
    r = post_spec(alice, _dump(sft))
    assert r.status_code == 400 and r.json()["detail"]["errors"][0]["field"] == "evaluate_checkpoints", r.text
    assert "lm_eval" in r.json()["detail"]["errors"][0]["message"]
    r = post_spec(alice, _dump({**PPO, "command": PPO["command"].replace(" trainer.save_freq=2", "")}))
    assert r.status_code == 201 and any("trainer.save_freq" in w for w in r.json()["warnings"]), r.text
    assert alice.get("/api/v2/tasks").json()["total"] == 1


def test_each_complete_step_is_evaluated_once_then_an_ended_run_is_no_longer_looked_at(live) -> None:
    alice = live.new_user("alice")
    home = Path(live.ctx.settings.root) / "users" / "alice"
    (home / "datasets" / "math").mkdir(parents=True)
    (home / "datasets" / "math" / "test.parquet").write_bytes(b"PAR1")
    tid = submit_spec(alice, _dump({**PPO, "evaluate_checkpoints": {"val_file": "$HOME/datasets/math/test.parquet"}}))
    row = _row(live, tid)
    assert (row.evaluate_checkpoints, row.evaluate_watching, row.evaluated_through) == (
        {"val_file": "$HOME/datasets/math/test.parquet"}, True, None)
    assert alice.get(f"/api/v2/tasks/{tid}").json()["evaluate_checkpoints"] == row.evaluate_checkpoints
    folder = home / "runs" / "ppo"
    checks = (_files_exist(live),)
    write_step(folder, 2)
    assert _watch(live, checks=checks).run_once() == 0  # still QUEUED: not looked at
    _set_status(live, tid, "RUNNING")
    assert _watch(live, admits=False).run_once() == 0  # a bare scheduler admits nothing and settles nothing
    assert _row(live, tid).evaluated_through is None

    assert _watch(live, checks=checks).run_once() == 1
    [(step, first)] = _evaluations(live, tid)
    assert step == 2
    t = alice.get(f"/api/v2/tasks/{first}").json()
    assert (t["evaluates_task"], t["evaluates_step"], t["name"], t["status"]) == (tid, 2, f"eval {tid} step 2", "QUEUED")
    assert t["user"] == "alice"  # the owner's task, in the owner's queue
    cmd = alice.get(f"/api/v2/tasks/{first}/spec").json()["command_raw"]
    assert "data.val_files=$HOME/datasets/math/test.parquet" in cmd and "trainer.val_only=True" in cmd, cmd
    assert not _row(live, first).evaluate_watching  # an evaluation never evaluates in turn
    assert _watch(live, checks=checks).run_once() == 0  # a second pass, and a restarted scheduler: nothing again
    assert _row(live, tid).evaluated_through == 2

    write_step(folder, 4, tracker=False)  # being written: not yet
    assert _watch(live, checks=checks).run_once() == 0
    (folder / "latest_checkpointed_iteration.txt").write_text("4")
    (home / "datasets" / "math" / "test.parquet").unlink()  # its val_file is gone: admission refuses step 4
    assert _watch(live, checks=checks).run_once() == 0
    [note] = _notes(live, tid)
    assert "global_step_4 could not be queued" in note and "no such file" in note, note
    assert _watch(live, checks=checks).run_once() == 0
    assert len(_notes(live, tid)) == 1  # recorded once, not tried each pass
    [event] = [e for e in alice.get(f"/api/v2/tasks/{tid}/events").json()
               if "global_step_4 could not be queued" in (e["message"] or "")]
    assert event["message_code"] in ("status.eval_not_queued", "status.eval_not_queued_details"), event  # issue 37
    assert event["message_params"]["checkpoint"] == "global_step_4"

    (home / "datasets" / "math" / "test.parquet").write_bytes(b"PAR1")
    write_step(folder, 6)
    r = alice.post(f"/api/v2/tasks/{tid}/evaluate", json={"step": 6})  # the user was first: step 6 has its evaluation
    assert r.status_code == 201, r.text
    write_step(folder, 8)
    _set_status(live, tid, "SUCCEEDED")
    assert _watch(live, checks=checks).run_once() == 1  # the ended run's last look: step 8 only
    assert [s for s, _ in _evaluations(live, tid)] == [2, 6, 8]
    row = _row(live, tid)
    assert (row.evaluate_watching, row.evaluated_through) == (False, 8)
    write_step(folder, 10)
    assert _watch(live, checks=checks).run_once() == 0  # no longer looked at
    assert [e["step"] for e in alice.get(f"/api/v2/tasks/{tid}/evaluations").json()] == [2, 6, 8]

    r = alice.post(f"/api/v2/tasks/{tid}/resume", json={"step": 8})  # a resumed run keeps the option ...
    assert r.status_code == 201, r.text
    resumed = _row(live, r.json()["task_id"])
    assert (resumed.evaluate_checkpoints, resumed.evaluate_watching) == (row.evaluate_checkpoints, True)
    assert resumed.evaluated_through == 8  # ... and evaluates its own steps: those after 8 (10 is in the same folder)
    _set_status(live, resumed.id, "RUNNING")
    assert _watch(live, checks=checks).run_once() == 1
    assert [s for s, _ in _evaluations(live, resumed.id)] == [10]


def test_two_looks_that_race_queue_a_step_once(live, monkeypatch) -> None:
    alice = live.new_user("alice")
    tid = submit_spec(alice, _dump(PPO))
    _set_status(live, tid, "RUNNING")
    write_step(Path(live.ctx.settings.root) / "users" / "alice" / "runs" / "ppo", 2)
    admission = Admission(live.ctx.policy, (), live.ctx.settings.max_spec_bytes)
    with live.ctx.db.session() as late:
        [seen] = late.execute(evaluate_every._WATCHED).all()  # one look has read the task and its evaluations ...
        plan = evaluate_every.ee.plan
        monkeypatch.setattr(evaluate_every.ee, "plan", lambda c, latest, through, _e: plan(c, latest, through, set()))
        assert _watch(live).run_once() == 1  # ... another queues step 2 and commits first
        assert evaluate_every.look(late, live.ctx.layout, admission, seen, datetime.now(UTC)) == 0  # the mark moved
    assert [s for s, _ in _evaluations(live, tid)] == [2]


def test_lm_eval_evaluates_any_runs_checkpoints(live) -> None:
    alice = live.new_user("alice")
    lm = {"tasks": ["tiny_arith"], "include_path": "$HOME/code/lm_tasks", "limit": 16}
    job = {"kind": "advanced", "workload": "job", "nnodes": 1, "n_gpus_per_node": 0,
           "command": "python3 -m argus.jobs.steps trainer.default_local_dir=$HOME/runs/ck trainer.save_freq=2",
           "evaluate_checkpoints": {"lm_eval": lm}}
    tid = submit_spec(alice, _dump(job))
    _set_status(live, tid, "RUNNING")
    write_step(Path(live.ctx.settings.root) / "users" / "alice" / "runs" / "ck", 2)
    assert _watch(live).run_once() == 1
    [(step, eid)] = _evaluations(live, tid)
    cmd = alice.get(f"/api/v2/tasks/{eid}/spec").json()["command_raw"]
    assert step == 2 and cmd.startswith("python3 -m argus.jobs.lm_eval --checkpoint '$HOME/runs/ck/global_step_2' "
                                        "--tasks tiny_arith"), cmd
