"""/api/v2/tasks/{id}/logs: bytes from the driver's log file, or a live SSE follow.

Plain GET returns ``[offset, offset+limit)`` of the file as it is now, streamed in chunks,
with ``X-Next-Offset`` for the next read; ``lines=true`` trims the range to whole lines and says where it
starts in ``X-Offset`` (the WebUI pages through a GB log this way) and, where the log's index reaches it,
the number of its first line in ``X-Line``. ``/logs/search`` finds matching lines anywhere in the file
(services/log_search.py); ``/logs/first-error`` the first error line of every node's log, naming its worker
(services/log_index.py). ``node=K`` reads node K's log of a multi-node task (1, the default, is the first). With ``Accept: text/event-stream`` (or
``follow=true``) it sends ``log`` events — complete lines, ``id`` = the byte offset after
them, so a client resumes with ``Last-Event-ID`` — until the attempt ends, then one
``end`` event with the task's status.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel
from sqlalchemy.orm import Session

from argus.api.context import AppContext
from argus.api.deps import current_principal, get_ctx
from argus.api.schemas import ErrorOut
from argus.core.log_text import line_search
from argus.services import logs as svc
from argus.services import telemetry
from argus.services.home_files import open_plain
from argus.services.log_index import ErrorLine, first_error, line_number, line_numbers, log_times
from argus.services.log_search import resolve_node_logs, search_log
from argus.services.principal import Principal
from argus.services.tasks import get_task

router = APIRouter(prefix="/api/v2/tasks", tags=["logs"])
HEARTBEAT_S = 15.0  # an SSE comment after 15 s of silence keeps proxies (and disconnect detection) alive
FOLLOW_BACKSTOP_S = 0.5  # the follow wakes on inotify; this poll catches writes it cannot see (NFS)


@router.get("/{task_id}/logs", responses={200: {"content": {"text/plain": {}, "text/event-stream": {}}},
                                          404: {"model": ErrorOut}})
def get_logs(
    task_id: str,
    request: Request,
    attempt: int | None = Query(None, ge=1, description="default: the latest attempt"),
    offset: int = Query(0, ge=0, description="byte offset to start from"),
    limit: int | None = Query(None, ge=0, description="at most this many bytes (plain reads)"),
    follow: bool = Query(False, description="same as Accept: text/event-stream"),
    lines: bool = Query(False, description="whole lines only: the start moves past a cut line, the end back to "
                                           "the last newline; X-Offset says where it starts, X-Line its number"),
    node: int | None = Query(None, ge=1, description="node K's log of a multi-node task (default 1, the first)"),
    principal: Principal = Depends(current_principal),
    ctx: AppContext = Depends(get_ctx),
) -> StreamingResponse:
    with ctx.db.session() as session:
        ref = _node_log(session, principal, task_id, attempt, node, ctx)
    headers = {"X-Log-Attempt": str(ref.attempt), "Cache-Control": "no-cache"}
    if follow or "text/event-stream" in request.headers.get("accept", ""):
        last = request.headers.get("last-event-id", "")
        start = int(last) if last.isdigit() else offset
        return StreamingResponse(_sse(ctx, principal, ref, start), media_type="text/event-stream",
                                 headers={**headers, "X-Accel-Buffering": "no"})
    if lines:
        start, end, chunks = svc.read_lines(ref, offset, limit)
        headers["X-Offset"] = str(start)
        number = _line_of(ref, start)
        if number is not None:
            headers["X-Line"] = str(number)
    else:
        end, chunks = svc.read_range(ref, offset, limit)
    return StreamingResponse(chunks, media_type="text/plain; charset=utf-8",
                             headers={**headers, "X-Next-Offset": str(end)})


def _node_log(session: Session, principal: Principal, task_id: str, attempt: int | None, node: int | None,
              ctx: AppContext) -> svc.LogRef:
    """Node ``node``'s log of the attempt (None or 1: the first node's, the launcher's)."""
    if node is None or node == 1:
        return svc.resolve_log(session, principal, task_id, attempt, ctx.layout)
    ((_, ref),) = resolve_node_logs(session, principal, task_id, attempt, node, ctx.layout)
    return ref


def _line_of(ref: svc.LogRef, offset: int) -> int | None:
    f = open_plain(ref.home, ref.path)
    if f is None:
        return None
    with f:
        return line_number(ref, f, offset)


def _lines_of(ref: svc.LogRef, offsets: list[int]) -> list[int | None]:
    f = open_plain(ref.home, ref.path) if offsets else None
    if f is None:
        return [None] * len(offsets)
    with f:
        return line_numbers(ref, f, offsets)


class LogMatchOut(BaseModel):
    offset: int
    end: int
    text: str
    line: int | None = None  # its number (from 1), where the log's index reaches it


class LogSearchOut(BaseModel):
    attempt: int
    matches: list[LogMatchOut]
    scanned_from: int
    scanned_to: int
    size: int
    complete: bool


@router.get("/{task_id}/logs/search", response_model=LogSearchOut,
            responses={400: {"model": ErrorOut}, 404: {"model": ErrorOut}})
def search_logs(
    task_id: str,
    q: str = Query(..., description="text to find (any case), or a regular expression with regex=true"),
    regex: bool = Query(False),
    attempt: int | None = Query(None, ge=1, description="default: the latest attempt"),
    offset: int = Query(0, ge=0, description="search forward from this byte"),
    before: int | None = Query(None, ge=0, description="search backward: the last matches before this byte"),
    max: int = Query(50, ge=1, le=1000, description="at most this many matching lines"),  # noqa: A002
    node: int = Query(1, ge=1, description="node K's log of a multi-node task (1 is the first node)"),
    principal: Principal = Depends(current_principal),
    ctx: AppContext = Depends(get_ctx),
) -> LogSearchOut:
    """Matching lines with their byte offsets; one answer scans a bounded part of the file, and
    ``scanned_to`` (forward) or ``scanned_from`` (backward) with ``complete`` say whether to ask again."""
    search = line_search(q, regex)
    with ctx.db.session() as session:
        ((_, ref),) = resolve_node_logs(session, principal, task_id, attempt, node, ctx.layout)
    found = search_log(ref, search, offset=offset, before=before, max_matches=max)
    numbers = _lines_of(ref, [m.offset for m in found.matches])
    return LogSearchOut(attempt=ref.attempt, matches=[LogMatchOut(offset=m.offset, end=m.end, text=m.text,
                                                                  line=numbers[i])
                                                      for i, m in enumerate(found.matches)],
                        scanned_from=found.scanned_from, scanned_to=found.scanned_to, size=found.size,
                        complete=found.complete)


class LogTimesOut(BaseModel):
    attempt: int
    times: list[tuple[int, float]]  # (byte offset, unix time): the log had reached that byte by then


@router.get("/{task_id}/logs/times", response_model=LogTimesOut, responses={404: {"model": ErrorOut}})
def get_log_times(
    task_id: str,
    attempt: int | None = Query(None, ge=1, description="default: the latest attempt"),
    offset: int = Query(0, ge=0, description="stamps past this byte …"),
    end: int = Query(..., ge=0, description="… up to this one, and the first one after it"),
    node: int | None = Query(None, ge=1, description="node K's log of a multi-node task (default 1, the first)"),
    principal: Principal = Depends(current_principal),
    ctx: AppContext = Depends(get_ctx),
) -> LogTimesOut:
    """When the log reached the bytes of a range (the driver's clock beside the log, stamped after each write
    holding ``step:``): a line was in the log by the time of the first stamp past its first byte. A log without
    a clock beside it (``attempt-<n>[.node-<K>].clock``) has no times."""
    with ctx.db.session() as session:
        ref = _node_log(session, principal, task_id, attempt, node, ctx)
    return LogTimesOut(attempt=ref.attempt, times=log_times(ref, offset, end))


class ErrorLineOut(BaseModel):
    node: int  # 1: the first node (the launcher's log); K: attempt-<n>.node-<K>.log
    offset: int
    end: int
    line: int
    text: str
    kind: str  # "traceback", "exception" or "level" (an ERROR/Error/error, critical or fatal line)
    worker: str  # Ray's actor prefix, e.g. "WorkerDict pid=7, ip=10.0.0.7", or ""
    rank: str  # torchrun's "rank3", or ""
    exception: str  # a traceback's exception line (the last of its chain), or ""


class NodeLogOut(BaseModel):
    node: int
    size: int
    error: ErrorLineOut | None


class FirstErrorOut(BaseModel):
    attempt: int
    first: ErrorLineOut | None  # the first node's first error, else the lowest other node's
    nodes: list[NodeLogOut]


def _error_out(node: int, e: ErrorLine) -> ErrorLineOut:
    return ErrorLineOut(node=node, offset=e.offset, end=e.end, line=e.line, text=e.text, kind=e.kind,
                        worker=e.worker, rank=e.rank, exception=e.exception)


@router.get("/{task_id}/logs/first-error", response_model=FirstErrorOut,
            responses={400: {"model": ErrorOut}, 404: {"model": ErrorOut}})
def get_first_error(
    task_id: str,
    attempt: int | None = Query(None, ge=1, description="default: the latest attempt"),
    node: int | None = Query(None, ge=1, description="only node K's log (default: every node's)"),
    principal: Principal = Depends(current_principal),
    ctx: AppContext = Depends(get_ctx),
) -> FirstErrorOut:
    """The first error line of the whole log of each node, with its line number and the worker (Ray actor,
    torchrun rank) that printed it. Each log is indexed once and the index extended as it grows, so a
    repeated question over a GiB log is answered without reading it again."""
    with ctx.db.session() as session:
        refs = resolve_node_logs(session, principal, task_id, attempt, node, ctx.layout)
    nodes = []
    for k, ref in refs:
        found, size = first_error(ref)
        nodes.append(NodeLogOut(node=k, size=size, error=_error_out(k, found) if found else None))
    first = next((n.error for n in nodes if n.error), None)
    return FirstErrorOut(attempt=refs[0][1].attempt, first=first, nodes=nodes)


def _sse(ctx: AppContext, principal: Principal, ref: svc.LogRef, offset: int) -> Iterator[bytes]:
    """The follow stream, counted in ``argus_log_follow_streams`` while it is open (a client that goes
    away closes the generator, which runs the ``finally``)."""
    telemetry.LOG_STREAMS.inc()
    try:
        yield from _sse_events(ctx, principal, ref, offset)
    finally:
        telemetry.LOG_STREAMS.dec()


def sse_lines(data: bytes) -> list[str]:
    """The lines of a chunk as a terminal shows them: split on newlines only, and a line that tqdm redrew with
    carriage returns is what it last drew (``a\rb\rc`` → ``c``; SSE cannot carry a ``\r`` anyway). A plain
    range GET of the log still returns the bytes as written."""
    out = []
    for line in data.decode("utf-8", errors="replace").split("\n"):
        line = line.rstrip("\r")
        out.append(line.rpartition("\r")[2] if "\r" in line else line)
    if out and out[-1] == "":
        out.pop()
    return out


def _sse_events(ctx: AppContext, principal: Principal, ref: svc.LogRef, offset: int) -> Iterator[bytes]:
    def finished() -> bool:
        with ctx.db.session() as session:
            return svc.attempt_finished(session, ref.task_id, ref.attempt)

    sent = time.monotonic()
    pos = offset
    for pos, data in svc.follow(ref, offset, finished, poll_s=FOLLOW_BACKSTOP_S, heartbeat=True):
        if not data:
            if time.monotonic() - sent >= HEARTBEAT_S:
                sent = time.monotonic()
                yield b": keep-alive\n\n"
            continue
        sent = time.monotonic()
        yield (f"id: {pos}\nevent: log\n" + "".join(f"data: {line}\n" for line in sse_lines(data)) + "\n").encode()
    with ctx.db.session() as session:
        task = get_task(session, principal, ref.task_id, team_read=True)
        end = {"status": task.status, "attempt": ref.attempt, "offset": pos,
               "termination_reason": task.termination_reason, "status_message": task.status_message}
    yield f"id: {pos}\nevent: end\ndata: {json.dumps(end)}\n\n".encode()
