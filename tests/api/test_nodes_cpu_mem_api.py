"""GET /api/v2/nodes carries what Argus's running tasks use on each node (issue 37): CPU cores and memory now,
summed over the tasks on the node, as shares of what Ray says the node has, and a point a minute for the
last half hour (the Nodes page's sparklines), from the tasks' own telemetry files."""

from __future__ import annotations

import json
import time
from pathlib import Path

from sqlalchemy import update

from argus.core.paths import DataLayout
from argus.db.models import TaskAttemptModel, TaskModel
from argus.services.node_usage import BUCKET_S, HISTORY_S
from tests.helpers import live_server

SPEC = "kind: advanced\nworkload: job\nname: cpu\nnnodes: 1\nn_gpus_per_node: 0\ncommand: python3 -m argus.jobs.sleep 1\n"
GIB = 1 << 30


def _node(node_id: str) -> dict:
    return {"node_id": node_id, "hostname": node_id, "ip": "10.0.0.1", "alive": True, "gpus_total": 0,
            "gpus_free_ray": 0, "gpus_allocated": 0, "cpus_total": 8.0, "memory_total": 16 * GIB, "tasks": []}


def test_cpu_and_memory_per_node_now_and_per_minute(settings):
    view = {"available": True, "error": None, "gpus_total": 0, "gpus_allocated": 0, "unplaced": [],
            "nodes": [_node("n1"), _node("idle")]}

    def configure(ctx):
        ctx.nodes = lambda: json.loads(json.dumps(view))

    with live_server(settings, configure) as srv:
        alice = srv.new_user("alice")
        now = int(time.time())
        minute = now // BUCKET_S * BUCKET_S
        for samples in (
                # task 1: one old sample (outside the half hour), two in the minute before, the newest now
                [(now - HISTORY_S - 600, 7.0, 9 * GIB), (minute - 50, 1.0, 1 * GIB), (minute - 20, 2.0, 2 * GIB),
                 (now, 2.0, 4 * GIB)],
                # task 2 on the same node: only a stale sample (5 minutes old): in the history, not "now"
                [(now - 300, 1.0, 1 * GIB)]):
            r = alice.post("/api/v2/tasks", content=SPEC, headers={"Content-Type": "application/yaml"})
            assert r.status_code == 201, r.text
            tid = r.json()["task_id"]
            with srv.ctx.db.session() as s:
                s.execute(update(TaskModel).where(TaskModel.id == tid).values(status="RUNNING", attempts=1))
                s.add(TaskAttemptModel(task_id=tid, attempt=1, submission_id=f"{tid}-a1", status="RUNNING",
                                       node_id="n1", gpus={"per_node": 0, "nodes": ["n1"]}))
            folder = Path(str(DataLayout.at(str(settings.root)).job_dir("alice", tid))) / "telemetry"
            folder.mkdir(parents=True)
            (folder / "attempt-1.jsonl").write_text("".join(
                json.dumps({"t": t, "cpu": c, "rss": m}) + "\n" for t, c, m in samples) + "not json\n")

        nodes = {n["node_id"]: n for n in srv.new_user("bob").get("/api/v2/nodes").json()["nodes"]}
        use = nodes["n1"]["use"]
        assert use["cpu"] == 2.0 and use["rss"] == 4 * GIB  # the fresh sample only
        assert use["cpu_pct"] == 25.0 and use["mem_pct"] == 25.0  # of 8 cores, 16 GiB
        history = {t: (c, m) for t, c, m in use["history"]}
        assert min(history) >= now - HISTORY_S - BUCKET_S  # the 40-minute-old sample is left out
        assert history[minute - BUCKET_S] == (25.0, 12.5)  # that minute's last sample of task 1: 2 cores, 2 GiB
        assert history[minute] == (25.0, 25.0)
        five = (now - 300) // BUCKET_S * BUCKET_S
        assert history[five] == (12.5, 6.2)  # task 2's 1 core, 1 GiB
        assert "task_id" not in json.dumps(use)  # figures only: every user may see them
        assert nodes["idle"]["use"] == {"cpu": None, "rss": None, "cpu_pct": None, "mem_pct": None, "history": []}
