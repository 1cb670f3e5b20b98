"""A two-node task on `argus head` + two real `argus worker` processes (issue 21), on one host.

The head is the product's ``ClusterHead`` (Ray head on the routable address, the discovery
file, the token in ``<root>/.argus``); each worker is the real ``argus worker`` command with
its own state dir (its sandbox config and scratch) and one logical GPU. Through an Argus
server with real loops, a 2 × 1-GPU Ray task gets one private Ray over a sandbox on each
worker, and a placement group with ``STRICT_SPREAD`` over its two GPUs lands on both.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from argus.cluster.dashboard import Dashboard
from argus.cluster.inventory import RayInventory
from argus.nodes.discovery import discovery_path
from argus.settings import Settings
from tests.cluster.test_multi_machine import Tracker, start_head, wait_for
from tests.e2e.stack import argus_on, spec, submit, wait_status
from tests.helpers import terminate

pytestmark = [pytest.mark.e2e, pytest.mark.hostile]


def test_a_two_node_task_spans_sandboxes_on_two_argus_workers(tmp_path: Path) -> None:
    data_root = tmp_path / "data"
    tracker = Tracker()
    head = start_head(tmp_path, data_root, "head")
    workers: list[subprocess.Popen[bytes]] = []
    try:
        if head.cluster.head and head.cluster.head.proc:
            tracker.add(head.cluster.head.proc.pid)
        env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
        for name in ("gpu-a", "gpu-b"):
            with open(tmp_path / f"{name}.out", "ab") as out:
                workers.append(subprocess.Popen(
                    [sys.executable, "-m", "argus.cli.main", "worker", "--discovery", str(discovery_path(data_root)),
                     "--data-root", str(data_root), "--name", name, "--gpus", "1", "--cpus", "2",
                     "--state-dir", str(tmp_path / name)],
                    stdout=out, stderr=subprocess.STDOUT, env={**env, "ARGUS_TASK_JAIL": "bwrap"}))
            tracker.add(workers[-1].pid)
        inventory = RayInventory(Dashboard(head.cluster.dashboard_url, token=head.cluster.settings.ray_auth_token),
                                 cache_s=0)
        wait_for("both workers", lambda: len([n for n in inventory.worker_nodes() if n.alive]) == 2, 120)
        settings = Settings(mode="cluster", state_dir=tmp_path / "server", data_root=data_root, sftp_enabled=False,
                            verl_validation="off", scheduler_tick_s=0.5, start_timeout_s=180, task_jail="bwrap")
        with argus_on(head.cluster, settings) as stack:
            erin = stack.user("erin")
            tid = submit(erin, spec("python3 -m argus.jobs.ray_gpus --gpus 2 --strategy STRICT_SPREAD --hold 20",
                                    gpus=1, nnodes=2, name="gang"))
            wait_status(erin, tid, "SUCCEEDED", timeout=300)
            log = erin.get(f"/api/v2/tasks/{tid}/logs").text
            use = erin.get(f"/api/v2/tasks/{tid}/resources").json()  # issue 24: both nodes' samples, merged
        node_samples = data_root / "users" / "erin" / "jobs" / tid / "telemetry" / "attempt-1.node-2.jsonl"
        assert node_samples.is_file() and node_samples.read_text().strip(), "node 2 samples what the task uses there"
        assert use["summary"]["samples"] >= 1 and use["summary"]["rss_max"] > 0, use
        assert "[argus] nodes 2-2 of this task: one sandbox each" in log, log
        assert "ray_gpus: cluster nodes=2 GPU=2 CPU=" in log, log
        assert len(set(re.findall(r"ray_gpus: actor-\d+ .* node=(\w+)", log))) == 2, log
        node_log = data_root / "users" / "erin" / "jobs" / tid / "logs" / "attempt-1.node-2.log"
        assert "[argus] joined the task's private Ray" in node_log.read_text(), node_log.read_text()
        # node 2 ran under its worker's node agent (issue 36), not as a child of a platform Ray actor: its own
        # attempt there, bounded like the first node, over and its cgroup emptied
        done = [json.loads(p.read_text()) for w in ("gpu-a", "gpu-b")
                for p in (tmp_path / w / "agent" / "attempts").glob(f"{tid}.1.node-2.json")]
        # stopped at the task's end by the first node's launcher (SIGTERM: 143), confirmed by the agent
        assert len(done) == 1 and done[0]["stop_requested_at"] and done[0]["finished_at"], done
        assert done[0]["exit_code"] in (0, 143), done
        assert done[0]["emptied"] in (True, None), done  # None: no cgroup hierarchy on this machine
        assert "bounds: " in node_log.read_text() or "not bounded" in node_log.read_text(), node_log.read_text()
    finally:
        for w in workers:
            terminate(w, 40)
        head.stop()
        tracker.kill_all()
