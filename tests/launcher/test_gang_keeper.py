"""The gang keeper (launcher/gang_keeper.py): a multi-node attempt's platform-Ray connection in a child process.

Bug found by bench/outage_multinode.py 120: the launcher held that connection itself, and Ray ends a driver whose GCS
stays away for 60 s ("Failed to connect to GCS within 60 seconds … The program will terminate"), so a platform
head down for over a minute killed the first node's launcher and its training. The keeper's child is a stand-in
here (the protocol, around a fake ``Gang``); the real one on Ray is in the bench and tests/e2e/test_gang_on_workers.py.
"""

from __future__ import annotations

import io
import json
import sys
import textwrap
import time
from pathlib import Path

import pytest

from argus.core.launch import LaunchSpec
from argus.launcher import gang_keeper
from argus.launcher.gang_keeper import GangKeeper, Gone, serve

SPEC = LaunchSpec(job_dir="/j/t-1", attempt=1, argv=("python3", "x.py"), nnodes=2, private_ray=True)


class FakeGang:
    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def head_ip(self) -> str:
        self.calls.append(("head_ip",))
        return "10.0.0.7"

    def start(self, head: str, token: str) -> str | None:
        self.calls.append(("start", head, token))
        return None

    def stop(self) -> None:
        self.calls.append(("stop",))


@pytest.mark.parametrize("end", ['"stop"\n', ""])  # the launcher's stop, or its end (EOF)
def test_the_keeper_says_its_ip_places_the_nodes_and_stops_them_at_the_end(end: str) -> None:
    gang, out = FakeGang(), io.StringIO()
    assert serve(gang, io.StringIO(json.dumps({"head": "10.0.0.7:6380", "token": "t0k"}) + "\n" + end), out) == 0
    assert gang.calls == [("head_ip",), ("start", "10.0.0.7:6380", "t0k"), ("stop",)]
    assert [json.loads(x) for x in out.getvalue().splitlines()] == [{"ip": "10.0.0.7"}, {"refusal": None},
                                                                    {"stopped": True}]


def _child(tmp_path: Path, after_start: str = "") -> list[str]:
    """A keeper child around a fake Gang; ``after_start``: what it does once the nodes are placed."""
    script = tmp_path / "child.py"
    script.write_text(textwrap.dedent(f"""
        import os, sys, threading
        from argus.launcher.gang_keeper import serve
        class G:
            def head_ip(self): return "10.0.0.7"
            def start(self, head, token):
                {after_start or 'pass'}
                return None if token == "t0k" else "no 1 other node(s) free"
            def stop(self): open({str(tmp_path / 'stopped')!r}, "w").write("yes")
        sys.exit(serve(G(), sys.stdin, sys.stdout))
    """))
    return [sys.executable, str(script)]


def test_the_launcher_places_and_stops_the_nodes_through_its_keeper(tmp_path: Path) -> None:
    keeper = GangKeeper(SPEC, tmp_path, _child(tmp_path))
    assert keeper.head_ip() == "10.0.0.7"
    assert keeper.start("10.0.0.7:6380", "t0k") is None
    assert keeper.stop() is None and (tmp_path / "stopped").read_text() == "yes"
    assert keeper.proc is not None and keeper.proc.returncode == 0
    refused = GangKeeper(SPEC, tmp_path, _child(tmp_path))
    refused.head_ip()
    assert refused.start("10.0.0.7:6380", "other") == "no 1 other node(s) free"
    refused.stop()


def test_a_keeper_that_ray_ends_mid_attempt_leaves_the_launcher_running(tmp_path: Path) -> None:
    # Ray's core worker exits the process when its GCS stays away (here: a second after the nodes were placed)
    keeper = GangKeeper(SPEC, tmp_path, _child(tmp_path, "threading.Timer(1.0, os._exit, [1]).start()"))
    keeper.head_ip()
    assert keeper.start("10.0.0.7:6380", "t0k") is None
    time.sleep(2.0)
    started = time.monotonic()
    assert keeper.stop() == "it ended with exit code 1"  # said in the task's log; nothing of ours ended
    assert time.monotonic() - started < 5 and not (tmp_path / "stopped").exists()


def test_a_keeper_that_never_answers_is_ended_and_said(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gang_keeper, "IP_TIMEOUT_S", 0.3)
    keeper = GangKeeper(SPEC, tmp_path, [sys.executable, "-c", "import time; time.sleep(60)"])
    with pytest.raises(Gone, match="no answer in 0 s"):
        keeper.head_ip()
    assert keeper.proc is not None and keeper.proc.returncode is not None  # killed, not left behind
    dead = GangKeeper(SPEC, tmp_path, [sys.executable, "-c", "import sys; sys.exit(3)"])
    with pytest.raises(Gone, match="it ended with exit code 3"):
        dead.head_ip()
    cut = GangKeeper(SPEC, tmp_path, [sys.executable, "-c", "import os; os.write(1, b'{\"ip\": '); os._exit(134)"])
    with pytest.raises(Gone, match="it ended with exit code 134"):  # Ray's abort in the middle of a line
        cut.head_ip()
