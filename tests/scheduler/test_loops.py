"""The loops against a fake Ray at the JobsBackend boundary, with a real SQLite database."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from sqlalchemy import select

from argus.cluster.types import RayJobStatus
from argus.core.launch import AttemptStatus
from argus.db.models import TaskAttemptModel, TaskEventModel, TaskModel
from argus.scheduler.monitor import MonitorActiveTasks
from argus.scheduler.runner import SchedulerRunner
from argus.scheduler.submit import SubmitQueuedTasks
from argus.services.principal import Principal
from argus.services.tasks import cancel_task
from tests.scheduler.fakes import add_task, add_user, task
from tests.waiting import wait_until


def attempts(ctx, tid):
    with ctx.db.session() as s:
        return list(s.scalars(select(TaskAttemptModel).where(TaskAttemptModel.task_id == tid)
                              .order_by(TaskAttemptModel.attempt)))


def statuses(ctx, tid):
    with ctx.db.session() as s:
        return [e.to_status for e in s.scalars(select(TaskEventModel).where(TaskEventModel.task_id == tid)
                                               .order_by(TaskEventModel.id))]


# ---------------------------------------------------------------- submit


def test_submit_stores_the_id_first_then_calls_ray_with_a_safe_entrypoint(ctx, ray):
    uid = add_user(ctx, "alice")
    tid = add_task(ctx, uid, argv=["bash", "-lc", "python3 -m argus.jobs.exit 3; echo 'x y'"])
    seen = {}

    def before_call(sid):  # the attempt must already be committed when Ray is called
        with ctx.db.session() as s:
            t = s.get(TaskModel, tid)
            seen["sid"], seen["status"] = t.submission_id, t.status
            seen["attempt"] = s.scalar(select(TaskAttemptModel.status)
                                       .where(TaskAttemptModel.submission_id == sid))

    ray.on_submit = before_call
    assert SubmitQueuedTasks(ctx).run_once() == 1
    assert seen == {"sid": f"{tid}-a1", "status": "QUEUED", "attempt": "QUEUED"}
    sub = ray.submissions[0]
    assert sub.submission_id == f"{tid}-a1"
    assert sub.entrypoint_resources == {"worker_node": 1}
    argv = shlex.split(sub.entrypoint)
    # -I: PYTHONPATH (the user's code/) can never shadow the driver
    assert argv[:4] == [ctx.settings.train_python, "-I", "-m", "argus.launcher.driver"]
    assert argv[argv.index("--") + 1:] == ["bash", "-lc", "python3 -m argus.jobs.exit 3; echo 'x y'"]
    assert sub.entrypoint_num_gpus == 0  # a CPU job's launcher holds no GPU
    # the launcher's own runtime_env carries nothing of the task's; the task's environment is in its argv
    assert sub.runtime_env == {"env_vars": {"PYTHONUNBUFFERED": "1", "RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO": "1"}}
    env = dict(a.split("=", 2)[1:] for a in argv[:argv.index("--")] if a.startswith("--setenv="))
    root = ctx.settings.root
    # the platform's path hook: it appends the user's code/ after the installed packages
    assert (Path(env["PYTHONPATH"]) / "sitecustomize.py").is_file()
    assert env["ARGUS_USER_CODE"] == str(root / "users" / "alice" / "code")
    assert env["RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO"] == "1"
    assert env["HOME"] == str(root / "users" / "alice")
    assert env["HF_HOME"] == str(root / "hf")  # hub ids resolve from the shared cache
    assert "RAY_ADDRESS" not in env  # nothing in a task names the platform's Ray cluster
    assert argv[argv.index("--user") + 1] == "alice"
    assert "--private-ray" in argv  # a compound command Argus cannot name may call ray.init()
    t = task(ctx, tid)
    assert (t.status, t.attempts, t.submission_id, t.pending_reason) == ("SUBMITTED", 1, f"{tid}-a1", None)
    assert [a.status for a in attempts(ctx, tid)] == ["SUBMITTED"]


def test_never_over_submits_gpus_and_records_why(ctx, ray):
    uid = add_user(ctx, "alice")
    t1 = add_task(ctx, uid, gpus=4)
    t2 = add_task(ctx, uid, gpus=4, created_offset_s=1)
    loop = SubmitQueuedTasks(ctx)
    assert loop.run_once() == 1
    assert loop.run_once() == 0  # the ledger holds t1's GPUs even though Ray reports them free
    assert task(ctx, t1).status == "SUBMITTED"
    assert task(ctx, t2).pending_reason == "needs 1 node × 4 GPUs; free: none"
    assert len(ray.submissions) == 1


def test_waiting_task_runs_when_a_node_joins(ctx, ray):
    uid = add_user(ctx, "alice")
    tid = add_task(ctx, uid, nnodes=2, gpus=4)
    loop = SubmitQueuedTasks(ctx)
    loop.run_once()
    assert task(ctx, tid).pending_reason == ("needs 2 nodes × 4 GPUs; the cluster has 1 node × 4 GPUs "
                                             "(waiting for nodes to join)")
    ray.add_node("w2", 4)
    assert loop.run_once() == 1
    with ctx.db.session() as s:
        att = s.scalar(select(TaskAttemptModel).where(TaskAttemptModel.task_id == tid))
        assert att.gpus == {"per_node": 4, "nodes": ["w1", "w2"]}


def test_cluster_down_keeps_tasks_queued_with_the_reason_then_reuses_the_id(ctx, ray):
    uid = add_user(ctx, "alice")
    tid = add_task(ctx, uid)
    ray.down = True
    SubmitQueuedTasks(ctx).run_once()
    t = task(ctx, tid)
    assert t.status == "QUEUED" and t.pending_reason == "Ray cluster unreachable: connection refused"
    assert attempts(ctx, tid) == []


def test_submit_call_fails_midway_then_same_id_is_used(ctx, ray):
    uid = add_user(ctx, "alice")
    tid = add_task(ctx, uid)

    def outage(_sid):
        ray.down = True
        ray.worker_nodes()  # raises ClusterUnavailable: the call fails mid-way

    ray.on_submit = outage
    SubmitQueuedTasks(ctx).run_once()
    t = task(ctx, tid)
    assert (t.status, t.submission_id) == ("QUEUED", f"{tid}-a1")
    assert t.pending_reason.startswith("Ray cluster unreachable")
    ray.down, ray.on_submit = False, None
    SubmitQueuedTasks(ctx).run_once()
    assert [s.submission_id for s in ray.submissions] == [f"{tid}-a1"]
    assert task(ctx, tid).status == "SUBMITTED" and len(attempts(ctx, tid)) == 1


def test_job_already_exists_is_adopted_not_resubmitted(ctx, ray):
    uid = add_user(ctx, "alice")
    tid = add_task(ctx, uid)
    from argus.cluster.types import JobInfo

    ray.jobs[f"{tid}-a1"] = JobInfo(f"{tid}-a1", RayJobStatus.RUNNING)  # Ray got it; the reply was lost
    SubmitQueuedTasks(ctx).run_once()
    assert ray.submissions == []
    assert task(ctx, tid).status == "SUBMITTED"


def test_ray_refusing_a_job_fails_the_task_with_submit_error(ctx, ray):
    uid = add_user(ctx, "alice")
    tid = add_task(ctx, uid)
    ray.submit_error = ValueError("bad runtime_env")
    SubmitQueuedTasks(ctx).run_once()
    t = task(ctx, tid)
    assert (t.status, t.termination_reason) == ("FAILED", "SUBMIT_ERROR")
    assert "bad runtime_env" in t.status_message


def test_cancel_while_submitting_stops_the_orphan_job(ctx, ray):
    uid = add_user(ctx, "alice")
    tid = add_task(ctx, uid)

    def user_cancels(_sid):
        with ctx.db.session() as s:
            cancel_task(s, Principal(uid, "alice"), tid)

    ray.on_submit = user_cancels
    SubmitQueuedTasks(ctx).run_once()
    assert task(ctx, tid).status == "CANCELED"
    assert ray.stops == [f"{tid}-a1"]
    ray.set(f"{tid}-a1", RayJobStatus.STOPPED)
    MonitorActiveTasks(ctx).run_once()  # orphan sweep settles the attempt row
    assert [a.status for a in attempts(ctx, tid)] == ["CANCELED"]


def test_an_older_ray_job_with_the_same_id_is_not_adopted(ctx, ray):
    """A wiped database on a long-lived Ray cluster reuses readable ids: never adopt a stranger's job."""
    from argus.cluster.types import JobInfo

    uid = add_user(ctx, "alice")
    tid = add_task(ctx, uid)
    old_ms = int((task(ctx, tid).created_at.timestamp() - 3600) * 1000)
    ray.jobs[f"{tid}-a1"] = JobInfo(f"{tid}-a1", RayJobStatus.FAILED, start_time_ms=old_ms, driver_exit_code=1)
    loop = SubmitQueuedTasks(ctx)
    loop.run_once()
    assert task(ctx, tid).status == "QUEUED" and ray.submissions == []
    loop.run_once()  # a fresh attempt id that Ray has never seen
    t = task(ctx, tid)
    assert (t.status, t.submission_id) == ("SUBMITTED", f"{tid}-a2")
    assert [s.submission_id for s in ray.submissions] == [f"{tid}-a2"]
    assert [(a.attempt, a.status) for a in attempts(ctx, tid)] == [(1, "FAILED"), (2, "SUBMITTED")]


# ---------------------------------------------------------------- recovery


def test_recovery_adopts_a_stored_id_ray_knows_and_resubmits_one_it_does_not(ctx, ray):
    from argus.cluster.types import JobInfo

    uid = add_user(ctx, "alice")
    known, unknown = add_task(ctx, uid), add_task(ctx, uid, created_offset_s=1)

    # simulate the server dying after step 1 (id stored) for both; Ray received only the first
    def crash(_sid):
        raise SystemExit("server killed")

    ray.on_submit = crash
    for _ in (known, unknown):
        with pytest.raises(SystemExit):
            SubmitQueuedTasks(ctx).run_once()
    ray.on_submit = None
    ray.jobs[f"{known}-a1"] = JobInfo(f"{known}-a1", RayJobStatus.RUNNING)
    runner = SchedulerRunner(ctx)  # a fresh process
    runner.run_pass()
    assert [s.submission_id for s in ray.submissions] == [f"{unknown}-a1"]  # same id, once
    assert task(ctx, known).status == "RUNNING"  # adopted, then the monitor saw RUNNING
    assert task(ctx, unknown).status == "SUBMITTED"
    assert len(attempts(ctx, known)) == 1 and len(attempts(ctx, unknown)) == 1


def test_submitted_task_ray_forgot_is_resubmitted_with_the_same_id(ctx, ray):
    uid = add_user(ctx, "alice")
    tid = add_task(ctx, uid)
    SubmitQueuedTasks(ctx).run_once()
    del ray.jobs[f"{tid}-a1"]  # e.g. a new Ray head
    MonitorActiveTasks(ctx).run_once()
    assert [s.submission_id for s in ray.submissions] == [f"{tid}-a1", f"{tid}-a1"]
    assert task(ctx, tid).status == "SUBMITTED"


# ---------------------------------------------------------------- monitor


def submitted(ctx, ray, **kw):
    uid = add_user(ctx, "alice")
    tid = add_task(ctx, uid, **kw)
    SubmitQueuedTasks(ctx).run_once()
    return tid, f"{tid}-a1"


def test_running_then_succeeded(ctx, ray):
    tid, sid = submitted(ctx, ray)
    mon = MonitorActiveTasks(ctx)
    ray.set(sid, RayJobStatus.RUNNING, driver_node_id="w1")
    assert mon.run_once() == 1
    assert task(ctx, tid).status == "RUNNING"
    ray.set(sid, RayJobStatus.SUCCEEDED, driver_exit_code=0)
    mon.run_once()
    t = task(ctx, tid)
    assert (t.status, t.termination_reason) == ("SUCCEEDED", "SUCCEEDED")
    a = attempts(ctx, tid)[0]
    assert (a.status, a.exit_code, a.node_id) == ("SUCCEEDED", 0, "w1")
    assert a.started_at is not None and a.finished_at is not None
    assert statuses(ctx, tid) == ["QUEUED", "SUBMITTED", "RUNNING", "SUCCEEDED"]


def test_nonzero_exit_is_a_user_failure_never_retried(ctx, ray):
    tid, sid = submitted(ctx, ray)
    ray.set(sid, RayJobStatus.FAILED, driver_exit_code=3, error_type="JOB_ENTRYPOINT_COMMAND_ERROR")
    MonitorActiveTasks(ctx).run_once()
    t = task(ctx, tid)
    assert (t.status, t.termination_reason, t.status_message) == ("FAILED", "EXIT_NONZERO", "exit code 3")
    assert (t.status_message_code, t.status_message_params) == ("status.exit_code", {"exit_code": 3})
    assert attempts(ctx, tid)[0].exit_code == 3


def test_nonzero_exit_message_names_the_exception_from_the_log_tail(ctx, ray):
    """The cause is the last exception of the attempt's log, read from its tail only."""
    tid, sid = submitted(ctx, ray)
    logs = ctx.settings.root / "users" / "alice" / "jobs" / tid / "logs"
    logs.mkdir(parents=True)
    early = "Traceback (most recent call last):\n  File \"x\", line 1\nOSError: an old warning, long scrolled away\n"
    noise = "".join(f"(TaskRunner pid=4242) step:{i} - actor/pg_loss:0.1\n" for i in range(2000))  # > 64 KiB
    (logs / "attempt-1.log").write_text(
        early + noise + "Error executing job with overrides: []\n"
        "Traceback (most recent call last):\n"
        '  File "/opt/venv/lib/python3.11/site-packages/verl/trainer/main_ppo.py", line 42, in main\n'
        "    run_ppo(config)\n"
        "ray.exceptions.RayTaskError(ValueError): ray::TaskRunner.run() (pid=4242, ip=10.0.0.5, actor_id=ab)\n"
        '  File "/opt/venv/lib/python3.11/site-packages/verl/trainer/main_ppo.py", line 317, in run\n'
        "    trainer.init_workers()\n"
        "ValueError: real_train_batch_size (60) must be divisible by minimal possible batch size (8)\n\n"
        "Set the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace.\n")
    assert (logs / "attempt-1.log").stat().st_size > 64 * 1024
    ray.set(sid, RayJobStatus.FAILED, driver_exit_code=1, error_type="JOB_ENTRYPOINT_COMMAND_ERROR")
    MonitorActiveTasks(ctx).run_once()
    t = task(ctx, tid)
    want = "exit code 1: ValueError: real_train_batch_size (60) must be divisible by minimal possible batch size (8)"
    assert (t.status, t.termination_reason, t.status_message) == ("FAILED", "EXIT_NONZERO", want)
    assert attempts(ctx, tid)[0].message == want
    # issue 37: "exit code N:" is ours, coded; the exception's text is the program's, a parameter as written
    cause = want.removeprefix("exit code 1: ")
    assert (t.status_message_code, t.status_message_params) == ("status.exit_code_cause", {"exit_code": 1,
                                                                                           "cause": cause})
    with ctx.db.session() as s:
        end = s.scalars(select(TaskEventModel).where(TaskEventModel.task_id == tid)
                        .order_by(TaskEventModel.id.desc())).first()
    assert end.message == f"{want}\nhint: {t.failure_hint}"
    assert (end.message_code, end.message_params) == ("status.hinted", {
        "message": {"code": "status.exit_code_cause", "exit_code": 1, "cause": cause}, "hint": t.failure_hint})


def test_nonzero_exit_without_a_traceback_keeps_the_plain_message(ctx, ray):
    tid, sid = submitted(ctx, ray)
    logs = ctx.settings.root / "users" / "alice" / "jobs" / tid / "logs"
    logs.mkdir(parents=True)
    (logs / "attempt-1.log").write_text("step:1 - a:1\nall good\n")
    ray.set(sid, RayJobStatus.FAILED, driver_exit_code=3)
    MonitorActiveTasks(ctx).run_once()
    t = task(ctx, tid)
    assert (t.status_message, t.failure_kind) == ("exit code 3", None)


def test_a_sigkill_without_a_traceback_is_named_a_host_oom_with_its_hint(ctx, ray):
    tid, sid = submitted(ctx, ray)
    logs = ctx.settings.root / "users" / "alice" / "jobs" / tid / "logs"
    logs.mkdir(parents=True)
    (logs / "attempt-1.log").write_text("step:1 - a:1\nKilled\n")
    ray.set(sid, RayJobStatus.FAILED, driver_exit_code=137)
    MonitorActiveTasks(ctx).run_once()
    t = task(ctx, tid)
    assert t.status_message.startswith("exit code 137: the process was killed (SIGKILL)"), t.status_message
    assert t.failure_kind == "host_oom" and "memory_per_node" in t.failure_hint


def test_exit_code_from_status_json_when_ray_has_none(ctx, ray):
    tid, sid = submitted(ctx, ray)
    jd = ctx.settings.root / "users" / "alice" / "jobs" / tid
    jd.mkdir(parents=True)
    (jd / "status.json").write_text(json.dumps({"attempt": 1, "exit_code": 7, "node_id": "n7", "hostname": "h7"}))
    ray.set(sid, RayJobStatus.FAILED, message="Job entrypoint command failed")
    MonitorActiveTasks(ctx).run_once()
    t = task(ctx, tid)
    assert (t.termination_reason, t.status_message) == ("EXIT_NONZERO", "exit code 7")
    a = attempts(ctx, tid)[0]
    assert (a.hostname, a.node_id) == ("h7", "n7")


def test_a_forged_status_json_is_read_field_by_field_and_stores_nothing_of_the_wrong_type(ctx, ray):
    """The task can rewrite its status.json: a field of the wrong type or size is dropped (core/launch.
    AttemptStatus.parse), never written into the attempt's row (PostgreSQL would refuse a list for node_id,
    and the monitor's pass would fail for every task) nor trusted for the exit code."""
    tid, sid = submitted(ctx, ray)
    jd = ctx.settings.root / "users" / "alice" / "jobs" / tid
    jd.mkdir(parents=True)
    (jd / "status.json").write_text(json.dumps({
        "attempt": 1, "exit_code": "0", "node_id": ["n7"], "hostname": {"h": 7}, "cuda_visible_devices": 5,
        "started_at": 123, "finished_at": "9" * 5000, "limit_hit": "memory", "oom_kills": "many",
        "memory_limit": True, "usage": [1], "error": 42, "log_error": ["x"], "heartbeat_s": "15"}))
    ray.set(sid, RayJobStatus.FAILED, message="Job entrypoint command failed", driver_exit_code=3)
    MonitorActiveTasks(ctx).run_once()
    t = task(ctx, tid)
    assert (t.status, t.termination_reason) == ("FAILED", "EXIT_NONZERO") and t.status_message.startswith("exit code 3")
    a = attempts(ctx, tid)[0]
    assert (a.hostname, a.node_id, a.exit_code) == (None, None, 3) and "visible" not in (a.gpus or {})
    assert AttemptStatus.parse({"attempt": True}, 1) is None and AttemptStatus.parse([1], 1) is None
    assert AttemptStatus.parse({"attempt": 1, "hostname": "h" * 10_000}, 1).hostname == "h" * 255


def test_node_lost_retries_as_a_new_attempt_then_gives_up(ctx, ray):
    tid, sid = submitted(ctx, ray, gpus=2)
    mon, sub = MonitorActiveTasks(ctx), SubmitQueuedTasks(ctx)
    ray.set(sid, RayJobStatus.RUNNING, driver_node_id="w1")
    mon.run_once()
    ray.kill_node("w1")  # Ray still says RUNNING, but the node is dead
    mon.run_once()
    t = task(ctx, tid)
    assert (t.status, t.termination_reason) == ("QUEUED", "NODE_LOST")
    assert "retrying as attempt 2" in t.status_message
    assert ray.stops == [sid]
    assert ray.invalidations == 1  # the submit loop re-reads the nodes before placing the retry
    sub.run_once()
    assert task(ctx, tid).pending_reason == "no worker nodes in the Ray cluster"
    ray.add_node("w1b", 4)
    sub.run_once()
    assert task(ctx, tid).submission_id == f"{tid}-a2"
    ray.set(f"{tid}-a2", RayJobStatus.FAILED, error_type="JOB_SUPERVISOR_ACTOR_DIED", message="node died")
    mon.run_once()
    t = task(ctx, tid)
    assert (t.status, t.termination_reason) == ("FAILED", "NODE_LOST")
    assert "no retries left" in t.status_message
    assert [(a.attempt, a.status, a.termination_reason) for a in attempts(ctx, tid)] == [
        (1, "FAILED", "NODE_LOST"), (2, "FAILED", "NODE_LOST")]
    # the QUEUED → QUEUED note: the retry looked for a checkpoint to resume from (scheduler/autoresume.py)
    assert statuses(ctx, tid) == ["QUEUED", "SUBMITTED", "RUNNING", "QUEUED", "QUEUED", "SUBMITTED", "FAILED"]
    with ctx.db.session() as s:
        notes = [e.message for e in s.query(TaskEventModel).filter_by(task_id=tid, from_status="QUEUED",
                                                                      to_status="QUEUED")]
    assert notes == [f"attempt 2 starts over: no complete checkpoint in $HOME/jobs/{tid}/checkpoints"]


def test_start_timeout_stops_the_job(ctx, ray, clock):
    tid, sid = submitted(ctx, ray)
    clock.t = task(ctx, tid).submitted_at  # stamped on the real clock, which ran on (a loaded machine: seconds)
    mon = MonitorActiveTasks(ctx)
    clock.advance(30)
    mon.run_once()
    assert task(ctx, tid).status == "SUBMITTED"
    clock.advance(31)
    mon.run_once()
    t = task(ctx, tid)
    assert (t.status, t.termination_reason) == ("FAILED", "START_TIMEOUT")
    assert ray.stops == [sid]


def test_running_job_ray_forgot_is_ray_job_lost_and_retried(ctx, ray):
    tid, sid = submitted(ctx, ray)
    ray.set(sid, RayJobStatus.RUNNING)
    mon = MonitorActiveTasks(ctx)
    mon.run_once()
    del ray.jobs[sid]
    mon.run_once()
    t = task(ctx, tid)
    assert (t.status, t.termination_reason) == ("QUEUED", "RAY_JOB_LOST")


def test_monitor_changes_nothing_while_ray_is_down(ctx, ray):
    tid, sid = submitted(ctx, ray)
    ray.down = True
    assert MonitorActiveTasks(ctx).run_once() == 0
    assert task(ctx, tid).status == "SUBMITTED"


def test_finished_job_record_is_kept_within_retention(ctx, ray):
    """Ray's record of an ended job stays (the Ray dashboard, `ray job logs`) until ray_job_retention_days;
    tests/scheduler/test_retention_janitor.py covers the deletion."""
    tid, sid = submitted(ctx, ray)
    mon = MonitorActiveTasks(ctx)
    ray.set(sid, RayJobStatus.SUCCEEDED, driver_exit_code=0)
    mon.run_once()
    mon.janitor.run_once(force=True)
    assert sid in ray.jobs and ray.deleted == []


def test_janitor_leaves_jobs_it_does_not_own(ctx, ray):
    from argus.cluster.types import JobInfo

    ray.jobs["someone-else"] = JobInfo("someone-else", RayJobStatus.SUCCEEDED, metadata={"argus_task_id": "x"})
    ray.jobs["plain"] = JobInfo("plain", RayJobStatus.SUCCEEDED)
    assert MonitorActiveTasks(ctx).janitor.run_once(force=True) == 0
    assert ray.deleted == []


# ---------------------------------------------------------------- cancel: tests/scheduler/test_cancel.py


# ---------------------------------------------------------------- runner


def test_runner_waits_for_ray_before_recovery_and_then_schedules(ctx, ray):
    uid = add_user(ctx, "alice")
    tid = add_task(ctx, uid)
    ray.down = True
    runner = SchedulerRunner(ctx)
    runner.run_pass()
    assert not runner.recovered
    assert task(ctx, tid).pending_reason == "Ray cluster unreachable: connection refused"
    ray.down = False
    runner.run_pass()
    assert runner.recovered and task(ctx, tid).status == "SUBMITTED"


def test_runner_thread_is_woken_by_events_and_stops_cleanly(ctx, ray):
    import asyncio

    from argus.scheduler.runner import SchedulerComponent

    ctx.settings = ctx.settings.model_copy(update={"scheduler_tick_s": 30.0})  # only a wake can run a pass soon
    runner = SchedulerRunner(ctx)
    comp = SchedulerComponent(runner)
    asyncio.run(comp.start())
    try:
        wait_until(lambda: runner.passes >= 1, 5, every=0.01, what="the first pass")
        uid = add_user(ctx, "alice")
        tid = add_task(ctx, uid)
        runner.wake()
        wait_until(lambda: task(ctx, tid).status == "SUBMITTED", 5, every=0.01,
                   what="a wake did not trigger a pass")
    finally:
        asyncio.run(comp.stop())
    assert not runner._thread.is_alive()


def test_ray_endpoints_from_settings(settings):
    from argus.scheduler.wiring import ray_endpoints

    assert ray_endpoints(settings) == ("127.0.0.1:6380", "http://127.0.0.1:8265")
    s = settings.model_copy(update={"ray_address": "10.0.0.5:6379", "ray_dashboard_port": 9000})
    assert ray_endpoints(s) == ("10.0.0.5:6379", "http://10.0.0.5:9000")
    s = settings.model_copy(update={"ray_dashboard_url": "http://head:8265/"})
    assert ray_endpoints(s)[1] == "http://head:8265"


def test_runner_polls_faster_while_a_task_starts(ctx, ray):
    from argus.scheduler.runner import SchedulerRunner

    runner = SchedulerRunner(ctx)
    runner.run_pass()
    assert runner.next_tick() == ctx.settings.scheduler_tick_s
    submitted(ctx, ray, gpus=2)
    runner.run_pass()
    assert runner.monitor.starting == 1
    assert runner.next_tick() == ctx.settings.scheduler_fast_tick_s < ctx.settings.scheduler_tick_s


def test_a_failing_loop_does_not_stop_submission(ctx, ray):
    from argus.scheduler.runner import SchedulerRunner

    runner = SchedulerRunner(ctx)
    runner.run_pass()

    def broken() -> int:
        raise RuntimeError("Ray refused to stop an orphan")

    runner.cancel.run_once = broken  # type: ignore[method-assign]
    runner.monitor.run_once = broken  # type: ignore[method-assign]
    uid = add_user(ctx, "alice")
    tid = add_task(ctx, uid)
    runner.run_pass()
    assert task(ctx, tid).status == "SUBMITTED"
