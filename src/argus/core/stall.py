"""When is a running task stalled, and did a resumed run start where its checkpoint ended (pure)?

A stalled run holds its GPUs and produces nothing: an NCCL collective that never returns, a
rollout engine waiting on a dead worker, a dataloader deadlock. verl prints a ``step:N`` line per
step and its workers print as they go, so the signal is the attempt's log: a task is stalled when
it has printed no new step **and** no output at all for ``stall_after`` seconds (both measured on
the server's clock, from when the server saw them change). Before the first step the limit is
``stall_first_step`` instead: loading a 70B model, compiling kernels and starting the rollout
engine can take far longer than one step, and that silence is not a stall.

What to do is the spec's ``on_stall``: ``keep`` (say so, and notify), ``cancel`` (stop it and end
it ``STALLED``), or ``requeue`` (stop it and run it again, resuming from its latest complete
checkpoint when it has one). A task that prints again after a stall is "progressing again".

Durations are written like ``30m``, ``2h``, ``90s`` or a number of seconds.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import datetime

from argus.core.messages import Invalid, part, render

STALL_ACTIONS = ("keep", "cancel", "requeue")
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|sec|m|min|h|d)?\s*$", re.I)
_UNIT_S = {"": 1, "s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "d": 86400}
MAX_STALL_S = 7 * 86400  # a week: more is "never", which 0 already says


def parse_duration(value: object) -> int:
    """Seconds from ``30m`` / ``2h`` / ``90s`` / ``1.5h`` or a number of seconds; 0 means "never".

    Raises ValueError with a message that names the fix."""
    if isinstance(value, bool):
        raise Invalid("spec.duration")
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str) and (m := _DURATION.match(value)):
        seconds = float(m.group(1)) * _UNIT_S[(m.group(2) or "").lower()]
    else:
        raise Invalid("spec.duration")
    if not math.isfinite(seconds) or seconds < 0:
        raise Invalid("spec.duration_negative")
    if seconds > MAX_STALL_S:
        raise Invalid("spec.duration_too_long", days=MAX_STALL_S // 86400)
    return int(seconds)


def format_duration(seconds: float) -> str:
    """``23 min``, ``2 h 05 min``, ``45 s``: for messages."""
    s = int(seconds)
    if s < 120:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


@dataclass(frozen=True)
class Progress:
    """What the server has seen of one attempt: when its log last grew, its last step and when that came."""

    started_at: datetime  # when the server first watched this attempt run
    output_at: datetime | None = None  # last time the log grew
    step: int | None = None  # last verl step seen
    step_at: datetime | None = None  # when that step was first seen
    first_step: int | None = None  # the first step this attempt logged


@dataclass(frozen=True)
class Stall:
    silent_s: float  # how long nothing happened
    limit_s: int  # the limit that applied
    before_first_step: bool

    def message(self, p: Progress) -> str:
        said = self.part(p)
        return render(said["code"], said)

    def part(self, p: Progress) -> dict:
        """The stall as a nested message (core/messages.py ``part.stall``): the page says it in its language."""
        return part("part.stall", silent=format_duration(self.silent_s), limit=format_duration(self.limit_s),
                    what=part("part.stall_before_first" if self.before_first_step else "part.stall_no_output"),
                    last=part("part.stall_last_step", step=p.step) if p.step is not None else part("part.stall_no_step"))


def stalled(p: Progress, now: datetime, *, after_s: int, first_step_s: int) -> Stall | None:
    """The stall, if the attempt has been silent (no step, no output) past its limit; 0 limits never stall."""
    before_first = p.step is None
    limit = first_step_s if before_first else after_s
    if limit <= 0:
        return None
    last = max(t for t in (p.started_at, p.output_at, p.step_at) if t is not None)
    silent = (now - last).total_seconds()
    return Stall(silent, limit, before_first) if silent >= limit else None


def resume_verdict(expected_first: int, first_logged: int) -> str | None:
    """None when a resumed attempt's first logged step is the checkpoint's step + 1; else what went wrong."""
    said = resume_problem(expected_first, first_logged)
    return None if said is None else render(said["code"], said)


def resume_problem(expected_first: int, first_logged: int) -> dict | None:
    """:func:`resume_verdict` as a nested message (``part.resume_skipped`` / ``part.resume_repeated``)."""
    if first_logged == expected_first:
        return None
    if first_logged > expected_first:
        return part("part.resume_skipped", first=first_logged, last=expected_first - 1, expected=expected_first,
                    before=first_logged - 1)
    return part("part.resume_repeated", first=first_logged, last=expected_first - 1)
