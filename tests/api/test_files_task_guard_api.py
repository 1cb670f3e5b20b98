"""A live task's folder and log survive the files API (issue 37): delete, rename, overwrite → 409 naming the task.

No Ray here (``live``): a submitted task stays QUEUED, which is live; its folder and log are written as the
driver writes them. Once the task is over the same requests succeed. SFTP calls the same service methods
(``sftp/handler.py``: remove, rmdir, rename → ``UserFiles.remove/move``).
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers import submit_spec

SPEC = ("kind: advanced\nworkload: job\nname: guarded\nnnodes: 1\nn_gpus_per_node: 0\n"
        "command: python3 -m argus.jobs.sleep 600\n")


def _entries(c, path: str) -> dict[str, dict]:
    r = c.get("/api/v2/files", params={"path": path})
    assert r.status_code == 200, r.text
    return {e["name"]: e for e in r.json()["entries"]}


def _refused(r, field: str, value: str, tid: str, status: str) -> None:
    assert r.status_code == 409, r.text
    detail = r.json()["detail"]
    assert detail["code"] == "task_active", detail
    assert detail["errors"] == [{"field": field, "value": value,
                                 "message": f"task {tid} is {status}; cancel it first or wait until it ends"}]
    assert tid in detail["message"] and status in detail["message"]


def test_a_live_tasks_folder_and_log_cannot_be_deleted_renamed_or_overwritten(live) -> None:
    alice = live.new_user("alice")
    tid = submit_spec(alice, SPEC)
    done = submit_spec(alice, SPEC.replace("guarded", "over"))
    assert alice.post(f"/api/v2/tasks/{done}/cancel").json()["status"] == "CANCELED"
    home = Path(live.ctx.settings.root) / "users" / "alice"
    for t in (tid, done):
        (home / "jobs" / t / "logs").mkdir(parents=True)
        (home / "jobs" / t / "logs" / "attempt-1.log").write_text("step:1 - loss:1.0\n")
        (home / "jobs" / t / "outputs").mkdir()
    log = f"/jobs/{tid}/logs/attempt-1.log"

    # the listings say what is protected, and by which task
    assert _entries(alice, "/")["jobs"]["protected"] == {"task": tid, "status": "QUEUED"}
    assert _entries(alice, "/")["code"]["protected"] is None
    jobs = _entries(alice, "/jobs")
    assert jobs[tid]["protected"] == {"task": tid, "status": "QUEUED"} and jobs[done]["protected"] is None
    inside = _entries(alice, f"/jobs/{tid}")
    assert inside["logs"]["protected"] == {"task": tid, "status": "QUEUED"} and inside["outputs"]["protected"] is None
    assert _entries(alice, f"/jobs/{done}")["logs"]["protected"] is None

    # every way of losing the log is a 409 with field, value and fix
    for path in (log, f"/jobs/{tid}/logs", f"/jobs/{tid}", "/jobs"):
        _refused(alice.delete("/api/v2/files", params={"path": path, "recursive": True}), "path", path, tid, "QUEUED")
    _refused(alice.post("/api/v2/files/move", json={"src": f"/jobs/{tid}", "dst": "/elsewhere"}),
             "src", f"/jobs/{tid}", tid, "QUEUED")
    _refused(alice.post("/api/v2/files/move", json={"src": "/jobs", "dst": "/old-jobs"}), "src", "/jobs", tid, "QUEUED")
    _refused(alice.post("/api/v2/files/move", json={"src": log, "dst": "/code/x.log"}), "src", log, tid, "QUEUED")
    assert alice.put("/api/v2/files/content", params={"path": "/code/y.log"}, content=b"y").status_code == 201
    _refused(alice.post("/api/v2/files/move", json={"src": "/code/y.log", "dst": log, "overwrite": True}),
             "dst", log, tid, "QUEUED")
    _refused(alice.put("/api/v2/files/content", params={"path": log}, content=b"gone"), "path", log, tid, "QUEUED")
    assert (home / "jobs" / tid / "logs" / "attempt-1.log").read_text() == "step:1 - loss:1.0\n"

    # the rest of its folder is still the owner's, and an ended task's folder is free
    assert alice.delete("/api/v2/files", params={"path": f"/jobs/{tid}/outputs"}).status_code == 204
    assert alice.delete("/api/v2/files", params={"path": f"/jobs/{done}/logs", "recursive": True}).status_code == 204
    r = alice.post("/api/v2/files/move", json={"src": f"/jobs/{done}", "dst": f"/jobs/{done}-kept"})
    assert r.status_code == 200, r.text

    # a link that leads into the folder is no way around it; the link itself may go
    (home / "code" / "to-jobs").symlink_to(home / "jobs")
    _refused(alice.delete("/api/v2/files", params={"path": f"/code/to-jobs/{tid}/logs", "recursive": True}),
             "path", f"/code/to-jobs/{tid}/logs", tid, "QUEUED")
    assert alice.delete("/api/v2/files", params={"path": "/code/to-jobs"}).status_code == 204

    # once it is over, the folder is the owner's again
    assert alice.post(f"/api/v2/tasks/{tid}/cancel").json()["status"] == "CANCELED"
    assert _entries(alice, "/")["jobs"]["protected"] is None
    assert _entries(alice, f"/jobs/{tid}")["logs"]["protected"] is None
    assert alice.delete("/api/v2/files", params={"path": f"/jobs/{tid}", "recursive": True}).status_code == 204
    assert not (home / "jobs" / tid).exists()


def test_another_users_live_task_does_not_protect_mine(live) -> None:
    alice, bob = live.new_user("alice"), live.new_user("bob")
    tid = submit_spec(alice, SPEC)
    home = Path(live.ctx.settings.root) / "users" / "bob"
    (home / "jobs" / tid / "logs").mkdir(parents=True)  # a folder of the same name in bob's home
    assert _entries(bob, "/jobs")[tid]["protected"] is None
    assert bob.delete("/api/v2/files", params={"path": f"/jobs/{tid}", "recursive": True}).status_code == 204
