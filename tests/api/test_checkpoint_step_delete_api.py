"""DELETE /api/v2/tasks/{id}/checkpoints?step=N (issue 25: the task page's per-step Delete) through real HTTP."""

from __future__ import annotations

from tests.api.test_retention_api import _age, _job
from tests.api.test_tasks_api import ADV, submit

SPEC = ADV.replace("+ray_kwargs", "trainer.default_local_dir=checkpoints +ray_kwargs")


def _task_with_steps(live, client, user, steps=(2, 4, 6), latest=6):
    r = submit(client, SPEC)
    assert r.status_code == 201, r.text
    tid = r.json()["task_id"]
    _age(live, tid, "SUCCEEDED", 1)
    folder = _job(live, user, tid) / "checkpoints"
    for n in steps:
        (folder / f"global_step_{n}" / "actor").mkdir(parents=True)
        (folder / f"global_step_{n}" / "actor" / "model.pt").write_bytes(b"\0" * 100)
    (folder / "latest_checkpointed_iteration.txt").write_text(f"{latest}\n")
    return tid, folder


def test_one_step_goes_the_others_and_the_latest_stay(live):
    alice = live.new_user("alice")
    tid, folder = _task_with_steps(live, alice, "alice")
    r = alice.delete(f"/api/v2/tasks/{tid}/checkpoints", params={"step": 4})
    assert r.status_code == 200, r.text
    assert r.json()["removed"] == f"$HOME/jobs/{tid}/checkpoints/global_step_4"
    assert not (folder / "global_step_4").exists()
    assert (folder / "global_step_2").is_dir() and (folder / "global_step_6").is_dir()
    steps = [s["step"] for s in alice.get(f"/api/v2/tasks/{tid}/checkpoints").json()["steps"]]
    assert steps == [2, 6]

    r = alice.delete(f"/api/v2/tasks/{tid}/checkpoints", params={"step": 4})  # already gone
    assert r.status_code == 404 and r.json()["detail"]["code"] == "checkpoint_not_found"
    assert "step 4" in r.json()["detail"]["message"] and "2, 6" in r.json()["detail"]["message"]

    r = alice.delete(f"/api/v2/tasks/{tid}/checkpoints", params={"step": 6})  # the tracker names it
    assert r.status_code == 409 and r.json()["detail"]["code"] == "latest_checkpoint"
    assert "delete all checkpoints" in r.json()["detail"]["message"]
    assert (folder / "global_step_6").is_dir()

    for bad in ("-1", "two", "1e99"):
        r = alice.delete(f"/api/v2/tasks/{tid}/checkpoints", params={"step": bad})
        assert r.status_code == 400 and "step" in r.text, (bad, r.text)


def test_step_delete_refused_while_active_and_for_others(live):
    alice, bob = live.new_user("alice"), live.new_user("bob")
    tid, folder = _task_with_steps(live, alice, "alice")
    assert bob.delete(f"/api/v2/tasks/{tid}/checkpoints", params={"step": 2}).status_code == 404
    active = submit(alice, ADV).json()["task_id"]  # QUEUED
    (_job(live, "alice", active) / "checkpoints" / "global_step_1").mkdir(parents=True)
    r = alice.delete(f"/api/v2/tasks/{active}/checkpoints", params={"step": 1})
    assert r.status_code == 409 and r.json()["detail"]["code"] == "task_active"
    assert (_job(live, "alice", active) / "checkpoints" / "global_step_1").is_dir()
    (folder / "global_step_2").rename(folder / "elsewhere")
    (folder / "global_step_2").symlink_to(folder / "elsewhere")  # a link in a step's place: never followed
    r = alice.delete(f"/api/v2/tasks/{tid}/checkpoints", params={"step": 2})
    assert r.status_code in (400, 404), r.text  # not listed, or listed and refused: never followed
    assert (folder / "elsewhere" / "actor" / "model.pt").exists()
