"""A retry by Argus itself — after a lost node, a job Ray lost (its head restarted under a running task), or a
stall with ``on_stall: requeue`` — continues from the task's latest complete checkpoint, not from step 0.

Called by the submit loop while it stores attempt ``n`` (n > 1) of a task whose previous attempt
ended ``NODE_LOST``, ``RAY_JOB_LOST`` or ``STALLED`` (every reason it retries, scheduler/monitor.py): if the task's checkpoint folder (``trainer.default_local_dir``) holds a
complete ``global_step_N`` (verl's tracker has reached it; ``core/checkpoints.py``), the task's
argv gets ``trainer.resume_mode=resume_path trainer.resume_from_path=<…>/global_step_N`` — replacing
what an earlier retry added — in the same transaction as the attempt row, so a resubmission of
that attempt id runs the same command. The timeline says which step the attempt resumes from,
or that it starts over (no complete checkpoint, or the user set ``trainer.resume_mode=disable``).
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from argus.core import checkpoints as ck
from argus.core.builders import display_command
from argus.core.messages import msg, part
from argus.core.states import TaskStatus, TerminationReason
from argus.db.models import TaskEventModel, TaskModel
from argus.scheduler.common import ACTOR, LoopContext
from argus.services.checkpoints import task_listing

# The reasons a task is run again by Argus itself (not the user), and how the timeline says why.
AGAIN = {TerminationReason.NODE_LOST.value: "part.after_node_lost",
         TerminationReason.RAY_JOB_LOST.value: "part.after_ray_lost",
         TerminationReason.STALLED.value: "part.after_stall"}


def resume_on_retry(ctx: LoopContext, s: Session, task: TaskModel, user: str, attempt: int) -> None:
    """Point attempt ``attempt``'s argv at the latest complete checkpoint when Argus retries the task."""
    if attempt <= 1 or task.termination_reason not in AGAIN:
        return
    after = part(AGAIN[task.termination_reason])
    folder = ctx.layout.to_virtual(str(ck.checkpoint_folder(list(task.argv), ctx.layout.job_dir(user, task.id))), user)
    if ck.resume_disabled(list(task.argv)):
        message = msg("status.resume_disabled", attempt=attempt)
    else:
        step = task_listing(ctx.layout, user, task.id, list(task.argv), task.status).latest_complete()
        if step is None:
            message = msg("status.resume_no_checkpoint", attempt=attempt, folder=folder)
        else:
            argv = ck.with_resume(list(task.argv), step.path)
            task.argv = argv
            task.command_expanded = display_command(argv)
            message = msg("status.resume_from", attempt=attempt, checkpoint=f"{ck.STEP_PREFIX}{step.step}",
                          path=ctx.layout.to_virtual(step.path, user), after=after)
    s.add(TaskEventModel(task_id=task.id, at=ctx.now(), from_status=TaskStatus.QUEUED.value,
                         to_status=TaskStatus.QUEUED.value, reason=None, message=message.text,
                         message_code=message.code, message_params=message.params, actor=ACTOR))
