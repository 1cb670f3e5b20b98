"""Fair share on a real Ray cluster (issue 11): with many users queued in blocks, every user's first task
starts before any user's third."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from argus.db.models import TaskEventModel
from tests.e2e.stack import Stack, spec, submit
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e


def test_every_users_first_start_before_anyones_third(stack: Stack) -> None:
    users = [f"fair{u}" for u in range(6)]
    owner: dict[str, str] = {}
    with stack.manual() as runner:
        saved = runner.ctx.settings
        runner.ctx.settings = saved.model_copy(update={"max_running_tasks": 3})  # 3 slots for 18 tasks
        try:
            for user in users:  # in blocks: fair0's three tasks are the oldest
                c = stack.user(user)
                for _ in range(3):
                    owner[submit(c, spec("python3 -m argus.jobs.sleep 0 --lines 1"))] = user
            ended: set[str] = set()

            def all_ended() -> bool:  # each look runs one scheduler pass first
                runner.run_pass()
                ended.clear()
                with stack.server.ctx.db.session() as s:
                    ended.update(s.scalars(select(TaskEventModel.task_id).where(
                        TaskEventModel.task_id.in_(owner), TaskEventModel.to_status.in_(
                            ("SUCCEEDED", "FAILED", "CANCELED")))).all())
                return len(ended) == len(owner)

            wait_until(all_ended, 240, every=0.2, what=lambda: f"{len(ended)}/{len(owner)} ended")
        finally:
            runner.ctx.settings = saved
    with stack.server.ctx.db.session() as s:
        events = s.execute(select(TaskEventModel.task_id, TaskEventModel.to_status)
                           .where(TaskEventModel.task_id.in_(owner)).order_by(TaskEventModel.id)).all()
    assert {st for _, st in events} >= {"SUCCEEDED"} and "FAILED" not in {st for _, st in events}, events
    order = [owner[tid] for tid, st in events if st == "SUBMITTED"]
    first = {u: order.index(u) for u in users}
    third = {u: [i for i, o in enumerate(order) if o == u][2] for u in users}
    assert max(first.values()) < min(third.values()), order
