"""/api/v2/files: the user's virtual layout over HTTP (WebUI, CLI), same rules as SFTP.

All confinement lives in ``services.files``; this module only speaks HTTP:
Range requests for downloads (one range; several ranges get the whole file,
which RFC 9110 allows), and uploads read from ``request.stream()`` chunk by
chunk into an atomic upload, never buffering the whole body — except a small
one (``SMALL_UPLOAD`` bytes declared), which is read whole and written in one
thread job: a folder of many small files (issue 25) paid more for seven thread
hops per PUT (auth, user, quota, open, write, commit, stat) than for its bytes.
"""

from __future__ import annotations

import re
from urllib.parse import quote

from fastapi import APIRouter, Depends, Query, Request, Response
from fastapi.responses import StreamingResponse
from pydantic import BaseModel
from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool

from argus.api.context import AppContext
from argus.api.deps import Credentials, credentials, current_principal, get_ctx
from argus.api.schemas import ErrorOut
from argus.services import file_archive, file_preview
from argus.services.file_actions import entry_actions
from argus.services.files import UserFiles, shared_store, user_files
from argus.services.principal import Principal

router = APIRouter(prefix="/api/v2/files", tags=["files"])
_ERR = {c: {"model": ErrorOut} for c in (400, 403, 404, 409, 413)}
_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")
SMALL_UPLOAD = 1 << 20  # bytes: read whole, written in one thread job (at most this much held per request)


class PathIn(BaseModel):
    path: str


class MkdirIn(PathIn):
    parents: bool = False


class MoveIn(BaseModel):
    src: str
    dst: str
    overwrite: bool = False


def get_files(principal: Principal = Depends(current_principal), ctx: AppContext = Depends(get_ctx)) -> UserFiles:
    return _files_of(principal, ctx)


def _files_of(principal: Principal, ctx: AppContext) -> UserFiles:
    store = shared_store(ctx.extras, ctx.settings)
    with ctx.db.session() as session:
        return user_files(store, session, principal)


@router.get("", responses=_ERR)
def stat_or_list(path: str = Query("/", description="a path in your layout, e.g. /datasets"),
                 files: UserFiles = Depends(get_files)) -> dict:
    """A file's metadata, or a directory's metadata with its ``entries``; each entry's ``actions`` are what
    this user may do to it (``rename``, ``delete``: services/file_actions.py, the rules that refuse the rest)."""
    info = files.stat(path)
    out = info.as_dict()
    if info.type == "dir":
        out["entries"] = [{**e.as_dict(), "actions": entry_actions(files, e.path, getattr(e, "protected", None))}
                          for e in files.list(path)]
    return out


def _parse_range(header: str | None, size: int) -> tuple[int, int] | None | str:
    """(start, end-exclusive), None for the whole file, or "unsatisfiable"."""
    if not header:
        return None
    m = _RANGE.match(header.strip())
    if m is None:
        return None  # unknown unit or several ranges: serve the whole file
    first, last = m.groups()
    if not first and not last:
        return None
    if not first:  # suffix: the last N bytes
        n = int(last)
        return (max(0, size - n), size) if n > 0 and size > 0 else "unsatisfiable"
    start = int(first)
    end = min(size, int(last) + 1) if last else size
    if start >= size or (last and int(last) < start):
        return "unsatisfiable"
    return start, end


@router.get("/content", responses={**_ERR, 206: {"description": "partial content"}})
def download(request: Request, path: str = Query(...), files: UserFiles = Depends(get_files)) -> Response:
    handle = files.open_read(path)
    size = handle.size
    rng = _parse_range(request.headers.get("range"), size)
    name = path.rstrip("/").rsplit("/", 1)[-1] or "download"
    headers = {"Accept-Ranges": "bytes", "Content-Disposition": f"attachment; filename*=UTF-8''{quote(name)}"}
    if rng == "unsatisfiable":
        handle.close()
        return Response(status_code=416, headers={"Content-Range": f"bytes */{size}"})
    start, end = rng if isinstance(rng, tuple) else (0, size)
    headers["Content-Length"] = str(end - start)
    status = 200
    if isinstance(rng, tuple):
        status = 206
        headers["Content-Range"] = f"bytes {start}-{end - 1}/{size}"
    return StreamingResponse(handle.iter_range(start, end), status_code=status, headers=headers,
                             media_type="application/octet-stream", background=BackgroundTask(handle.close))


@router.put("/content", status_code=201, responses=_ERR)
async def upload(request: Request, path: str = Query(...), creds: Credentials = Depends(credentials),
                 ctx: AppContext = Depends(get_ctx)) -> dict:
    """Stream the body into ``path`` atomically; over quota → 413 and no file is left behind."""
    length = request.headers.get("content-length")
    declared = int(length) if length and length.isdigit() else None

    def admit() -> UserFiles:  # who, their quota, and room for what they declared: one thread job
        files = _files_of(creds.principal(), ctx)
        if declared is not None:
            files.ensure_room(path, declared)
        return files

    files = await run_in_threadpool(admit)
    if declared is not None and declared <= SMALL_UPLOAD:  # authenticated first: then the body is read
        data = await request.body()
        return await run_in_threadpool(_write_whole, files, path, data)
    up = await run_in_threadpool(files.create_upload, path)
    try:
        async for chunk in request.stream():
            if chunk:
                await run_in_threadpool(up.write, chunk)
        await run_in_threadpool(up.commit)
    except BaseException:
        up.abort()
        raise
    return (await run_in_threadpool(files.stat, path)).as_dict()


def _write_whole(files: UserFiles, path: str, data: bytes) -> dict:
    """A small body, already read: the same atomic upload (temp file, quota reserved, rename), one job."""
    with files.create_upload(path) as up:  # commits on success, removes the temp file on an error
        up.write(data)
    return files.stat(path).as_dict()


@router.get("/preview", responses=_ERR)
def preview(path: str = Query(...), rows: int = Query(20, ge=1, le=file_preview.MAX_ROWS),
            files: UserFiles = Depends(get_files)) -> dict:
    """A bounded look inside a file: a parquet file's schema, row count and first ``rows`` rows (with the
    columns verl reads named in ``verl_columns``); otherwise the first lines of text, or ``binary``."""
    return file_preview.preview(files, path, rows=rows)


@router.get("/summary", responses=_ERR)
def summary(path: str = Query(...), files: UserFiles = Depends(get_files)) -> dict:
    """How many files and folders are under ``path`` and their bytes (what a recursive delete removes)."""
    return file_preview.tree_summary(files, path)


@router.get("/archive", responses={**_ERR, 200: {"content": {"application/x-tar": {}}}})
def archive(path: str = Query(...), files: UserFiles = Depends(get_files)) -> Response:
    """A folder as a tar stream, built while it is sent (no temp file); links are left out, never followed."""
    folder = file_archive.check_folder(files, path)
    name = (folder.rstrip("/").rsplit("/", 1)[-1] or "home") + ".tar"
    return StreamingResponse(file_archive.stream_tar(files, folder), media_type="application/x-tar",
                             headers={"Content-Disposition": f"attachment; filename*=UTF-8''{quote(name)}"})


@router.get("/usage")
def usage(files: UserFiles = Depends(get_files)) -> dict:
    """Bytes stored in your home and your quota (null: none)."""
    return files.usage()


@router.post("/mkdir", status_code=201, responses=_ERR)
def mkdir(body: MkdirIn, files: UserFiles = Depends(get_files)) -> dict:
    """Create a directory (``parents``: and the missing ones above it, like ``mkdir -p``)."""
    return files.mkdir(body.path, parents=body.parents).as_dict()


@router.post("/move", responses=_ERR)
def move(body: MoveIn, files: UserFiles = Depends(get_files)) -> dict:
    return files.move(body.src, body.dst, overwrite=body.overwrite).as_dict()


@router.delete("", status_code=204, responses=_ERR)
def remove(path: str = Query(...), recursive: bool = Query(False),
           files: UserFiles = Depends(get_files)) -> Response:
    files.remove(path, recursive=recursive)
    return Response(status_code=204)
