"""The scheduler's look at running pipelines (issue 38): settle started steps, start ready ones
(services/pipelines.tick), as the pipeline's owner, admitted with the server's policy and checks.

Runs after the sweeps' look and before the submit loop, so a step queued here starts in the same pass.
"""

from __future__ import annotations

from argus.scheduler.common import LoopContext
from argus.services import pipelines


class WatchPipelines:
    def __init__(self, ctx: LoopContext) -> None:
        self.ctx = ctx
        self.started = 0

    def run_once(self) -> int:
        with self.ctx.db.session() as s:
            admission = self.ctx.admission() if self.ctx.admission is not None else None
            n = pipelines.tick(s, self.ctx.layout, admission, self.ctx.now())
        self.started += n
        return n
