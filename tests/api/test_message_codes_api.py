"""A queued task's pending reason and a failed task's hint come with a stable code and parameters (issue 37)."""

from __future__ import annotations

from sqlalchemy import update

from argus.core.failures import FailureKind, hint_for
from argus.core.messages import msg, part
from argus.db.models import TaskModel
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
        # a specific hint (not the kind's generic one) stays English, with no code
        store(srv, failed, failure_kind="missing_file", failure_hint="upload /data/x.parquet to your home")
        f = alice.get(f"/api/v2/tasks/{failed}").json()
        assert (f["failure_hint_code"], f["failure_hint_params"]) == (None, None)
