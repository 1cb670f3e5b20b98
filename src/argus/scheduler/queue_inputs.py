"""The scheduler's inputs, read as its next pass would read them, for the queue estimates (issue 24).

``GET /api/v2/tasks/{id}`` shows a queued task's place in the queue and its estimated start
(:mod:`argus.core.eta`, through :class:`argus.services.eta.QueueEstimates`). Those must come from
what the scheduler itself plans with — the QUEUED tasks and the ledger of held ones
(:func:`submit.load_queue`, :func:`submit.load_held`), the nodes as the policy sees them
(:func:`submit.node_states`), the limits (a running sweep's ``max_concurrent`` among them) and each user's
decayed usage (:class:`UsageLedger`) — so
this module, on the scheduler's side of the layering, reads them and the composition root hands it
to the API as a plain callable (as it does ``nodes_view``).

Bounded: the queue's rows are read again only when its fingerprint (count, newest, priorities;
read from the index) or the held set changed (together they change when the queue's membership
does, :func:`submit.queue_fingerprint`) — a queued task's plan inputs never change while it waits; the held
tasks and the users with limits of their own are few; the ledger re-reads only open attempts; the
node inventory is cached by the cluster adapter.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable
from typing import Any

from argus.cluster.types import ClusterUnavailable, NodeInventory
from argus.core import eta
from argus.core.gpu_free import held_by_node
from argus.core.scheduling import policy
from argus.db.models import utcnow
from argus.db.session import Database
from argus.scheduler.gpu_holds import read_holds
from argus.scheduler.submit import (
    fair_order,
    load_held,
    load_queue,
    load_sweep_limits,
    load_team_limits,
    node_states,
    queue_fingerprint,
)
from argus.scheduler.usage import UsageLedger
from argus.settings import Settings


class QueueInputs:
    """``inputs()`` → (a key that changes when the plan's inputs do, :class:`argus.core.eta.Inputs`)."""

    def __init__(self, db: Database, settings: Settings, inventory: NodeInventory | None) -> None:
        self.db = db
        self.settings = settings
        self.inventory = inventory
        self.ledger = UsageLedger(settings.fairshare_half_life_s)
        self._lock = threading.Lock()  # the ledger and the cached queue are one reader's at a time
        self._queue: tuple[Any, list[policy.QueuedTask]] = (None, [])

    def __call__(self) -> tuple[Hashable, eta.Inputs]:
        error: str | None = None
        nodes = []
        if self.inventory is None:
            error = "no Ray cluster configured"
        else:
            try:
                nodes = self.inventory.worker_nodes()
            except ClusterUnavailable as exc:
                error = str(exc) or type(exc).__name__
        states = node_states(nodes, held_by_node(read_holds(self.settings.root)))  # issue 36: held-back GPUs
        s = self.settings
        with self._lock, self.db.session() as session:
            fingerprint = queue_fingerprint(session)
            held, user_limits = load_held(session)
            teams = load_team_limits(session)
            sweeps = load_sweep_limits(session)
            ledger = tuple(sorted((t.task_id, t.nodes) for t in held))
            if self._queue[0] != (fingerprint, ledger):  # with the held set, it changes when the membership does
                self._queue = ((fingerprint, ledger), load_queue(session)[0] if fingerprint[0] else [])
            queued = self._queue[1]
            usage = self.ledger.read(session, utcnow())
            team_usage = self.ledger.teams
        limits = policy.Limits(s.max_running_tasks, s.max_running_tasks_per_user, s.max_gpus_per_user, user_limits,
                               teams, sweeps)
        key = (fingerprint, ledger, tuple(states), tuple(sorted(user_limits.items())), tuple(sorted(teams.items())),
               tuple(sorted(sweeps.items())), fair_order(usage, held, team_usage, teams), error)
        return key, eta.Inputs(queued, held, states, limits, usage, error, team_usage)
