"""Queue position and estimated start of QUEUED tasks, expected end of RUNNING ones (pure; issue 24).

**Expected end** of a running task: ``trainer.total_training_steps`` from its command (Hydra's last
override wins) and its step rate: ``T = t_last + (total − step) / rate``, ``t_last`` when its latest
step was logged (never before now). The rate is verl's own ``timing_s/step`` averaged over the last
:data:`RECENT_STEPS` steps when the log has it, else the attempt's steps over the time since it
started (which includes start-up, so it errs late). Without ``total_training_steps`` (verl then
derives the steps from epochs × batches, which Argus cannot know before the data loader runs) or
before the first step, the end is unknown. A CANCELING task ends within seconds (now); a task Ray
has not started yet (SUBMITTED) has an unknown end.

**Position** among the tasks that compete for the same resources, in the scheduler's own order
(:func:`argus.core.scheduling.policy.fair_order`: fair share across users, then priority and age):

* a GPU task competes with every GPU task ahead of it that fits the cluster — a gang the cluster
  could hold when empty (GPUs, CPUs and memory). The nodes a task could use are the nodes with at
  least its GPUs per node; those sets are nested (a node that takes 4 GPUs also takes 2), so any two
  GPU tasks that fit somewhere share a node and compete. A task too big for the cluster even when
  empty waits for nodes to join and holds nobody up (the scheduler reserves nothing for it); behind
  it, nobody counts it.
* a CPU job (``n_gpus_per_node: 0``) competes only with the CPU jobs ahead of it that fit the
  cluster (CPU room on the workers).

Other users' tasks count in positions and are never named in anything this module returns.

**Estimated start**: a simulation with the scheduler's own pass (:func:`plan`: order, gang fit of
GPUs, CPUs and memory, per-user and cluster limits, the head-of-line reservation). A pass now; then,
at each running task's expected end in time order, its resources are released and the next pass
runs. A task started by a pass gets that time. A task started in the simulation has an unknown end
itself (its run time is unknown until it logs steps), so it never releases anything; a task that has
not started when no known end is left has an unknown estimate ("it waits on tasks whose end is
unknown"). Users' decayed usage is held at its current value; after the first pass only Argus's own
ledger counts free resources (Ray's report is of now).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from argus.core import checkpoints as ck
from argus.core.messages import Message, msg
from argus.core.scheduling import fit
from argus.core.scheduling.fairshare import Usage
from argus.core.scheduling.policy import HeldTask, Limits, NodeState, QueuedTask, fair_order, plan, slots

TOTAL_STEPS_KEY = "trainer.total_training_steps"
TIMING_KEY = "timing_s/step"  # verl's seconds per step, printed in every step line
RECENT_STEPS = 20
MAX_PASSES = 200  # simulated passes at most; each costs what a scheduler pass does
WORK = 200_000  # queued tasks × passes at most (10 000 queued: 20 passes, about 0.3 s)
GPU, CPU = "GPU", "CPU"


# ------------------------------------------------------------------ a running task's progress


def total_steps(argv: Sequence[str]) -> int | None:
    """``trainer.total_training_steps`` from the command (the last override wins), when a plain positive number."""
    value = ck.last_value(ck.command_words(list(argv)), TOTAL_STEPS_KEY)
    try:
        n = int(str(value).strip()) if value is not None else 0
    except ValueError:
        return None  # null, an interpolation: verl derives it from the data
    return n if n > 0 else None


def start_step(argv: Sequence[str]) -> int:
    """The step an attempt starts after: the checkpoint it resumes from (``…/global_step_N``), else 0."""
    words = ck.command_words(list(argv))
    path = ck.last_value(words, ck.PATH_KEY)
    if not path or ck.last_value(words, ck.MODE_KEY) != "resume_path":
        return 0
    return ck.step_of(path.rstrip("/").rsplit("/", 1)[-1]) or 0


def step_rate(timings: Sequence[float], *, steps_done: int, elapsed_s: float | None) -> float | None:
    """Steps per second: 1 / the mean of the recent ``timing_s/step`` values, else ``steps_done / elapsed_s``."""
    recent = [t for t in list(timings)[-RECENT_STEPS:] if math.isfinite(t) and t > 0]
    if recent:
        return len(recent) / sum(recent)
    if steps_done > 0 and elapsed_s is not None and elapsed_s > 0:
        return steps_done / elapsed_s
    return None


def expected_end(now: datetime, *, step: int | None, total: int | None, rate: float | None,
                 step_at: datetime | None = None) -> datetime | None:
    """When a run at ``step`` of ``total`` going ``rate`` steps/s ends (None: unknown); never before now."""
    if step is None or total is None or rate is None or rate <= 0:
        return None
    left = max(total - step, 0)
    end = (step_at or now) + timedelta(seconds=left / rate)
    return max(end, now)


# ------------------------------------------------------------------ the queue


@dataclass(frozen=True)
class Running:
    """A task that holds resources (SUBMITTED/RUNNING/CANCELING), as the scheduler's ledger has it."""

    task: HeldTask
    end: datetime | None  # expected end; None: unknown


@dataclass(frozen=True)
class Inputs:
    """What the scheduler's next pass would read: the queue, the ledger, the nodes, the limits, fair share."""

    queued: Sequence[QueuedTask]
    held: Sequence[HeldTask]
    nodes: Sequence[NodeState]
    limits: Limits
    usage: Mapping[str, Usage] = field(default_factory=dict)
    cluster_error: str | None = None
    team_usage: Mapping[str, Usage] = field(default_factory=dict)  # fair share between teams (issue 26)


@dataclass(frozen=True)
class QueueEstimate:
    task_id: str
    position: int  # 1-based among the queued tasks it competes with
    ahead: int  # how many of those are ahead of it
    competing: int  # how many queued tasks compete for the same resources, itself included
    resource: str  # "GPU" or "CPU"
    eta: datetime | None  # estimated start; None: unknown
    reason: Message  # how the estimate was made or why it is unknown (names no other task): eta.* codes


class _WhenEmpty:
    """Could the cluster hold a gang when empty — its GPUs, CPUs and memory (the scheduler reserves nodes only
    for such a task)? Per shape; with no view of the cluster (None), every task could."""

    def __init__(self, nodes: Sequence[NodeState] | None) -> None:
        alive = None if nodes is None else [n for n in nodes if n.alive]
        self.totals = None if alive is None else {n.node_id: n.gpus_total for n in alive}
        self.room = fit.Room.of(alive or [], [])
        self._seen: dict[tuple[int, int, float, int], bool] = {}

    def fits(self, t: QueuedTask) -> bool:
        if self.totals is None:
            return True
        shape = (t.nnodes, t.gpus_per_node, t.cpus_per_node, t.memory_per_node)
        if shape not in self._seen:
            gpus = t.gpus_per_node <= 0 or slots(dict(self.totals), t.gpus_per_node) >= t.nnodes
            self._seen[shape] = gpus and self.room.fits_when_empty(t, self.totals)
        return self._seen[shape]


def positions(order: Sequence[QueuedTask], nodes: Sequence[NodeState] | None) -> dict[str, tuple[int, int, int, str]]:
    """``task_id → (position, ahead, competing, "GPU"|"CPU")`` for tasks in the scheduler's ``order``.

    ``nodes`` None: the cluster is unknown, and every task counts as fitting it.
    """
    empty = _WhenEmpty(nodes)
    counts = {GPU: 0, CPU: 0}
    ahead: dict[str, tuple[int, str, bool]] = {}
    for t in order:
        kind = GPU if t.gpus_per_node > 0 else CPU
        blocks = empty.fits(t)
        ahead[t.task_id] = (counts[kind], kind, blocks)
        counts[kind] += blocks
    return {tid: (n + 1, n, counts[kind] + (not blocks), kind) for tid, (n, kind, blocks) in ahead.items()}


def passes_for(queued: int) -> int:
    """How many passes a simulation over ``queued`` tasks may run (at least 2: now and the first end)."""
    return max(2, min(MAX_PASSES, WORK // max(queued, 1)))


def simulate(order: Sequence[QueuedTask], running: Sequence[Running], nodes: Sequence[NodeState], limits: Limits,
             *, usage: Mapping[str, Usage] | None, now: datetime, wanted: Collection[str] | None = None,
             max_passes: int | None = None, team_usage: Mapping[str, Usage] | None = None,
             ) -> tuple[dict[str, datetime], str]:
    """(``task_id → estimated start`` for the queued tasks that start while known ends remain, why the
    simulation stopped: ``"end"`` — no task waits, or no known end is left; ``"wanted"`` — every
    ``wanted`` task has started; ``"horizon"`` — ``max_passes`` passes were run (default: :data:`WORK`
    over the queue's length, at most :data:`MAX_PASSES`; a pass costs what the scheduler's does)."""
    if max_passes is None:
        max_passes = passes_for(len(order))
    starts: dict[str, datetime] = {}
    waiting = list(order)
    held = list(running)
    view = list(nodes)
    left = set(wanted) if wanted is not None else None
    t = now
    for _ in range(max_passes):
        p = plan(waiting, [h.task for h in held], view, limits, usage=usage, team_usage=team_usage)
        if p.placements:
            placed = {pl.task_id: pl.nodes for pl in p.placements}
            for w in waiting:
                if w.task_id in placed:
                    starts[w.task_id] = t
                    held.append(Running(HeldTask(w.task_id, w.user, w.nnodes, w.gpus_per_node, placed[w.task_id],
                                                 w.cpus_per_node, w.memory_per_node, w.team, w.sweep), None))
            waiting = [w for w in waiting if w.task_id not in placed]
            if left is not None:
                left.difference_update(placed)
        ends = [h.end for h in held if h.end is not None]
        if not waiting or not ends:
            return starts, "end"
        if left is not None and not left:
            return starts, "wanted"
        t = max(t, min(ends))
        held = [h for h in held if h.end is None or h.end > t]
        # Ray's report is of now: from here on only the ledger (totals minus what is held) limits
        view = [NodeState(n.node_id, n.alive, n.gpus_total, n.gpus_total, n.cpus_total, None, n.memory_total, None)
                for n in nodes]
    return starts, "horizon"


def estimate(inputs: Inputs, ends: Mapping[str, datetime | None], *, now: datetime,
             wanted: Collection[str] | None = None) -> dict[str, QueueEstimate]:
    """A :class:`QueueEstimate` per queued task; ``ends``: expected end of held tasks by id (missing: unknown).

    With ``wanted``, the simulation may stop once those have started: the answer then holds only the
    tasks it started (the wanted ones among them), not every queued task.
    """
    order = fair_order(inputs.queued, inputs.held, inputs.usage, inputs.team_usage, inputs.limits.weights())
    known = inputs.cluster_error is None and bool(inputs.nodes)
    pos = positions(order, inputs.nodes if known else None)
    running = [Running(h, ends.get(h.task_id)) for h in inputs.held]
    starts, stop = (simulate(order, running, inputs.nodes, inputs.limits, usage=inputs.usage, now=now,
                             wanted=wanted, team_usage=inputs.team_usage) if known else ({}, "end"))
    empty = _WhenEmpty(inputs.nodes)
    blockers = (any(r.end is None for r in running), bool(starts))
    out = {}
    for t in order:
        position, ahead, competing, kind = pos[t.task_id]
        eta = starts.get(t.task_id)
        if eta is not None:
            reason = msg("eta.fits_now") if eta <= now else msg("eta.from_steps")
        elif stop == "wanted":
            continue  # not looked at: the simulation stopped once the wanted tasks had started
        elif stop == "horizon" and empty.fits(t):
            reason = msg("eta.beyond_horizon", ends=passes_for(len(order)) - 1)
        else:
            reason = _why_unknown(t, inputs, empty, *blockers)
        out[t.task_id] = QueueEstimate(t.task_id, position, ahead, competing, kind, eta, reason)
    return out


def _why_unknown(t: QueuedTask, inputs: Inputs, empty: _WhenEmpty, held_unknown: bool,
                 queued_started: bool) -> Message:
    if inputs.cluster_error is not None:
        return msg("eta.cluster_unreachable")
    if not any(n.alive for n in inputs.nodes):
        return msg("eta.no_worker")
    if not empty.fits(t):
        return msg("eta.never_fits")
    limit = inputs.limits.gpu_limit(t.user)
    if t.gpus_per_node > 0 and 0 < limit < t.nnodes * t.gpus_per_node:
        return msg("eta.over_gpu_limit", limit=limit)
    if held_unknown and queued_started:
        return msg("eta.waits_on_both", key=TOTAL_STEPS_KEY)
    if held_unknown:
        return msg("eta.waits_on_running", key=TOTAL_STEPS_KEY)
    if queued_started:
        return msg("eta.waits_on_queued")
    return msg("eta.nothing_frees")
