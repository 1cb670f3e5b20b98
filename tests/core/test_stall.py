"""core.stall: when a running task is stalled, durations as users write them, the resume verdict."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from argus.core.stall import Progress, format_duration, parse_duration, resume_verdict, stalled
from argus.core.taskspec import parse_taskspec

T0 = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


@pytest.mark.parametrize(("text", "seconds"), [("30m", 1800), ("2h", 7200), ("90s", 90), ("1.5h", 5400),
                                               (600, 600), ("0", 0), ("45 min", 2700), ("1d", 86400)])
def test_durations(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("bad", ["30x", "-5", True, "", "soon", 10**9, float("nan")])
def test_bad_durations_name_the_fix(bad):
    with pytest.raises(ValueError, match="duration such as|≥ 0|at most"):
        parse_duration(bad)


def test_spec_fields_are_checked_with_field_value_and_fix():
    errs = parse_taskspec({"kind": "advanced", "nnodes": 1, "n_gpus_per_node": 0, "command": "python3 -m x",
                           "stall_after": "soon", "on_stall": "panic"})
    assert isinstance(errs, list)
    by = {e.field: e for e in errs}
    assert by["stall_after"].value == "soon" and "'30m'" in by["stall_after"].message
    assert "keep" in by["on_stall"].message and "requeue" in by["on_stall"].message


def test_silence_after_steps_uses_stall_after():
    p = Progress(started_at=at(0), output_at=at(100), step=7, step_at=at(100), first_step=1)
    assert stalled(p, at(100 + 1799), after_s=1800, first_step_s=5400) is None
    s = stalled(p, at(100 + 1800), after_s=1800, first_step_s=5400)
    assert s is not None and not s.before_first_step and s.limit_s == 1800
    assert s.message(p) == "no progress for 30 min (no new step and no output; last step 7; limit 30 min)"


def test_output_without_steps_is_progress():
    p = Progress(started_at=at(0), output_at=at(2000), step=7, step_at=at(100), first_step=1)
    assert stalled(p, at(2100), after_s=1800, first_step_s=5400) is None  # it prints: not stalled


def test_before_the_first_step_the_longer_limit_applies():
    p = Progress(started_at=at(0), output_at=at(60))
    assert stalled(p, at(60 + 1800), after_s=1800, first_step_s=5400) is None  # loading a big model
    s = stalled(p, at(60 + 5400), after_s=1800, first_step_s=5400)
    assert s is not None and s.before_first_step and "before its first step; no step yet" in s.message(p)


def test_zero_means_never():
    p = Progress(started_at=at(0), step=1, step_at=at(0), first_step=1)
    assert stalled(p, at(10**6), after_s=0, first_step_s=0) is None


def test_resume_verdicts():
    assert resume_verdict(121, 121) is None
    assert "skipped steps: its first step is 241, the checkpoint ends at 120 (steps 121–240 never ran)" in \
        resume_verdict(121, 241)
    assert "repeated steps: its first step is 1, the checkpoint ends at 120 (steps 1–120 ran twice" in \
        resume_verdict(121, 1)


def test_format_duration():
    assert [format_duration(s) for s in (45, 600, 3600 * 2 + 300)] == ["45 s", "10 min", "2 h 05 min"]


def test_a_validation_line_is_not_a_training_step():
    """Resumed from global_step_2, verl logs its validation as step:2 before training step 3 (the first real
    resumed GRPO run, issue 34): the resume check and the ETA count training steps only."""
    from argus.core.metrics import is_training_step, parse_metric_line

    val = parse_metric_line("step:2 - val-aux/openai/gsm8k/reward/mean@1:np.float64(0.0) - val-core/x/acc/mean@1:0.0")
    train = parse_metric_line("step:3 - actor/pg_loss:-0.02 - val-core/x/acc/mean@1:0.1 - timing_s/step:2.7")
    old = parse_metric_line("step:0 - val/test_score/openai/gsm8k:0.0")
    assert val and train and old
    assert not is_training_step(val[1]) and not is_training_step(old[1]) and is_training_step(train[1])
