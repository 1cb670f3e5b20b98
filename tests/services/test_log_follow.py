"""The log follow wakes on file-change notification (issue 25: a line on screen in p50 < 100 ms), with
the old poll as the fallback where inotify cannot be used; and ranges of whole lines for paging."""

from __future__ import annotations

import statistics
import threading
import time
from pathlib import Path

import pytest

from argus.services.log_watch import DirWatch
from argus.services.logs import LogRef, follow, read_lines


def _ref(folder: Path) -> LogRef:
    return LogRef("t", 1, folder / "attempt-1.log", folder)


def _latencies(folder: Path, *, inotify: bool, n: int = 8, poll_s: float = 1.0) -> list[float]:
    """Seconds from appending a line to the follower yielding it, for ``n`` lines."""
    ref = _ref(folder)
    ref.path.write_bytes(b"")
    written: list[float] = []
    got: list[float] = []
    state = {"done": False}

    def writer() -> None:
        for i in range(n):
            time.sleep(0.05)  # pacing the writer (lines arrive one by one), not a wait
            with ref.path.open("ab") as f:
                written.append(time.monotonic())
                f.write(f"line {i}\n".encode())
        time.sleep(0.05)  # the end comes a little after the last line, as a task's does: not a wait
        state["done"] = True
        with ref.path.open("ab"):  # a last touch wakes the follower to see the end
            pass

    threading.Thread(target=writer, daemon=True).start()
    for _, data in follow(ref, 0, lambda: state["done"], poll_s=poll_s, inotify=inotify):
        got.extend(time.monotonic() for _ in range(data.count(b"\n")))
    assert len(got) == n
    return [g - w for g, w in zip(got, written, strict=True)]


def test_an_appended_line_wakes_the_follower_at_once(tmp_path: Path) -> None:
    """With a 1 s backstop poll, only inotify can deliver the lines in far less than the poll (a behaviour check
    with a wide margin: the figures themselves are bench/web_log_latency.py's)."""
    with DirWatch(tmp_path) as w:
        assert w.notifying, "inotify is available on this Linux machine"
    lat = _latencies(tmp_path, inotify=True)
    assert statistics.median(lat) < 0.5, lat


def test_without_inotify_the_follower_polls(tmp_path: Path) -> None:
    """The fallback (no inotify, or a network filesystem): lines still arrive, at the poll's pace."""
    lat = _latencies(tmp_path, inotify=False, n=4, poll_s=0.3)
    assert max(lat) < 1.0, lat
    assert statistics.mean(lat) > 0.05, f"the fallback cannot be as fast as a notification: {lat}"


def test_a_watch_on_a_missing_folder_sleeps_then_watches_once_it_exists(tmp_path: Path) -> None:
    folder = tmp_path / "logs"
    w = DirWatch(folder)
    try:
        assert not w.notifying
        t0 = time.monotonic()
        assert w.wait(0.1) is False and time.monotonic() - t0 >= 0.09
        folder.mkdir()
        assert w.wait(0.01) is False and w.notifying  # the folder is watched from now on
        threading.Timer(0.05, lambda: (folder / "attempt-1.log").write_bytes(b"x\n")).start()
        t0 = time.monotonic()
        assert w.wait(5) is True
        assert time.monotonic() - t0 < 1
    finally:
        w.close()
    assert w.fd is None


def test_the_follower_ends_after_the_attempt_without_a_write(tmp_path: Path) -> None:
    """No write comes after the end: the backstop poll re-checks the status."""
    ref = _ref(tmp_path)
    ref.path.write_bytes(b"a\n")
    state = {"done": False}
    threading.Timer(0.2, lambda: state.update(done=True)).start()
    t0 = time.monotonic()
    assert [d for _, d in follow(ref, 0, lambda: state["done"], poll_s=0.1)] == [b"a\n"]
    assert time.monotonic() - t0 < 2


@pytest.mark.parametrize(("offset", "limit", "want"), [
    (0, None, (0, 14, b"one\ntwo\nthree\n")),  # a last line still being written waits for its newline
    (1, 8, (4, 8, b"two\n")),      # starts inside "one": moves to "two"; ends inside "three": back to its start
    (4, 4, (4, 8, b"two\n")),      # already on boundaries
    (5, 2, (8, 8, b"")),           # inside one line: nothing whole
    (14, None, (14, 18, b"four")),  # ... unless it is all there is (a log that ended without a newline)
    (14, 2, (14, 16, b"fo")),      # a range holding no newline at all: the cut line itself
])
def test_read_lines_aligns_ranges_to_line_boundaries(tmp_path: Path, offset, limit, want) -> None:  # noqa: ANN001
    ref = _ref(tmp_path)
    ref.path.write_bytes(b"one\ntwo\nthree\nfour")
    start, end, chunks = read_lines(ref, offset, limit)
    assert (start, end, b"".join(chunks)) == want
