"""A queued task's pending reason and a failed task's hint come with a stable code and parameters (issue 37)."""

from __future__ import annotations

from sqlalchemy import update

from argus.core import messages
from argus.core.failures import HINTS_EN, FailureKind, failure_message, hint_for
from argus.core.messages import msg, part
from argus.db.models import TaskEventModel, TaskModel
from tests.helpers import live_server, submit_spec

SPEC = "kind: advanced\nworkload: job\nname: {name}\nnnodes: 1\nn_gpus_per_node: 4\ncommand: python3 -m argus.jobs.sleep\n"


def store(srv, tid: str, **values) -> None:  # noqa: ANN001, ANN003
    with srv.ctx.db.session() as s:
        s.execute(update(TaskModel).where(TaskModel.id == tid).values(**values))


def test_pending_reason_and_failure_hint_codes(settings) -> None:  # noqa: ANN001
    with live_server(settings) as srv:
        alice = srv.new_user("alice")
        queued = submit_spec(alice, SPEC.format(name="waits"))
        failed = submit_spec(alice, SPEC.format(name="fails"))
        why = msg("queue.gpus_busy", nnodes=1, need=[part("part.gpus", n=4)], free=[part("part.gang", nnodes=1, gpus=2)])
        store(srv, queued, pending_reason=why.text, pending_reason_code=why.code, pending_reason_params=why.params)
        hint = f"on rank 3: {hint_for(FailureKind.GPU_OOM)}"
        store(srv, failed, status="FAILED", pending_reason=None, failure_kind="gpu_oom", failure_hint=hint,
              status_message="exit code 1: torch.OutOfMemoryError: CUDA out of memory")

        one = alice.get(f"/api/v2/tasks/{queued}").json()
        assert one["pending_reason"] == "needs 1 node × 4 GPUs; free: 1 node × 2 GPUs"  # the text as before
        assert (one["pending_reason_code"], one["pending_reason_params"]) == ("queue.gpus_busy", why.params)
        rows = {t["task_id"]: t for t in alice.get("/api/v2/tasks").json()["items"]}
        assert (rows[queued]["pending_reason_code"], rows[queued]["pending_reason_params"]) == (why.code, why.params)
        assert rows[failed]["pending_reason_code"] is None

        f = alice.get(f"/api/v2/tasks/{failed}").json()
        assert (f["failure_hint"], f["failure_hint_code"], f["failure_hint_params"]) == (
            hint, "failure.gpu_oom", {"where": "on rank 3: "})

        # another writer changed the text only (a requeue after a stall): the stale code is not shown
        store(srv, queued, pending_reason="requeued after a stall")
        one = alice.get(f"/api/v2/tasks/{queued}").json()
        assert (one["pending_reason"], one["pending_reason_code"], one["pending_reason_params"]) == (
            "requeued after a stall", None, None)
        # a diagnosis's specific hint: hint.<name> with where and its parameters, the English as stored
        hint = "on WorkerDict pid=72, ip=10.0.0.4: " + HINTS_EN["hint.missing_path"].format(path="/data/x.parquet")
        store(srv, failed, failure_kind="missing_file", failure_hint=hint)
        f = alice.get(f"/api/v2/tasks/{failed}").json()
        assert (f["failure_hint"], f["failure_hint_code"], f["failure_hint_params"]) == (
            hint, "hint.missing_path", {"where": "on WorkerDict pid=72, ip=10.0.0.4: ", "path": "/data/x.parquet"})
        # a hint no template makes stays English, with no code
        store(srv, failed, failure_kind="missing_file", failure_hint="upload /data/x.parquet to your home")
        f = alice.get(f"/api/v2/tasks/{failed}").json()
        assert (f["failure_hint_code"], f["failure_hint_params"]) == (None, None)


def test_status_message_codes_canceled_by_and_exit_code(settings) -> None:  # noqa: ANN001
    """A task's status message and its timeline entry come with status.* codes beside the unchanged English; an
    old row (no code stored) and a text another writer changed show none."""
    with live_server(settings) as srv:
        alice = srv.new_user("alice")
        tid = submit_spec(alice, SPEC.format(name="canceled"))
        assert alice.post(f"/api/v2/tasks/{tid}/cancel").status_code == 200
        one = alice.get(f"/api/v2/tasks/{tid}").json()
        assert (one["status"], one["status_message"]) == ("CANCELED", "canceled by alice")
        assert (one["status_message_code"], one["status_message_params"]) == ("status.canceled_by", {"user": "alice"})
        row = next(t for t in alice.get("/api/v2/tasks").json()["items"] if t["task_id"] == tid)
        assert (row["status_message"], row["status_message_code"], row["status_message_params"]) == (
            "canceled by alice", "status.canceled_by", {"user": "alice"})
        end = alice.get(f"/api/v2/tasks/{tid}/events").json()[-1]
        assert (end["to_status"], end["message"], end["message_code"], end["message_params"]) == (
            "CANCELED", "canceled by alice", "status.canceled_by", {"user": "alice"})

        failed = submit_spec(alice, SPEC.format(name="fails"))
        said = messages.exit_message(1, "KeyError: 'x'")
        assert said.text == failure_message(1, "KeyError: 'x'") == "exit code 1: KeyError: 'x'"
        store(srv, failed, status="FAILED", status_message=said.text, status_message_code=said.code,
              status_message_params=said.params)
        f = alice.get(f"/api/v2/tasks/{failed}").json()
        assert (f["status_message"], f["status_message_code"], f["status_message_params"]) == (
            "exit code 1: KeyError: 'x'", "status.exit_code_cause", {"exit_code": 1, "cause": "KeyError: 'x'"})

        store(srv, failed, status_message="exit code 1: something else")  # the text changed, not the code
        f = alice.get(f"/api/v2/tasks/{failed}").json()
        assert (f["status_message"], f["status_message_code"], f["status_message_params"]) == (
            "exit code 1: something else", None, None)
        store(srv, tid, status_message_code=None, status_message_params=None)  # a row from before the codes
        with srv.ctx.db.session() as s:
            s.execute(update(TaskEventModel).where(TaskEventModel.task_id == tid)
                      .values(message_code=None, message_params=None))
        one = alice.get(f"/api/v2/tasks/{tid}").json()
        assert (one["status_message"], one["status_message_code"]) == ("canceled by alice", None)
        assert alice.get(f"/api/v2/tasks/{tid}/events").json()[-1]["message_code"] is None
