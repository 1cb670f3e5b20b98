"""The SFTP server as a supervised child process: the ``Component`` ``argus up``/``server``/``head`` run.

``start`` spawns ``python -m argus.sftp.child`` (see there for the pipe protocol), hands it the
settings, and returns once it listens; a child that cannot listen (port taken) fails the start
with its one-line reason. While the server runs, a watcher restarts a child that died, after
1, 2, 4 … 30 s (reset once a child stayed up a minute), logging each exit and restart. ``stop``
sends SIGTERM (SIGKILL after 10 s). If this process dies without stopping it, the child sees EOF
on its stdin (and gets SIGTERM from the kernel) and exits: no orphan keeps the port.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import time

from argus.settings import Settings
from argus.sftp.stats import SftpStats

log = logging.getLogger(__name__)

# How long a child may take to say "ready" or "error: …". A child that cannot listen says so at once; one that
# is still importing on a loaded machine is slow, not broken (CI measured more than 60 s beside a Ray cluster),
# so this bounds only a child that hangs.
READY_TIMEOUT_S = 300.0
STABLE_S = 60.0
MAX_BACKOFF_S = 30.0


class SftpProcess:
    name = "sftp"

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.proc: asyncio.subprocess.Process | None = None
        self._watch: asyncio.Task[None] | None = None
        self._stopping = False
        self.restarts = 0
        self._stats = SftpStats()  # the running child's last report
        self._earlier = SftpStats()  # totals of the children before it (counters never go down)
        self._reader: asyncio.Task[None] | None = None

    @property
    def banner(self) -> str:
        return f"SFTP: sftp -P {self.settings.sftp_port} <user>@{self.settings.sftp_host}"

    def alive(self) -> bool:
        """Whether the child is running now (the ``argus_component_up`` metric)."""
        return self.proc is not None and self.proc.returncode is None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    async def _spawn(self) -> asyncio.subprocess.Process:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "argus.sftp.child", stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, stderr=None)
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(self.settings.model_dump_json().encode() + b"\n")
        await proc.stdin.drain()  # the pipe stays open: its EOF tells the child we are gone
        try:
            line = await asyncio.wait_for(proc.stdout.readline(), READY_TIMEOUT_S)
        except TimeoutError:
            line = b"error: did not listen within %d s" % READY_TIMEOUT_S
        text = line.decode(errors="replace").strip()
        if text != "ready":
            await _end(proc)
            raise OSError(text.removeprefix("error: ") or f"the SFTP process exited with code {proc.returncode}")
        return proc

    @property
    def stats(self) -> SftpStats:
        """Sessions and bytes for /metrics: the child's report plus earlier children's totals."""
        return self._stats.plus(self._earlier)

    async def _read_stats(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stdout is not None
        while line := await proc.stdout.readline():
            report = SftpStats.parse(line.decode(errors="replace").strip())
            if report is not None:
                self._stats = report
        # the child is gone: its totals carry over, its open sessions do not
        self._earlier = self._stats.plus(self._earlier)
        self._earlier.sessions_open = 0
        self._stats = SftpStats()

    def _follow(self, proc: asyncio.subprocess.Process) -> None:
        self._reader = asyncio.create_task(self._read_stats(proc))

    async def start(self) -> None:
        self.proc = await self._spawn()
        self._follow(self.proc)
        log.info("SFTP server process %d on %s:%s", self.proc.pid, self.settings.sftp_host, self.settings.sftp_port)
        self._watch = asyncio.create_task(self._supervise())

    async def _supervise(self) -> None:
        failures = 0
        while not self._stopping:
            assert self.proc is not None
            started = time.monotonic()
            code = await self.proc.wait()
            if self._stopping:
                return
            failures = 1 if time.monotonic() - started >= STABLE_S else failures + 1
            delay = min(MAX_BACKOFF_S, 2.0 ** (failures - 1))
            log.warning("SFTP server process %d exited with code %s; restarting in %.0f s",
                        self.proc.pid, code, delay)
            while not self._stopping:
                await asyncio.sleep(delay)
                if self._stopping:
                    return
                try:
                    self.proc = await self._spawn()
                except OSError as exc:
                    failures += 1
                    delay = min(MAX_BACKOFF_S, 2.0 ** (failures - 1))
                    log.warning("SFTP server process failed to start (%s); retrying in %.0f s", exc, delay)
                    continue
                self.restarts += 1
                self._follow(self.proc)
                log.info("SFTP server process %d restarted", self.proc.pid)
                break

    async def stop(self) -> None:
        self._stopping = True
        if self._reader is not None:
            self._reader.cancel()
        if self._watch is not None:
            self._watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watch
        if self.proc is not None:
            await _end(self.proc)


async def _end(proc: asyncio.subprocess.Process, grace_s: float = 10.0) -> None:
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            proc.terminate()
        try:
            await asyncio.wait_for(proc.wait(), grace_s)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
    if proc.stdin is not None:
        proc.stdin.close()
