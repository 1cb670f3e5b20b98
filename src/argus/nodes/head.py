"""``argus head``: the Ray head of a multi-machine cluster, published in the discovery file.

The head is ``LocalCluster.start_head()`` on a routable address (``advertise_address``): no GPUs
and no ``worker_node`` resource, so no driver ever runs here. After Ray answers, the discovery
file is written with a new generation; workers (``argus worker``) notice it and (re)join. On a
clean stop the file is marked stopped *before* Ray goes down, so workers leave at once instead of
waiting for the head to fall silent.
"""

from __future__ import annotations

import logging
import signal
from collections.abc import Callable
from pathlib import Path

from argus.nodes.discovery import HeadInfo, mark_stopped, new_head_info, write_discovery
from argus.nodes.local import LocalCluster

log = logging.getLogger(__name__)


class ClusterHead:
    def __init__(self, cluster: LocalCluster, discovery: Path, api_url: str) -> None:
        self.cluster = cluster
        self.discovery = discovery
        self.api_url = api_url
        self.info: HeadInfo | None = None

    def start(self) -> HeadInfo:
        """Start the Ray head and publish it; a head that fails to start publishes nothing."""
        try:
            self.cluster.start_head()
            self.info = new_head_info(gcs_address=self.cluster.gcs_address,
                                      dashboard_url=self.cluster.dashboard_url, api_url=self.api_url)
            write_discovery(self.discovery, self.info)
        except BaseException:
            self.cluster.stop()
            raise
        log.info("published head generation %s at %s", self.info.generation, self.discovery)
        return self.info

    def stop(self) -> None:
        """Mark the file stopped, then stop Ray; a second call does nothing more."""
        info, self.info = self.info, None
        try:
            if info is not None and not mark_stopped(self.discovery, info.generation):
                log.warning("%s names another head now; left as it is", self.discovery)
        finally:
            self.cluster.stop()


class HeadRay:
    """The server ``Component`` of ``argus head``: starts first, stops last (like ``EmbeddedRay``).

    Start runs on the event loop's thread with SIGTERM mapped to KeyboardInterrupt, so a stop
    request during the start interrupts it and ``ClusterHead`` cleans up what it started.
    """

    name = "ray-head"

    def __init__(self, head: ClusterHead, announce: Callable[[str], None] = print) -> None:
        self.head = head
        self.announce = announce

    async def start(self) -> None:
        previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
        try:
            info = self.head.start()
        finally:
            signal.signal(signal.SIGTERM, previous)
        self.announce(f"Ray head: GCS {info.gcs_address} (dashboard {info.dashboard_url}, logs "
                      f"{self.head.cluster.log_dir})")
        self.announce(f"discovery file: {self.head.discovery} (generation {info.generation}); on each GPU "
                      f"machine run: argus worker --discovery {self.head.discovery}")

    async def stop(self) -> None:
        self.head.stop()
