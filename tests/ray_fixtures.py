"""The one real Ray cluster of a test session (the product's own ``LocalCluster``, as ``argus up`` runs it).

Reuse: request the fixture ``ray_cluster`` (registered in tests/cluster/conftest.py) — a head with
no GPUs and no ``worker_node`` resource plus ``worker-1`` (``worker_node``, 0 GPUs) on free ports
under a temp dir. Tests that add or kill workers leave the cluster as they found it (a DEAD node
record of a removed worker stays in Ray's node list). Starting Ray costs 4-30 s on two busy cores,
so the package's tests share one, stopped when they are done (package scope: an idle cluster left for the
rest of the run costs a tenth of a core); ``LocalCluster.__exit__`` stops every process it started, also
when a test or the start itself fails.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from argus.nodes.local import LocalCluster
from argus.settings import Settings
from tests.helpers import free_port


@contextmanager
def local_ray(state_dir: Path, **overrides: Any) -> Iterator[LocalCluster]:
    """A LocalCluster on free ports (never the defaults: other clusters may run on this host).

    Jobs submitted straight to Ray (the cluster tests) carry no signed owner, so the task jail
    is off unless a caller turns it on (the e2e suite does, as ``argus up`` does).
    """
    fields: dict[str, Any] = {"worker_gpus": 0, "sftp_enabled": False, "verl_validation": "off",
                              "task_jail": "off", **overrides}
    settings = Settings(state_dir=state_dir, ray_head_port=free_port(), ray_dashboard_port=free_port(),
                        ray_client_server_port=free_port(), **fields)
    with LocalCluster(settings) as cluster:
        yield cluster


@pytest.fixture(scope="package")
def ray_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with local_ray(tmp_path_factory.mktemp("ray")) as cluster:
        yield cluster
