"""SFTP counters for ``GET /metrics``: sessions and bytes, counted in the SFTP process, read by the server.

The SFTP server runs in a child process (``sftp/child.py``), so its counters live there. The child
prints them on its stdout pipe as one line ``stats {json}`` every ``REPORT_S`` while they change;
the parent (``sftp/process.py``) keeps the last report, and adds the totals of a child that died to
those of the next one, so the counters only grow, as Prometheus counters must. A scrape therefore
sees numbers at most ``REPORT_S`` old, and costs the SFTP process nothing.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

REPORT_S = 2.0
PREFIX = "stats "


@dataclass
class SftpStats:
    sessions_open: int = 0
    sessions_total: int = 0
    bytes_read: int = 0  # sent to clients (downloads)
    bytes_written: int = 0  # received from clients (uploads)

    def line(self) -> str:
        return PREFIX + json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def parse(cls, line: str) -> SftpStats | None:
        if not line.startswith(PREFIX):
            return None
        try:
            data = json.loads(line[len(PREFIX):])
            return cls(**{k: int(data[k]) for k in ("sessions_open", "sessions_total", "bytes_read", "bytes_written")})
        except (ValueError, KeyError, TypeError):
            return None

    def plus(self, earlier: SftpStats) -> SftpStats:
        """These counters on top of a previous child's totals (open sessions died with it)."""
        return SftpStats(self.sessions_open, self.sessions_total + earlier.sessions_total,
                         self.bytes_read + earlier.bytes_read, self.bytes_written + earlier.bytes_written)


STATS = SftpStats()  # this process's counters (the SFTP child's; zero in the server)
