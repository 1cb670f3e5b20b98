"""The worker watchdog's decision table, the join backoff and the discovery file (no Ray)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from argus.nodes.discovery import (
    STOPPED,
    DiscoveryError,
    HeadInfo,
    mark_stopped,
    new_head_info,
    read_discovery,
    write_discovery,
)
from argus.nodes.watchdog import Action, Backoff, Observation, decide

V = "2.60.0"
HEAD = HeadInfo(gcs_address="10.0.0.1:6380", dashboard_url="http://127.0.0.1:8265", api_url="http://10.0.0.1:8080",
                generation="g1", started_at="2026-01-01T00:00:00+00:00", ray_version=V, hostname="head", pid=1)
RESTARTED = replace(HEAD, generation="g2")
MOVED = replace(HEAD, gcs_address="10.0.0.2:6380")
STOPPED_HEAD = replace(HEAD, state=STOPPED, stopped_at="2026-01-01T01:00:00+00:00")
OTHER_RAY = replace(HEAD, ray_version="2.59.0")

CASES = [
    # file, raylet alive, joined, silent s → action, words in the reason
    (None, False, None, 0, Action.WAIT, "no discovery file"),
    (None, True, HEAD, 99, Action.STAY, "keeping the raylet"),
    (STOPPED_HEAD, True, HEAD, 0, Action.LEAVE, "stopped"),
    (STOPPED_HEAD, False, HEAD, 0, Action.WAIT, "stopped"),
    (OTHER_RAY, False, None, 0, Action.WAIT, "Ray 2.59.0"),
    (OTHER_RAY, True, HEAD, 0, Action.LEAVE, "Ray 2.59.0"),
    (HEAD, False, None, 0, Action.JOIN, "joining the head"),
    (HEAD, False, HEAD, 0, Action.JOIN, "raylet exited"),
    (RESTARTED, False, HEAD, 0, Action.JOIN, "head restarted"),
    (RESTARTED, True, HEAD, 0, Action.REJOIN, "g1) -> 10.0.0.1:6380 (generation g2"),
    (MOVED, True, HEAD, 0, Action.REJOIN, "-> 10.0.0.2:6380"),
    (HEAD, True, None, 0, Action.REJOIN, "unknown head"),
    (HEAD, True, HEAD, 29.9, Action.STAY, "raylet running against"),
    (HEAD, True, HEAD, 30, Action.REJOIN, "not answered for 30 s"),
]


@pytest.mark.parametrize(("head", "alive", "joined", "silent", "action", "words"), CASES)
def test_decide(head, alive, joined, silent, action, words) -> None:
    d = decide(Observation(head=head, raylet_alive=alive, joined=joined, head_silent_s=silent,
                           local_ray_version=V), silence_limit_s=30)
    assert d.action is action and words in d.reason, d


def test_unreadable_file_says_why() -> None:
    d = decide(Observation(head=None, raylet_alive=False, joined=None, head_silent_s=0, local_ray_version=V,
                           problem="cannot read head.json: bad JSON"), silence_limit_s=30)
    assert d.action is Action.WAIT and "bad JSON" in d.reason


def test_backoff_doubles_on_quick_deaths_and_resets_after_a_stable_run() -> None:
    b = Backoff(base_s=2, cap_s=10, stable_s=30)
    assert b.ready(0)
    delays = []
    now = 0.0
    for _ in range(5):
        b.started(now)
        now += 1  # died after 1 s
        b.ended(now)
        delays.append(b.next_at - now)
        assert not b.ready(now) and b.ready(b.next_at)
        now = b.next_at
    assert delays == [2, 4, 8, 10, 10]
    b.started(now)
    b.ended(now + 31)  # a stable run: the next join may start at once
    assert b.failures == 0 and b.ready(now + 31)
    b.started(now + 40)
    b.ended(now + 41, deliberate=True)  # we stopped it (head restarted): not a failure
    assert b.failures == 0 and b.ready(now + 41)
    b.started(now + 50)
    b.ended(now + 51)
    assert not b.ready(now + 51)
    b.reset(now + 51)  # a new head generation: join at once
    assert b.ready(now + 51) and b.failures == 0


def test_discovery_roundtrip_and_stop_marks_only_own_generation(tmp_path) -> None:
    path = tmp_path / ".argus" / "head.json"
    assert read_discovery(path) is None
    first = new_head_info(gcs_address="10.0.0.1:6380", dashboard_url="http://127.0.0.1:1", api_url="http://x")
    write_discovery(path, first)
    assert read_discovery(path) == first and oct(path.stat().st_mode & 0o777) == "0o644"
    assert list(path.parent.iterdir()) == [path]  # no temp file left behind
    second = new_head_info(gcs_address="10.0.0.2:6380", dashboard_url="http://127.0.0.1:1", api_url="http://x")
    assert second.generation != first.generation
    write_discovery(path, second)
    assert mark_stopped(path, first.generation) is False  # an old head never clobbers the new one
    assert read_discovery(path) == second
    assert mark_stopped(path, second.generation) is True
    stopped = read_discovery(path)
    assert stopped.state == STOPPED and stopped.stopped_at and stopped.generation == second.generation


@pytest.mark.parametrize("content", ["{", "[]", json.dumps({"schema": 99}), json.dumps({"schema": 1, "x": 1}),
                                     json.dumps({**HEAD.__dict__, "gcs_address": "no-port"})])
def test_unusable_discovery_file(tmp_path, content) -> None:
    path = tmp_path / "head.json"
    path.write_text(content)
    with pytest.raises(DiscoveryError):
        read_discovery(path)
