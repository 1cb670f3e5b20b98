"""The worker watchdog's decisions, as pure functions of what it observed (no I/O, no clock).

``argus worker`` (nodes/worker.py) observes the discovery file, its own raylet and whether the
head's GCS answers, then asks :func:`decide` what to do. Keeping the rules here makes every case a
row in a table test, and the log line of each decision is its ``reason``.

Rules, first match wins:

1. No usable discovery file: keep a running raylet (a shared-filesystem hiccup must not take a
   node down), otherwise wait.
2. The head marked itself stopped, or runs another Ray version: leave (stop the raylet) / wait.
   Ray refuses to mix versions, so joining would only fail over and over.
3. No raylet: join (first time, after the raylet died, or after the head moved).
4. Raylet joined to another generation or address than the file names: rejoin (the head restarted).
5. The head's GCS has not answered for ``silence_limit_s``: rejoin (Ray's raylet gives up on a
   lost GCS by itself only after ~60 s and never finds a head that came back with a new identity).
6. Otherwise stay.

Joins are paced by :class:`Backoff`: a raylet that dies soon after its start doubles the wait
before the next attempt (up to ``cap_s``); one that stayed up ``stable_s`` resets it, and so does a
new head generation in the discovery file.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from argus.nodes.discovery import STOPPED, HeadInfo


class Action(StrEnum):
    STAY = "stay"  # raylet up and joined to the current head: nothing to do
    WAIT = "wait"  # no raylet and nothing to join
    JOIN = "join"  # start a raylet against the head in the file
    REJOIN = "rejoin"  # stop the raylet, then join
    LEAVE = "leave"  # stop the raylet and wait


@dataclass(frozen=True)
class Observation:
    head: HeadInfo | None  # the discovery file now; None when missing or unusable
    raylet_alive: bool
    joined: HeadInfo | None  # the head the running (or last) raylet was started against
    head_silent_s: float  # how long the head's GCS has not answered since the last answer or join
    local_ray_version: str
    problem: str | None = None  # why ``head`` is None, for the log


@dataclass(frozen=True)
class Decision:
    action: Action
    reason: str


def decide(obs: Observation, *, silence_limit_s: float) -> Decision:
    head, alive, joined = obs.head, obs.raylet_alive, obs.joined
    if head is None:
        why = obs.problem or "no discovery file"
        return Decision(Action.STAY, f"{why}; keeping the raylet") if alive else Decision(Action.WAIT, why)
    if head.state == STOPPED:
        why = f"the head on {head.hostname} stopped at {head.stopped_at}"
        return Decision(Action.LEAVE if alive else Action.WAIT, why)
    if head.ray_version != obs.local_ray_version:
        why = f"the head runs Ray {head.ray_version}, this machine Ray {obs.local_ray_version}"
        return Decision(Action.LEAVE if alive else Action.WAIT, why)
    target = f"{head.gcs_address} (generation {head.generation})"
    if not alive:
        if joined is None:
            return Decision(Action.JOIN, f"joining the head at {target}")
        if _same_head(joined, head):
            return Decision(Action.JOIN, f"the raylet exited; joining {target} again")
        return Decision(Action.JOIN, f"the head restarted; joining {target}")
    if joined is None or not _same_head(joined, head):
        was = f"{joined.gcs_address} (generation {joined.generation})" if joined else "an unknown head"
        return Decision(Action.REJOIN, f"the head restarted: {was} -> {target}")
    if obs.head_silent_s >= silence_limit_s:
        return Decision(Action.REJOIN, f"the head at {head.gcs_address} has not answered for "
                                       f"{obs.head_silent_s:.0f} s")
    return Decision(Action.STAY, f"raylet running against {target}")


def _same_head(a: HeadInfo, b: HeadInfo) -> bool:
    return a.generation == b.generation and a.gcs_address == b.gcs_address


@dataclass
class Backoff:
    """When the next join may start; all times are the caller's monotonic seconds."""

    base_s: float = 2.0
    cap_s: float = 60.0
    stable_s: float = 30.0
    failures: int = 0
    next_at: float = 0.0
    started_at: float | None = None

    def ready(self, now: float) -> bool:
        return now >= self.next_at

    def started(self, now: float) -> None:
        self.started_at = now

    def ended(self, now: float, *, deliberate: bool = False) -> None:
        """The raylet is gone: a quick death counts as a failure and pushes the next join back."""
        lived = None if self.started_at is None else now - self.started_at
        self.started_at = None
        if deliberate or (lived is not None and lived >= self.stable_s):
            self.failures = 0
            self.next_at = now
            return
        self.failures += 1
        self.next_at = now + self.delay()

    def reset(self, now: float) -> None:
        """A new head appeared: earlier failures were about the old one, so join at once."""
        self.failures = 0
        self.next_at = now

    def delay(self) -> float:
        return 0.0 if self.failures == 0 else min(self.cap_s, self.base_s * 2 ** (self.failures - 1))
