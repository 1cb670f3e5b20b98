"""The scheduler's look at tasks that evaluate every checkpoint (issue 38): queue an evaluation of each newly
complete step (services/evaluate_every.tick), as the task's owner, admitted with the server's policy and checks.

Runs after the pipelines' look and before the submit loop, so an evaluation queued here is planned in the same
pass. A bare scheduler (no server to admit with: ``LoopContext.admission`` unset) queues nothing and settles
nothing: the steps wait for a scheduler that can admit them.
"""

from __future__ import annotations

from argus.scheduler.common import LoopContext
from argus.services import evaluate_every


class WatchEvaluations:
    def __init__(self, ctx: LoopContext) -> None:
        self.ctx = ctx
        self.queued = 0  # evaluations queued so far

    def run_once(self) -> int:
        if self.ctx.admission is None:
            return 0
        with self.ctx.db.session() as s:
            n = evaluate_every.tick(s, self.ctx.layout, self.ctx.admission(), self.ctx.now())
        self.queued += n
        return n
