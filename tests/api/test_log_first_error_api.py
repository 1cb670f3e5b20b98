"""GET /tasks/{id}/logs/first-error and line numbers (issue 37, "Logs": where did it first fail, on which worker?):
the first error of the whole log in any case, a traceback's exception and the Ray/torchrun worker named, every
node's log of a multi-node task, an index extended as the log grows, and the log endpoint's access rule."""

from __future__ import annotations

import json
import os
import threading
import time

import pytest
from sqlalchemy import update

from argus.db.models import TaskModel
from argus.services import log_index, log_index_store
from argus.services.home_files import open_plain
from argus.services.log_index import first_error, is_error, keep_warm, line_number
from argus.services.logs import LogRef
from tests.helpers import live_server, submit_spec
from tests.waiting import wait_until

SPEC = "kind: advanced\nworkload: job\nnnodes: 1\nn_gpus_per_node: 0\ncommand: python3 -m argus.jobs.sleep 1\n"


def test_error_lines_in_any_case_and_not_the_lookalikes() -> None:
    for text in ["ERROR 11-21 14:02:11 [core.py:708] EngineCore failed", "an Error happened", "[argus] error: no GPU",
                 "(TaskRunner pid=4) CRITICAL out of disk", "fatal: not a git repository", "ValueError: bad",
                 "[rank3]: RuntimeError: NCCL timeout", "(WorkerDict pid=7, ip=10.0.0.7) Traceback (most recent call last):"]:
        assert is_error(text), text
    for text in ["val/error_rate: 0.1", "0 errors", "step:3 - on_error: raise", "UserWarning: deprecated", "INFO ok",
                 "  File \"x.py\", line 3, in ValueError", "critic/score/mean:0.5"]:
        assert not is_error(text), text


def _ref(tmp_path, data: bytes) -> LogRef:  # noqa: ANN001
    p = tmp_path / "attempt-1.log"
    p.write_bytes(data)
    return LogRef("t", 1, p, tmp_path)


def test_first_error_over_the_whole_log_names_the_worker_and_the_exception(tmp_path) -> None:  # noqa: ANN001
    lines = [f"\x1b[36m(TaskRunner pid=42)\x1b[0m step:{i} - actor/pg_loss:0.01 - val/error_rate:0.0" for i in range(300_000)]
    lines[250_000] = "\x1b[36m(WorkerDict pid=7, ip=10.0.0.7)\x1b[0m Traceback (most recent call last):"
    lines[250_001] = "(TaskRunner pid=42) step: interleaved by Ray"
    lines[250_002] = '(WorkerDict pid=7, ip=10.0.0.7)   File "reward.py", line 3, in score'
    lines[250_003] = "(WorkerDict pid=7, ip=10.0.0.7) ZeroDivisionError: division by zero"
    lines[250_004] = "(WorkerDict pid=7, ip=10.0.0.7) During handling of the above exception, another exception occurred:"
    lines[250_005] = "(WorkerDict pid=7, ip=10.0.0.7) Traceback (most recent call last):"
    lines[250_006] = "(WorkerDict pid=7, ip=10.0.0.7) RuntimeError: reward failed"
    lines[250_007] = "(WorkerDict pid=7, ip=10.0.0.7) shutting down"
    lines[260_000] = "[rank1]: ERROR later, not the first"
    ref = _ref(tmp_path, ("\n".join(lines) + "\n").encode())
    found, size = first_error(ref)
    assert size == ref.path.stat().st_size > 16 * 1024 * 1024  # more than a few blocks of the index
    assert found is not None and found.line == 250_001 and found.kind == "traceback"
    assert found.offset == sum(len(x.encode()) + 1 for x in lines[:250_000])
    assert found.text == "(WorkerDict pid=7, ip=10.0.0.7) Traceback (most recent call last):"
    assert found.worker == "WorkerDict pid=7, ip=10.0.0.7" and found.rank == ""
    assert found.exception == "RuntimeError: reward failed"  # the last of the chain
    # line numbers anywhere, from the index's marks
    with open_plain(tmp_path, ref.path) as f:
        assert line_number(ref, f, 0) == 1
        assert line_number(ref, f, found.offset) == 250_001
        assert line_number(ref, f, found.offset + 5) == 250_001
        assert line_number(ref, f, size) == 300_001


def test_upper_case_error_and_a_rank_in_a_log_that_grows(tmp_path) -> None:  # noqa: ANN001
    ref = _ref(tmp_path, b"step:1 ok\nstep:2 ok\n")
    assert first_error(ref) == (None, 20)
    with ref.path.open("ab") as f:  # appended: only the new bytes are looked at, an unfinished line not yet
        f.write(b"step:3 ok\n[rank3]: ERROR NCCL watchdog timeout")
    assert first_error(ref)[0] is None
    with ref.path.open("ab") as f:
        f.write(b"\n[rank0]: ValueError: later\n")
    found, _ = first_error(ref)
    assert found is not None and (found.line, found.rank, found.kind) == (4, "rank3", "level")
    assert found.text == "[rank3]: ERROR NCCL watchdog timeout"
    # rewritten in place (the same inode, longer than what was indexed): indexed again, not read on from the old end
    ref.path.write_bytes(b"another log\n" + b"step ok\n" * 100 + b"FATAL: out of disk\n")
    found, _ = first_error(ref)
    assert found is not None and (found.line, found.text) == (102, "FATAL: out of disk")
    # a traceback whose exception is not written yet: named once it is
    ref2 = LogRef("t", 2, tmp_path / "attempt-2.log", tmp_path)
    ref2.path.write_bytes(b"a\nTraceback (most recent call last):\n  File \"x.py\", line 1, in f\n")
    found, _ = first_error(ref2)
    assert found is not None and found.line == 2 and found.exception == ""
    with ref2.path.open("ab") as f:
        f.write(b"KeyError: 'reward'\nbye\n")
    assert first_error(ref2)[0].exception == "KeyError: 'reward'"
    # a new file in its place (shorter): indexed again
    ref2.path.unlink()
    ref2.path.write_bytes(b"fine\n")
    assert first_error(ref2) == (None, 5)


def test_a_growing_log_is_searched_in_the_background_so_the_click_answers_from_the_index(tmp_path) -> None:  # noqa: ANN001
    """keep_warm (the monitor calls it for a RUNNING attempt's log that grew): the first error is found before
    anyone asks, so first_error then reads nothing; once found, a later call starts no thread."""
    filler = b"".join(b"step:%d - actor/pg_loss:0.5 - val/error_rate:0.0\n" % i for i in range(400_000))  # ~20 MiB
    ref = _ref(tmp_path, filler + b"(WorkerDict pid=7, ip=10.0.0.7) RuntimeError: late\n" + filler[:1000])
    keep_warm(ref)
    idx = wait_until(lambda: (i := log_index._INDEXES.get(str(ref.path))) and i.first and i, 60, what="the warm search")
    wait_until(lambda: str(ref.path) not in log_index._WARMING, 30, what="the warm thread ends")
    assert idx.first.line == 400_001  # found by the background search: nobody has asked yet
    found, _ = first_error(ref)
    assert found is not None and found.line == 400_001 and found.exception == "RuntimeError: late"
    threads = threading.active_count()
    keep_warm(ref)  # found: nothing left to search, no thread
    assert str(ref.path) not in log_index._WARMING and threading.active_count() == threads


def test_first_error_api_every_node_access_and_errors(settings) -> None:  # noqa: ANN001
    with live_server(settings) as srv:
        alice, bob = srv.new_user("alice"), srv.new_user("bob")
        tid = submit_spec(alice, SPEC)
        with srv.ctx.db.session() as s:  # a 3-node task (its nodes 2 and 3 write their own logs)
            s.execute(update(TaskModel).where(TaskModel.id == tid).values(nnodes=3))
        logs = settings.root / "users" / "alice" / "jobs" / tid / "logs"
        logs.mkdir(parents=True)
        (logs / "attempt-1.log").write_bytes(b"[argus] attempt 1\nstep:1 fine\n")
        (logs / "attempt-1.node-3.log").write_bytes(b"[argus] node 3 of the task\n"
                                                   b"(raylet, ip=10.0.0.9) ok\n[rank5]: RuntimeError: CUDA error\n")
        url = f"/api/v2/tasks/{tid}/logs/first-error"
        r = alice.get(url)
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["attempt"] == 1 and [n["node"] for n in body["nodes"]] == [1, 2, 3]
        assert body["nodes"][0]["error"] is None and body["nodes"][1] == {"node": 2, "size": 0, "error": None}
        first = body["first"]
        assert (first["node"], first["line"], first["rank"], first["kind"]) == (3, 3, "rank5", "exception")
        assert first["text"] == "[rank5]: RuntimeError: CUDA error" and first["exception"] == "RuntimeError: CUDA error"
        assert body["nodes"][2]["error"] == first
        # what the index learned is kept for a restart in the server's state folder, nothing beside the logs
        assert len(list((settings.state_dir / "log-index").glob("*.json"))) == 1
        assert sorted(p.name for p in logs.iterdir()) == ["attempt-1.log", "attempt-1.node-3.log"]
        # the first node's error comes first; one node asked for
        (logs / "attempt-1.log").write_bytes(b"[argus] attempt 1\nstep:1 fine\nERROR: disk full\n")
        assert alice.get(url).json()["first"]["node"] == 1
        r = alice.get(f"/api/v2/tasks/{tid}/logs/search", params={"q": "E"})  # every match numbered
        assert [m["line"] for m in r.json()["matches"]] == [1, 2, 3]
        assert alice.get(url, params={"node": 3}).json()["first"]["line"] == 3
        # a node's log is read like the first one's, with its line number
        r = alice.get(f"/api/v2/tasks/{tid}/logs", params={"node": 3, "lines": "true", "offset": 30})
        assert r.status_code == 200 and r.content.startswith(b"[rank5]") and r.headers["x-line"] == "3"
        r = alice.get(f"/api/v2/tasks/{tid}/logs/search", params={"q": "cuda", "node": 3})
        assert [m["line"] for m in r.json()["matches"]] == [3]
        # the times of a range: the clock's stamps inside it and the first one after it
        (logs / "attempt-1.clock").write_text("10 1000.5\n30 1001.0\n47 1002.25\n60 10")  # a torn last line
        times = alice.get(f"/api/v2/tasks/{tid}/logs/times", params={"offset": 10, "end": 30}).json()["times"]
        assert times == [[30, 1001.0], [47, 1002.25]]
        assert alice.get(f"/api/v2/tasks/{tid}/logs/times", params={"end": 5}).json()["times"] == [[10, 1000.5]]
        # node K's times: from its own clock beside its log (node 3 has none); a node the task lacks is named
        assert alice.get(f"/api/v2/tasks/{tid}/logs/times", params={"end": 5, "node": 3}).json()["times"] == []
        (logs / "attempt-1.node-3.clock").write_text("30 2000.0\n")
        times = alice.get(f"/api/v2/tasks/{tid}/logs/times", params={"end": 5, "node": 3}).json()["times"]
        assert times == [[30, 2000.0]]
        r = alice.get(f"/api/v2/tasks/{tid}/logs/times", params={"end": 5, "node": 4})
        assert r.status_code == 400 and r.json()["detail"]["errors"][0]["field"] == "node"
        assert bob.get(f"/api/v2/tasks/{tid}/logs/times", params={"end": 5}).status_code == 404
        assert alice.get(f"/api/v2/tasks/{tid}/logs/times").status_code in (400, 422)  # end is required
        # another user's task is not there; no such node or attempt; bad values named
        assert bob.get(url).status_code == 404
        assert bob.get(f"/api/v2/tasks/{tid}/logs", params={"node": 3}).status_code == 404
        assert alice.get(url, params={"attempt": 4}).status_code == 404
        bad = alice.get(url, params={"node": 7})
        assert bad.status_code == 400
        err = bad.json()["detail"]["errors"][0]
        assert (err["field"], err["value"]) == ("node", 7) and "1 to 3" in err["message"]
        bad = alice.get(url, params={"node": "two"})
        assert 400 <= bad.status_code < 500 and "node" in bad.text
        assert 400 <= alice.get(url, params={"node": 0}).status_code < 500


# --- the index kept across a restart (services/log_index_store.py) ---

@pytest.fixture
def store(tmp_path, monkeypatch):  # noqa: ANN001, ANN201
    """The index store in a state folder of its own (``argus up`` passes ``<state_dir>/log-index``)."""
    folder = tmp_path / "state" / "log-index"
    folder.parent.mkdir()
    monkeypatch.setattr(log_index, "_STORE", folder)
    monkeypatch.setitem(log_index_store._PRUNED, str(folder), time.monotonic())  # no prune thread meanwhile
    return folder


def _restart(ref: LogRef) -> None:
    """What a restarted server has: no index in memory, the store as it was left."""
    with log_index._GUARD:
        log_index._INDEXES.pop(str(ref.path), None)


def _spy(monkeypatch) -> list[tuple[int, int]]:  # noqa: ANN001
    """(first byte, length) of every block the first-error search looks at from now on."""
    seen: list[tuple[int, int]] = []
    real = log_index._first_in_block

    def spy(block: bytes, base: int):  # noqa: ANN202
        seen.append((base, len(block)))
        return real(block, base)

    monkeypatch.setattr(log_index, "_first_in_block", spy)
    return seen


FILLER = b"".join(b"step:%d - actor/pg_loss:0.5 - val/error_rate:0.0\n" % i for i in range(200_000))  # ~10 MiB


def test_a_restarted_server_answers_from_the_store_without_searching_again(tmp_path, store, monkeypatch) -> None:  # noqa: ANN001
    ref = _ref(tmp_path, FILLER)
    assert first_error(ref) == (None, len(FILLER))
    (kept,) = store.iterdir()  # one small file, in the server's folder, not beside the log
    assert kept.suffix == ".json" and kept.stat().st_size < 4096 and str(ref.path) not in kept.name
    assert sorted(p.name for p in tmp_path.iterdir()) == ["attempt-1.log", "state"]
    _restart(ref)
    seen = _spy(monkeypatch)
    with ref.path.open("ab") as f:  # the log grew while the server was down: only the new bytes are read
        f.write(b"(WorkerDict pid=7, ip=10.0.0.7) Traceback (most recent call last):\n")
    found, _ = first_error(ref)
    assert found is not None and found.line == 200_001 and found.offset == len(FILLER) and found.exception == ""
    assert seen and all(base >= len(FILLER) for base, _ in seen), seen
    with ref.path.open("ab") as f:
        f.write(b'(WorkerDict pid=7, ip=10.0.0.7)   File "x.py", line 1\n(WorkerDict pid=7, ip=10.0.0.7) KeyError: 1\n')
    _restart(ref)  # the traceback's exception is written after the store learned the traceback: read then
    assert first_error(ref)[0].exception == "KeyError: 1"
    _restart(ref)
    seen.clear()
    found, size = first_error(ref)
    assert seen == [] and size == ref.path.stat().st_size  # found, and its exception: nothing is searched
    assert (found.line, found.worker, found.exception) == (200_001, "WorkerDict pid=7, ip=10.0.0.7", "KeyError: 1")
    counted: list[int] = []
    monkeypatch.setattr(log_index, "_count_to", lambda idx, f, upto: counted.append(upto))
    with open_plain(tmp_path, ref.path) as f:  # line numbers from the stored marks: nothing counted from the start
        assert line_number(ref, f, found.offset) == 200_001
        assert line_number(ref, f, 5 << 20) == FILLER[:5 << 20].count(b"\n") + 1 and counted == []


def test_a_rewritten_truncated_or_replaced_log_is_not_answered_from_the_store(tmp_path, store) -> None:  # noqa: ANN001
    ref = _ref(tmp_path, FILLER + b"ERROR late\n")
    assert first_error(ref)[0].line == 200_001
    # rewritten in place (the same inode and first bytes, no shorter): the bytes before the stored end differ
    two = FILLER.index(b"step:2 ")
    ref.path.write_bytes(FILLER[:two] + b"ERROR early\n" + FILLER[two:] + b"more\n")
    _restart(ref)
    found, _ = first_error(ref)
    assert (found.line, found.text) == (3, "ERROR early")
    # truncated: the stored offsets are past its end
    with ref.path.open("r+b") as f:
        f.truncate(100)
    _restart(ref)
    assert first_error(ref) == (None, 100)
    with ref.path.open("ab") as f:
        f.write(FILLER)  # grown back past the old end with other bytes
    _restart(ref)
    assert first_error(ref)[0] is None
    # another file in its place (a new inode), first bytes the same
    ref.path.unlink()
    ref.path.write_bytes(FILLER[:51] + b"[rank2]: FATAL one\n")
    _restart(ref)
    assert first_error(ref)[0].line == 2


def test_a_corrupt_or_foreign_store_file_is_ignored(tmp_path, store) -> None:  # noqa: ANN001
    ten = FILLER.index(b"step:10 ")
    ref = _ref(tmp_path, FILLER[:ten] + b"RuntimeError: boom\n" + FILLER)
    assert first_error(ref)[0].line == 11
    (kept,) = store.iterdir()
    good = json.loads(kept.read_text())
    size = ref.path.stat().st_size

    def forged(**change: object) -> dict:  # believed, it would answer "ERROR from the store"
        return {**good, "first": [0, 20, 1, "ERROR from the store", "level", "", "", ""], **change}

    bad_files = [b"", b"{not json", b"[" * 100_000, b"null", b"[1, 2]", json.dumps({"v": 99}).encode(),
                 b"x" * (log_index_store.MAX_FILE_BYTES + 10)]
    bad_docs = [forged(path="/elsewhere.log"), forged(key=[0, 0]), forged(counted="many"), forged(counted=True),
                forged(searched=-1), forged(lines=size + 1), forged(searched=size + 10, tail=[size + 10, good["tail"][1]]),
                forged(marks=[0, 10 ** 9]), forged(starts=[0, 0]), forged(starts=[]), forged(first_exception_done=1),
                forged(first=[10, 5, 1, "x", "level", "", "", ""]), forged(first=[1, 2, 3, "x", "evil", "", "", ""]),
                forged(first={"offset": 1}), forged(first=[0, 20, 1, "ERROR forged", "level", "", "", 5]),
                forged(head=[5, "0" * 64]), forged(tail=[good["tail"][0], "f" * 64]), forged(head=[10 ** 6, good["head"][1]])]
    for data in bad_files + [json.dumps(d).encode() for d in bad_docs]:
        kept.write_bytes(data)
        with ref.path.open("rb") as f:
            assert log_index_store.load(store, str(ref.path), f.fileno(), *_key_head(ref)) is None, data[:200]
        _restart(ref)
        found, got = first_error(ref)  # searched again: the right answer, never a crash or the forged one
        assert got == size and found is not None and (found.line, found.text) == (11, "RuntimeError: boom"), data[:200]
    # the well-formed file is used: a forged "first error" in it would be believed (it is the server's own folder)
    kept.write_text(json.dumps(forged()))
    _restart(ref)
    assert first_error(ref)[0].text == "ERROR from the store"


def test_the_store_is_bounded(tmp_path, store) -> None:  # noqa: ANN001
    refs = []
    for i in range(4):
        (tmp_path / str(i)).mkdir()
        refs.append(_ref(tmp_path / str(i), b"x\n" * 10 + b"ERROR %d\n" % i))
        first_error(refs[-1])
    files = sorted(store.iterdir(), key=lambda p: [str(r.path) for r in refs].index(json.loads(p.read_text())["path"]))
    for age, p in enumerate(reversed(files)):  # written one after the other
        os.utime(p, (time.time() - age, time.time() - age))
    refs[0].path.unlink()  # a log that is gone: its index too
    (store / "x.json.1.2.tmp").write_text("{")  # a crash's temporary file, an hour old
    os.utime(store / "x.json.1.2.tmp", (time.time() - 7200, time.time() - 7200))
    assert log_index_store.prune(store, keep=2) == 3  # and the least recently written beyond the cap
    for ref in refs[1:]:
        _restart(ref)
    kept = []
    for r in refs[1:]:
        with r.path.open("rb") as f:
            kept.append(log_index_store.load(store, str(r.path), f.fileno(), *_key_head(r)) is not None)
    assert kept == [False, True, True]
    refs[3].path.unlink()  # pruned in the background after a write, at most every PRUNE_EVERY_S
    del log_index_store._PRUNED[str(store)]
    first_error(refs[2])
    log_index_store._prune_when_due(store)
    wait_until(lambda: len(list(store.iterdir())) == 1, 10, what="the prune thread")


def _key_head(ref: LogRef) -> tuple:
    st = ref.path.stat()
    return (st.st_dev, st.st_ino), ref.path.read_bytes()[:log_index.HEAD_BYTES], st.st_size
