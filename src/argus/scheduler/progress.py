"""Watch each RUNNING attempt's log for progress: stalls (and the spec's on_stall), and resumed runs' first step.

The monitor calls :meth:`ProgressWatch.observe` for every RUNNING task on each pass. It reads only
what the attempt's log gained since the last pass (bounded: at most ``READ_CAP`` bytes, the newest),
never through a link (services/home_files.open_plain), and keeps per attempt when the log last grew,
the last verl ``step:N`` and when it came — on the server's clock, from when the server saw it, so a
node's clock cannot fake progress. ``core.stall`` decides; this module acts:

* a stall: once per silence, a timeline event and the task's message "no progress for 31 min (…)",
  a STALLED notification, and the spec's ``on_stall`` — ``keep``; ``cancel`` (the monitor stops the
  Ray job and the task ends FAILED, reason STALLED); ``requeue`` (stopped, and queued again as a new
  attempt within ``max_retries``, resuming from its latest complete checkpoint: scheduler/autoresume.py).
  Output after a stall clears it ("progressing again").
* each stall's forensics: the server cannot reach the node's processes, so it asks the attempt's driver, once
  per stall, for every process's stack (launcher/attempt_record.ask_for_stacks; the driver answers with
  launcher/stacks.py, within ``STACKS_WAIT_S``); a follow-up event names the file it wrote in the owner's home
  (``jobs/<task>/stacks/attempt-<n>-<time>.txt``), or why there is none. ``cancel`` and ``requeue`` wait for that
  answer before they stop the task: its stacks cannot be taken once it is stopped, and they are what a stall
  leaves to look at. A driver that does not run the attempt any more (no live record) is not asked.
* a resumed attempt (its command sets ``trainer.resume_from_path=…/global_step_N``): the first step it
  logs must be N + 1; otherwise a warning event and message say which steps were skipped or repeated.
  Either way a RESUMED notification says what the run did.
* idle GPUs: every GPU of the task below 5 % (``status.json``'s newest ``usage`` sample, launcher/telemetry.py)
  for 10 minutes: an "idle GPUs" note and an IDLE_GPU notification, once per idle spell; the task runs on.

State lives in memory: after a server restart every RUNNING attempt's silence is measured again from
the restart (a stall may be noticed late, never early), and a stacks answer still awaited is not reported.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path

from argus.core import checkpoints as ck
from argus.core.log_write import one_line
from argus.core.messages import Message, msg, part
from argus.core.metrics import is_training_step, parse_metric_line
from argus.core.resource_use import IDLE_PCT, IDLE_S
from argus.core.stall import STALL_ACTIONS, Progress, Stall, format_duration, resume_problem, stalled
from argus.db.models import TaskModel
from argus.launcher import attempt_record
from argus.launcher.stacks import TOTAL_S
from argus.scheduler.common import LoopContext, log_path
from argus.services import log_index
from argus.services.home_files import open_plain
from argus.services.log_search import node_log
from argus.services.logs import LogRef

READ_CAP = 1 << 20  # bytes of new log read per attempt per pass; a faster writer is skipped to its end
STACKS_WAIT_S = TOTAL_S + 30  # the driver looks every second and captures for at most TOTAL_S: then it is not coming


@dataclass
class _Cursor:
    progress: Progress
    offset: int = 0
    stall: Stall | None = None  # the stall being reported (cleared by output)
    resume_checked: bool = False
    carry: bytes = b""  # an incomplete last line, kept for the next read
    idle_since: datetime | None = None  # every GPU of the task below IDLE_PCT since (the driver's samples)
    idle_told: bool = False
    stacks_token: str | None = None  # the stacks request its driver has not answered yet (launcher/attempt_record)
    stacks_by: datetime | None = None  # when to stop waiting for that answer
    held: Finding | None = None  # on_stall's cancel/requeue, held until the stacks are in


@dataclass(frozen=True)
class Finding:
    """What the monitor should record for one task after a pass: a note (message + event), a notification,
    and maybe an action (``cancel`` / ``requeue``)."""

    message: str
    event: str
    notify: str | None = None  # notification event: STALLED / RESUMED
    coded: Message | None = None  # ``message`` as a code and params (issue 37), said in the reader's language
    coded_event: Message | None = None  # ``event`` the same way
    action: str | None = None  # "cancel" / "requeue"
    clears: bool = False  # "progressing again": replaces a stall message
    event_only: bool = False  # a timeline event; the task's message stays (the stall's)


def _finding(message: Message, event: Message, **more: object) -> Finding:
    """A finding whose message and event are coded (their English as the text)."""
    return Finding(message.text, event.text, coded=message, coded_event=event, **more)


@dataclass
class ProgressWatch:
    ctx: LoopContext
    cursors: dict[tuple[str, int], _Cursor] = field(default_factory=dict)

    def forget_except(self, running: set[str]) -> None:
        self.cursors = {k: v for k, v in self.cursors.items() if k[0] in running}

    def observe(self, task: TaskModel, user: str, usage: object = None) -> list[Finding]:
        """Read what the attempt's log gained, and the driver's newest resource sample (``status.json``'s
        ``usage``); the findings to record (often none)."""
        now = self.ctx.now()
        key = (task.id, task.attempts)
        cur = self.cursors.get(key)
        if cur is None:
            cur = self.cursors[key] = _Cursor(Progress(started_at=now))
        home, path = self.ctx.layout_home(user), log_path(self.ctx, user, task.id, task.attempts)
        grew, steps = self._read(cur, home, path)
        p = cur.progress
        if grew:
            p = replace(p, output_at=now)
            # the page's "First error" then answers from an index built as the log grew (services/log_index)
            ref = LogRef(task.id, task.attempts, path, home)
            for node in range(1, max(task.nnodes or 1, 1) + 1):
                log_index.keep_warm(node_log(ref, node))
        if steps:
            p = replace(p, step=steps[-1], step_at=now, first_step=p.first_step if p.first_step is not None
                        else steps[0])
        cur.progress = p
        found: list[Finding] = []
        if p.first_step is not None and not cur.resume_checked:
            cur.resume_checked = True
            found.extend(self._resume(task, p.first_step))
        spec = task.spec_resolved or {}
        settings = self.ctx.settings
        after = spec.get("stall_after")
        first = spec.get("stall_first_step")
        stall = stalled(p, now, after_s=int(after if after is not None else settings.stall_after_s),
                        first_step_s=int(first if first is not None else settings.stall_first_step_s))
        if stall is not None and cur.stall is None:
            cur.stall = stall
            action = spec.get("on_stall") or "keep"
            what = part(f"part.on_stall_{action}" if action in STALL_ACTIONS else "part.on_stall_other")
            acts = action if action in ("cancel", "requeue") else None
            said = msg("status.stalled", stall=stall.part(p), action=what)
            if not self._ask_stacks(task, cur, now):
                found.append(_finding(said, said, notify="STALLED", action=acts))
            elif acts:
                cur.held = _finding(said, said, action=acts)
                then = msg("status.stalled_capturing", stall=stall.part(p), action=what)
                found.append(_finding(then, then, notify="STALLED"))
            else:
                note = msg("status.stalled_capture_note", stall=stall.part(p), action=what)
                found.append(_finding(said, note, notify="STALLED"))
        elif stall is None and cur.stall is not None and (grew or steps):
            cur.stall = None
            found.append(_finding(msg("status.progressing_again"), msg("status.progressing_again_after"), clears=True))
        found.extend(self._idle(cur, usage, now))
        found.extend(self._stacks(task, cur, now))
        return found

    def _ask_stacks(self, task: TaskModel, cur: _Cursor, now: datetime) -> bool:
        """Ask the attempt's driver for every process's stack (once: a request still awaited serves this stall
        too); False when no driver runs the attempt to answer."""
        if cur.stacks_token is None:
            token = attempt_record.ask_for_stacks(self.ctx.settings.root, task.id, task.attempts, now)
            if token is None:
                return False
            cur.stacks_token, cur.stacks_by = token, now + timedelta(seconds=STACKS_WAIT_S)
        return True

    def _stacks(self, task: TaskModel, cur: _Cursor, now: datetime, *, final: bool = False) -> list[Finding]:
        """The driver's answer to the stacks request, once it is in (or once it is no longer awaited): an event
        naming the file below the owner's home, then on_stall's held action. ``final``: the attempt ended."""
        if cur.stacks_token is None:
            return []
        answer = attempt_record.stacks_answer(self.ctx.settings.root, task.id, task.attempts, cur.stacks_token)
        if answer is None and (final or (cur.stacks_by is not None and now < cur.stacks_by)):
            return []
        cur.stacks_token = None
        if answer is None:
            said = msg("status.stacks_no_answer", seconds=f"{STACKS_WAIT_S:g}")
        elif isinstance(answer.get("file"), str) and answer["file"]:
            said = msg("status.stacks_file", processes=_count(answer, "processes"), dumped=_count(answer, "dumped"),
                       python=_count(answer, "python"), file=one_line(answer["file"])[:300])
        else:
            error = answer.get("error")
            said = msg("status.stacks_none", error=one_line(str(error))[:300] if error else part("part.no_reason_given"))
        found = [_finding(said, said, event_only=True)]
        if cur.held is not None:
            found.append(cur.held)
            cur.held = None
        return found

    def _idle(self, cur: _Cursor, usage: object, now: datetime) -> list[Finding]:
        """GPUs held below IDLE_PCT for IDLE_S (core/resource_use.py): said once per idle spell, and notified."""
        gpus = usage.get("gpu") if isinstance(usage, dict) else None
        utils = [g[0] for g in gpus if isinstance(g, list) and g and isinstance(g[0], int | float)] \
            if isinstance(gpus, list) else []
        if not utils or max(utils) >= IDLE_PCT:
            was, cur.idle_since, cur.idle_told = cur.idle_told, None, False
            return [_finding(msg("status.gpus_busy_again"), msg("status.gpus_busy_again_after"), clears=True)] \
                if was else []
        cur.idle_since = cur.idle_since or now
        if cur.idle_told or (now - cur.idle_since).total_seconds() < IDLE_S:
            return []
        cur.idle_told = True
        said = msg("status.idle_gpus", gpus=len(utils), pct=f"{IDLE_PCT:g}",
                   duration=format_duration((now - cur.idle_since).total_seconds()))
        return [_finding(said, said, notify="IDLE_GPU")]

    def at_end(self, task: TaskModel, user: str) -> list[Finding]:
        """The resume check of an attempt that ended before a pass saw its first step (a short run)."""
        key = (task.id, task.attempts)
        cur = self.cursors.pop(key, None) or _Cursor(Progress(started_at=self.ctx.now()))
        stacks = self._stacks(task, cur, self.ctx.now(), final=True)  # answered just before the end: still said
        if cur.resume_checked:
            return stacks
        _grew, steps = self._read(cur, self.ctx.layout_home(user), log_path(self.ctx, user, task.id, task.attempts))
        first = cur.progress.first_step if cur.progress.first_step is not None else (steps[0] if steps else None)
        return stacks + (self._resume(task, first) if first is not None else [])

    def _read(self, cur: _Cursor, home: Path, path: Path) -> tuple[bool, list[int]]:
        """(did the log grow, the steps in what it gained)."""
        fh = open_plain(home, path)
        if fh is None:
            return False, []
        with fh:
            size = os.fstat(fh.fileno()).st_size
            if size < cur.offset:  # rewritten from the start (not the driver's way): follow it
                cur.offset, cur.carry = 0, b""
            if size == cur.offset:
                return False, []
            start = max(cur.offset, size - READ_CAP)
            if start > cur.offset:
                cur.carry = b""  # a gap: the partial line before it is lost
            fh.seek(start)
            data = cur.carry + fh.read(size - start)
            cur.offset = size
        lines = data.split(b"\n")
        cur.carry = lines.pop()[-4096:]
        steps = []
        for raw in lines:
            if b"step:" not in raw:
                continue
            parsed = parse_metric_line(raw.decode("utf-8", errors="replace"))
            if parsed is not None and is_training_step(parsed[1]):
                steps.append(parsed[0])
        return True, steps

    def _resume(self, task: TaskModel, first: int) -> list[Finding]:
        words = ck.command_words(list(task.argv))
        path = ck.last_value(words, ck.PATH_KEY)
        resumed = ck.step_of(path.rstrip("/").rsplit("/", 1)[-1]) if path else None
        if resumed is None or ck.resume_disabled(list(task.argv)):
            return []
        problem = resume_problem(resumed + 1, first)
        if problem is None:
            said = msg("status.resumed_as_expected", checkpoint=f"{ck.STEP_PREFIX}{resumed}", first=first)
            return [_finding(said, said, notify="RESUMED")]
        return [_finding(msg("status.resume_warning", problem=problem), msg("status.resume_check", problem=problem),
                         notify="RESUMED")]


def _count(answer: dict, key: str) -> int:
    """A count from the driver's answer (platform code wrote it; still, only an int is shown)."""
    value = answer.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
