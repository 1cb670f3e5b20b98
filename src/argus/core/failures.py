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
"""

from __future__ import annotations

import re

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
