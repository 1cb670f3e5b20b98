"""/tasks/{id}/logs (plain and SSE) and /nodes against a live server and a real log file."""

from __future__ import annotations

import os
import threading
import time

import httpx
import pytest
from sqlalchemy import update

from argus.db.models import TaskAttemptModel, TaskModel
from argus.services.logs import LogRef, follow, read_range
from tests.helpers import live_server, submit_spec

SPEC = "kind: advanced\nworkload: job\nnnodes: 1\nn_gpus_per_node: 0\ncommand: python3 -m argus.jobs.sleep 1\n"


def submit(c: httpx.Client) -> str:
    return submit_spec(c, SPEC)


def set_running(srv, tid: str, attempt: int = 1, status: str = "RUNNING") -> None:
    with srv.ctx.db.session() as s:
        s.execute(update(TaskModel).where(TaskModel.id == tid).values(status=status, attempts=attempt,
                                                                      submission_id=f"{tid}-a{attempt}"))
        s.add(TaskAttemptModel(task_id=tid, attempt=attempt, submission_id=f"{tid}-a{attempt}", status=status))


def finish(srv, tid: str) -> None:
    with srv.ctx.db.session() as s:
        s.execute(update(TaskModel).where(TaskModel.id == tid).values(status="SUCCEEDED"))
        s.execute(update(TaskAttemptModel).where(TaskAttemptModel.task_id == tid).values(status="SUCCEEDED"))


def _ref(tmp_path, name: str) -> LogRef:
    return LogRef("t", 1, tmp_path / name, tmp_path)


def test_read_range_is_chunked_and_bounded(tmp_path):
    p = tmp_path / "big.log"
    p.write_bytes(b"x" * (300 * 1024))
    end, chunks = read_range(_ref(tmp_path, "big.log"), 1000, 200 * 1024)
    parts = list(chunks)
    assert end == 1000 + 200 * 1024
    assert max(len(c) for c in parts) <= 64 * 1024 and sum(map(len, parts)) == 200 * 1024
    assert read_range(_ref(tmp_path, "missing.log"), 5)[0] == 0
    end, chunks = read_range(_ref(tmp_path, "big.log"), 10**9)
    assert end == 300 * 1024 and list(chunks) == []


def test_a_log_replaced_by_a_link_or_a_fifo_reads_as_empty(tmp_path):
    """A task owns its job folder: its log may become a link to someone else's file, or a FIFO."""
    secret = tmp_path / "bob-secret.txt"
    secret.write_text("BOB")
    home = tmp_path / "alice"
    (home / "logs").mkdir(parents=True)
    (home / "logs" / "attempt-1.log").symlink_to(secret)
    (home / "logs" / "attempt-2.log").hardlink_to(secret)
    os.mkfifo(home / "logs" / "attempt-3.log")
    (home / "link").symlink_to(tmp_path)  # a linked folder on the way
    for rel in ("logs/attempt-1.log", "logs/attempt-2.log", "logs/attempt-3.log", "link/bob-secret.txt"):
        end, chunks = read_range(LogRef("t", 1, home / rel, home), 0)
        assert (end, b"".join(chunks)) == (0, b""), rel


def test_follow_holds_partial_lines_and_ends_after_draining(tmp_path):
    p = tmp_path / "a.log"
    p.write_bytes(b"one\ntw")
    state = {"done": False}
    got = []

    def writer():
        time.sleep(0.15)  # the rest is written later on purpose (live follow is the test), not a wait
        with p.open("ab") as f:
            f.write(b"o\nthree")
        state["done"] = True

    threading.Thread(target=writer).start()
    for pos, data in follow(_ref(tmp_path, "a.log"), 0, lambda: state["done"], poll_s=0.05):
        got.append((pos, data))
    assert b"".join(d for _, d in got) == b"one\ntwo\nthree"
    assert got[0] == (4, b"one\n")
    assert got[-1] == (13, b"three")


def test_logs_api_plain_offsets_and_isolation(settings):
    with live_server(settings) as srv:
        alice, bob = srv.new_user("alice"), srv.new_user("bob")
        tid = submit(alice)
        r = alice.get(f"/api/v2/tasks/{tid}/logs")
        assert r.status_code == 200 and r.content == b"" and r.headers["x-next-offset"] == "0"
        set_running(srv, tid)
        log = settings.root / "users" / "alice" / "jobs" / tid / "logs" / "attempt-1.log"
        log.parent.mkdir(parents=True)
        log.write_bytes(b"hello\nworld\n")
        r = alice.get(f"/api/v2/tasks/{tid}/logs", params={"offset": 6, "limit": 3})
        assert r.content == b"wor" and r.headers["x-next-offset"] == "9" and r.headers["x-log-attempt"] == "1"
        assert alice.get(f"/api/v2/tasks/{tid}/logs").content == b"hello\nworld\n"
        assert bob.get(f"/api/v2/tasks/{tid}/logs").status_code == 404
        assert alice.get(f"/api/v2/tasks/{tid}/logs", params={"attempt": 2}).status_code == 404
        assert alice.get(f"/api/v2/tasks/{tid}/logs", params={"offset": -1}).status_code == 400


def test_logs_sse_follows_until_the_task_ends(settings):
    with live_server(settings) as srv:
        alice = srv.new_user("alice")
        tid = submit(alice)
        set_running(srv, tid)
        log = settings.root / "users" / "alice" / "jobs" / tid / "logs" / "attempt-1.log"
        log.parent.mkdir(parents=True)
        log.write_bytes(b"first\n")

        def later():  # the sleeps are the input (a line, then the end, come later): not waits
            time.sleep(0.8)
            with log.open("ab") as f:
                f.write(b"second\n")
            time.sleep(0.8)
            finish(srv, tid)

        threading.Thread(target=later).start()
        t0 = time.monotonic()
        body = b""
        with alice.stream("GET", f"/api/v2/tasks/{tid}/logs", headers={"Accept": "text/event-stream"}) as r:
            assert r.headers["content-type"].startswith("text/event-stream")
            for chunk in r.iter_bytes():
                body += chunk
        text = body.decode()
        assert time.monotonic() - t0 >= 1.5  # it followed, it did not just dump the file
        assert "event: log\ndata: first\n" in text and "data: second\n" in text
        assert "id: 13\n" in text
        assert text.rstrip().endswith('"status_message": null}') or '"status": "SUCCEEDED"' in text
        # resume after the last event id: only the end event comes back
        with alice.stream("GET", f"/api/v2/tasks/{tid}/logs",
                          headers={"Accept": "text/event-stream", "Last-Event-ID": "13"}) as r:
            rest = b"".join(r.iter_bytes()).decode()
        assert "event: log" not in rest and '"status": "SUCCEEDED"' in rest


def test_nodes_api_shows_holders_and_redacts_other_users(settings):
    view = {"available": True, "error": None, "gpus_total": 4, "gpus_allocated": 2, "unplaced": [],
            "nodes": [{"node_id": "n1", "hostname": "h", "ip": "1", "alive": True, "gpus_total": 4,
                       "gpus_free_ray": 2, "gpus_allocated": 2, "cpus_total": 4.0,
                       "tasks": [{"task_id": "t-bob", "user": "bob", "status": "RUNNING", "gpus": 2}]}]}

    def configure(ctx):
        ctx.nodes = lambda: {**view, "nodes": [dict(n, tasks=list(n["tasks"])) for n in view["nodes"]]}

    with live_server(settings, configure) as srv:
        alice = srv.new_user("alice")
        r = alice.get("/api/v2/nodes")
        assert r.status_code == 200
        assert r.json()["nodes"][0]["tasks"] == [{"task_id": None, "user": None, "status": "RUNNING", "gpus": 2,
                                                      "idle_gpus_since": None}]
        assert srv.admin().get("/api/v2/nodes").json()["nodes"][0]["tasks"][0]["task_id"] == "t-bob"


def test_nodes_api_without_a_cluster_says_so(settings):
    with live_server(settings) as srv:
        r = srv.admin().get("/api/v2/nodes")
        assert r.status_code == 200 and r.json()["error"] == "no Ray cluster configured"
        assert r.json()["error_code"] == "nodes.no_ray" and r.json()["error_params"] == {}  # said in zh (issue 37)


def _argus(srv, token, *args):  # noqa: ANN001, ANN202
    import os
    import subprocess
    import sys

    env = {**os.environ, "ARGUS_URL": srv.url, "ARGUS_TOKEN": token}
    return subprocess.run([sys.executable, "-m", "argus.cli.main", *args], env=env, capture_output=True,
                          text=True, timeout=60)


def _running_with_log(srv, settings, content: bytes) -> tuple[str, str]:  # noqa: ANN001
    """alice's running task whose first attempt logged ``content``: her token and the task's id."""
    alice = srv.new_user("alice")
    tid = submit(alice)
    set_running(srv, tid)
    log = settings.root / "users" / "alice" / "jobs" / tid / "logs" / "attempt-1.log"
    log.parent.mkdir(parents=True)
    log.write_bytes(content)
    return alice.headers["authorization"].split()[1], tid


def test_cli_logs_and_follow(settings):
    with live_server(settings) as srv:
        token, tid = _running_with_log(srv, settings, b"line one\nline two\n")
        r = _argus(srv, token, "logs", tid)
        assert r.returncode == 0 and r.stdout == "line one\nline two\n"
        threading.Timer(1.0, finish, (srv, tid)).start()
        r = _argus(srv, token, "logs", "-f", tid)
        assert r.returncode == 0, r.stderr
        assert r.stdout.startswith("line one\nline two\n") and "SUCCEEDED" in r.stdout
        r = _argus(srv, token, "nodes")
        assert r.returncode == 0 and "no Ray cluster configured" in r.stdout


def test_the_live_stream_sends_each_tqdm_line_as_last_drawn():
    from argus.api.routers.logs import sse_lines

    assert sse_lines(b"start\r\nepoch 1:  10%|#  |\repoch 1: 100%|###|\nnext line\n") == [
        "start", "epoch 1: 100%|###|", "next line"]
    assert sse_lines(b"") == [] and sse_lines(b"\n") == [""]


HOSTILE_LOG = ("plain \x1b[31mred\x1b[0m\n"
               "\x1b]0;owned title\x07\x1b]52;c;cm0gLXJmIH4=\x07\x1b[2J\x1b[H\x9b2J bell\x07 del\x7f\n"
               "tqdm 50%\rtqdm 100%\n")


@pytest.mark.hostile
def test_cli_logs_show_a_logs_escape_sequences_as_text_and_colours_only_on_a_terminal(settings):
    """A task's log reaches an admin's or a team member's terminal through ``argus logs``: no title, clipboard
    (OSC 52) or screen-clear sequence of it is obeyed; colours are dropped when the output is not a TTY."""
    with live_server(settings) as srv:
        token, tid = _running_with_log(srv, settings, HOSTILE_LOG.encode())
        shown = ("plain red\n\\x1b]0;owned title\\x07\\x1b]52;c;cm0gLXJmIH4=\\x07\\x1b[2J\\x1b[H\\x9b2J bell\\x07 "
                 "del\\x7f\ntqdm 50%\ntqdm 100%\n")  # the redraw's \r is kept; text mode reads it as \n
        r = _argus(srv, token, "logs", tid)
        assert r.returncode == 0 and r.stdout == shown, repr(r.stdout)
        threading.Timer(1.0, finish, (srv, tid)).start()
        r = _argus(srv, token, "logs", "-f", tid)
        assert r.returncode == 0, r.stderr
        assert "\x1b" not in r.stdout and "\x07" not in r.stdout and "\x9b" not in r.stdout, repr(r.stdout)
        assert "\\x1b]52;c;cm0gLXJmIH4=\\x07" in r.stdout and "plain red\n" in r.stdout, repr(r.stdout)


def test_terminal_safe_keeps_colours_for_a_terminal_only():
    from argus.core.log_text import terminal_safe

    line = "\x1b[1;32mok\x1b[0m \x1b]2;t\x1b\\ \x1b[?1049h"
    assert terminal_safe(line, colours=True) == "\x1b[1;32mok\x1b[0m \\x1b]2;t\\x1b\\ \\x1b[?1049h"
    assert terminal_safe(line, colours=False) == "ok \\x1b]2;t\\x1b\\ \\x1b[?1049h"
    assert terminal_safe("é\t中\r", colours=False) == "é\t中\r"  # text, tabs and redraws pass
