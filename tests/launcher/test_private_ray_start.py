"""A task's private Ray on a loaded machine (launcher/private_ray.py): which failed starts are tried again, the
back-off and the budget between them, and what a retry cleans up. ``ray start`` is faked (``ray_start_once``);
the clean-up runs for real on a process tree of its own. The real start under CPU burners is in
tests/cluster/test_start_under_load.py (it starts Ray: the heavy lane)."""

from __future__ import annotations

import argparse
import fcntl
import os
import socket
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from argus.launcher import private_ray

# What Ray 2.60 printed in the failed starts measured under 20 CPU burners on 2 cores (bench/start_under_load.py)
RAYLET_TIMEOUT = ('  File ".../ray/_private/node.py", line 440, in __init__\n    raise Exception(\nException: The current '
                  "node timed out during startup. This could happen because some of the raylet failed to startup or "
                  "the GCS has become overloaded.\n")
AGENT_PORT = "Check failed: statussetor3576.has_value() Timed out waiting for file /tmp/ray/session_x/metrics_agent_port_bd"
NO_RAY = "/env/bin/python: Error while finding module specification for 'ray.scripts.scripts' (ModuleNotFoundError: " \
         "No module named 'ray')\n"
NO_GPUS = "ValueError: Attempting to start raylet with 2 GPUs, but CUDA_VISIBLE_DEVICES contains [].\n"


def head_ns(*extra: str) -> argparse.Namespace:
    return private_ray.parse_args(["--head", "1", "--client-port", "2", *extra, "--", "python3", "x.py"])


@pytest.mark.parametrize(("output", "code", "why"), [
    (RAYLET_TIMEOUT, 1, "the raylet did not register in Ray's 30 s"),
    (AGENT_PORT, 1, "a Ray daemon did not come up within Ray's fixed wait"),
    ("RuntimeError: Failed to start GCS.  Last 1 lines of error files: bind", 1, "the GCS did not start in time"),
    ("ValueError: Failed to bind to 0.0.0.0:8265 because it's already occupied.", 1,
     "a port of this Ray was taken meanwhile"),
    ("", None, "ray start did not finish in time"),
    ("", -9, "ray start was killed by signal 9"),
    (NO_RAY, 1, None),
    (NO_GPUS, 1, None),
    ("Error: No such option: --bogus\n", 2, None),
])
def test_only_a_start_that_lost_a_race_against_the_load_is_transient(output: str, code: int | None,
                                                                      why: str | None) -> None:
    assert private_ray.transient_reason(output, code) == why


def test_the_back_off_doubles_up_to_its_cap_with_jitter_around_it() -> None:
    assert [private_ray.backoff_s(n, jitter=0.5) for n in (1, 2, 3, 4, 5, 6)] == [2, 4, 8, 16, 30, 30]
    assert private_ray.backoff_s(1, jitter=0.0) == 1.0 and private_ray.backoff_s(1, jitter=1.0) == 3.0
    assert private_ray.backoff_s(9, private_ray.JOIN_BACKOFF_MAX_S, jitter=0.5) == 10.0
    assert all(1.0 <= private_ray.backoff_s(1) <= 3.0 for _ in range(50))


def test_the_budget_stretches_with_the_highest_load_seen_and_no_further_than_its_cap(monkeypatch) -> None:  # noqa: ANN001
    loads = iter([1.0, 8.0, 2.0, 100.0])  # load per core, as each look finds it
    monkeypatch.setattr(private_ray.os, "getloadavg", lambda: (next(loads) * 2, 0.0, 0.0))
    monkeypatch.setattr(private_ray.os, "sched_getaffinity", lambda _pid: {0, 1})
    budget = private_ray.StartBudget(300.0, 120.0)
    assert budget.scale == 1.0
    assert budget.attempt_s() == pytest.approx(120.0 * private_ray.MAX_LOAD_SCALE)  # load 8: stretched to the cap
    assert budget.left() == pytest.approx(300.0 * private_ray.MAX_LOAD_SCALE, abs=1)  # load 2 later: kept the highest
    monkeypatch.setattr(budget, "started", budget.started - 880)  # 880 s spent: what is left bounds an attempt
    assert budget.attempt_s() == pytest.approx(20.0, abs=1)


class FakeStarts:
    """``ray_start_once`` answering from a script of (exit code, output); records the timeouts it was given."""

    def __init__(self, *outcomes: tuple[int | None, str]) -> None:
        self.outcomes = list(outcomes)
        self.timeouts: list[float] = []
        self.argvs: list[list[str]] = []

    def __call__(self, argv: list[str], timeout_s: float) -> tuple[int | None, str]:
        self.argvs.append(argv)
        self.timeouts.append(timeout_s)
        return self.outcomes.pop(0)


@pytest.fixture
def fake(monkeypatch, tmp_path: Path):  # noqa: ANN001, ANN201
    """The process boundary faked: no ``ray start``, no kill, no sleep (the pauses are recorded), idle machine, the
    turn of a start taken in a folder of the test's own."""
    pauses: list[float] = []
    ended: list[int] = []
    monkeypatch.setattr(private_ray, "TURN", tmp_path)
    monkeypatch.setattr(private_ray.time, "sleep", pauses.append)
    monkeypatch.setattr(private_ray, "end_descendants", lambda: ended.append(1) or 3)
    monkeypatch.setattr(private_ray, "load_scale", lambda: 1.0)
    monkeypatch.setattr(private_ray, "port_taken", lambda port: False)
    monkeypatch.setattr(private_ray, "become_subreaper", lambda: None)

    def use(*outcomes: tuple[int | None, str]) -> FakeStarts:
        starts = FakeStarts(*outcomes)
        monkeypatch.setattr(private_ray, "ray_start_once", starts)
        return starts

    use.pauses, use.ended = pauses, ended  # type: ignore[attr-defined]
    return use


def test_a_head_start_that_timed_out_is_cleaned_up_and_tried_again_and_each_retry_is_said(fake, capsys) -> None:  # noqa: ANN001
    starts = fake((1, RAYLET_TIMEOUT), (None, ""), (0, "Ray runtime started."))
    assert private_ray.start_head(head_ns()) is None
    assert len(starts.argvs) == 3 and len(fake.ended) == 2 and len(fake.pauses) == 2
    assert 1.0 <= fake.pauses[0] <= 3.0 and 2.0 <= fake.pauses[1] <= 6.0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("[argus] the task's private Ray did not start, attempt 1: the raylet did not register "
                             "in Ray's 30 s (load ")
    assert "ended its 3 process(es), trying again in" in out[0]
    assert "attempt 2: ray start did not finish in time" in out[1]
    assert out[2].startswith("[argus] private Ray cluster of this task: 1 node(s)")


def test_a_misconfigured_head_fails_at_once_with_rays_own_words(fake, capsys) -> None:  # noqa: ANN001
    starts = fake((1, NO_RAY))
    problem = private_ray.start_head(head_ns())
    assert problem is not None and problem.startswith("ray start exited 1:") and "No module named 'ray'" in problem
    assert len(starts.argvs) == 1 and not fake.pauses and not fake.ended
    assert capsys.readouterr().out == ""


def test_a_head_that_keeps_failing_gives_up_after_the_last_attempt(fake) -> None:  # noqa: ANN001
    starts = fake(*[(1, RAYLET_TIMEOUT)] * private_ray.MAX_ATTEMPTS)
    problem = private_ray.start_head(head_ns())
    assert problem is not None and "node timed out during startup" in problem
    assert f"(gave up after {private_ray.MAX_ATTEMPTS} attempt(s) in " in problem
    assert len(starts.argvs) == private_ray.MAX_ATTEMPTS and len(fake.pauses) == private_ray.MAX_ATTEMPTS - 1


def test_a_head_gives_up_when_its_budget_cannot_hold_another_attempt(fake, monkeypatch) -> None:  # noqa: ANN001
    clock, timeouts = [1000.0], []
    monkeypatch.setattr(private_ray.time, "monotonic", lambda: clock[0])

    def hangs(argv: list[str], timeout_s: float) -> tuple[None, str]:  # each attempt runs out its time
        clock[0] += timeout_s
        timeouts.append(timeout_s)
        return None, ""

    monkeypatch.setattr(private_ray, "ray_start_once", hangs)
    problem = private_ray.start_head(head_ns())
    # 300 s in all on an idle machine: 120, 120, then the 60 s left; then not even MIN_ATTEMPT_S is left
    assert timeouts == [120.0, 120.0, 60.0]
    assert problem is not None and problem.startswith("ray start did not finish in 60 s")
    assert "(gave up after 3 attempt(s) in 300 s, load " in problem


def test_a_one_node_head_moves_off_a_port_taken_meanwhile_a_gang_head_and_the_dashboard_cannot(fake,  # noqa: ANN001
                                                                                             monkeypatch,  # noqa: ANN001
                                                                                             capsys) -> None:  # noqa: ANN001
    with socket.socket() as held:
        held.bind(("", 0))
        held.listen()
        taken = held.getsockname()[1]
        monkeypatch.setattr(private_ray, "port_taken", lambda port: port == taken)
        starts = fake((0, ""))
        ns = head_ns()
        ns.head = taken
        assert private_ray.start_head(ns) is None
        assert ns.head != taken and f"--port={ns.head}" in starts.argvs[0]
        assert f"port {taken} (GCS) of this task's private Ray was taken by another process meanwhile; it uses " \
               f"{ns.head} instead" in capsys.readouterr().out
        gang = head_ns("--wait-nodes", "2")
        gang.head = taken
        assert private_ray.start_head(gang) == (f"port {taken} (GCS) of this task's private Ray is taken by another "
                                                f"process on this node; a new attempt of the task gets other ports")
        board = head_ns("--dashboard-port", str(taken))
        assert "(dashboard) of this task's private Ray is taken" in private_ray.start_head(board)


def test_a_join_retries_while_the_head_starts_but_not_a_mistake(fake, capsys) -> None:  # noqa: ANN001
    ns = private_ray.parse_args(["--join", "10.0.0.1:6380", "--cpus", "2"])
    fake((1, "RuntimeError: Failed to connect to GCS. Last connection error: UNAVAILABLE"), (1, "something else"),
         (2, "Error: No such option: --bogus"))
    assert private_ray.join(ns) == private_ray.EX_RAY_FAILED
    out = capsys.readouterr().out
    assert "attempt 1: the GCS did not answer in time" in out and "attempt 2: the head did not take this node (yet)" in out
    assert "[argus] error: could not join the task's head at 10.0.0.1:6380 (3 attempt(s) in " in out
    assert "No such option" in out and len(fake.ended) == 3  # each failed attempt's processes ended
    starts = fake((1, NO_RAY))
    assert private_ray.join(ns) == private_ray.EX_RAY_FAILED and len(starts.argvs) == 1  # at once


def test_a_start_waits_its_turn_on_a_loaded_machine_or_to_retry_but_not_for_ever(monkeypatch, tmp_path: Path,  # noqa: ANN001
                                                                                 capsys) -> None:  # noqa: ANN001
    monkeypatch.setattr(private_ray, "TURN", tmp_path)
    monkeypatch.setattr(private_ray, "TURN_POLL_S", 0.05)
    load = [1.0]
    monkeypatch.setattr(private_ray, "load_scale", lambda: load[0])
    budget = private_ray.StartBudget(300.0)
    assert private_ray.start_turn(budget, 1) == (None, None)  # idle, first attempt: starts side by side are fine
    other = os.open(tmp_path, os.O_RDONLY)  # another task's start holds the turn
    fcntl.flock(other, fcntl.LOCK_EX)
    threading.Timer(0.3, os.close, [other]).start()
    load[0] = 3.0
    turn, problem = private_ray.start_turn(budget, 1)
    assert turn is not None and problem is None
    assert capsys.readouterr().out.startswith("[argus] waiting for another task's Ray start on this machine to finish")
    load[0] = 1.0
    short = private_ray.StartBudget(private_ray.MIN_ATTEMPT_S / 2)
    held, problem = private_ray.start_turn(short, 2)  # a retry waits its turn even when idle; ours is held above
    assert held is None and problem.startswith("waited 0 s for other tasks' Ray starts on this machine (load ")
    os.close(turn)


TREE = textwrap.dedent("""
    import os, subprocess, sys, time
    sys.path.insert(0, sys.argv[1])
    import private_ray
    private_ray.become_subreaper()
    # a child with a grandchild, and an orphan (its parent exited): what a failed ray start leaves behind
    subprocess.Popen(["bash", "-c", "sleep 300 & sleep 300; wait"])
    subprocess.Popen(["bash", "-c", "(sleep 300 &) ; exit 0"]).wait()
    time.sleep(0.5)
    before = len(private_ray.descendants(os.getpid()))
    ended = private_ray.end_descendants()
    print(before, ended, len(private_ray.descendants(os.getpid())))
""")


def test_the_clean_up_ends_every_process_below_even_orphans_reparented_to_it() -> None:
    folder = str(Path(private_ray.__file__).parent)
    done = subprocess.run([sys.executable, "-c", TREE, folder], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    before, ended, after = map(int, done.stdout.split())
    assert before == 4 and ended == 4 and after == 0  # bash, its two sleeps, and the orphaned sleep


def test_a_joined_node_ends_when_its_raylet_does_not_for_ever(fake, monkeypatch, capsys) -> None:  # noqa: ANN001
    """Bug found by bench/outage_multinode.py: after a platform head restart the node's actor is gone, nobody stops
    the node, and its join slept for ever once the task ended (its raylet, having lost the task's GCS, had exited):
    sandbox, cgroup and the agent's attempt held past the task's SUCCEEDED. Now the join follows its raylet."""
    fake((0, "Ray runtime started."))
    lost_gcs = subprocess.Popen([sys.executable, "-c", "import sys; sys.exit(1)"])  # how Ray's raylet ends then
    monkeypatch.setattr(private_ray, "ray_daemons", lambda: {lost_gcs.pid: "raylet"})
    ns = private_ray.parse_args(["--join", "10.0.0.1:6380", "--cpus", "2"])
    assert private_ray.join(ns) == 0
    out = capsys.readouterr().out
    assert "[argus] joined the task's private Ray at 10.0.0.1:6380" in out
    assert (f"[argus] this node's part of the task's private Ray ended: its raylet (raylet, pid {lost_gcs.pid}) exited "
            f"with code 1 (its head gone, or it was stopped); the node ends") in out
    killed = subprocess.Popen(["sleep", "60"])
    threading.Timer(0.2, killed.kill).start()
    assert private_ray.stay_joined({killed.pid: "raylet"}) == private_ray.EX_RAY_FAILED
    assert f"its raylet (raylet, pid {killed.pid}) was killed by SIGKILL" in capsys.readouterr().out
