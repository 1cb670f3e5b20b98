"""GET /api/v2/nodes carries each node's GPU use from its running tasks' telemetry (issue 25): the right file for
each planned node of a multi-node task, other users' task ids hidden, CPU-only nodes named."""

from __future__ import annotations

import json
import time
from pathlib import Path

from sqlalchemy import update

from argus.core.paths import DataLayout
from argus.db.models import TaskAttemptModel, TaskModel
from tests.helpers import live_server

SPEC = "kind: advanced\nworkload: job\nname: two nodes\nnnodes: 2\nn_gpus_per_node: 2\ncommand: python3 -m argus.jobs.sleep 1\n"


def _node(node_id: str, gpus: int) -> dict:
    return {"node_id": node_id, "hostname": node_id, "ip": "10.0.0.1", "alive": True, "gpus_total": gpus,
            "gpus_free_ray": gpus, "gpus_allocated": 0, "cpus_total": 8.0, "tasks": []}


def test_gpu_use_per_node_from_telemetry(settings):
    view = {"available": True, "error": None, "gpus_total": 4, "gpus_allocated": 4, "unplaced": [],
            "nodes": [_node("n1", 2), _node("n2", 2), _node("cpu", 0)]}

    def configure(ctx):
        ctx.nodes = lambda: json.loads(json.dumps(view))

    with live_server(settings, configure) as srv:
        alice = srv.new_user("alice")
        r = alice.post("/api/v2/tasks", content=SPEC, headers={"Content-Type": "application/yaml"})
        assert r.status_code == 201, r.text
        tid = r.json()["task_id"]
        with srv.ctx.db.session() as s:  # running on n1 (driver) and n2 (the gang's second node)
            s.execute(update(TaskModel).where(TaskModel.id == tid).values(status="RUNNING", attempts=1))
            s.add(TaskAttemptModel(task_id=tid, attempt=1, submission_id=f"{tid}-a1", status="RUNNING",
                                   node_id="n1", gpus={"per_node": 2, "nodes": ["n1", "n2"]}))
        folder = Path(str(DataLayout.at(str(settings.root)).job_dir("alice", tid))) / "telemetry"
        folder.mkdir(parents=True)
        now = int(time.time())
        (folder / "attempt-1.jsonl").write_text(
            json.dumps({"t": now, "cpu": 1, "gpu": [[90, 2048, 1], [70, 4096, 1]]}) + "\n"
            + json.dumps({"t": now, "cpu": 1}) + "\n"  # a sample whose GPU read failed does not blank the bars
            + json.dumps({"t": now, "cpu": 1, "gpu": [[1, 2]]}) + "\n"  # nor a line of the wrong shape
            + 'not json "gpu"\n')
        (folder / "attempt-1.node-2.jsonl").write_text(json.dumps({"t": now - 10_000, "cpu": 1, "gpu": [[5, 1, 1]]}))

        nodes = {n["node_id"]: n for n in alice.get("/api/v2/nodes").json()["nodes"]}
        assert [g["util_pct"] for g in nodes["n1"]["gpu_use"]["gpus"]] == [90.0, 70.0]
        assert nodes["n1"]["gpu_use"]["util_mean_pct"] == 80.0
        assert nodes["n1"]["gpu_use"]["gpus"][0] == {"util_pct": 90.0, "mem_mib": 2048.0, "task_id": tid}
        assert nodes["n2"]["gpu_use"] is None and nodes["n2"]["cpu_only"] is False  # its sample is stale
        assert nodes["cpu"]["cpu_only"] is True and nodes["cpu"]["gpu_use"] is None
        # a second task whose GPUs idled for 11 minutes: its holder entry says since when (issue 24's flag)
        r = alice.post("/api/v2/tasks", content=SPEC, headers={"Content-Type": "application/yaml"})
        idle_tid = r.json()["task_id"]
        with srv.ctx.db.session() as s:
            s.execute(update(TaskModel).where(TaskModel.id == idle_tid).values(status="RUNNING", attempts=1))
            s.add(TaskAttemptModel(task_id=idle_tid, attempt=1, submission_id=f"{idle_tid}-a1", status="RUNNING",
                                   node_id="n2", gpus={"per_node": 2, "nodes": ["n2"]}))
        idle_dir = Path(str(DataLayout.at(str(settings.root)).job_dir("alice", idle_tid))) / "telemetry"
        idle_dir.mkdir(parents=True)
        (idle_dir / "attempt-1.jsonl").write_text("".join(
            json.dumps({"t": now - 660 + 60 * k, "cpu": 1, "gpu": [[1, 10, 1], [2, 10, 1]]}) + "\n" for k in range(12)))
        view["nodes"][1]["tasks"] = [{"task_id": idle_tid, "user": "alice", "status": "RUNNING", "gpus": 2}]
        n2 = next(n for n in alice.get("/api/v2/nodes").json()["nodes"] if n["node_id"] == "n2")
        assert n2["tasks"][0]["idle_gpus_since"] == now - 660
        assert [g["util_pct"] for g in n2["gpu_use"]["gpus"]] == [1.0, 2.0]  # its fresh sample, not the stale one
        bob = srv.new_user("bob")
        bobs = {n["node_id"]: n for n in bob.get("/api/v2/nodes").json()["nodes"]}
        assert [g["task_id"] for g in bobs["n1"]["gpu_use"]["gpus"]] == [None, None]  # whose task: not bob's business
        assert [g["util_pct"] for g in bobs["n1"]["gpu_use"]["gpus"]] == [90.0, 70.0]
