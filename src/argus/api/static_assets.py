"""Static files (the WebUI's ``/static``, the API docs' ``/docs-assets``) compressed once and cached for good.

Starlette's ``StaticFiles`` sends every file as it is on disk (``editor.js``: 431 KB) with only an ETag,
so a phone on a slow link fetched half a megabyte per New Task visit and revalidated every script on
every page. Here:

* **One version per folder** (a digest of every file's path and bytes, computed once per process):
  pages link ``<mount>/v/<version>/<file>``, answered with ``Cache-Control: public, max-age=31536000,
  immutable``. ES modules import each other relatively (``./common.js``, ``../vendor/charts.js``), so a
  page's whole module graph lies under the same versioned prefix; a deploy that changes any file
  changes the version and therefore every URL: a browser never runs a stale script. The plain
  ``<mount>/<file>`` still answers, with ``no-cache`` (revalidate by ETag), for scripts and old links.
* **Compressed once**: brotli (when the ``brotli`` package is installed) or gzip, chosen from
  ``Accept-Encoding``; a file is compressed on its first request in a worker thread and the bytes kept
  in memory (the folders are a few MB), so no request compresses on the hot path afterwards.
* Only the files found when the folder was indexed are served: nothing outside it, no directory
  listing; anything else is the API's 404.
"""

from __future__ import annotations

import gzip
import hashlib
import mimetypes
import threading
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

try:  # brotli is a declared dependency; gzip alone still works where it is missing
    import brotli
except ImportError:  # pragma: no cover - depends on the environment
    brotli = None

IMMUTABLE = "public, max-age=31536000, immutable"
REVALIDATE = "no-cache"
# Text formats gain 3-10x; images and archives are compressed already.
_COMPRESSIBLE = {".js", ".mjs", ".css", ".json", ".svg", ".html", ".txt", ".md", ".map"}
_MIN_COMPRESS = 1024  # below this the headers cost more than the saving
_TYPES = {".js": "text/javascript; charset=utf-8", ".mjs": "text/javascript; charset=utf-8",
          ".css": "text/css; charset=utf-8", ".json": "application/json", ".md": "text/markdown; charset=utf-8"}


@dataclass
class _File:
    path: Path
    digest: str
    media_type: str
    compressible: bool
    bodies: dict[str, bytes] = field(default_factory=dict)  # encoding ("identity", "br", "gzip") -> bytes


@dataclass
class AssetIndex:
    """The files of one folder and its version (see the module doc)."""

    root: Path
    files: dict[str, _File]
    version: str
    lock: threading.Lock = field(default_factory=threading.Lock)

    def body(self, f: _File, encoding: str) -> bytes:
        """The file's bytes in ``encoding``, made once (under a lock: two first requests compress once)."""
        got = f.bodies.get(encoding)
        if got is not None:
            return got
        with self.lock:
            if encoding not in f.bodies:
                raw = f.bodies.get("identity")
                if raw is None:
                    raw = f.bodies["identity"] = f.path.read_bytes()
                if encoding == "br":
                    f.bodies["br"] = brotli.compress(raw, quality=9)  # 11 is ~30x slower for ~8 % less
                elif encoding == "gzip":
                    f.bodies["gzip"] = gzip.compress(raw, compresslevel=9, mtime=0)
            return f.bodies[encoding]


@cache
def asset_index(root: Path) -> AssetIndex:
    """Index ``root`` once per process: every regular file under it (links left out), and the version."""
    files: dict[str, _File] = {}
    whole = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_symlink() or not p.is_file():
            continue
        rel = p.relative_to(root).as_posix()
        data = p.read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        whole.update(rel.encode() + b"\0" + digest.encode() + b"\0")
        media = _TYPES.get(p.suffix) or mimetypes.guess_type(p.name)[0] or "application/octet-stream"
        files[rel] = _File(p, digest[:20], media, p.suffix in _COMPRESSIBLE and len(data) >= _MIN_COMPRESS)
    return AssetIndex(root, files, whole.hexdigest()[:12])


def pick_encoding(accept: str) -> str:
    """``br`` if offered (and brotli is installed), else ``gzip`` if offered, else ``identity``."""
    offered: dict[str, float] = {}
    for part in accept.split(","):
        name, _, params = part.strip().partition(";")
        q = 1.0
        for param in params.split(";"):
            k, _, v = param.strip().partition("=")
            if k == "q":
                try:
                    q = float(v)
                except ValueError:
                    q = 0.0
        if name.strip():
            offered[name.strip().lower()] = q
    star = offered.get("*", 0.0)
    for enc in (("br", "gzip") if brotli is not None else ("gzip",)):
        if offered.get(enc, star) > 0:
            return enc
    return "identity"


class AssetFiles:
    """An ASGI app for one folder, mounted like ``StaticFiles`` (see the module doc)."""

    def __init__(self, directory: Path) -> None:
        self.index = asset_index(Path(directory).resolve())

    @property
    def version(self) -> str:
        return self.index.version

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # pragma: no cover - mounted for HTTP only
            raise HTTPException(404)
        if scope["method"] not in ("GET", "HEAD"):
            raise HTTPException(405)
        rel = str(scope.get("path", "")).removeprefix(str(scope.get("root_path", ""))).lstrip("/")
        cache_control = REVALIDATE
        head, _, rest = rel.partition("/")
        if head == "v" and "/" in rest:
            version, _, rel = rest.partition("/")
            # An old page's URL (an earlier deploy) gets today's file, but not for keeps.
            cache_control = IMMUTABLE if version == self.index.version else REVALIDATE
        f = self.index.files.get(rel)
        if f is None:
            raise HTTPException(404)
        headers = {"Cache-Control": cache_control, "X-Content-Type-Options": "nosniff"}
        encoding = "identity"
        if f.compressible:
            headers["Vary"] = "Accept-Encoding"
            request_headers = dict(scope.get("headers") or [])
            encoding = pick_encoding(request_headers.get(b"accept-encoding", b"").decode("latin-1"))
        etag = f'"{f.digest}"' if encoding == "identity" else f'"{f.digest}-{encoding}"'
        headers["ETag"] = etag
        if encoding != "identity":
            headers["Content-Encoding"] = encoding
        if_none = dict(scope.get("headers") or []).get(b"if-none-match", b"").decode("latin-1")
        if if_none and (if_none.strip() == "*" or etag in [t.strip().removeprefix("W/") for t in if_none.split(",")]):
            await Response(status_code=304, headers=headers)(scope, receive, send)
            return
        body = f.bodies.get(encoding)
        if body is None:  # first request for this file and encoding: read/compress off the event loop
            body = await run_in_threadpool(self.index.body, f, encoding)
        response = Response(b"" if scope["method"] == "HEAD" else body, media_type=f.media_type, headers=headers)
        response.headers["Content-Length"] = str(len(body))
        await response(scope, receive, send)
