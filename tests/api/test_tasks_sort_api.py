"""GET /api/v2/tasks?sort=…: every column both ways against a real SQLite file, a bad column named, and the
GPU-hours and nodes each row carries (issue 25: lists that scale)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from argus.db.models import TaskAttemptModel, TaskModel, UserModel
from argus.services.task_list import SORT_COLUMNS

NOW = datetime.now(UTC).replace(microsecond=0)


def put_task(live, user: str, tid: str, *, name: str | None, status: str, workload: str = "grpo", gpus: int = 1,
             nnodes: int = 1, created: datetime, runs: list[tuple[datetime, datetime | None]] = (),
             reason: str | None = None, host: str = "gpu-node-7", message: str | None = None) -> None:
    with live.ctx.db.session() as s:
        uid = s.scalar(select(UserModel.id).where(UserModel.name == user))
        started = runs[-1][0] if runs else None
        finished = runs[-1][1] if runs else None
        s.add(TaskModel(id=tid, user_id=uid, name=name, kind="advanced", workload=workload, status=status, priority=0,
                        nnodes=nnodes, n_gpus_per_node=gpus, spec_raw="", spec_resolved={}, command_raw="x",
                        command_expanded="x", argv=["x"], warnings=[], attempts=len(runs), created_at=created,
                        updated_at=created, started_at=started, finished_at=finished, pending_reason=reason,
                        status_message=message))
        s.flush()
        for n, (a, b) in enumerate(runs, 1):
            s.add(TaskAttemptModel(task_id=tid, attempt=n, submission_id=f"{tid}-a{n}", status=status, created_at=a,
                                   started_at=a, finished_at=b, hostname=host))


@pytest.fixture
def five(live):
    """Five tasks whose every sortable column differs (so each order is one answer)."""
    alice, bob = live.new_user("alice"), live.new_user("bob")
    h = timedelta(hours=1)
    now = datetime.now(UTC).replace(microsecond=0)  # not at import: a long test session would add GPU-hours
    put_task(live, "alice", "grpo-00001", name="Delta", status="SUCCEEDED", gpus=2, created=now - 5 * h,
             runs=[(now - 5 * h, now - 4 * h), (now - 4 * h, now - 2 * h)])          # 2 GPUs × 3 h = 6
    put_task(live, "alice", "ppo-00002", name="alpha", status="FAILED", workload="ppo", gpus=4, created=now - 4 * h,
             runs=[(now - 4 * h, now - 3.5 * h)])                                      # 4 × 0.5 h = 2
    put_task(live, "bob", "sft-00003", name="charlie", status="QUEUED", workload="sft", gpus=8, created=now - 3 * h,
             reason="waiting for 8 GPUs")                                              # never ran: 0
    put_task(live, "bob", "job-00004", name=None, status="RUNNING", workload="job", gpus=0, created=now - 2 * h,
             runs=[(now - 1.5 * h, None)], message="no progress for 31 min (last step 7)")  # CPU job: 0
    put_task(live, "alice", "ppo-00005", name="bravo", status="RUNNING", workload="ppo", gpus=1, nnodes=3,
             created=now - 1 * h, runs=[(now - 0.75 * h, None)],
             message="submitted Ray job raysubmit_ppo-00005-1")                         # 3 × ~0.75 h = ~2.25
    yield alice, bob
    alice.close()
    bob.close()


EXPECTED = {  # ascending; ties broken by id
    "id": ["grpo-00001", "job-00004", "ppo-00002", "ppo-00005", "sft-00003"],
    "name": ["job-00004", "ppo-00002", "ppo-00005", "sft-00003", "grpo-00001"],  # no name first, any case
    "user": ["grpo-00001", "ppo-00002", "ppo-00005", "job-00004", "sft-00003"],
    "workload": ["grpo-00001", "job-00004", "ppo-00002", "ppo-00005", "sft-00003"],
    "status": ["sft-00003", "job-00004", "ppo-00005", "grpo-00001", "ppo-00002"],  # QUEUED … SUCCEEDED, FAILED
    "gpus": ["job-00004", "grpo-00001", "ppo-00005", "ppo-00002", "sft-00003"],
    "created": ["grpo-00001", "ppo-00002", "sft-00003", "job-00004", "ppo-00005"],
    "duration": ["sft-00003", "ppo-00002", "ppo-00005", "job-00004", "grpo-00001"],
    "gpu_hours": ["job-00004", "sft-00003", "ppo-00002", "ppo-00005", "grpo-00001"],
    "reason": ["grpo-00001", "ppo-00002", "job-00004", "ppo-00005", "sft-00003"],  # none, none, "no…", "sub…", "wai…"
}


def test_every_column_sorts_both_ways(live, five):
    assert set(EXPECTED) == set(SORT_COLUMNS)  # a new column gets a test
    with live.admin() as a:
        for col, want in EXPECTED.items():
            r = a.get("/api/v2/tasks", params={"sort": col})
            assert r.status_code == 200, r.text
            assert [t["task_id"] for t in r.json()["items"]] == want, col
            down = [t["task_id"] for t in a.get("/api/v2/tasks", params={"sort": f"-{col}"}).json()["items"]]
            assert down == want[::-1], f"-{col}"  # ties (ids break them) reverse too
        default = [t["task_id"] for t in a.get("/api/v2/tasks").json()["items"]]
        assert default == EXPECTED["created"][::-1]  # newest first, as before
        # a page of a sorted list continues where the previous one ended
        p1 = a.get("/api/v2/tasks", params={"sort": "gpu_hours", "limit": 2}).json()["items"]
        p2 = a.get("/api/v2/tasks", params={"sort": "gpu_hours", "limit": 2, "offset": 2}).json()["items"]
        assert [t["task_id"] for t in p1 + p2] == EXPECTED["gpu_hours"][:4]


def test_a_user_sorts_only_their_own(live, five):
    alice, _ = five
    r = alice.get("/api/v2/tasks", params={"sort": "-gpu_hours", "status": "SUCCEEDED,FAILED"})
    assert [t["task_id"] for t in r.json()["items"]] == ["grpo-00001", "ppo-00002"]


def test_bad_sort_is_a_400_naming_field_value_and_choices(live, five):
    alice, _ = five
    for bad in ["size", "-", "--name", "name;drop table tasks", "Name", " "]:
        r = alice.get("/api/v2/tasks", params={"sort": bad})
        assert r.status_code == 400, (bad, r.text)
        err = r.json()["detail"]["errors"][0]
        assert err["field"] == "sort" and err["value"] == bad
        assert "gpu_hours" in err["message"] and "descending" in err["message"]
    r = alice.get("/api/v2/tasks", params={"sort": "x" * 33})
    assert r.status_code == 400 and "sort" in r.text  # too long: refused by the query's own bound


def test_gpu_hours_and_nodes_on_list_and_task(live, five):
    alice, bob = five
    rows = {t["task_id"]: t for t in alice.get("/api/v2/tasks").json()["items"]}
    assert rows["grpo-00001"]["gpu_hours"] == pytest.approx(6.0)
    assert rows["ppo-00002"]["gpu_hours"] == pytest.approx(2.0)
    assert rows["ppo-00005"]["gpu_hours"] == pytest.approx(2.25, abs=0.01)  # up to now, all three nodes
    assert rows["ppo-00005"]["nodes"] == ["gpu-node-7"] and rows["grpo-00001"]["nodes"] == []
    one = alice.get("/api/v2/tasks/ppo-00005").json()
    assert one["gpu_hours"] == pytest.approx(2.25, abs=0.01) and one["nodes"] == ["gpu-node-7"]
    # a running task's message in words: the Ray submission plumbing dropped, a stall kept
    assert rows["ppo-00005"]["status_note"] is None and one["status_note"] is None
    assert one["status_message"] == "submitted Ray job raysubmit_ppo-00005-1"  # the record itself is unchanged
    theirs = {t["task_id"]: t for t in bob.get("/api/v2/tasks").json()["items"]}
    assert theirs["job-00004"]["status_note"] == "no progress for 31 min (last step 7)"
    assert theirs["job-00004"]["gpu_hours"] == 0 and theirs["sft-00003"]["gpu_hours"] == 0
