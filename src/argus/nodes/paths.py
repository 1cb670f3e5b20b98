"""Where a node agent keeps its socket, its lock and its attempts' files (one agent per node state dir)."""

from __future__ import annotations

import fcntl
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import IO


@dataclass(frozen=True)
class AgentPaths:
    state_dir: Path

    @property
    def dir(self) -> Path:
        return self.state_dir / "agent"

    @property
    def socket(self) -> Path:
        return self.dir / "agent.sock"

    @property
    def pid_file(self) -> Path:
        return self.dir / "agent.pid"

    @property
    def log_file(self) -> Path:
        return self.dir / "agent.log"

    @property
    def attempts(self) -> Path:
        return self.dir / "attempts"

    @property
    def cgroup_base(self) -> str:
        """The node's cgroups, one folder per state dir: several `argus up` share a machine (tests do)."""
        tag = hashlib.sha1(str(self.state_dir.resolve()).encode()).hexdigest()[:10]  # noqa: S324 - a name
        return f"argus/node-{tag}"

    def attempt_file(self, key: str) -> Path:
        return self.attempts / f"{key}.json"

    def exit_file(self, key: str) -> Path:
        return self.attempts / f"{key}.exit"

    def out_file(self, key: str) -> Path:
        return self.attempts / f"{key}.out"

    def make(self) -> None:
        self.attempts.mkdir(parents=True, exist_ok=True)
        self.dir.chmod(0o700)
        self.attempts.chmod(0o700)

    def lock(self) -> IO[str] | None:
        """Hold the node's agent lock for this process's life (None: another agent runs); writes our pid."""
        f = open(self.pid_file, "a+")  # noqa: SIM115 - held open on purpose: the lock lives with the file
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            f.close()
            return None
        f.seek(0)
        f.truncate()
        f.write(f"{os.getpid()}\n")
        f.flush()
        return f
