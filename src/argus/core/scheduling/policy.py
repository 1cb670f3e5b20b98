"""The pure scheduling policy: which QUEUED tasks start now, where, and why the others wait.

No I/O here: the submit loop loads the queue, the tasks holding resources and Ray's node
view, calls :func:`plan`, then acts on the result. Keeping it pure makes every rule
table-testable and lets the benchmark time it with 10 000 tasks.

Rules (ARCHITECTURE §2):

* **Order** (issue 26): the priority class first (an admin-defined class with a higher value goes
  before all lower ones, across users and teams; no class is 0), then the team — lowest decayed usage divided by the
  team's weight; tasks charged to no team are one group of weight 1 — then, inside it, per-user
  fair share — the user with the least recent usage in the
  task's pool (decayed GPU-seconds, or CPU-seconds for CPU jobs; Slurm's fair-share
  factor, see :mod:`argus.core.scheduling.fairshare`) — then priority (higher first), then age.
  A user's own tasks keep their order (priority, then age). Priority is set by the task's
  owner, so it orders their own tasks and breaks ties between users of equal usage, but it
  cannot buy a bigger share. Usage is re-evaluated after every task this pass starts
  (a started task is charged ``HELD_CHARGE_S`` in advance), so the users' tasks interleave
  instead of one backlog draining first.
* **Gang fit**: a task needs ``nnodes`` slots of ``n_gpus_per_node`` GPUs; a node with
  ``f`` free GPUs offers ``f // n_gpus_per_node`` slots (Ray may put two of verl's
  per-node placement groups on one big node). Free GPUs per node are the *smaller* of
  Argus's ledger (GPUs of its SUBMITTED/RUNNING/CANCELING tasks, by the nodes they were
  placed on) and what Ray reports free: the ledger covers jobs Ray has accepted but not
  yet started; Ray covers GPUs whose real location differs from the plan. A held task
  whose nodes are unknown is charged best-fit against the ledger (and, if it does not
  fit there, against whatever is left) — over-counting only delays, under-counting
  would over-submit and Ray's PENDING fails after 900 s. A GPU that its node agent found
  still in use after its task ended (``NodeState.gpus_held_back``, :mod:`argus.core.gpu_free`)
  is not free until a later check says so.
* **CPUs and memory** (issue 15, :mod:`argus.core.scheduling.fit`): a node takes a gang member
  only if it also has the member's CPUs and memory free (``cpus_per_node``/``memory_per_node``,
  from the spec or :mod:`argus.core.resources`' defaults), counted like GPUs: min(Argus's
  ledger, Ray's report). A task whose GPUs are free but whose CPUs or memory are not waits
  with a reason naming the short resource, and reserves nothing.
* **CPU jobs** (``n_gpus_per_node == 0``, e.g. ``argus.jobs.doctor``) fit whenever an
  alive worker node has their CPUs and memory free: drivers share worker nodes.
* **Limits**: ``max_running_tasks`` overall and per user count held tasks; a user's GPU
  limit counts the GPUs their held tasks hold (``nnodes × n_gpus_per_node``). Each user's
  own limits (set by an admin) replace the platform defaults; 0 or None means no limit.
  A user's tasks keep their order under a limit, as in Slurm: when the user's next GPU
  task would go over their GPU limit, it and every later GPU task of that user wait
  ("user limit: 16 GPUs held, this task needs 8 (max 16)"), so a small task cannot
  overtake the same user's big one; other users' tasks still start, and the user's CPU
  jobs (which hold no GPU) are not held back. A task that needs more GPUs than the limit
  itself could never start: it says so and does not block the user's other tasks.
* **Head of line**: the first task (in the order above) that is blocked *only by GPUs*
  and could fit the cluster when empty gets a **reservation**: the ``nnodes`` nodes
  closest to satisfying it are held back, so smaller tasks behind it may backfill only
  the *other* nodes. The big task therefore starts as soon as its nodes drain (no
  starvation), while the rest of the cluster keeps working (no idling). Only one
  reservation per pass keeps this simple and bounds the idle capacity to what the head
  needs. A task larger than the whole cluster reserves nothing: it waits for nodes to
  join without blocking anybody.
"""

from __future__ import annotations

import heapq
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from argus.core.messages import Message, msg, part
from argus.core.scheduling import fit
from argus.core.scheduling.fairshare import HELD_CHARGE_S, Usage, rate


@dataclass(frozen=True)
class QueuedTask:
    task_id: str
    user: str
    priority: int
    created_at: Any  # anything sortable (datetime, float)
    nnodes: int
    gpus_per_node: int
    cpus_per_node: float = 0.0  # beside GPUs (issue 15, core.resources); 0: not counted
    memory_per_node: int = 0  # bytes
    team: str | None = None  # the team it is charged to (issue 26); None: no team
    class_value: int = 0  # its priority class's value (issue 26): higher classes go first, across users
    priority_class: str | None = None  # the class's name, for reasons
    sweep: str | None = None  # the sweep it is a trial of (issue 38): at most its max_concurrent run at once


@dataclass(frozen=True)
class HeldTask:
    """A task Argus has handed to Ray that still holds (or may hold) resources."""

    task_id: str
    user: str
    nnodes: int
    gpus_per_node: int
    nodes: tuple[str, ...] | None = None  # one node id per gang member; None = unknown
    cpus_per_node: float = 0.0
    memory_per_node: int = 0
    team: str | None = None
    sweep: str | None = None


@dataclass(frozen=True)
class NodeState:
    node_id: str
    alive: bool
    gpus_total: int
    gpus_free: int  # as Ray reports it
    # issue 15 (core.scheduling.fit): None = not reported, not limited
    cpus_total: float | None = None
    cpus_free: float | None = None
    memory_total: int | None = None
    memory_free: int | None = None
    # issue 36 (core.gpu_free): GPUs its node agent found a process still on after their task ended; not free
    # until a later check finds them free (Ray, which counts them free, picks which GPU a task gets)
    gpus_held_back: int = 0


@dataclass(frozen=True)
class UserLimits:
    """One user's own limits, set by an admin; None: the platform default applies."""

    max_gpus: int | None = None
    max_running: int | None = None


@dataclass(frozen=True)
class TeamLimits:
    """One team's weight in the fair share and its limits (issue 26); None: no limit."""

    weight: float = 1.0
    max_gpus: int | None = None
    max_running: int | None = None


@dataclass(frozen=True)
class Limits:
    max_running: int
    max_running_per_user: int  # default per user; 0: no limit
    max_gpus_per_user: int = 0  # default per user; 0: no limit
    users: Mapping[str, UserLimits] = field(default_factory=dict)
    teams: Mapping[str, TeamLimits] = field(default_factory=dict)
    sweeps: Mapping[str, int] = field(default_factory=dict)  # a running sweep → its max_concurrent (issue 38)

    def weights(self) -> dict[str, float]:
        return {name: t.weight for name, t in self.teams.items()}

    def running_limit(self, user: str) -> int:
        own = self.users.get(user)
        return own.max_running if own is not None and own.max_running is not None else self.max_running_per_user

    def gpu_limit(self, user: str) -> int:
        own = self.users.get(user)
        return own.max_gpus if own is not None and own.max_gpus is not None else self.max_gpus_per_user


@dataclass(frozen=True)
class Placement:
    task_id: str
    nodes: tuple[str, ...]  # empty for CPU jobs: the driver goes to any worker node


@dataclass
class Plan:
    placements: list[Placement] = field(default_factory=list)
    reasons: dict[str, Message] = field(default_factory=dict)  # why each other task waits (issue 37: coded)
    reserved_for: str | None = None

    @property
    def pending(self) -> dict[str, str]:
        """The reasons' English texts (what ``tasks.pending_reason`` holds)."""
        return {tid: m.text for tid, m in self.reasons.items()}


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def gang(nnodes: int, gpus: int) -> str:
    return f"{plural(nnodes, 'node')} × {plural(gpus, 'GPU')}"


def describe_free(free: Iterable[int]) -> str:
    """``1 node × 4 GPUs, 2 nodes × 1 GPU`` (largest first), or ``none``."""
    counts = Counter(f for f in free if f > 0)
    if not counts:
        return "none"
    return ", ".join(gang(n, g) for g, n in sorted(counts.items(), reverse=True))


def free_parts(free: Iterable[int]) -> list[dict[str, Any]]:
    """:func:`describe_free` as message list items (``part.gang``), for a reason's ``free``/``nodes``."""
    counts = Counter(f for f in free if f > 0)
    return [part("part.gang", nnodes=n, gpus=g) for g, n in sorted(counts.items(), reverse=True)]


def slots(free: dict[str, int], gpus: int) -> int:
    return sum(f // gpus for f in free.values())


def take(free: dict[str, int], nnodes: int, gpus: int) -> tuple[str, ...] | None:
    """Best fit: fill the nodes with the fewest sufficient free GPUs first (less fragmentation).

    Mutates ``free`` only when the whole gang fits.
    """
    if slots(free, gpus) < nnodes:
        return None
    chosen: list[str] = []
    for node in sorted(free, key=lambda n: (free[n], n)):
        while free[node] >= gpus and len(chosen) < nnodes:
            free[node] -= gpus
            chosen.append(node)
        if len(chosen) == nnodes:
            break
    return tuple(chosen)


def free_gpus(nodes: Sequence[NodeState], held: Sequence[HeldTask]) -> dict[str, int]:
    """Free GPUs per alive node: min(Argus's ledger, Ray's report), less the GPUs held back (issue 36)."""
    ledger = {n.node_id: n.gpus_total for n in nodes if n.alive}
    unknown: list[HeldTask] = []
    for t in held:
        if t.gpus_per_node <= 0:
            continue
        if t.nodes is None:
            unknown.append(t)
            continue
        for node in t.nodes:
            if node in ledger:
                ledger[node] -= t.gpus_per_node
    for t in sorted(unknown, key=lambda t: -t.gpus_per_node):
        if take(ledger, t.nnodes, t.gpus_per_node) is None:
            need = t.nnodes * t.gpus_per_node
            for node in sorted(ledger, key=lambda n: -ledger[n]):
                used = min(max(ledger[node], 0), need)
                ledger[node] -= used
                need -= used
    ray = {n.node_id: n.gpus_free for n in nodes if n.alive}
    back = {n.node_id: n.gpus_held_back for n in nodes if n.alive}
    return {node: max(0, min(ledger[node], ray[node]) - back[node]) for node in ledger}


NO_TEAM = ""  # the group of tasks charged to no team: one group, weight 1, like a team of its own


class FairQueue:
    """The scheduler's order of the QUEUED tasks, one at a time (ARCHITECTURE §2, "Order" above).

    First the **priority class** (issue 26): an admin-defined class (``urgent`` for a deadline) with a
    higher value goes before everything of lower classes, across users and teams; tasks of no class
    are class 0. Inside a class, two fair-share levels: the **team** whose decayed usage in the task's
    pool, divided by the team's weight, is lowest (a team of weight 2 is served until it has used
    twice as much as a team of weight 1); then, inside it, the **user** whose decayed usage is lowest.
    Tasks charged to no team form one group of weight 1; with no teams and no classes this is the
    per-user fair share alone. A team with nothing queued takes no turn, so its share goes to the
    others (borrowing) and comes back the moment it queues work (its low usage puts it first) —
    nobody's running task is stopped.

    Per user, their own tasks by priority (higher first), then age, then id; across users (and
    teams), ties by the task's priority, age and id. Held tasks and tasks that start
    (:meth:`done` with ``started=True``) are charged :data:`HELD_CHARGE_S` in advance, to their user
    and their team, so the order adapts while a pass starts tasks. :func:`plan` walks it;
    :func:`fair_order` lists it.

    Use: ``t = head()`` (the next task, still queued), then ``done(t, started=…)`` — or
    ``drop(user)`` / ``drop(None)`` / ``drop_team(team)`` to take tasks out.
    """

    def __init__(self, queued: Sequence[QueuedTask], held: Sequence[HeldTask],
                 usage: Mapping[str, Usage] | None = None, team_usage: Mapping[str, Usage] | None = None,
                 weights: Mapping[str, float] | None = None) -> None:
        self.charged: dict[str, Usage] = defaultdict(Usage)  # past usage + the advance charge of held tasks
        self.charged.update(usage or {})
        self.team_charged: dict[str, Usage] = defaultdict(Usage)
        self.team_charged.update(team_usage or {})
        self.weights = weights or {}
        for h in held:
            self.charge(h.user, h.team or NO_TEAM, h.nnodes, h.gpus_per_node)
        # (class value, team, user) → that user's tasks of the class in the team, pop() = next
        self.lists: dict[tuple[int, str, str], list[QueuedTask]] = defaultdict(list)
        for t in queued:
            self.lists[(t.class_value, t.team or NO_TEAM, t.user)].append(t)
        self.user_heaps: dict[tuple[int, str], list[tuple[Any, ...]]] = defaultdict(list)
        for (level, team, user), tasks in self.lists.items():
            tasks.sort(key=lambda t: (-t.priority, t.created_at, t.task_id), reverse=True)
            self.user_heaps[(level, team)].append((*self._entry(tasks[-1]), user))
        self.levels = sorted({level for level, _, _ in self.lists}, reverse=True)
        self._heaps: dict[int, list[tuple[Any, ...]]] = {level: [] for level in self.levels}
        for (level, team), heap in self.user_heaps.items():
            heapq.heapify(heap)
            self._push_team(level, team)
        self._current: tuple[int, str] | None = None  # the (class, team) of the last head(), out of its heap

    def charge(self, user: str, team: str, nnodes: int, gpus_per_node: int) -> None:
        amount = rate(nnodes, gpus_per_node) * HELD_CHARGE_S
        self.charged[user] = self.charged[user].plus(gpus_per_node, amount)
        self.team_charged[team] = self.team_charged[team].plus(gpus_per_node, amount)

    def _entry(self, t: QueuedTask) -> tuple[Any, ...]:
        return (self.charged[t.user].of(t.gpus_per_node), -t.priority, t.created_at, t.task_id)

    def _team_entry(self, team: str, t: QueuedTask) -> tuple[Any, ...]:
        share = self.team_charged[team].of(t.gpus_per_node) / self.weights.get(team, 1.0)
        return (share, *self._entry(t))

    def _team_head(self, level: int, team: str) -> QueuedTask | None:
        """The next task of ``team`` in class ``level`` (its user heap's valid top), not removed."""
        heap = self.user_heaps[(level, team)]
        while heap:
            user = heap[0][-1]
            tasks = self.lists[(level, team, user)]
            if not tasks:
                heapq.heappop(heap)
                continue
            t = tasks[-1]
            if heap[0][:-1] != self._entry(t):  # the user's share changed since this entry was pushed
                heapq.heapreplace(heap, (*self._entry(t), user))
                continue
            return t
        return None

    def _push_team(self, level: int, team: str) -> None:
        t = self._team_head(level, team)
        if t is not None:
            heapq.heappush(self._heaps[level], (*self._team_entry(team, t), team))

    def head(self) -> QueuedTask | None:
        """The next task in the order (not removed: call :meth:`done` or :meth:`drop` before the next head)."""
        for level in self.levels:
            heap = self._heaps[level]
            while heap:
                item = heapq.heappop(heap)
                team = item[-1]
                t = self._team_head(level, team)
                if t is None:
                    continue
                if item[:-1] != self._team_entry(team, t):  # the team's (or its user's) share changed
                    heapq.heappush(heap, (*self._team_entry(team, t), team))
                    continue
                self._current = (level, team)
                return t
        self._current = None
        return None

    def done(self, t: QueuedTask, *, started: bool) -> None:
        """``t`` (the head) leaves the queue: started (charged in advance) or left waiting."""
        level, team = t.class_value, t.team or NO_TEAM
        tasks = self.lists[(level, team, t.user)]
        tasks.pop()
        heap = self.user_heaps[(level, team)]
        heapq.heappop(heap)  # t's user was the top of its team's heap (head() just checked it)
        if started:
            self.charge(t.user, team, t.nnodes, t.gpus_per_node)
        if tasks:
            heapq.heappush(heap, (*self._entry(tasks[-1]), t.user))
        self._current = None
        self._push_team(level, team)

    def _take(self, keep: Callable[[tuple[int, str, str]], bool]) -> list[QueuedTask]:
        out: list[QueuedTask] = []
        for key, tasks in self.lists.items():
            if not keep(key):
                out += tasks
                tasks.clear()
        if self._current is not None:
            current, self._current = self._current, None
            self._push_team(*current)
        return out

    def drop(self, user: str | None) -> list[QueuedTask]:
        """Take ``user``'s remaining tasks (everybody's with None) out of the order; returns them."""
        return self._take(lambda key: user is not None and key[2] != user)

    def drop_team(self, team: str) -> list[QueuedTask]:
        """Take every remaining task charged to ``team`` out of the order; returns them."""
        return self._take(lambda key: key[1] != team)


def fair_order(queued: Sequence[QueuedTask], held: Sequence[HeldTask],
               usage: Mapping[str, Usage] | None = None, team_usage: Mapping[str, Usage] | None = None,
               weights: Mapping[str, float] | None = None) -> list[QueuedTask]:
    """The QUEUED tasks in the order :func:`plan` considers them when none of them starts.

    The queue's positions (``core.eta``) come from this list; a pass that does start tasks
    charges their users in advance and may interleave the rest a little differently.
    """
    order = FairQueue(queued, held, usage, team_usage, weights)
    out: list[QueuedTask] = []
    while (t := order.head()) is not None:
        out.append(t)
        order.done(t, started=False)
    return out


def plan(
    queued: Sequence[QueuedTask],
    held: Sequence[HeldTask],
    nodes: Sequence[NodeState],
    limits: Limits,
    *,
    usage: Mapping[str, Usage] | None = None,
    team_usage: Mapping[str, Usage] | None = None,
    cluster_error: str | None = None,
) -> Plan:
    """Decide which queued tasks start now (with their nodes) and why every other one waits.

    ``usage``: each user's decayed past usage (:class:`fairshare.Usage`, running attempts
    counted up to now); a user missing from it has none. ``team_usage``: the same per team
    (the usage of the tasks charged to it), for the fair share between teams.
    """
    out = Plan()
    if cluster_error is not None:
        why = msg("queue.ray_unreachable", error=cluster_error)
        out.reasons = dict.fromkeys((t.task_id for t in queued), why)
        return out
    alive = [n for n in nodes if n.alive]
    totals = {n.node_id: n.gpus_total for n in alive}
    cluster_gpus = sum(totals.values())
    free = free_gpus(nodes, held)
    room = fit.Room.of(nodes, held)  # free CPUs and memory, like ``free`` for GPUs

    running = len(held)
    per_user_tasks: dict[str, int] = defaultdict(int)
    per_user_gpus: dict[str, int] = defaultdict(int)
    gpu_blocked: dict[str, Message] = {}  # user → why their remaining GPU tasks wait (kept in the user's order)
    per_team_tasks: dict[str, int] = defaultdict(int)
    per_team_gpus: dict[str, int] = defaultdict(int)
    team_blocked: dict[str, Message] = {}  # team → why its remaining GPU tasks wait (its order is kept too)
    per_sweep: dict[str, int] = defaultdict(int)
    for t in held:
        if t.sweep:
            per_sweep[t.sweep] += 1
        per_user_tasks[t.user] += 1
        per_user_gpus[t.user] += t.nnodes * t.gpus_per_node
        if t.team:
            per_team_tasks[t.team] += 1
            per_team_gpus[t.team] += t.nnodes * t.gpus_per_node
    order = FairQueue(queued, held, usage, team_usage, limits.weights())
    reserved_label: dict[str, Any] | None = None
    reserved: set[str] = set()
    # (nnodes, gpus) → why such a gang waits, valid until free GPUs or reservations change; with
    # thousands of queued tasks of a few shapes this keeps a pass linear in the queue.
    blocked: dict[tuple[int, int, float, int], Message] = {}

    def wait_all(user: str | None, reason: Message) -> None:
        for t in order.drop(user):
            out.reasons[t.task_id] = reason

    while (t := order.head()) is not None:
        user = t.user
        if running >= limits.max_running:
            wait_all(None, msg("queue.cluster_task_limit", max=limits.max_running))
            break
        max_tasks = limits.running_limit(user)
        if 0 < max_tasks <= per_user_tasks[user]:
            wait_all(user, msg("queue.user_task_limit", max=max_tasks))
            continue
        sweep_max = limits.sweeps.get(t.sweep) if t.sweep else None
        if sweep_max is not None and per_sweep[t.sweep] >= sweep_max:  # type: ignore[index]
            out.reasons[t.task_id] = msg("queue.sweep_limit", sweep=t.sweep, max=sweep_max)
            order.done(t, started=False)
            continue
        team = limits.teams.get(t.team) if t.team else None
        if team is not None and team.max_running is not None and per_team_tasks[t.team] >= team.max_running:
            why = msg("queue.team_task_limit", team=t.team, max=team.max_running)
            for w in order.drop_team(t.team):
                out.reasons[w.task_id] = why
            continue
        placed: tuple[str, ...] | None = None
        over = _over_gpu_limit(t, per_user_gpus[user], limits.gpu_limit(user))
        team_over = (_over_gpu_limit(t, per_team_gpus[t.team], team.max_gpus, t.team)
                     if team is not None and team.max_gpus is not None else None)
        if t.gpus_per_node > 0 and user in gpu_blocked:
            out.reasons[t.task_id] = gpu_blocked[user]
        elif t.gpus_per_node > 0 and t.team in team_blocked:
            out.reasons[t.task_id] = team_blocked[t.team]
        elif team_over is not None:
            assert team is not None and team.max_gpus is not None and t.team is not None
            out.reasons[t.task_id] = team_over
            if t.nnodes * t.gpus_per_node <= team.max_gpus:
                team_blocked[t.team] = msg("queue.team_gpu_first", team=t.team, held=per_team_gpus[t.team],
                                           max=team.max_gpus, first=t.task_id)
        elif over is not None:
            out.reasons[t.task_id] = over
            if t.nnodes * t.gpus_per_node <= limits.gpu_limit(user):  # it will fit once the user's tasks end
                gpu_blocked[user] = msg("queue.user_gpu_first", held=per_user_gpus[user],
                                        max=limits.gpu_limit(user), first=t.task_id)
        elif not alive:
            out.reasons[t.task_id] = msg("queue.no_workers")
        elif t.gpus_per_node <= 0:
            short = room.take_driver(t)  # a CPU job needs its CPUs/memory on some node
            if short is None:
                placed = ()
            else:
                out.reasons[t.task_id] = short
        elif _shape(t) in blocked:  # same shape already failed since the last change
            out.reasons[t.task_id] = blocked[_shape(t)]
        else:
            avail = {n: f for n, f in free.items() if n not in reserved}
            counts_room = t.cpus_per_node > 0 or t.memory_per_node > 0
            placed = take(room.cap(avail, t) if counts_room else avail, t.nnodes, t.gpus_per_node)
            if placed is None and counts_room and (take(dict(avail), t.nnodes, t.gpus_per_node) is not None or (
                    slots(totals, t.gpus_per_node) >= t.nnodes and not room.fits_when_empty(t, totals))):
                # GPUs are there (or would be), CPUs or memory are not: say which; no reservation
                out.reasons[t.task_id] = blocked[_shape(t)] = room.why_short(t, avail, totals)
            elif placed is None:
                why = _why_waiting(t, totals, cluster_gpus, free, reserved, reserved_label)
                out.reasons[t.task_id] = why
                if (out.reserved_for is None and slots(totals, t.gpus_per_node) >= t.nnodes
                        and room.fits_when_empty(t, totals)):
                    out.reserved_for = t.task_id
                    reserved_label = (part("part.task", task=t.task_id) if t.priority_class is None else
                                      part("part.task_of_class", task=t.task_id, priority_class=t.priority_class))
                    reserved.update(_closest_nodes(t, totals, free))
                    blocked.clear()
                    why = _why_waiting(t, totals, cluster_gpus, free, reserved, reserved_label)
                blocked[_shape(t)] = why
        if placed is not None:
            for node in placed:
                free[node] -= t.gpus_per_node
            room.take(placed, t)
            if placed or t.cpus_per_node > 0 or t.memory_per_node > 0:
                blocked.clear()  # the free GPUs/CPUs changed: reasons computed before are stale
            out.placements.append(Placement(t.task_id, placed))
            running += 1
            per_user_tasks[user] += 1
            if t.sweep:
                per_sweep[t.sweep] += 1
            per_user_gpus[user] += t.nnodes * t.gpus_per_node
            if t.team:
                per_team_tasks[t.team] += 1
                per_team_gpus[t.team] += t.nnodes * t.gpus_per_node
        order.done(t, started=placed is not None)
    for t in queued:  # a classed task says so: it explains why it went before others
        if t.priority_class is not None and t.task_id in out.reasons:
            out.reasons[t.task_id] = out.reasons[t.task_id].then("part.priority_class",
                                                                  priority_class=t.priority_class)
    return out


def _shape(t: QueuedTask) -> tuple[int, int, float, int]:
    """Tasks of one shape fit or wait alike (the ``blocked`` cache key)."""
    return (t.nnodes, t.gpus_per_node, t.cpus_per_node, t.memory_per_node)


def _over_gpu_limit(t: QueuedTask, held_gpus: int, limit: int, team: str | None = None) -> Message | None:
    """Why the user's (or team's) GPU limit keeps ``t`` waiting, or None (CPU job, no limit, or it fits).

    A team limit of 0 GPUs is a real limit (the team may run CPU jobs only); a user limit of 0 means none."""
    need = t.nnodes * t.gpus_per_node
    if t.gpus_per_node <= 0 or (limit <= 0 and team is None) or held_gpus + need <= limit:
        return None
    whose = {} if team is None else {"team": team}
    if need > limit:
        return msg("queue.team_gpu_never" if whose else "queue.user_gpu_never", **whose, need=need, max=limit)
    return msg("queue.team_gpu_limit" if whose else "queue.user_gpu_limit", **whose, held=held_gpus, need=need,
               max=limit)


def _closest_nodes(t: QueuedTask, totals: dict[str, int], free: dict[str, int]) -> list[str]:
    """The nodes a blocked gang would use first: big enough, most free GPUs now."""
    big = [n for n in totals if totals[n] >= t.gpus_per_node]
    big.sort(key=lambda n: (-free[n], n))
    chosen: list[str] = []
    for node in big:
        if sum(totals[n] // t.gpus_per_node for n in chosen) >= t.nnodes:
            break
        chosen.append(node)
    return chosen


def _why_waiting(
    t: QueuedTask,
    totals: dict[str, int],
    cluster_gpus: int,
    free: dict[str, int],
    reserved: set[str],
    reserved_for: dict[str, Any] | None,
) -> Message:
    need = {"nnodes": t.nnodes, "need": [part("part.gpus", n=t.gpus_per_node)]}
    if cluster_gpus == 0:
        return msg("queue.no_gpus")
    if slots(totals, t.gpus_per_node) < t.nnodes:
        return msg("queue.cluster_too_small", **need, nodes=free_parts(totals.values()))
    if reserved and slots(free, t.gpus_per_node) >= t.nnodes:
        return msg("queue.gpus_reserved", **need, free=free_parts(free[n] for n in free if n not in reserved),
                   reserved_for=reserved_for)
    return msg("queue.gpus_busy", **need, free=free_parts(free.values()))
