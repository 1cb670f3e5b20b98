"""Why did a task's process fail? The root-cause exception line from the tail of its log (pure).

A FAILED task that only says "exit code 1" sends every user to the log. The cause is
nearly always the last Python exception printed before the exit, in one of a few shapes:

* a plain traceback ending in ``ModuleNotFoundError: No module named 'transfer_queue'``
  (Hydra's ``@hydra.main`` adds "Set the environment variable HYDRA_FULL_ERROR=1 …" after it);
* a Ray chain: the driver's traceback ends with
  ``ray.exceptions.RayTaskError(ValueError): ray::TaskRunner.run() (pid=…)``, then the actor's
  frames and the real ``ValueError: …`` line; an actor's own output carries a prefix such as
  ``(TaskRunner pid=4242)`` (ANSI-coloured by default) and interleaves with other actors' lines;
* torchrun: each rank's traceback is prefixed ``[rank0]:``, then torchrun's own traceback
  ends in ``torch.distributed.elastic.multiprocessing.errors.ChildFailedError`` and a summary
  box; the root cause is the rank's exception *before* it.

:func:`failure_cause` reads those shapes and returns the exception line, or None when the
text has no recognisable exception (the message then stays "exit code N").

:func:`node_lost_message` does the same for a lost node: one line out of Ray's multi-line dump.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

TAIL_BYTES = 64 * 1024  # how much of the end of a log the monitor reads
MAX_CAUSE_CHARS = 300

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# "(TaskRunner pid=4242)", "(WorkerDict pid=7, ip=10.0.0.7)", "(raylet)", "[rank0]:", "[default0]:"
_PREFIX = re.compile(r"^(?:\((?P<ray>(?:[\w.:<>-]+ )?pid=\d+(?:, ip=[\w.:-]+)?|raylet|autoscaler[^)]*)\) ?"
                     r"|\[(?P<rank>(?:rank|default)\d+)\]: ?)")
_TRACEBACK = "Traceback (most recent call last):"
_CHAIN = ("During handling of the above exception", "The above exception was the direct cause")
# ``ValueError: msg``, ``torch.OutOfMemoryError: …``, ``ray.exceptions.RayTaskError(ValueError): …``, ``AssertionError``
_EXC = re.compile(r"^(?P<name>[A-Za-z_][\w.]*(?:\([\w.]+\))?)(?::(?P<msg>.*))?$")
_EXC_NAME = re.compile(r"(?:Error|Exception|Exit|Interrupt|Failure|Fault|Warning|Iteration)(?:\([\w.]+\))?$")
# printed after the real cause: torchrun's summary of a failed rank, ranks/actors interrupted at shutdown
_SECONDARY = ("ChildFailedError", "KeyboardInterrupt")


def _split(line: str) -> tuple[str, str]:
    """(source, text): the Ray actor / torchrun rank that printed a line ("" for the process itself)."""
    line = _ANSI.sub("", line)
    m = _PREFIX.match(line)
    if not m:
        return "", line
    return (m.group("ray") or m.group("rank") or ""), line[m.end():]


def _exception_line(text: str) -> str | None:
    m = _EXC.match(text.rstrip())
    if not m or not _EXC_NAME.search(m.group("name")):
        return None
    return text.strip()


def _short_name(line: str) -> str:
    name = line.split(":", 1)[0]
    return name.rsplit(".", 1)[-1]


def failure_cause(text: str) -> str | None:
    """The root-cause exception line of the last traceback in ``text`` (a log tail), or None."""
    blocks: list[tuple[int, str]] = []  # (line number, final exception line) of each traceback
    reading: dict[str, tuple[int, str] | None] = {}  # source -> its open traceback's exception so far
    loose: str | None = None  # an exception line seen outside any traceback (fallback)
    for n, raw in enumerate(re.split(r"\r\n|\r|\n", text)):
        who, line = _split(raw)
        if line.startswith(_TRACEBACK):
            if reading.get(who):
                blocks.append(reading[who])  # type: ignore[arg-type]
            reading[who] = None
            continue
        if who not in reading:
            exc = _exception_line(line)
            if exc and ":" in exc and re.search(r"Error|Exception", exc.split(":", 1)[0]):
                loose = exc
            continue
        if not line.strip() or line[:1].isspace() or line.startswith(_CHAIN):
            continue  # frames, source lines, ^^^^ markers, blank lines, "During handling of …"
        exc = _exception_line(line)
        if exc:
            reading[who] = (n, exc)  # a Ray chain goes on with the actor's frames and its real exception
            continue
        found = reading.pop(who)
        if found:  # the first other line after the exception ends the traceback
            blocks.append(found)
    blocks.extend(found for found in reading.values() if found)
    if not blocks:
        return _clip(loose) if loose else None
    blocks.sort()
    for _, cause in reversed(blocks):
        if _short_name(cause) not in _SECONDARY:
            return _clip(cause)
    return _clip(blocks[-1][1])


def _clip(line: str) -> str:
    """One printable line (a status message: no NUL for PostgreSQL, no escape codes), at most MAX_CAUSE_CHARS."""
    line = "".join(c for c in " ".join(line.split()) if c.isprintable())
    return line if len(line) <= MAX_CAUSE_CHARS else line[:MAX_CAUSE_CHARS - 1] + "…"


def failure_message(exit_code: int, cause: str | None) -> str:
    """``exit code 1: ModuleNotFoundError: No module named 'transfer_queue'`` (or just ``exit code 1``)."""
    return f"exit code {exit_code}: {cause}" if cause else f"exit code {exit_code}"


# Ray's account of a dead job supervisor (ray.exceptions.ActorDiedError, prefixed by the job manager):
#   Job supervisor actor died: The actor died unexpectedly before finishing this task.
#   \tclass_name: JobSupervisor / \tactor_id: … / \tpid: … / \tname: … / \tnamespace: … / \tip: 10.0.0.7
#   The actor died because its node has died. Node Id: 5f1b…
#   \tthe actor's node was terminated unexpectedly: health check failed due to missing too many heartbeats
_NODE_ID = re.compile(r"Node Id: ([0-9a-fA-F]+)")
_IP = re.compile(r"^\s*ip: (\S+)\s*$", re.MULTILINE)
_NODE_FATE = re.compile(r"the actor's node was (.+)$", re.MULTILINE)
NODE_ID_SHOWN = 12


def node_lost_message(when: datetime, ray_message: str | None, *, node_id: str | None = None,
                      hostname: str | None = None) -> str:
    """One line for a lost node: which node, when, and Ray's reason (pure).

    ``the driver's node w1 (5f1be0c3a5e0, 10.0.0.7) was lost at 2026-11-23 12:03:04 UTC: terminated
    unexpectedly: health check failed due to missing too many heartbeats``. Ray's message is a
    multi-line dump of the job supervisor actor (class, actor id, pid, namespace…); the full text
    belongs in the task's timeline, not in its status line.
    """
    text = ray_message or ""
    m = _NODE_ID.search(text)
    node = (m.group(1) if m else None) or node_id
    ip = _IP.search(text)
    names = [n for n in (hostname, node[:NODE_ID_SHOWN] if node else None, ip.group(1) if ip else None) if n]
    who = names[0] + (f" ({', '.join(names[1:])})" if names[1:] else "") if names else ""
    line = f"the driver's node {who} was lost" if who else "the driver's node was lost"
    line += f" at {when.astimezone(UTC).strftime('%Y-%m-%d %H:%M:%S')} UTC"
    reason = _ray_reason(text)
    return _clip(f"{line}: {reason}" if reason else line)


def _ray_reason(text: str) -> str | None:
    """Ray's words for why: the node's fate when Ray gives it, else the first line of its message."""
    fate = _NODE_FATE.search(text)
    if fate:
        return fate.group(1).strip()
    if "because its node has died" in text:
        return "Ray reports its node dead"
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return first.removeprefix("Job supervisor actor died:").strip() or None
