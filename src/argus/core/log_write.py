"""A task log that cannot be written: the words the driver says it in and the monitor reads it back (pure).

A full, read-only or over-quota jobs folder must not leave a task RUNNING with nobody draining
its output (issue 11). The driver keeps reading, drops what it cannot write, stops the task and
exits with :data:`EXIT_CODE`; it says why three ways, so the reason reaches the server even when
nothing at all can be written to the jobs folder:

* ``status.json``'s ``log_error`` (the same disk: it may fail too);
* a last line ``[argus] LOG_WRITE_FAILED: <why>`` on its stdout, which goes to Ray's driver log on
  the node's local disk; Ray copies the last lines of that log into the failed job's ``message``;
* its exit code, :data:`EXIT_CODE` (``EX_IOERR`` of sysexits.h).

The task can print that line and write ``status.json`` itself, so both are only believed together
with the driver's exit code, and only ever label the task's own failure.
"""

from __future__ import annotations

import errno
import re
from pathlib import PurePath

from argus.core.messages import Message, msg, part

REASON = "LOG_WRITE_FAILED"
EXIT_CODE = 74  # EX_IOERR: "an error occurred while doing I/O on some file"
MARKER = f"[argus] {REASON}: "
MAX_CHARS = 300

# errno -> how the message says it; the folder follows
_WORDS = {
    errno.ENOSPC: "no space left on",
    errno.EDQUOT: "disk quota exceeded on",
    errno.EROFS: "read-only file system at",
    errno.EACCES: "permission denied writing to",
    errno.EPERM: "permission denied writing to",
    errno.EIO: "I/O error writing to",
    errno.EFBIG: "file too large in",
}
# errors that say the storage (not the program) is at fault: the driver names them instead of dying
STORAGE_ERRNOS = frozenset(_WORDS)
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def shown_path(path: PurePath, job_dir: PurePath) -> str:
    """``$HOME/jobs/<task>/logs``: the folder as its owner sees it (over SFTP, in ``argus files``)."""
    if job_dir.parent.name != "jobs":
        return str(path)
    try:
        rest = PurePath(path).relative_to(job_dir)
    except ValueError:
        return str(path)
    tail = "/".join((job_dir.name, *rest.parts))
    return f"$HOME/jobs/{tail}"


def describe(err: OSError, folder: str) -> str:
    """``no space left on $HOME/jobs/t/logs`` (or the system's words for an errno not listed)."""
    words = _WORDS.get(err.errno or 0)
    if words:
        return f"{words} {folder}"
    return f"cannot write to {folder}: {err.strerror or err}"


def size_shown(n: int) -> str:
    """``812 bytes``, ``4.2 MiB``."""
    if n < 1024:
        return f"{n} bytes"
    size = n / 1024
    for unit in ("KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            break
        size /= 1024
    return f"{size:.1f} {unit}"


def dropped_shown(dropped_bytes: int, dropped_lines: int) -> str:
    """``4.2 MiB (51234 lines) of output not written``, or "" when nothing was dropped."""
    if not dropped_bytes:
        return ""
    lines = "1 line" if dropped_lines == 1 else f"{dropped_lines} lines"
    return f"{size_shown(dropped_bytes)} ({lines}) of output not written"


def marker_line(why: str) -> str:
    """The driver's last line in Ray's driver log, which Ray quotes in a failed job's message."""
    return f"{MARKER}{one_line(why)}\n"


def find_marker(text: str | None) -> str | None:
    """The ``<why>`` of the last ``[argus] LOG_WRITE_FAILED: <why>`` line in ``text`` (Ray's job message)."""
    if not text or MARKER not in text:
        return None
    found = None
    for line in text.splitlines():
        line = _ANSI.sub("", line).strip()
        if line.startswith(MARKER):
            found = line[len(MARKER):]
    return one_line(found) if found else None


def failure_reason(exit_code: int | None, status_error: object, ray_message: str | None) -> str | None:
    """Why the driver could not write the log, when it said so and exited with :data:`EXIT_CODE`; else None.

    ``status_error``: ``status.json``'s ``log_error`` (whatever the file holds); ``ray_message``:
    Ray's message for the failed job (the last lines of the driver's output).
    """
    if exit_code != EXIT_CODE:
        return None
    if isinstance(status_error, str) and status_error.strip():
        return one_line(status_error)
    return find_marker(ray_message)


def task_message(why: str) -> str:
    """``LOG_WRITE_FAILED: no space left on $HOME/jobs/t/logs; …`` — the task's status message."""
    return f"{REASON}: {why}"


# the driver's words (describe, dropped_shown, launcher/driver.py's ending) as the pieces of ``status.log_write_failed``
_PIECES = {words: code for words, code in zip(
    ("no space left on", "disk quota exceeded on", "read-only file system at", "permission denied writing to",
     "I/O error writing to", "file too large in"),
    ("part.log_no_space", "part.log_quota", "part.log_read_only", "part.log_permission", "part.log_io_error",
     "part.log_too_large"), strict=True)}
_CANNOT = re.compile(r"cannot write to (?P<folder>.+?): (?P<error>.+)")
_DROPPED = re.compile(r"(?P<size>\d+ bytes|\d+\.\d (?:KiB|MiB|GiB)) \((?P<lines>\d+) lines?\) of output not written")
_STOPPED = re.compile(r"the task was stopped \(exit code (?P<exit_code>-?\d+)\)")


def _piece(text: str) -> dict | None:
    for words, code in _PIECES.items():
        if text.startswith(words + " ") and len(text) > len(words) + 1:
            return part(code, folder=text[len(words) + 1:])
    if text == "the task was not started":
        return part("part.log_not_started")
    for pattern, code in ((_CANNOT, "part.log_cannot_write"), (_DROPPED, "part.log_dropped"),
                          (_STOPPED, "part.log_stopped")):
        m = pattern.fullmatch(text)
        if m:
            found = m.groupdict()
            return part(code, **{k: int(v) if k in ("lines", "exit_code") else v for k, v in found.items()})
    return None


def said(why: str) -> Message:
    """:func:`task_message` as ``status.log_write_failed`` (issue 37): ``why`` (the driver's one line, read back from
    ``status.json`` or Ray's message) split at ``; `` into the pieces the driver writes, each known again by its
    words and verified by rendering the whole back to the same text; otherwise ``why`` is the parameter as written."""
    pieces = [_piece(p) for p in why.split("; ")]
    if all(p is not None for p in pieces):
        coded = msg("status.log_write_failed", why=pieces)
        if coded.text == task_message(why):
            return coded
    return msg("status.log_write_failed", why=why)


def one_line(text: str) -> str:
    """Printable, one line, at most MAX_CHARS (a status message: no NUL for PostgreSQL, no escapes)."""
    text = "".join(c for c in " ".join(_ANSI.sub("", text).split()) if c.isprintable())
    return text if len(text) <= MAX_CHARS else text[:MAX_CHARS - 1] + "…"
