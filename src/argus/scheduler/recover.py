"""Startup recovery: reconcile every non-terminal task with what Ray actually has.

The database is the truth about intent, Ray about execution. After a crash or restart:

* a QUEUED task with an *unconfirmed* attempt (id stored, then the server died or the call
  timed out) is adopted if Ray knows the id — it moves to SUBMITTED and the monitor takes
  over — and otherwise stays queued and is later submitted with the SAME id (Ray never saw
  it, so that cannot create a second job);
* SUBMITTED/RUNNING tasks are the monitor's normal business (a SUBMITTED id unknown to Ray
  is resubmitted with the same id; a RUNNING one Ray forgot is RAY_JOB_LOST);
* CANCELING tasks are the cancel loop's business (stop is idempotent).

So recovery is not a special mode: it is one pass of the same idempotent steps, run
before the first submission so nothing is scheduled against a stale ledger.
"""

from __future__ import annotations

from argus.scheduler.common import LoopContext, log
from argus.scheduler.submit import confirm_unconfirmed


class RecoverOnStart:
    """The scheduler thread's first pass: cancel, monitor and confirm before any new submission."""

    def __init__(self, ctx: LoopContext, *, cancel: object, monitor: object) -> None:
        self.ctx = ctx
        self.cancel = cancel
        self.monitor = monitor

    def run_once(self) -> dict[str, int]:
        """Raises ClusterUnavailable until Ray answers; nothing may be submitted before that."""
        known = len(self.ctx.jobs.list())
        adopted = confirm_unconfirmed(self.ctx)
        canceled = self.cancel.run_once()  # type: ignore[attr-defined]
        changed = self.monitor.run_once()  # type: ignore[attr-defined]
        done = [f"{n} {what}" for n, what in ((adopted, "Ray job(s) adopted"), (canceled, "cancel(s) settled"),
                                              (changed, "task(s) updated")) if n]
        if done:  # only what happened: "adopted 0" in a log reads as if something had been
            log.info("recovery: Ray has %d job(s); %s", known, ", ".join(done))
        return {"adopted": adopted, "canceled": canceled, "updated": changed}
