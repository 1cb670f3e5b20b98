"""Wall time per step: the driver's clock beside the log (launcher/tasklog.py) read back by the metrics service.

The time must be the time the line was written, the same on every request and after a server
restart (a fresh parser), and absent rather than invented when the log has no clock.
"""

from __future__ import annotations

import io
import time

from argus.core.metrics import MetricsParser, clock_line, parse_clock, step_times
from argus.launcher.tasklog import TaskLog
from argus.services import metrics as svc


def test_feed_bytes_notes_where_each_step_starts_across_chunks():
    text = "héllo\n(TaskRunner pid=1) step:1 - a:1\nnoise\rstep:2 - a:2\n".encode()
    p = MetricsParser()
    for i in range(0, len(text), 5):  # also splits the two-byte é and the lines
        p.feed_bytes(text[i:i + 5])
    assert p.series.as_lists() == {"a": [(1, 1.0), (2, 2.0)]}
    assert p.step_offsets == {1: text.index(b"(TaskRunner"), 2: text.index(b"step:2")}


def test_step_times_take_the_first_stamp_past_the_line_start():
    clock = parse_clock("10 100.0\n40 105.5\ngarbage\n70 nan\n")
    assert clock == [(10, 100.0), (40, 105.5)]
    assert step_times({1: 0, 2: 10, 3: 39, 4: 40}, clock) == {1: 100.0, 2: 105.5, 3: 105.5}


def test_task_log_stamps_metric_writes_and_the_service_reads_stable_times(tmp_path):
    home = tmp_path / "home"
    log_path = home / "jobs" / "t" / "logs" / "attempt-1.log"
    log = TaskLog(log_path, home / "jobs" / "t", io.BytesIO())
    assert log.open()
    log.write(b"starting\n")  # no step: no stamp
    before = time.time()
    log.write(b"(TaskRunner pid=1) step:1 - loss:0.5\n")
    log.write(b"progress 10%\r" * 50)
    log.write(b"step:2 - loss:0.25 - ste")  # the mark split across writes is still seen
    log.write(b"p:3\nstep:3 - loss:0.125\n")
    log.close()
    clock = (log_path.with_suffix(".clock")).read_text().splitlines()
    assert len(clock) == 3
    assert clock[0].split()[0] == str(len(b"starting\n") + len(b"(TaskRunner pid=1) step:1 - loss:0.5\n"))
    first = svc.read_log_metrics(home, log_path)
    assert sorted(first.times) == [1, 2, 3]
    assert all(before - 1 <= t <= time.time() + 1 for t in first.times.values())
    svc._cache.clear()  # a restarted server: a fresh parser reads the same times
    again = svc.read_log_metrics(home, log_path)
    assert again.times == first.times and again.points == first.points


def test_a_log_without_clock_has_points_but_no_times(tmp_path):
    log_path = tmp_path / "logs" / "attempt-1.log"
    log_path.parent.mkdir(parents=True)
    log_path.write_bytes(b"step:1 - a:1\n")
    s = svc.read_log_metrics(tmp_path, log_path)
    assert s.as_lists() == {"a": [(1, 1.0)]} and s.times == {}
    # a clock that appears later (or grows) is read on the next request
    log_path.with_suffix(".clock").write_bytes(clock_line(13, 1700000000.0))
    assert svc.read_log_metrics(tmp_path, log_path).times == {1: 1700000000.0}
