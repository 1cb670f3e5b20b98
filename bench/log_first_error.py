"""Benchmark: "where did it first fail?" over a 1 GiB log (issue 37: an answer in < 300 ms for 1 GiB).

A real uvicorn server over a real SQLite file (no Ray: the task stays QUEUED) and a synthetic verl-like
log of ``--mib`` MiB in a temporary folder under /tmp: coloured Ray actor prefixes, step metrics, tqdm
redraws, warnings, and the first error — a Ray worker's traceback — ``--tail-kib`` KiB before the end.
It times, over HTTP (``GET /api/v2/tasks/{id}/logs/first-error``):

* cold: the first question, which builds the log's index (services/log_index.py): ripgrep's one pass over
  the whole file (services/log_grep.py), the file in the page cache (just written); then ``--n`` times
  more, each with the index forgotten in memory and in the store (a log nobody ever indexed);
* search: ``…/logs/search?q=zerodivisionerror`` from the start, ``--n`` times: the one matching line,
  found in one answer over the whole file (ripgrep), with ``complete: true``;
* warm: the same question again (the index answers: a stat and a look-up), ``--n`` times;
* growing: after each of ``--n`` appends of 1 MiB (a training log grows), the question again: only the
  new bytes are read;
* the line number of the tail (``…/logs?lines=true`` at the end, ``X-Line``), warm;
* after a restart: the process-local index dropped (as a restarted ``argus up`` has none), the store in the
  server's state folder kept (services/log_index_store.py), then the question, ``--n`` times;
* watched: a fresh log of the same size written 16 MiB at a time while the monitor watches it (after each
  write, ``log_index.keep_warm`` as the monitor's progress watch calls it when a RUNNING attempt's log grew),
  then the question: what a user who clicks "First error" on a running (or just failed) task waits for;
  and that question again after a restart.

    .venv/bin/python bench/log_first_error.py [--mib 1024] [--n 30]

It prints p50/p95 per case; nothing is asserted.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.helpers import live_server  # noqa: E402

from argus.settings import Settings  # noqa: E402

SPEC = ("kind: advanced\nworkload: job\nnnodes: 1\nn_gpus_per_node: 0\nname: firsterr\n"
        "command: python3 -m argus.jobs.sleep 1\n")


def _block(n: int) -> bytes:
    """~1 MiB of verl/Ray-like output without an error line."""
    out = []
    k = 0
    size = 0
    while size < 1048576:
        if k % 200 == 0:
            line = f"\x1b[33m(WorkerDict pid=7{k % 4}, ip=10.0.0.{k % 8})\x1b[0m WARNING slow rollout {n}.{k}\n"
        elif k % 97 == 0:
            line = f"Training Progress: {k % 100}%|####  | {k}/10000 [01:{k % 60:02d}<02:00]\r" * 3 + "\n"
        else:
            line = (f"\x1b[36m(TaskRunner pid=4242)\x1b[0m step:{n * 10000 + k} - actor/pg_loss:0.0123 - "
                    f"actor/entropy:0.51 - critic/score/mean:0.43 - response_length/mean:211.5 - "
                    f"timing_s/gen:12.3 - perf/throughput:1234.5\n")
        out.append(line)
        size += len(line)
        k += 1
    return "".join(out).encode()


ERROR = (b"\x1b[36m(WorkerDict pid=71, ip=10.0.0.3)\x1b[0m Traceback (most recent call last):\n"
         b"(WorkerDict pid=71, ip=10.0.0.3)   File \"reward.py\", line 12, in compute_score\n"
         b"(WorkerDict pid=71, ip=10.0.0.3) ZeroDivisionError: division by zero\n")


def write_log(path: Path, mib: int, tail_kib: int) -> int:
    block = _block(0)
    with path.open("wb") as f:
        done = 0
        while done < mib * 1048576 - tail_kib * 1024:
            f.write(block)
            done += len(block)
        f.write(ERROR)
        f.write(block[: tail_kib * 1024])
        f.write(b"\n")
    return path.stat().st_size


def summary(label: str, ms: list[float]) -> str:
    q = statistics.quantiles(ms, n=20) if len(ms) > 1 else ms * 19
    return f"{label:44} p50 {statistics.median(ms):8.1f} ms   p95 {q[18]:8.1f} ms   (n={len(ms)})"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=1024)
    ap.add_argument("--tail-kib", type=int, default=512)
    ap.add_argument("--n", type=int, default=30)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(dir="/tmp", ignore_cleanup_errors=True) as tmp, live_server(
        Settings(state_dir=Path(tmp), sftp_enabled=False, verl_validation="off")
    ) as srv:
        c = srv.new_user("alice")
        r = c.post("/api/v2/tasks", content=SPEC, headers={"Content-Type": "application/yaml"})
        assert r.status_code == 201, r.text
        tid = r.json()["task_id"]
        log = Path(str(srv.ctx.layout.attempt_log("alice", tid, 1)))
        log.parent.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        size = write_log(log, args.mib, args.tail_kib)
        print(f"log: {size / 1048576:.0f} MiB written in {time.perf_counter() - t0:.1f} s; the first error "
              f"{args.tail_kib} KiB before the end")
        url = f"/api/v2/tasks/{tid}/logs/first-error"

        def ask() -> tuple[float, dict]:
            t = time.perf_counter()
            r = c.get(url, timeout=600)
            assert r.status_code == 200, r.text
            return (time.perf_counter() - t) * 1000, r.json()

        cold, body = ask()
        first = body["first"]
        assert first and first["exception"] == "ZeroDivisionError: division by zero", body
        print(f"answer: line {first['line']}, worker {first['worker']!r}, {first['exception']!r}")
        print(summary("cold, the first question", [cold]))
        print(summary("cold again (the index forgotten each time)", forgotten(ask, log, Path(tmp), args.n)))
        found = []
        for _ in range(args.n):  # the whole-log search (services/log_search.py): the one rare line, near the end
            t = time.perf_counter()
            r = c.get(f"/api/v2/tasks/{tid}/logs/search", params={"q": "zerodivisionerror", "max": 5}, timeout=600)
            found.append((time.perf_counter() - t) * 1000)
            assert r.status_code == 200 and r.json()["complete"] and len(r.json()["matches"]) == 1, r.text
        print(summary("search a rare text over the whole log", found))
        print(summary("warm (the index answers)", [ask()[0] for _ in range(args.n)]))
        grow = []
        block = _block(1)
        for _ in range(args.n):
            with log.open("ab") as f:
                f.write(block)
            grow.append(ask()[0])
        print(summary("growing (+1 MiB before each question)", grow))
        tail, numbered = [], 0
        for _ in range(args.n):
            end = log.stat().st_size
            t = time.perf_counter()
            r = c.get(f"/api/v2/tasks/{tid}/logs", params={"lines": "true", "offset": end - 98304})
            tail.append((time.perf_counter() - t) * 1000)
            assert r.status_code == 200, r.text
            numbered += bool(r.headers.get("x-line"))
        print(summary(f"tail range, X-Line in {numbered}/{args.n} answers", tail))
        print(summary("after a restart (the index from the store)", restarted(ask, log, args.n)))
        # a log opened cold at its tail (moved to another task: a new index): the range comes at once, its line
        # numbers once the background thread has counted the file
        r = c.post("/api/v2/tasks", content=SPEC, headers={"Content-Type": "application/yaml"})
        tid2 = r.json()["task_id"]
        log2 = Path(str(srv.ctx.layout.attempt_log("alice", tid2, 1)))
        log2.parent.mkdir(parents=True, exist_ok=True)
        log.rename(log2)  # a new path: a new index (a hard link would be refused as not a plain file of its own)
        end = log2.stat().st_size
        params = {"lines": "true", "offset": end - 98304}
        t = time.perf_counter()
        r = c.get(f"/api/v2/tasks/{tid2}/logs", params=params)
        first_ms = (time.perf_counter() - t) * 1000
        deadline = time.monotonic() + 300
        while not r.headers.get("x-line"):
            assert r.status_code == 200 and r.content and time.monotonic() < deadline, (r.status_code, r.headers)
            time.sleep(0.05)
            r = c.get(f"/api/v2/tasks/{tid2}/logs", params=params)
        print(f"cold tail: the range in {first_ms:.1f} ms, "
              f"its line numbers {time.perf_counter() - t:.2f} s later (counted in the background)")
        watched(srv, c, args)


def watched(srv, c, args) -> None:  # noqa: ANN001 - tests.helpers' live server and client
    """A log written while the monitor watches it: the first error is found in the background as it grows."""
    from argus.services import log_index
    from argus.services.logs import LogRef

    r = c.post("/api/v2/tasks", content=SPEC, headers={"Content-Type": "application/yaml"})
    tid = r.json()["task_id"]
    log = Path(str(srv.ctx.layout.attempt_log("alice", tid, 1)))
    log.parent.mkdir(parents=True, exist_ok=True)
    ref = LogRef(tid, 1, log, Path(str(srv.ctx.layout.home("alice"))))
    block = _block(2)
    slice_ = block * 16
    t0 = time.perf_counter()
    with log.open("wb") as f:
        done = 0
        while done < args.mib * 1048576 - args.tail_kib * 1024:
            f.write(slice_)
            f.flush()
            done += len(slice_)
            log_index.keep_warm(ref)
        f.write(ERROR)
        f.write(block[: args.tail_kib * 1024])
        f.write(b"\n")
    log_index.keep_warm(ref)
    written = time.perf_counter()
    while str(log) in log_index._WARMING:
        time.sleep(0.01)
    caught = time.perf_counter()
    ms = []
    for _ in range(args.n):
        t = time.perf_counter()
        r = c.get(f"/api/v2/tasks/{tid}/logs/first-error", timeout=600)
        ms.append((time.perf_counter() - t) * 1000)
        assert r.status_code == 200 and r.json()["first"]["exception"] == "ZeroDivisionError: division by zero", r.text
    print(f"watched: {log.stat().st_size / 1048576:.0f} MiB written in {written - t0:.1f} s with keep_warm after "
          f"each 16 MiB; the background search done {caught - written:.2f} s after the last write")
    print(summary("watched, then asked (the index answers)", ms))

    def ask() -> tuple[float, dict]:
        t = time.perf_counter()
        r = c.get(f"/api/v2/tasks/{tid}/logs/first-error", timeout=600)
        assert r.status_code == 200 and r.json()["first"]["exception"] == "ZeroDivisionError: division by zero", r.text
        return (time.perf_counter() - t) * 1000, r.json()

    print(summary("watched, then asked after a restart", restarted(ask, log, args.n)))


def forgotten(ask, log: Path, state: Path, n: int) -> list[float]:  # noqa: ANN001 - the case's question
    """The question ``n`` times, each as if nobody had ever indexed the log: its index dropped from memory and
    its file from the store (after the background count the cold one started, so none runs beside it)."""
    from argus.services import log_index

    ms = []
    for _ in range(n):
        while (idx := log_index._INDEXES.get(str(log))) is not None and idx.building:
            time.sleep(0.01)
        with log_index._GUARD:
            log_index._INDEXES.pop(str(log), None)
        for kept in state.rglob("log-index/*"):
            kept.unlink()
        took, body = ask()
        assert body["first"] and body["first"]["exception"] == "ZeroDivisionError: division by zero", body
        ms.append(took)
    return ms


def restarted(ask, log: Path, n: int) -> list[float]:  # noqa: ANN001 - the case's question
    """The question after each of ``n`` restarts: the server's in-memory index of the log dropped, the store
    in its state folder kept (what a restarted ``argus up`` finds)."""
    from argus.services import log_index

    ms = []
    for _ in range(n):
        with log_index._GUARD:
            log_index._INDEXES.pop(str(log), None)
        took, body = ask()
        assert body["first"] and body["first"]["exception"] == "ZeroDivisionError: division by zero", body
        ms.append(took)
    return ms

if __name__ == "__main__":
    main()
