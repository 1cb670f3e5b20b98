"""The scheduler's look at running sweeps (issue 38): early stops, budgets and ends (services/sweeps.tick).

Runs in the scheduler's thread between the monitor (which has just read the trials' progress) and the
submit loop (which then starts the trials ``max_concurrent`` lets through). A trial it stops while
running goes to CANCELING and the cancel loop stops its Ray job on the next pass.
"""

from __future__ import annotations

from argus.core.paths import DataLayout
from argus.scheduler.common import LoopContext
from argus.services import sweeps


class WatchSweeps:
    def __init__(self, ctx: LoopContext) -> None:
        self.ctx = ctx
        self.layout = DataLayout.at(str(ctx.settings.root))
        self.stopped = 0  # trials stopped so far (early stops and budgets)

    def run_once(self) -> int:
        with self.ctx.db.session() as s:
            n = sweeps.tick(s, self.layout, self.ctx.now())
        self.stopped += n
        return n
