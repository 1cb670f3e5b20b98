"""``python -m argus.sftp.child``: the SFTP server in its own process, started by ``sftp.process``.

Why a process of its own: SSH encryption and file I/O of a few clients at full speed kept the
server's event loop busy enough that ``GET /api/v2/tasks`` took 130 ms at the median and 1 s at
p99 (``bench/sftp_api.py``). Here they have their own interpreter (and GIL).

Protocol with the parent, over the child's stdin and stdout:

* stdin, first line: the parent's ``Settings`` as JSON (secrets never appear on a command line).
  The pipe then stays open and nothing more is written: EOF means the parent is gone (even by
  ``kill -9``), and the child stops at once. ``PR_SET_PDEATHSIG`` (SIGTERM) backs that up on Linux
  for a child too busy to read.
* stdout: ``ready`` once it listens, or ``error: <one line>`` before exiting with status 1; then
  ``stats {json}`` lines with its session and byte counters (``sftp/stats.py``).

It runs at a lower CPU priority (``nice`` +10): when the machine's cores are all busy, bulk
transfers yield to the API and the scheduler; with an idle core that costs them nothing.

It opens the same database (auth: users, keys, passwords; SQLite in WAL mode or PostgreSQL) and
the same data root; migrations are the parent's job.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import json
import logging
import os
import signal
import sys

PR_SET_PDEATHSIG = 1
NICE = 10


def _die_with_parent() -> None:
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):  # not Linux: the stdin EOF check alone
        pass


async def _serve(config: dict) -> None:
    from argus.db.session import Database
    from argus.services.files import FileStore
    from argus.settings import Settings
    from argus.sftp.server import SftpServer

    settings = Settings(**config)
    db = Database(settings.db_url)
    server = SftpServer(settings, db, FileStore.from_settings(settings))
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)

    def parent_gone() -> None:
        try:
            data = sys.stdin.buffer.raw.read(4096)  # type: ignore[attr-defined]
        except OSError:
            data = b""
        if not data:
            stop.set()

    try:
        try:
            await server.start()
        except OSError as exc:
            print(f"error: {exc}", flush=True)
            raise SystemExit(1) from None
        loop.add_reader(sys.stdin.fileno(), parent_gone)
        print("ready", flush=True)
        reporter = asyncio.create_task(_report_stats(stop))
        await stop.wait()
        reporter.cancel()
    finally:
        with contextlib.suppress(Exception):
            await server.stop()
        db.dispose()


async def _report_stats(stop: asyncio.Event) -> None:
    """``stats {json}`` on stdout whenever the counters changed (sftp/stats.py: the parent's /metrics)."""
    from argus.sftp.stats import REPORT_S, STATS

    last = ""
    while not stop.is_set():
        line = STATS.line()
        if line != last:
            print(line, flush=True)
            last = line
        await asyncio.sleep(REPORT_S)


def main() -> None:
    _die_with_parent()
    os.nice(NICE)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    line = sys.stdin.buffer.readline()
    if not line:
        return  # the parent died before sending the settings
    asyncio.run(_serve(json.loads(line)))


if __name__ == "__main__":
    main()
