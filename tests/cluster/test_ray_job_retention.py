"""Ray job retention against a real Ray: Ray's job list loses the ended Argus jobs older than the setting and
nothing else (not a recent one, not a running one, not jobs Argus did not submit)."""

from __future__ import annotations

import sys
from datetime import timedelta
from pathlib import Path

import pytest
from ray.job_submission import JobSubmissionClient
from sqlalchemy import update

from argus.db.models import TaskAttemptModel, utcnow
from argus.nodes.local import LocalCluster
from argus.scheduler.wiring import build_scheduler
from argus.services.users import ensure_home
from argus.settings import Settings
from tests.scheduler.fakes import add_task, add_user, task
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e


def test_only_argus_jobs_ended_before_the_retention_leave_rays_job_list(ray_cluster: LocalCluster,
                                                                        tmp_path: Path) -> None:
    settings = Settings(state_dir=tmp_path / "state", sftp_enabled=False, verl_validation="off", task_jail="off",
                        ray_job_retention_days=7, scheduler_tick_s=0.2,
                        ray_auth_token=ray_cluster.settings.ray_auth_token)
    from argus.db.session import Database

    db = Database(settings.db_url)
    db.migrate()
    sched = build_scheduler(db, settings, ray_address=ray_cluster.gcs_address, dashboard=ray_cluster.dashboard_url)
    ctx = sched.runner.ctx
    ray = JobSubmissionClient(ray_cluster.dashboard_url, headers=ray_cluster.auth_headers)
    running = None
    try:
        uid = add_user(ctx, "alice")
        ensure_home(settings.root, "alice")
        quick = ["bash", "-lc", "python3 -m argus.jobs.sleep 0"]
        old, recent = add_task(ctx, uid, argv=quick), add_task(ctx, uid, argv=quick)
        running = add_task(ctx, uid, argv=["bash", "-lc", "python3 -m argus.jobs.sleep 300"])
        # jobs Argus did not submit: plain, and one whose metadata merely looks like Argus's
        plain = ray.submit_job(entrypoint=f"{sys.executable} -c pass", entrypoint_resources={"worker_node": 1})
        lookalike = ray.submit_job(entrypoint=f"{sys.executable} -c pass", entrypoint_resources={"worker_node": 1},
                                   metadata={"argus_task_id": old})

        runner = sched.runner
        wait_until(lambda: (runner.run_pass() or True) and task(ctx, old).status == "SUCCEEDED"
                   and task(ctx, recent).status == "SUCCEEDED" and task(ctx, running).status == "RUNNING",
                   180, every=0.5, what="tasks did not reach SUCCEEDED/SUCCEEDED/RUNNING")
        foreign = (plain, lookalike)
        wait_until(lambda: all(str(ray.get_job_status(j)) in ("SUCCEEDED", "FAILED") for j in foreign), 180,
                   every=0.5, what="foreign jobs did not end")
        sids = {t: task(ctx, t).submission_id for t in (old, recent, running)}
        now = utcnow()
        with db.session() as s:  # attempts that ended 8 and 6 days ago; the running one claims 30 (a lie Ray refutes)
            for t, days in ((old, 8), (recent, 6), (running, 30)):
                s.execute(update(TaskAttemptModel).where(TaskAttemptModel.submission_id == sids[t])
                          .values(finished_at=now - timedelta(days=days)))
        before = {j.submission_id for j in ray.list_jobs()}
        assert {*sids.values(), plain, lookalike} <= before

        assert runner.monitor.janitor.run_once(force=True) == 1

        after = {j.submission_id for j in ray.list_jobs()}
        assert before - after == {sids[old]}
        assert ray.get_job_status(sids[running]).name == "RUNNING"
    finally:
        if running is not None and task(ctx, running).submission_id:
            ray.stop_job(task(ctx, running).submission_id)
        db.dispose()
