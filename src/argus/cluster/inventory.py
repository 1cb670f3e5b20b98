"""``NodeInventory`` from the dashboard: which worker nodes exist and how many GPUs each has free.

Two cheap calls (a few ms each on Ray 2.60), no Ray driver:

* ``GET /api/v0/nodes`` (state API): alive and dead nodes with their *real* resource names and
  totals; a worker node is one that advertises ``worker_node`` (the head never does).
* ``GET /api/cluster_status``: ``loadMetricsReport.usageByNode[node_id][resource] = [used, total]``
  (``GPU``, ``CPU`` and ``memory`` in bytes: what jobs, actors and placement groups reserved).
  It camel-cases custom resource names (``worker_node`` → ``workerNode``), which is why the totals
  and the worker test come from the state API; ``GPU`` keeps its name.

``/nodes?view=summary`` also has usage, but it carries every worker process's stats (~12 KB per
node), so it is not used. Results are cached for ``inventory_cache_s``: the scheduler asks every
tick and the nodes view on every page load.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from argus.cluster.dashboard import Dashboard
from argus.cluster.types import ClusterUnavailable, WorkerNode

log = logging.getLogger(__name__)

WORKER_RESOURCE = "worker_node"


class RayInventory:
    def __init__(self, dashboard: Dashboard, *, cache_s: float = 2.0) -> None:
        self.dashboard = dashboard
        self.cache_s = cache_s
        self._lock = threading.Lock()
        self._cached: tuple[float, list[WorkerNode]] | None = None

    def worker_nodes(self) -> list[WorkerNode]:
        """Alive and dead worker nodes, alive first; raises ClusterUnavailable when Ray cannot be asked."""
        with self._lock:
            if self._cached and time.monotonic() - self._cached[0] < self.cache_s:
                return self._cached[1]
            nodes = self._fetch()
            self._cached = (time.monotonic(), nodes)
            return nodes

    def invalidate(self) -> None:
        """Forget the cache (after a submission, say, so the next fit check sees fresh usage)."""
        with self._lock:
            self._cached = None

    def _fetch(self) -> list[WorkerNode]:
        try:
            raw = self.dashboard.get_json("/api/v0/nodes", params={"limit": 10000})["data"]["result"]["result"]
        except (KeyError, TypeError) as e:
            raise ClusterUnavailable(f"unexpected answer from {self.dashboard.url}/api/v0/nodes: {e!r}") from e
        usage = self._usage_by_node()
        out: list[WorkerNode] = []
        for n in raw:
            total = {k: float(v) for k, v in (n.get("resources_total") or {}).items()}
            if WORKER_RESOURCE not in total:
                continue
            alive = n.get("state") == "ALIVE"
            gpus_total = int(total.get("GPU", 0))
            used = usage.get(n["node_id"], {}).get("GPU")
            if not alive:
                gpus_free = 0
            elif used is None:  # usage unknown (or no GPUs): the scheduler's own ledger decides
                gpus_free = gpus_total
            else:
                gpus_free = max(0, int(gpus_total - float(used[0])))
            node_usage = usage.get(n["node_id"], {})
            out.append(WorkerNode(
                node_id=n["node_id"],
                hostname=n.get("node_name") or n.get("node_ip") or "",
                ip=n.get("node_ip") or "",
                alive=alive,
                gpus_total=gpus_total,
                gpus_free=gpus_free,
                cpus_total=total.get("CPU", 0.0),
                resources=total,
                cpus_free=_free(total.get("CPU", 0.0), node_usage.get("CPU"), alive),
                memory_total=int(total.get("memory", 0)),
                memory_free=_free_memory(total.get("memory", 0.0), node_usage.get("memory"), alive),
            ))
        out.sort(key=lambda w: (not w.alive, w.hostname, w.node_id))
        return out

    def _usage_by_node(self) -> dict[str, dict[str, Any]]:
        try:
            data = self.dashboard.get_json("/api/cluster_status")
            return data["data"]["clusterStatus"]["loadMetricsReport"]["usageByNode"] or {}
        except (KeyError, TypeError, ClusterUnavailable) as e:
            # The autoscaler monitor that feeds this may be missing on some deployments: totals still count.
            log.debug("no per-node usage from %s: %r", self.dashboard.url, e)
            return {}


def _free(total: float, used: Any, alive: bool) -> float | None:
    """``total − used`` from a ``[used, total]`` usage pair; None when Ray gave no usage (the ledger decides)."""
    if not alive or not total:
        return 0.0  # a node without the resource (e.g. --num-cpus=0) has none free
    try:
        return max(0.0, float(total) - float(used[0]))
    except (TypeError, ValueError, IndexError):
        return None


def _free_memory(total: float, used: Any, alive: bool) -> int | None:
    free = _free(total, used, alive)
    return None if free is None else int(free)
