"""The scheduler's own words as codes (issue 37): each new code renders to exactly the English it replaced (scripts
and the timeline read it), and both WebUI catalogs say it (the zh one in Chinese)."""

from __future__ import annotations

import re

import pytest

from argus.core import log_write
from argus.core.gpu_free import HeldGpu
from argus.core.messages import EN, msg, part, render
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
