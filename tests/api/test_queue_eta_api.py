"""Queue position and ETA (issue 24) through a live server: the scheduler's real inputs over a fake Ray's nodes,
a running task whose log has verl step lines where the driver writes it, the API, the list and the CLI."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from datetime import UTC, datetime, timedelta

from sqlalchemy import update

from argus.cluster.types import WorkerNode
from argus.db.models import TaskAttemptModel, TaskModel
from argus.scheduler.queue_inputs import QueueInputs
from argus.services.eta import QueueEstimates
from tests.helpers import live_server, submit_spec
from tests.scheduler.fakes import FakeRay


def spec(gpus: int, name: str, steps: int | None = None) -> str:
    total = f" trainer.total_training_steps={steps}" if steps else ""
    return (f"kind: advanced\nworkload: job\nname: {name}\nnnodes: 1\nn_gpus_per_node: {gpus}\n"
            f"command: python3 -m argus.jobs.steps step_seconds=1{total}\n")


def start(srv, tid: str, gpus: int, ago_s: float, node: str = "n1") -> None:  # noqa: ANN001
    """QUEUED → RUNNING as the loops would leave it: attempt 1 placed on ``node``, started ``ago_s`` ago."""
    started = datetime.now(UTC) - timedelta(seconds=ago_s)
    with srv.ctx.db.session() as s:
        s.execute(update(TaskModel).where(TaskModel.id == tid).values(
            status="RUNNING", attempts=1, submission_id=f"{tid}-a1", started_at=started, pending_reason=None))
        s.add(TaskAttemptModel(task_id=tid, attempt=1, submission_id=f"{tid}-a1", status="RUNNING", created_at=started,
                               started_at=started, gpus={"per_node": gpus, "nodes": [node]}, node_id=node))


def end(srv, tid: str) -> None:  # noqa: ANN001
    with srv.ctx.db.session() as s:
        now = datetime.now(UTC)
        s.execute(update(TaskModel).where(TaskModel.id == tid).values(status="SUCCEEDED", finished_at=now))
        s.execute(update(TaskAttemptModel).where(TaskAttemptModel.task_id == tid).values(
            status="SUCCEEDED", finished_at=now))


def write_steps(srv, user: str, tid: str, steps: range, seconds: float) -> None:  # noqa: ANN001
    """verl's console lines in the attempt's log, where the driver tees them (services/eta reads them)."""
    log = srv.ctx.settings.root / "users" / user / "jobs" / tid / "logs" / "attempt-1.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a") as f:
        f.write("(TaskRunner pid=42) loading the model\n")
        for k in steps:
            f.write(f"(TaskRunner pid=42) step:{k} - actor/pg_loss:-0.01 - timing_s/step:{seconds} - "
                    f"timing_s/gen:0.5\n")


def configure(ctx):  # noqa: ANN001, ANN201
    ray = FakeRay(nodes=[WorkerNode("n1", "gpu-1", "10.0.0.1", True, 4, 0, 32.0, {"GPU": 4.0, "CPU": 32.0})])
    ctx.queue_estimates = QueueEstimates(QueueInputs(ctx.db, ctx.settings, ray), ctx.settings.root, cache_s=0)


def at(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


def cli(srv, client, *args: str) -> subprocess.CompletedProcess[str]:  # noqa: ANN001
    env = {**os.environ, "ARGUS_URL": srv.url, "ARGUS_TOKEN": client.headers["authorization"].split()[1],
           "COLUMNS": "250"}
    return subprocess.run([sys.executable, "-m", "argus.cli.main", *args], env=env, capture_output=True, text=True,
                          timeout=60)


def test_queue_positions_and_etas_follow_the_running_tasks_steps(settings) -> None:  # noqa: ANN001
    with live_server(settings, configure) as srv:
        alice, bob = srv.new_user("alice"), srv.new_user("bob")
        run = submit_spec(bob, spec(4, "bob-running", steps=100))
        start(srv, run, 4, ago_s=200)
        write_steps(srv, "bob", run, range(1, 41), 2.0)  # 40 of 100 steps, 2 s each: 60 left = 120 s
        a1 = submit_spec(alice, spec(4, "alice-first", steps=50))
        a2 = submit_spec(alice, spec(4, "alice-second"))
        b2 = submit_spec(bob, spec(2, "bob-queued"))
        cpu = submit_spec(alice, spec(0, "alice-cpu"))
        t0 = datetime.now(UTC)

        # the running task: its step, rate, GPU-hours and expected end
        r = bob.get(f"/api/v2/tasks/{run}").json()
        p = r["progress"]
        assert r["queue"] is None and (p["step"], p["total_steps"], p["steps_per_hour"]) == (40, 100, 1800.0)
        assert abs(p["gpu_hours"] - 4 * 200 / 3600) < 0.01
        assert t0 + timedelta(seconds=100) < at(p["eta_end"]) < t0 + timedelta(seconds=140)

        # alice has used nothing, bob holds 4 GPUs: alice's GPU tasks come first; her CPU job is alone in its pool
        q1 = alice.get(f"/api/v2/tasks/{a1}").json()["queue"]
        assert (q1["position"], q1["ahead"], q1["competing"], q1["resource"]) == (1, 0, 3, "GPU")
        assert at(q1["eta"]) == at(p["eta_end"]) and q1["eta_reason"].startswith("when running tasks end")
        q2 = alice.get(f"/api/v2/tasks/{a2}").json()["queue"]
        assert (q2["position"], q2["competing"], q2["eta"]) == (2, 3, None)
        assert q2["eta_reason"].startswith("unknown: it waits on queued tasks that would start before it")
        assert (q1["eta_reason_code"], q2["eta_reason_code"], q2["eta_reason_params"]) == (
            "eta.from_steps", "eta.waits_on_queued", {})  # the page says the code in its own language
        qb = bob.get(f"/api/v2/tasks/{b2}").json()["queue"]
        assert (qb["position"], qb["ahead"]) == (3, 2) and qb["eta"] is None
        qc = alice.get(f"/api/v2/tasks/{cpu}").json()
        assert (qc["queue"]["position"], qc["queue"]["competing"], qc["queue"]["resource"]) == (1, 1, "CPU")
        assert at(qc["queue"]["eta"]) <= datetime.now(UTC) and qc["queue_position"] == 1

        # the list: one estimate for the page; other users' tasks count but are never shown or named
        listed = alice.get("/api/v2/tasks").json()
        rows = {t["task_id"]: t for t in listed["items"]}
        assert set(rows) == {a1, a2, cpu}
        assert (rows[a1]["queue_position"], at(rows[a1]["eta"])) == (1, at(q1["eta"]))
        assert (rows[a2]["queue_position"], rows[a2]["eta"]) == (2, None)
        for tid in (run, b2):
            assert tid not in alice.get(f"/api/v2/tasks/{a2}").text and tid not in json.dumps(listed)
        mine = bob.get("/api/v2/tasks").json()["items"]
        assert [(t["task_id"], t["queue_position"]) for t in mine] == [(b2, 3), (run, None)]

        # the CLI: the same figures in words, and in -o json
        out = cli(srv, alice, "task", a1)
        assert out.returncode == 0, out.stderr
        assert "queued    1st of 3 competing for GPUs; estimated start " in out.stdout and " UTC (in " in out.stdout
        out = cli(srv, alice, "task", a2).stdout
        assert "2nd of 3 competing for GPUs; estimated start unknown (it waits on queued tasks" in out
        out = cli(srv, bob, "task", run).stdout
        assert re.search(r"progress  step 40/100, 1800 steps/h, 0\.2\d GPU-hours, estimated end (\d{4}-\d\d-\d\d )?\d\d:\d\d UTC \(in ", out)
        out = cli(srv, alice, "tasks").stdout
        assert "QUEUE" in out and "GPU #1, ETA " in out and "GPU #2, ETA unknown" in out and "CPU #1, ETA now" in out
        assert json.loads(cli(srv, alice, "task", a1, "-o", "json").stdout)["queue"]["position"] == 1

        # bob's run speeds up: the estimates follow its new step rate
        write_steps(srv, "bob", run, range(41, 81), 0.5)  # 20 left at 0.5 s: 10 s
        p = bob.get(f"/api/v2/tasks/{run}").json()["progress"]
        assert p["step"] == 80 and p["steps_per_hour"] == 3600 / 0.5
        assert at(p["eta_end"]) < datetime.now(UTC) + timedelta(seconds=15)
        assert at(alice.get(f"/api/v2/tasks/{a1}").json()["queue"]["eta"]) == at(p["eta_end"])

        # bob's run ends and alice's first task starts: her second moves up, waiting on a run with no known end
        end(srv, run)
        start(srv, a1, 4, ago_s=5)
        q2 = alice.get(f"/api/v2/tasks/{a2}").json()["queue"]
        assert (q2["position"], q2["ahead"], q2["competing"], q2["eta"]) == (1, 0, 2, None)
        assert "running without trainer.total_training_steps or a step yet" in q2["eta_reason"]
        assert q2["eta_reason_params"] == {"key": "trainer.total_training_steps"}
        qb = bob.get(f"/api/v2/tasks/{b2}").json()["queue"]
        assert (qb["position"], qb["competing"]) == (2, 2)
        p = alice.get(f"/api/v2/tasks/{a1}").json()["progress"]  # no step yet: end unknown
        assert (p["step"], p["total_steps"], p["eta_end"]) == (None, 50, None)
        assert "estimated end unknown (no step logged yet)" in cli(srv, alice, "task", a1).stdout


def test_without_a_scheduler_a_queued_task_has_no_queue_block(live) -> None:  # noqa: ANN001
    alice = live.new_user("alice")
    tid = submit_spec(alice, spec(1, "x"))
    t = alice.get(f"/api/v2/tasks/{tid}").json()
    assert t["queue"] is None and t["queue_position"] is None and t["progress"] is None
