"""GET /metrics through real HTTP: who may scrape, that it parses as Prometheus text, that it matches the DB."""

from __future__ import annotations

from datetime import timedelta

from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import func, select

from argus.core.states import TaskStatus
from argus.db.models import TaskEventModel, TaskModel, utcnow
from argus.scheduler.nodes import nodes_view
from argus.scheduler.runner import SchedulerRunner
from argus.services import telemetry
from argus.services.tasks import switch_task_status
from tests.api.test_tasks_api import ADV, submit
from tests.helpers import live_server
from tests.scheduler.fakes import FakeRay, make_ctx
from tests.waiting import wait_until


def scrape(client) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    r = client.get("/metrics")
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/plain")
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(r.text) for s in family.samples}


def test_metrics_are_never_open(live):
    with live.client() as anonymous:
        r = anonymous.get("/metrics")
        assert r.status_code == 401 and r.json()["detail"]["code"] == "unauthorized"
    with live.client("argus_not_a_token") as wrong:
        assert wrong.get("/metrics").status_code == 401
    alice = live.new_user("alice")
    r = alice.get("/metrics")
    assert r.status_code == 403 and r.json()["detail"]["code"] == "forbidden"
    with live.admin() as admin:
        assert admin.get("/metrics").status_code == 200


def test_a_metrics_token_scrapes_without_admin_rights(live):
    live.ctx.settings.metrics_token = "scrape-secret-0123456789"
    with live.client("scrape-secret-0123456789") as scraper:
        assert scraper.get("/metrics").status_code == 200
        assert scraper.get("/api/v2/users").status_code == 401  # not a token for anything else
    with live.client("scrape-secret-01234567890") as near_miss:
        assert near_miss.get("/metrics").status_code == 401


def _db_counts(live) -> dict[tuple[str, str], int]:
    with live.ctx.db.session() as s:
        return {(st, w): n for st, w, n in s.execute(
            select(TaskModel.status, TaskModel.workload, func.count()).group_by(TaskModel.status, TaskModel.workload))}


def _assert_counts_match(live, got) -> None:
    want = _db_counts(live)
    scraped = {(dict(labels)["status"], dict(labels)["workload"]): v for (name, labels), v in got.items()
               if name == "argus_tasks"}
    for key, n in want.items():
        assert scraped[key] == n, key
    assert {k: v for k, v in scraped.items() if v} == want
    for status in TaskStatus:  # every series exists, zero or not
        assert (status.value, "ppo") in scraped and (status.value, "job") in scraped


def test_task_counts_match_the_database(live):
    alice = live.new_user("alice")
    ids = [submit(alice, ADV).json()["task_id"] for _ in range(5)]
    assert alice.post(f"/api/v2/tasks/{ids[0]}/cancel").status_code == 200
    with live.ctx.db.session() as s:  # other statuses and workloads, written before the server's first scrape
        s.get(TaskModel, ids[1]).status = "RUNNING"
        s.get(TaskModel, ids[2]).status = "SUCCEEDED"
        s.get(TaskModel, ids[3]).workload = "grpo"
    with live.admin() as admin:
        _assert_counts_match(live, scrape(admin))  # the first scrape counts the table
        # then only the timeline is read: changes made the way the product makes them
        more = [submit(alice, ADV.replace("workload: ppo", "workload: grpo")).json()["task_id"] for _ in range(3)]
        assert alice.post(f"/api/v2/tasks/{more[0]}/cancel").status_code == 200
        with live.ctx.db.session() as s:
            for tid, new in ((more[1], TaskStatus.SUBMITTED), (ids[1], TaskStatus.SUCCEEDED)):
                switch_task_status(s, s.get(TaskModel, tid), new, actor="test")
            switch_task_status(s, s.get(TaskModel, more[1]), TaskStatus.RUNNING, actor="test")
            switch_task_status(s, s.get(TaskModel, more[1]), TaskStatus.QUEUED, actor="test")  # a retry
        got = scrape(admin)
        _assert_counts_match(live, got)
        assert got[("argus_tasks", (("status", "QUEUED"), ("workload", "grpo")))] == 3  # ids[3], more[1], more[2]
        _assert_counts_match(live, scrape(admin))  # nothing changed: the same


def test_task_counts_are_recounted_after_a_prune(live):
    """A prune deletes events (and SQLite may then reuse their ids): the next scrape counts the table."""
    from tests.api.test_retention_api import _age

    alice = live.new_user("alice")
    tid = submit(alice, ADV).json()["task_id"]
    with live.admin() as admin:
        scrape(admin)
        _age(live, tid, "SUCCEEDED", 200)  # ended long ago (written straight into the table)
        assert admin.post("/api/v2/admin/prune", json={"older_than_days": 1}).json()["events"] == 2
        with live.ctx.db.session() as s:
            assert s.scalar(select(func.count()).select_from(TaskEventModel)) == 0  # every event is gone
        submit(alice, ADV)  # its event may take a reused id
        _assert_counts_match(live, scrape(admin))


def test_admission_latency_and_rejections_by_stage(live):
    alice = live.new_user("alice")
    with live.admin() as admin:
        before = scrape(admin)
        assert submit(alice, ADV).status_code == 201
        assert submit(alice, "kind: advanced\nworkload: ppo\n").status_code == 400  # no command: schema
        assert submit(alice, "{not yaml").status_code == 400
        after = scrape(admin)

    def delta(name, **labels):
        key = (name, tuple(sorted(labels.items())))
        return after.get(key, 0) - before.get(key, 0)

    assert delta("argus_admission_seconds_count", verl_validation="no") == 1  # validation is off here
    assert delta("argus_admission_rejections_total", reason="schema") == 1
    assert delta("argus_admission_rejections_total", reason="syntax") == 1
    assert delta("argus_admission_rejections_total", reason="verl") == 0


def test_gpus_per_node_from_the_schedulers_view(settings):
    ray = FakeRay()
    ray.add_node("w1", 8)
    ray.add_node("w2", 4)
    ray.add_node("gone", 8, alive=False)

    def configure(ctx):
        ctx.nodes = lambda: nodes_view(ctx.db, ray)

    with live_server(settings, configure=configure) as live:
        alice = live.new_user("alice")
        tid = submit(alice, ADV).json()["task_id"]  # 1 node × 2 GPUs
        loops = make_ctx(settings, ray)
        SchedulerRunner(loops).run_pass()
        with live.ctx.db.session() as s:
            assert s.get(TaskModel, tid).status == "SUBMITTED"
        with live.admin() as admin:
            got = scrape(admin)
        loops.db.dispose()
    placed = next(n for n in ("w1", "w2") if got[("argus_node_gpus", (("hostname", f"host-{n}"), ("node", n),
                                                                       ("state", "allocated")))] == 2)
    for node, total in (("w1", 8), ("w2", 4)):
        allocated = 2 if node == placed else 0
        for state, value in (("total", total), ("allocated", allocated), ("free", total - allocated)):
            assert got[("argus_node_gpus", (("hostname", f"host-{node}"), ("node", node), ("state", state)))] == value
    assert not any(k[0] == "argus_node_gpus" and ("node", "gone") in k[1] for k in got)
    assert got[("argus_cluster_up", ())] == 1


def test_scheduler_pass_and_queue_wait_are_observed(settings):
    ray = FakeRay()
    ray.add_node("w1", 8)
    with live_server(settings) as live:
        alice = live.new_user("alice")
        tid = submit(alice, ADV.replace("workload: ppo", "workload: grpo")).json()["task_id"]
        with live.ctx.db.session() as s:  # created eight minutes ago
            s.get(TaskModel, tid).created_at = utcnow() - timedelta(minutes=8)
        with live.admin() as admin:
            before = scrape(admin)
            loops = make_ctx(settings, ray)
            SchedulerRunner(loops).run_pass()
            after = scrape(admin)
        loops.db.dispose()
    assert after[("argus_scheduler_pass_seconds_count", ())] == before[("argus_scheduler_pass_seconds_count", ())] + 1
    count = ("argus_task_queue_wait_seconds_count", (("workload", "grpo"),))
    assert after[count] == before.get(count, 0) + 1
    le_300 = ("argus_task_queue_wait_seconds_bucket", (("le", "300.0"), ("workload", "grpo")))
    le_600 = ("argus_task_queue_wait_seconds_bucket", (("le", "600.0"), ("workload", "grpo")))
    assert after[le_300] == before.get(le_300, 0)  # waited 8 min: above 300 s …
    assert after[le_600] == before.get(le_600, 0) + 1  # … within 600 s


def test_background_processes_and_log_streams(live):
    from argus.sftp.process import SftpProcess
    from argus.verl.validator import VerlValidator

    live.ctx.extras["sftp_process"] = SftpProcess(live.ctx.settings)  # never started: down
    live.ctx.extras["verl_validator"] = VerlValidator("/nonexistent/python")  # cannot start
    with live.admin() as admin:
        got = scrape(admin)
    for component in ("sftp", "verl_validator"):
        assert got[("argus_component_up", (("component", component),))] == 0
        assert got[("argus_component_restarts_total", (("component", component),))] == 0
    assert got[("argus_sftp_sessions", ())] == 0
    assert got[("argus_log_follow_streams", ())] == telemetry.LOG_STREAMS._value.get()


def test_warm_up_counts_before_the_first_scrape(live):
    from argus.api.routers.prometheus import warm_up

    alice = live.new_user("alice")
    submit(alice, ADV)
    warm_up(live.ctx)

    def counted() -> bool:
        if (registry := live.ctx.extras.get("metrics_registry")) is None:
            return False
        platform = next(c for c in registry._collector_to_names if isinstance(c, telemetry.PlatformCollector))
        return platform.counts._counts is not None

    wait_until(counted, 20, every=0.05, what="the warm-up did not count")
    with live.admin() as admin:
        _assert_counts_match(live, scrape(admin))


def test_log_follow_streams_are_counted_while_open(live):
    import threading

    alice = live.new_user("alice")
    tid = submit(alice, ADV).json()["task_id"]  # queued: its log stream stays open until the task ends
    key = ("argus_log_follow_streams", ())
    with live.admin() as admin:
        before = scrape(admin)[key]
        lines: list[str] = []

        def follow() -> None:
            with alice.stream("GET", f"/api/v2/tasks/{tid}/logs", headers={"Accept": "text/event-stream"}) as r:
                lines.extend(r.iter_lines())

        reader = threading.Thread(target=follow, daemon=True)
        reader.start()
        wait_until(lambda: scrape(admin)[key] == before + 1, 20, what="the open stream was not counted")
        assert alice.post(f"/api/v2/tasks/{tid}/cancel").status_code == 200  # the stream ends with the task
        reader.join(20)
        assert any(line.startswith("event: end") for line in lines)
        wait_until(lambda: scrape(admin)[key] == before, 20, what="the ended stream is still counted")
