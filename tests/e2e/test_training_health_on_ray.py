"""Training health on the real local Ray cluster (issue 24): stalled runs caught, resumed runs checked.

The job is ``argus.jobs.steps``: it prints verl's ``step:N`` lines and writes verl-layout checkpoints;
``hang_at=K`` makes it print step K and then nothing, alive, like a rank stuck in a collective;
``resume_skew`` makes a resumed run start at the wrong step. The stall limits are seconds here
(``stall_after: 4``); the cluster defaults are 30 min and 90 min before the first step.
"""

from __future__ import annotations

import pytest

from tests.e2e.stack import Stack, spec, submit, wait_status
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e

STEPS = "python3 -m argus.jobs.steps trainer.default_local_dir=ck trainer.total_training_steps=8 step_seconds=0.2"


def events(c, tid: str) -> list[str]:  # noqa: ANN001
    return [e["message"] or "" for e in c.get(f"/api/v2/tasks/{tid}/events").json()]


def wait_event(c, tid: str, text: str, timeout: float = 60.0) -> list[str]:  # noqa: ANN001
    seen: dict[str, list[str]] = {}

    def told() -> list[str] | None:
        said = seen["events"] = events(c, tid)
        return said if any(text in m for m in said) else None

    return wait_until(told, timeout, every=0.3, what=lambda: f"{text!r} in the events: {seen.get('events')}")


def test_a_hung_run_is_stalled_and_kept(stack: Stack) -> None:
    alice = stack.user("alice")
    tid = submit(alice, spec(f"{STEPS} hang_at=3") + "stall_after: 4\n")
    wait_status(alice, tid, "RUNNING", timeout=60)
    said = wait_event(alice, tid, "STALLED: no progress for", timeout=60)
    stall = next(m for m in said if m.startswith("STALLED"))
    assert "last step 3" in stall and "left running (on_stall: keep)" in stall, stall
    t = alice.get(f"/api/v2/tasks/{tid}").json()
    assert t["status"] == "RUNNING" and t["status_message"].startswith("STALLED: no progress for")
    assert sum(m.startswith("STALLED") for m in events(alice, tid)) == 1, "once per silence"
    # its driver captured every process's stack (launcher/stacks.py): a follow-up event names the file in her home
    said = wait_event(alice, tid, "stacks of the stalled attempt", timeout=90)
    note = next(m for m in said if m.startswith("stacks of the stalled attempt"))
    assert note.endswith(" in your home") and f"jobs/{tid}/stacks/attempt-1-" in note, note
    path = note.rsplit(": ", 1)[1].removesuffix(" in your home")
    r = alice.get("/api/v2/files/content", params={"path": f"/{path}"})
    assert r.status_code == 200 and "main (" in r.text and "steps.py" in r.text, r.text[:3000]  # where it hangs
    assert sum(m.startswith("STALLED") for m in events(alice, tid)) == 1
    assert alice.post(f"/api/v2/tasks/{tid}/cancel").status_code in (200, 202)
    wait_status(alice, tid, "CANCELED", timeout=60)


def test_on_stall_cancel_ends_it_stalled(stack: Stack) -> None:
    alice = stack.user("alice")
    tid = submit(alice, spec(f"{STEPS} hang_at=2") + "stall_after: 3\non_stall: cancel\n")
    t = wait_status(alice, tid, "FAILED", timeout=90)
    assert t["termination_reason"] == "STALLED", t
    assert "no progress for" in t["status_message"] and "on_stall: cancel" in t["status_message"]


def test_on_stall_requeue_resumes_from_the_checkpoint_and_checks_the_first_step(stack: Stack) -> None:
    alice = stack.user("alice")
    tid = submit(alice, spec(f"{STEPS} trainer.save_freq=2 hang_at=4") + "stall_after: 3\non_stall: requeue\n")
    t = wait_status(alice, tid, "SUCCEEDED", timeout=150)
    assert [(a["attempt"], a["termination_reason"]) for a in t["attempts"]] == [(1, "STALLED"), (2, "SUCCEEDED")]
    said = events(alice, tid)
    assert any("attempt 2 resumes from checkpoint global_step_4" in m and "after the stall" in m for m in said), said
    assert any("resumed from checkpoint global_step_4: first step 5, as expected" in m for m in said), said


def test_a_resume_that_skips_steps_is_flagged(stack: Stack) -> None:
    alice = stack.user("alice")
    first = submit(alice, spec(f"{STEPS} trainer.save_freq=2"))
    wait_status(alice, first, "SUCCEEDED", timeout=90)
    # resume from its global_step_4, but the job skips two steps after loading the checkpoint
    skewed = submit(alice, spec(f"{STEPS} trainer.save_freq=2 resume_skew=2 trainer.resume_mode=resume_path "
                                f"trainer.resume_from_path=$HOME/jobs/{first}/ck/global_step_4"))
    wait_status(alice, skewed, "SUCCEEDED", timeout=90)
    said = events(alice, skewed)
    assert any("skipped steps: its first step is 7, the checkpoint ends at 4 (steps 5–6 never ran)" in m
               for m in said), said


def test_a_tasks_own_cpu_and_memory_are_sampled(stack: Stack) -> None:
    """The driver samples its task's process tree every 15 s; a CPU node has no GPU figure (nothing faked)."""
    alice = stack.user("alice")
    tid = submit(alice, spec("python3 -m argus.jobs.steps trainer.total_training_steps=40 trainer.save_freq=0 "
                             "step_seconds=1 busy=1 hold_mib=200"))
    wait_status(alice, tid, "RUNNING", timeout=60)
    seen: dict[str, dict] = {}

    def two_samples() -> dict | None:
        r = seen["resources"] = alice.get(f"/api/v2/tasks/{tid}/resources").json()
        return r if len(r["samples"]) >= 2 else None

    r = wait_until(two_samples, 60, every=1, what=lambda: f"two samples; {seen.get('resources')}")
    last = r["samples"][-1]
    assert 0.5 <= last["cpu"] <= 1.5, r  # one busy core
    assert last["rss"] >= 200 * 2**20, r  # the bytearray, in the task's own tree
    assert "gpu" not in last and r["summary"]["gpu_util_mean"] == [] and r["summary"]["idle_since"] is None
    assert r["summary"]["samples"] >= 2 and r["summary"]["rss_max"] >= 200 * 2**20
    other = stack.user("bob")
    assert other.get(f"/api/v2/tasks/{tid}/resources").status_code == 404
    with stack.server.admin() as admin:  # /metrics: the running task's newest sample (no GPU series on CPU)
        text = admin.get("/metrics").text
    line = next(x for x in text.splitlines() if x.startswith("argus_task_memory_bytes{") and tid in x)
    assert float(line.rsplit(" ", 1)[1]) >= 200 * 2**20, line
    cpus = [x for x in text.splitlines() if x.startswith("argus_task_cpus{") and f'task="{tid}"' in x]
    assert len(cpus) == 1 and 'user="alice"' in cpus[0] and 'team=""' in cpus[0], cpus  # labels in any order
    assert "argus_task_gpu_utilization_percent{" not in text
    alice.post(f"/api/v2/tasks/{tid}/cancel")
    wait_status(alice, tid, "CANCELED", timeout=60)


def test_a_task_that_outgrows_its_memory_is_a_host_oom_with_its_cause(stack: Stack) -> None:
    """memory_per_node is a limit (a memory cgroup per attempt): the kernel kills inside the task only, and the
    failure says so for certain, typed, with the hint."""
    alice = stack.user("alice")
    tid = submit(alice, spec("python3 -m argus.jobs.steps trainer.total_training_steps=3 trainer.save_freq=0 "
                             "hold_mib=600") + "memory_per_node: 256Mi\n")
    t = wait_status(alice, tid, "FAILED", timeout=90)
    log = alice.get(f"/api/v2/tasks/{tid}/logs").text
    if "is not enforced on this node" in log:
        pytest.skip(f"this machine offers no writable memory cgroup: {log[-300:]}")
    assert t["termination_reason"] == "EXIT_NONZERO" and t["failure_kind"] == "host_oom", t
    assert "the kernel's OOM killer killed 1 process of the task: it outgrew its memory limit of 256 MiB " \
           "(memory_per_node)" in t["status_message"], t
    assert "memory_per_node" in t["failure_hint"]
    assert "[argus] the kernel's OOM killer killed 1 process of the task" in log


@pytest.mark.parametrize(("args", "kind", "text"), [
    ("trainer.resume_mode=resume_path trainer.resume_from_path=$HOME/jobs/none/ck/global_step_2", "missing_file",
     "No such file or directory"),
    ("trainer.total_training_steps=six", "python_exception", "ValueError: invalid literal for int()"),
])
def test_a_failure_is_typed_with_its_hint_on_ray(stack: Stack, args: str, kind: str, text: str) -> None:
    alice = stack.user("alice")
    tid = submit(alice, spec(f"python3 -m argus.jobs.steps {args}"))
    t = wait_status(alice, tid, "FAILED", timeout=90)
    assert t["failure_kind"] == kind and text in t["status_message"], t
    assert t["failure_hint"], t
    events = alice.get(f"/api/v2/tasks/{tid}/events").json()
    assert any(f"hint: {t['failure_hint']}" in (e["message"] or "") for e in events), events
