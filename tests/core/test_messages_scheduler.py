"""The scheduler's own words as codes (issue 37): each new code renders to exactly the English it replaced (scripts
and the timeline read it), and both WebUI catalogs say it (the zh one in Chinese)."""

from __future__ import annotations

import re

import pytest

from argus.core import log_write
from argus.core.gpu_free import HeldGpu
from argus.core.messages import EN, known_fields, known_message, msg, part, render
from argus.core.stall import resume_problem, resume_verdict
from argus.web import i18n

U = "GPU-5d7f3a1e-0000-1111-2222-333344445555"

# every code this stop added, with a message that uses it and the English the code replaced (the old f-string)
CASES = {
    "status.submitted": (msg("status.submitted", sid="argus-t-1"), "submitted Ray job argus-t-1"),
    "status.adopted": (msg("status.adopted", sid="argus-t-1"), "adopted Ray job argus-t-1"),
    "status.adopted_after_restart": (msg("status.adopted_after_restart", sid="argus-t-1"),
                                     "adopted Ray job argus-t-1 after a restart"),
    "status.ray_refused": (msg("status.ray_refused", error="bad runtime_env"), "Ray refused the job: bad runtime_env"),
    "queue.requeued_after_stall": (msg("queue.requeued_after_stall"), "requeued after a stall"),
    "queue.retrying_after_failure": (msg("queue.retrying_after_failure"), "retrying after an infrastructure failure"),
    "status.resume_disabled": (msg("status.resume_disabled", attempt=2),
                               "attempt 2 starts over: the command sets trainer.resume_mode=disable"),
    "status.resume_no_checkpoint": (msg("status.resume_no_checkpoint", attempt=3, folder="$HOME/jobs/t/checkpoints"),
                                    "attempt 3 starts over: no complete checkpoint in $HOME/jobs/t/checkpoints"),
    "status.resume_from": (msg("status.resume_from", attempt=2, checkpoint="global_step_8",
                               path="$HOME/jobs/t/checkpoints/global_step_8", after=part("part.after_node_lost")),
                           "attempt 2 resumes from checkpoint global_step_8 ($HOME/jobs/t/checkpoints/global_step_8) "
                           "after the lost node: trainer.resume_mode=resume_path "
                           "trainer.resume_from_path=…/global_step_8"),
    "part.after_ray_lost": (msg("status.resume_from", attempt=2, checkpoint="global_step_1", path="p",
                                after=part("part.after_ray_lost")),
                            "attempt 2 resumes from checkpoint global_step_1 (p) after Ray lost the job: "
                            "trainer.resume_mode=resume_path trainer.resume_from_path=…/global_step_1"),
    "part.after_stall": (msg("status.resume_from", attempt=4, checkpoint="global_step_1", path="p",
                             after=part("part.after_stall")),
                         "attempt 4 resumes from checkpoint global_step_1 (p) after the stall: "
                         "trainer.resume_mode=resume_path trainer.resume_from_path=…/global_step_1"),
    "status.resumed_as_expected": (msg("status.resumed_as_expected", checkpoint="global_step_120", first=121),
                                   "resumed from checkpoint global_step_120: first step 121, as expected"),
    "status.resume_warning": (msg("status.resume_warning", problem=resume_problem(121, 241)),
                              "warning: the resumed run skipped steps: its first step is 241, the checkpoint ends at "
                              "120 (steps 121–240 never ran)"),
    "status.resume_check": (msg("status.resume_check", problem=resume_problem(121, 1)),
                            "resume check: the resumed run repeated steps: its first step is 1, the checkpoint ends "
                            "at 120 (steps 1–120 ran twice; did it load the checkpoint?)"),
    "status.stacks_no_answer": (msg("status.stacks_no_answer", seconds="90"),
                                "no stacks of the stalled attempt: its driver did not answer within 90 s"),
    "status.stacks_file": (msg("status.stacks_file", processes=7, dumped=3, python=4,
                               file="jobs/t/stacks/attempt-1-20261207T100000Z.txt"),
                           "stacks of the stalled attempt's 7 processes (3 of 4 Python ones with their stack): "
                           "jobs/t/stacks/attempt-1-20261207T100000Z.txt in your home"),
    "status.stacks_none": (msg("status.stacks_none", error="py-spy is not installed"),
                           "no stacks of the stalled attempt: py-spy is not installed"),
    "part.no_reason_given": (msg("status.stacks_none", error=part("part.no_reason_given")),
                             "no stacks of the stalled attempt: no reason given"),
    "status.idle_gpus": (msg("status.idle_gpus", gpus=8, pct="5", duration="10 min"),
                         "idle GPUs: all 8 of this task's GPUs below 5 % for 10 min (the task is left running)"),
    "status.gpus_busy_again": (msg("status.gpus_busy_again"), "GPUs busy again"),
    "status.gpus_busy_again_after": (msg("status.gpus_busy_again_after"), "GPUs busy again after an idle spell"),
}


def _old_held_event(h: HeldGpu) -> str:
    """HeldGpu.event as it was written before the codes (core/gpu_free.py)."""
    name = f"GPU {h.index} ({h.uuid})" if h.index is not None else f"GPU {h.uuid}"
    mib = h.used_mib
    memory = ("an unknown amount of memory" if mib is None
              else f"{mib / 1024:g} GiB" if mib >= 1024 and mib % 256 == 0 else f"{mib} MiB")
    pids = ", ".join(str(p) for p in h.pids) or "?"
    where = f" on {h.hostname}" if h.hostname else ""
    return (f"{name}{where} still has pid{'s' if len(h.pids) > 1 else ''} {pids} using {memory} after the task "
            f"ended; held back (no new task is placed on it until the node agent finds it free)")


HELD = [HeldGpu("node-a", U, 1, "gpu-host", "t", 2, (4242,), 2048, "now"),
        HeldGpu("node-a", U, None, "", "t", 1, (1, 2), None, "now"),
        HeldGpu("node-a", U, 0, "h", "t", 1, (), 1000, "now")]

# the driver's one line (launcher/driver.py _log_failed: tasklog's summary and how the task ended)
LOG_WHYS = [
    "no space left on $HOME/jobs/t/logs; 4.2 MiB (5123 lines) of output not written; the task was stopped (exit code 1)",
    "disk quota exceeded on $HOME/jobs/t/logs; the task was not started",
    "read-only file system at $HOME/jobs/t; 812 bytes (1 line) of output not written; the task was not started",
    "permission denied writing to $HOME/jobs/t/logs; the task was stopped (exit code -15)",
    "I/O error writing to $HOME/jobs/t/logs; the task was not started",
    "file too large in $HOME/jobs/t/logs; 1.0 GiB (2 lines) of output not written; the task was stopped (exit code 2)",
    "cannot write to $HOME/jobs/t/logs: Stale file handle; the task was not started",
]


@pytest.mark.parametrize("code", sorted(CASES))
def test_each_new_code_renders_to_the_english_it_replaced(code: str) -> None:
    said, old = CASES[code]
    assert said.text == old
    assert render(said.code, said.params) == old
    assert code == said.code or code in repr(said.params)


def test_a_held_gpus_event_is_coded_and_says_what_it_always_said() -> None:
    codes = set()
    for h in HELD:
        said = h.said()
        assert said.text == h.event() == _old_held_event(h)
        codes |= {said.code} | set(re.findall(r"'code': '([\w.]+)'", repr(said.params)))
    assert codes == {"status.gpu_held", "status.gpu_held_on", "part.gpu_index", "part.gpu_uuid", "part.pid",
                     "part.pids", "part.memory_unknown"}


def test_a_log_write_failure_is_coded_piece_by_piece_with_the_same_english() -> None:
    codes = set()
    for why in LOG_WHYS:
        said = log_write.said(why)
        assert said.text == log_write.task_message(why) == f"LOG_WRITE_FAILED: {why}"
        assert isinstance(said.params["why"], list), why  # every piece known again
        codes |= {said.code} | {p["code"] for p in said.params["why"]}
    assert codes == {"status.log_write_failed"} | {c for c in EN if c.startswith("part.log_")}
    # a line the driver did not write that way (clipped, another program's words) is the parameter as written
    odd = "no space left on $HOME/jobs/t/logs; something else"
    assert log_write.said(odd).params == {"why": odd} and log_write.said(odd).text == f"LOG_WRITE_FAILED: {odd}"


def test_resume_verdicts_render_from_their_parts() -> None:
    assert resume_problem(5, 5) is None and resume_verdict(5, 5) is None
    assert resume_verdict(121, 241) == render("part.resume_skipped", resume_problem(121, 241))


def test_every_new_code_is_in_both_catalogs_and_said_in_chinese() -> None:
    new = set(CASES) | {"part.after_node_lost", "part.resume_skipped", "part.resume_repeated"} \
        | {"status.gpu_held", "status.gpu_held_on", "part.gpu_index", "part.gpu_uuid", "part.pid", "part.pids",
           "part.memory_unknown", "status.log_write_failed", "sep.why"} \
        | {c for c in EN if c.startswith(("part.log_", "priority."))} | {"part.class_name"}
    en, zh = i18n.catalog("en"), i18n.catalog("zh")
    for code in new:
        assert en[f"msg.{code}"] == EN[code], code
        assert f"msg.{code}" in zh, code
        if code not in ("part.gpu_index", "part.gpu_uuid", "part.class_name"):  # a GPU's or a class's name only
            assert re.search(r"[\u4e00-\u9fff；]", zh[f"msg.{code}"]), (code, zh[f"msg.{code}"])
    # a whole message in Chinese: the log-write failure with its pieces
    cat = {k.removeprefix("msg."): v for k, v in zh.items() if k.startswith("msg.")}
    said = log_write.said(LOG_WHYS[0])
    text = render(said.code, said.params, cat)
    assert "{" not in text and "5123" in text and "$HOME/jobs/t/logs" in text and "；" in text


# a sweep's and a pipeline's words: stored as English, served with the code known again from the text
KNOWN = {
    "sweep.canceled_by": ("sweep.", "canceled by alice"),
    "sweep.budget_reached": ("sweep.", "budget reached: the trials used 1.13 of budget_gpu_hours=1; the rest were "
                                       "stopped"),
    "sweep.every_trial_ended": ("sweep.", "every trial ended"),
    "sweep.no_trial_succeeded": ("sweep.", "no trial succeeded"),
    "pipeline.canceled_by": ("pipeline.", "canceled by alice"),
    "pipeline.skipped_needs": ("pipeline.", "skipped: a step it needs did not succeed"),
    "pipeline.gate_no_metric": ("pipeline.", "gate not passed: eval has no acc"),
    "pipeline.gate_passed": ("pipeline.", "gate passed: eval acc = 0.5, needs >= 0.4"),
    "pipeline.gate_not_passed": ("pipeline.", "gate not passed: eval acc = 0.3, needs >= 0.4"),
    "pipeline.step_failed": ("pipeline.", "step train failed: task t-1 FAILED: exit code 1"),
    "pipeline.every_step_settled": ("pipeline.", "every step settled"),
    "pipeline.registered_as_why": ("pipeline.", "registered nlp/tiny:3 as @best (its task is charged to team nlp)"),
    "pipeline.registered_as": ("pipeline.", "registered tiny:3 as @best"),
    "pipeline.registered_why": ("pipeline.", "registered nlp/tiny:3 (its task is charged to team nlp)"),
    "pipeline.registered": ("pipeline.", "registered tiny:3"),
    "pipeline.left_no": ("pipeline.", "refused when it was to start: a step it needs left no checkpoint"),
    "pipeline.refused_details": ("pipeline.", "refused when it was to start: spec is invalid (val_file: missing)"),
    "pipeline.refused": ("pipeline.", "refused when it was to start: no task t-9"),
    "pipeline.task_gone": ("pipeline.", "its task t-1 is gone"),
    "pipeline.retrying": ("pipeline.", "try 1 failed (exit code 1); retrying"),
    "pipeline.task_ended": ("pipeline.", "task t-1 CANCELED: canceled by alice"),
    "pipeline.task_ended_bare": ("pipeline.", "task t-1 FAILED"),
}


@pytest.mark.parametrize("code", sorted(KNOWN))
def test_a_sweeps_and_a_pipelines_english_is_known_again_as_its_code(code: str) -> None:
    prefix, text = KNOWN[code]
    found = known_message(text, prefix)
    assert found is not None and found.code == code, found
    assert render(found.code, found.params) == text
    assert known_fields("message", text, prefix) == {"message": text, "message_code": code,
                                                      "message_params": found.params}
    assert f"msg.{code}" in i18n.catalog("zh") and re.search(r"[\u4e00-\u9fff]", i18n.catalog("zh")[f"msg.{code}"])
    assert set(KNOWN) == {c for c in EN if c.startswith(("sweep.", "pipeline."))}


def test_the_producers_write_the_english_they_always_wrote() -> None:
    from argus.core.pipelines import Gate
    from argus.core.sweeps import Stop

    gate = Gate(step="eval", metric="acc", op=">=", value=0.4)
    assert gate.passes(0.5) == (True, "gate passed: eval acc = 0.5, needs >= 0.4")
    assert gate.passes(None) == (False, "gate not passed: eval has no acc")
    stop = Stop("t-2", rung=2, value=0.61234, rank=2, reported=2, kept=1)
    assert stop.message("val-core/acc") == ("early-stopped by its sweep at step 2: val-core/acc = 0.6123, ranked 2 "
                                            "of the 2 trials that reached that step; the best 1 go on")
    assert stop.said("val-core/acc").code == "status.early_stopped"
    budget = msg("sweep.budget_reached", used="1.13", budget="1")
    assert msg("status.sweep_stopped", message={"code": budget.code, **budget.params}).text == (
        "stopped by its sweep: " + budget.text)
    assert known_message("no such words", "pipeline.") is None
    assert known_fields("message", "no such words", "pipeline.")["message_code"] is None
