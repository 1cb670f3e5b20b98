"""Fixtures for the e2e suite: ONE embedded Ray cluster, ONE Argus server with real loops.

The cluster is the product's own ``LocalCluster`` (what ``argus up`` runs): a head with no
``worker_node`` resource and a worker raylet that has it, on dynamic ports under a temp
dir, with fast node-death detection. Tests that change the cluster (add/kill a worker)
leave it as they found it. Package scope: under pytest-xdist each worker that runs e2e modules starts its
own stack and stops it when it moves on to another package (tests/scheduling.py keeps them together).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from argus.settings import Settings
from tests.e2e.stack import Stack, argus_on
from tests.ray_fixtures import local_ray

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="package")
def ray_cluster(e2e_settings: Settings) -> Iterator[Any]:
    """The e2e suite's own cluster (not tests/cluster's): node kills there must not leak into it.

    It shares the server's state dir, as ``argus up`` does: the nodes' jails then hide the
    same database and show the same data root the server writes homes into.
    """
    with local_ray(e2e_settings.state_dir, task_jail="bwrap") as cluster:
        yield cluster


@pytest.fixture(scope="package")
def e2e_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return Settings(state_dir=tmp_path_factory.mktemp("argus"), sftp_enabled=False, verl_validation="off",
                    scheduler_tick_s=0.5, start_timeout_s=120, max_retries=1, task_jail="bwrap")


@pytest.fixture(scope="package")
def stack(ray_cluster: Any, e2e_settings: Settings) -> Iterator[Stack]:
    with argus_on(ray_cluster, e2e_settings) as s:
        yield s
