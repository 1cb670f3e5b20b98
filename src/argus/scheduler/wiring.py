"""Build the scheduler for a server: Ray endpoints from settings, Ray adapters, the runner.

Kept out of ``argus.server`` so the composition root stays a list of one-line parts. The
server must start and serve with no Ray reachable: nothing here contacts Ray; the loops
find out on their first pass and queued tasks then say "Ray cluster unreachable: …".
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from argus.cluster.dashboard import Dashboard, dashboard_url
from argus.cluster.inventory import RayInventory
from argus.cluster.jobs import RayJobsClient
from argus.cluster.types import JobsBackend, NodeInventory
from argus.db.session import Database
from argus.launcher import jail, ray_auth
from argus.scheduler.common import LoopContext
from argus.scheduler.nodes import nodes_view
from argus.scheduler.queue_inputs import QueueInputs
from argus.scheduler.runner import SchedulerComponent, SchedulerRunner
from argus.services.eta import QueueEstimates
from argus.settings import Settings

log = logging.getLogger(__name__)

SCHEDULER_BUSY_TIMEOUT_S = 30.0


def ray_endpoints(settings: Settings) -> tuple[str, str]:
    """(GCS address for drivers' RAY_ADDRESS, dashboard URL for the Jobs API and the inventory)."""
    gcs = settings.ray_address or f"127.0.0.1:{settings.ray_head_port}"
    if "://" in gcs:
        gcs = gcs.split("://", 1)[1]
    return gcs, dashboard_url(settings)


@dataclass
class Scheduler:
    runner: SchedulerRunner
    component: SchedulerComponent
    nodes: Callable[[], dict[str, Any]]
    queue: QueueEstimates  # queue positions and estimated starts for the API (issue 24)


def build_scheduler(db: Database, settings: Settings, *, jobs: JobsBackend | None = None,
                    inventory: NodeInventory | None = None, ray_address: str | None = None,
                    dashboard: str | None = None) -> Scheduler:
    """``ray_address``/``dashboard`` override the settings (``argus up`` passes its LocalCluster's)."""
    gcs, url = ray_endpoints(settings)
    # the platform Ray's token: given, else the one the head keeps in <root>/.argus (launcher/ray_auth.py)
    token = settings.ray_auth_token or ray_auth.read_ray_token(settings.root)
    dash = Dashboard(dashboard or url, token=token)
    jobs = jobs or RayJobsClient(dash)
    inventory = inventory or RayInventory(dash, cache_s=settings.inventory_cache_s)
    sandbox = jail.jail_enabled(settings.task_jail)
    if not sandbox:
        log.warning("tasks run WITHOUT a sandbox (task_jail=%s%s): any task can read every home on its node; "
                    "apt-get install bubblewrap", settings.task_jail,
                    "" if settings.task_jail == "off" else ", bubblewrap is not installed")
    # its own engine: the API's requests give up on a held lock after seconds (503), the loops wait longer
    loop_db = db.sibling(busy_timeout_s=SCHEDULER_BUSY_TIMEOUT_S)
    runner = SchedulerRunner(LoopContext(db=loop_db, settings=settings, jobs=jobs, inventory=inventory,
                                         ray_address=ray_address or gcs, sandbox=sandbox))
    inv = inventory
    return Scheduler(runner, SchedulerComponent(runner, owns_db=loop_db is not db), lambda: nodes_view(db, inv),
                     QueueEstimates(QueueInputs(db, settings, inv), settings.root))
