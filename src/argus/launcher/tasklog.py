"""The driver's two files on the shared filesystem, written so that a failing disk never stops the task's output.

Issue 11: with the jobs folder on a full filesystem the old copier died on ``ENOSPC``, nothing
drained the child's pipe, the child blocked on its next ``print`` and the task stayed RUNNING,
holding its GPUs, for as long as anyone watched. Here:

* :class:`TaskLog` never raises. The first failed write is recorded once (``error``, in the
  words of :mod:`argus.core.log_write`: "no space left on $HOME/jobs/<task>/logs"), everything
  after it is dropped and counted (``dropped_bytes``/``dropped_lines``), and ``on_error`` is
  called once so the driver can stop the task; the caller keeps reading the pipe to its end.
  Writes are complete or counted: a short write (the disk filling mid-chunk) is resumed.
* :class:`StatusFile` replaces ``status.json`` atomically (a reader never sees half a file) and
  answers a failed write with the error instead of raising, so the driver's exit path stays alive
  on a full disk and can still say why through its stdout and exit code.

Both take a lock: the pump thread and the main thread write to them.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

from argus import home_io
from argus.core import log_write
from argus.core.launch import AttemptStatus
from argus.core.metrics import CLOCK_MARK, CLOCK_SUFFIX, clock_line
from argus.launcher import attempt_record


class TaskLog:
    """``logs/attempt-<n>.log`` plus the echo to our stdout (Ray's driver log, on the node's own disk)."""

    def __init__(self, path: Path, job_dir: Path, echo: BinaryIO) -> None:
        self.path = path
        self.job_dir = job_dir
        self._echo = echo
        self._file: Any = None
        self._lock = threading.Lock()
        self.error: str | None = None  # why the log cannot be written, once known
        self.dropped_bytes = 0
        self.dropped_lines = 0
        self.on_error: Callable[[str], None] | None = None
        # the clock beside the log (core/metrics.py): when each metrics line reached it, for charts' wall time
        self._clock: Any = None
        self._offset = 0
        self._tail = b""

    def open(self) -> bool:
        """Make ``logs/`` and open the log for appending; False (and ``error`` set) when the disk refuses."""
        # walked from the owner's home without following a link (argus/home_io.py): this process is root
        # outside every sandbox, and the task can plant a link where its log will be
        anchor = home_io.anchor_for(self.path)
        try:
            self._file = home_io.append_to(anchor, self.path)
        except OSError as exc:
            self.fail(exc)
            return False
        self._offset = os.fstat(self._file.fileno()).st_size
        try:  # best effort: without a clock the charts have steps but no wall time
            self._clock = home_io.append_to(anchor, self.path.with_suffix(CLOCK_SUFFIX))
        except OSError:
            self._clock = None
        return True

    def _stamp(self, data: bytes) -> None:
        """After a write that holds ``step:`` (or completes one split across writes): ``<offset> <now>``."""
        seen, self._tail = self._tail + data[:len(CLOCK_MARK) - 1], data[-(len(CLOCK_MARK) - 1):]
        if self._clock is None or (CLOCK_MARK not in data and CLOCK_MARK not in seen):
            return
        try:
            self._clock.write(clock_line(self._offset, time.time()))
        except OSError:  # the clock is a nicety: never a reason to stop the task
            self._clock = None

    def write(self, data: bytes, *, echo: bool = True) -> None:
        """Append ``data`` to the log while it works and echo it; never raises."""
        if not data:
            return
        first_failure = None
        with self._lock:
            rest = memoryview(data)
            if self.error is None and self._file is not None:
                try:
                    while rest:
                        n = self._file.write(rest)  # a full disk may take part of a chunk
                        self._offset += n
                        rest = rest[n:]
                except OSError as exc:
                    first_failure = self.fail(exc)
                self._stamp(data)
            if rest:
                self.dropped_bytes += len(rest)
                self.dropped_lines += rest.tobytes().count(b"\n")
            if echo:  # under the lock: Ray's log keeps the order of the shared one
                self.echo(data)
        if first_failure and self.on_error is not None:
            self.on_error(first_failure)

    def echo(self, data: bytes) -> None:
        """To our stdout only: Ray's driver log, whose tail Ray quotes when the job fails.

        ``echo`` should be unbuffered: a buffered stdout that failed would fail again when Python
        flushes it at exit, and turn the exit status into 120.
        """
        try:
            rest = memoryview(data)
            while rest:
                rest = rest[self._echo.write(rest) or len(rest):]
            self._echo.flush()
        except (OSError, ValueError):  # Ray's log gone or full: the shared log is what counts
            pass

    def fail(self, exc: OSError, where: Path | None = None) -> str:
        """Record why the job folder refuses writes (the first error only) and return it.

        ``where``: the folder to name (default: the path in the error, else ``logs/``).
        """
        if self.error is None:
            folder = where or (Path(exc.filename) if isinstance(exc.filename, str) else self.path.parent)
            self.error = log_write.describe(exc, log_write.shown_path(folder, self.job_dir))
        return self.error

    def summary(self) -> str:
        """``no space left on $HOME/jobs/t/logs; 4.2 MiB (5123 lines) of output not written``."""
        assert self.error is not None
        dropped = log_write.dropped_shown(self.dropped_bytes, self.dropped_lines)
        return f"{self.error}; {dropped}" if dropped else self.error

    def close(self) -> None:
        with self._lock:
            f, self._file = self._file, None
            clock, self._clock = self._clock, None
        try:
            if clock is not None:
                clock.close()
            if f is not None:
                f.close()
        except OSError:  # NFS may report a failed write-back only now; the task has ended anyway
            pass


class StatusFile:
    """``status.json``: what the monitor reads to learn the attempt's node, GPUs, times and end
    (:class:`argus.core.launch.AttemptStatus`, the one type both sides use)."""

    def __init__(self, path: Path, status: AttemptStatus, record: Path | None = None) -> None:
        self.path = path
        self.status = status
        self.record = record  # launcher/attempt_record: the copy out of the owner's reach that the server decides on
        self._lock = threading.Lock()

    def save(self, **changes: Any) -> OSError | None:
        """Apply ``changes`` (AttemptStatus's fields: another name raises at once) and replace the file
        atomically (and the attempt's record); the error instead of raising it (status.json's: the owner's
        folder is the one a full disk or a quota refuses)."""
        with self._lock:
            for name, value in changes.items():
                setattr(self.status, name, value)
            data = self.status.as_dict()
            if self.record is not None:
                attempt_record.write(self.record, data)
            try:  # in the job folder reached without links (argus/home_io.py): a planted link is replaced
                home_io.replace(home_io.anchor_for(self.path), self.path, (json.dumps(data, indent=2) + "\n").encode())
            except OSError as exc:
                return exc
            return None
