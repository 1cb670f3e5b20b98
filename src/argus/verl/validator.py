"""The server side of the warm verl validator: one child process, restarted when it dies or hangs.

The child (``argus.verl.worker``) runs under ``settings.verl_python`` so the
verl that judges a task is the one that will run it. Requests are serialized
with a lock (the child answers one at a time) so concurrent API requests are
safe; each has a budget of the child's own CPU time (verl/budget.py: a busy head makes a request slow, not
refused), and a child that overruns it — a loop, or no CPU used for as long: a hang — is killed and replaced;
a stuck compose must never wedge admission. Start-up is done in a background
thread so the server does not wait ~3 s for ``import verl``; the first request
waits for it instead.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any

from argus.verl.budget import CpuBudget
from argus.verl.sandbox import child_env

log = logging.getLogger(__name__)

_SRC_ROOT = str(Path(__file__).resolve().parents[2])  # the directory holding the argus package


_TIMED_OUT = "\0timed out"
POLL_S = 0.25


class ValidatorUnavailable(RuntimeError):
    """The child could not be started (verl missing, bad interpreter) or died mid-request."""


class ValidatorTimeout(RuntimeError):
    """The child did not answer in time; it has been killed and will be restarted."""


RESPAWN_BACKOFF_S = 30.0  # after a failed start, report that error for this long before trying again


class VerlValidator:
    """A thread-safe handle on the warm child process."""

    def __init__(self, python: str, *, timeout_s: float = 60.0, start_timeout_s: float = 120.0,
                 jail: list[str] | None = None) -> None:
        self.python = python
        self.jail = jail or []  # argv prefix from verl/sandbox.py: overrides are user input
        self.timeout_s = timeout_s
        self.start_timeout_s = start_timeout_s
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[str] | None = None
        self._ready = threading.Event()
        self._start_error: str | None = None
        self._failed_at = 0.0
        self._starter: threading.Thread | None = None
        self._next_id = 0
        self._stderr_tail: deque[str] = deque(maxlen=40)
        self.info: dict[str, Any] | None = None
        self.restarts = 0
        self._overrun = ""  # why the last request or start was stopped (verl/budget.py)

    # ------------------------------------------------------------ lifecycle

    def start_background(self) -> None:
        """Begin starting the child without waiting (server start-up stays fast)."""
        with self._lock:
            if self._starter is None and self._proc is None:
                self._starter = threading.Thread(target=self._start_guarded, name="verl-validator-start", daemon=True)
                self._starter.start()

    def _start_guarded(self) -> None:
        try:
            self._spawn()
        except Exception as exc:  # noqa: BLE001 - remembered and reported on the first request
            self._start_error, self._failed_at = str(exc), time.monotonic()
        finally:
            self._ready.set()

    def _spawn(self) -> None:
        env = child_env() if self.jail else dict(os.environ)  # jailed: not the server's ARGUS_* or tokens
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_SRC_ROOT, env.get("PYTHONPATH", "")) if p)
        env.setdefault("HF_HUB_OFFLINE", "1")  # validation never downloads
        env.setdefault("TRANSFORMERS_OFFLINE", "1")
        env["PYTHONUNBUFFERED"] = "1"
        try:
            proc = subprocess.Popen(  # noqa: S603 - fixed argv, interpreter from settings
                [*self.jail, self.python, "-m", "argus.verl.worker"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                text=True, bufsize=1, env=env, start_new_session=True,
            )
        except OSError as exc:
            raise ValidatorUnavailable(f"cannot run verl_python {self.python!r}: {exc}") from exc
        threading.Thread(target=self._drain_stderr, args=(proc,), daemon=True).start()
        budget = CpuBudget(proc.pid, self.start_timeout_s)
        first = self._readline(proc, budget)
        if first is None or first is _TIMED_OUT:
            self._kill(proc)
            why = f" (it {self._overrun})" if first is _TIMED_OUT else ""
            raise ValidatorUnavailable(f"verl validator did not start{why}: {self._tail()}")
        hello = json.loads(first)
        if not hello.get("ready"):
            self._kill(proc)
            raise ValidatorUnavailable(f"verl is not usable in {self.python}: {hello.get('error')}")
        self._proc = proc
        self._start_error = None
        self.info = self._roundtrip({"op": "info"}, self.start_timeout_s)

    def _drain_stderr(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            self._stderr_tail.append(line.rstrip())

    def _tail(self) -> str:
        return " | ".join(list(self._stderr_tail)[-5:]) or "no output"

    def stop(self) -> None:
        with self._lock:
            if self._proc is not None:
                self._kill(self._proc)
                self._proc = None

    @staticmethod
    def _kill(proc: subprocess.Popen[str]) -> None:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)

    def alive(self) -> bool:
        """Whether the child process is running now (the ``argus_component_up`` metric)."""
        proc = self._proc
        return proc is not None and proc.poll() is None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    # ------------------------------------------------------------ requests

    def request(self, payload: dict[str, Any], timeout_s: float | None = None) -> dict[str, Any]:
        """Send one request; (re)start the child if needed. Raises ValidatorUnavailable / ValidatorTimeout."""
        self.start_background()
        if not self._ready.wait(self.start_timeout_s):
            raise ValidatorUnavailable("verl validator is still starting; retry in a few seconds")
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                if self._proc is not None:
                    log.warning("verl validator exited (code %s); restarting", self._proc.returncode)
                    self.restarts += 1
                self._proc = None
                if self._start_error and time.monotonic() - self._failed_at < RESPAWN_BACKOFF_S:
                    # a broken verl must not cost every submit a fresh start attempt
                    raise ValidatorUnavailable(self._start_error)
                try:
                    self._spawn()
                except ValidatorUnavailable as exc:
                    self._start_error, self._failed_at = str(exc), time.monotonic()
                    raise
            try:
                return self._roundtrip(payload, timeout_s or self.timeout_s)
            except ValidatorTimeout:
                if self._proc is not None:
                    self._kill(self._proc)
                self._proc = None
                self.restarts += 1
                raise

    def _roundtrip(self, payload: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        proc = self._proc
        assert proc is not None and proc.stdin is not None
        self._next_id += 1
        rid = self._next_id
        try:
            proc.stdin.write(json.dumps({**payload, "id": rid}) + "\n")
            proc.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            self._proc = None
            raise ValidatorUnavailable(f"verl validator died: {self._tail()}") from exc
        budget = CpuBudget(proc.pid, timeout_s)
        while True:
            line = self._readline(proc, budget)
            if line is _TIMED_OUT:
                raise ValidatorTimeout(f"verl validation {self._overrun} and was stopped (verl_timeout_s = "
                                       f"{timeout_s:g} s of CPU)")
            if line is None:
                self._proc = None
                raise ValidatorUnavailable(f"verl validator died: {self._tail()}")
            resp = json.loads(line)
            if resp.get("id") == rid:
                if "fatal" in resp:
                    raise ValidatorUnavailable(f"verl validator failed: {resp['fatal']}")
                return resp

    def _readline(self, proc: subprocess.Popen[str], budget: CpuBudget) -> str | None:
        """One stdout line; None at EOF; _TIMED_OUT (after killing the child; why in ``_overrun``) when the child
        overran its budget before writing one."""
        box: list[str] = []
        t = threading.Thread(target=lambda: box.append(proc.stdout.readline() if proc.stdout else ""), daemon=True)
        t.start()
        while True:
            t.join(POLL_S)
            if not t.is_alive():
                return box[0] if box and box[0] else None
            why = budget.overrun()
            if why is not None:
                self._overrun = why
                proc.kill()  # the reader is stuck on a child we give up on; the kill ends its readline with EOF
                return _TIMED_OUT
