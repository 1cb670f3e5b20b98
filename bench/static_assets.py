"""Benchmark: what the WebUI's static files (and the API docs' assets) cost on the wire, before and after
issue 37 (``api/static_assets.py``: brotli or gzip made once per file, kept in memory; immutable caching
under the folder's version).

For every file of ``web/static`` and of fastapi-offline's ``static`` folder: bytes on disk (what Starlette's
``StaticFiles`` sent, every time, before), gzip and brotli bytes, the one-time cost of compressing it, and
the time to serve it afterwards from the in-memory copy through the real ASGI app (median of --requests
in-process requests). Then the bytes a first visit to each page downloads (its module graph) before and
after. Prints figures; asserts nothing.

    .venv/bin/python bench/static_assets.py [--requests 50]
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import re
import statistics
import time
from pathlib import Path

import httpx
from fastapi import FastAPI

from argus.api.docs import ASSETS_DIR
from argus.api.static_assets import AssetFiles, brotli
from argus.web.pages import STATIC_DIR

PAGES = {"/tasks": "js/tasks.js", "/tasks/new": "js/new_task.js", "/tasks/<id>": "js/task.js",
         "/data": "js/data.js", "/admin": "js/admin.js", "/nodes": "js/nodes.js"}


def module_graph(entry: str) -> set[str]:
    """The files a page loads: app.css, common.js, its entry and everything the entry imports."""
    seen, todo = {"app.css", "js/common.js"}, [entry]
    while todo:
        rel = todo.pop()
        if rel in seen and rel != entry:
            continue
        seen.add(rel)
        text = (STATIC_DIR / rel).read_text(encoding="utf-8")
        base = Path(rel).parent
        for imp in re.findall(r'from "(\.{1,2}/[\w./-]+\.js)"', text):
            todo.append((base / imp).as_posix().replace("js/../", ""))
    if entry in ("js/task.js", "js/compare.js"):
        seen.add("vendor/uplot.css")
    return seen


async def serve_times(folder: Path, files: list[str], n: int) -> dict[str, float]:
    app = FastAPI()
    assets = AssetFiles(folder)
    app.mount("/a", assets)
    enc = "br, gzip" if brotli is not None else "gzip"
    out = {}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://x") as c:
        for rel in files:
            await c.get(f"/a/v/{assets.version}/{rel}", headers={"Accept-Encoding": enc})  # the one-time compress
            times = []
            for _ in range(n):
                t0 = time.perf_counter()
                r = await c.get(f"/a/v/{assets.version}/{rel}", headers={"Accept-Encoding": enc})
                times.append(time.perf_counter() - t0)
                assert r.status_code == 200
            out[rel] = statistics.median(times) * 1000
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=50)
    args = ap.parse_args()
    sizes: dict[str, tuple[int, int, int | None]] = {}
    for label, folder in (("/static", STATIC_DIR), ("/docs-assets", ASSETS_DIR)):
        files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
        served = asyncio.run(serve_times(folder, files, args.requests))
        print(f"\n{label}  (bytes: on disk = sent before | gzip -9 | brotli q9; compress once; serve after, median)")
        for rel in files:
            raw = (folder / rel).read_bytes()
            t0 = time.perf_counter()
            gz = len(gzip.compress(raw, compresslevel=9, mtime=0))
            t_gz = time.perf_counter() - t0
            t0 = time.perf_counter()
            br = len(brotli.compress(raw, quality=9)) if brotli is not None else None
            t_br = time.perf_counter() - t0
            if label == "/static":
                sizes[rel] = (len(raw), gz, br)
            print(f"  {rel:32s} {len(raw):>9,d} | {gz:>9,d} | {br if br is not None else '-':>9} B"
                  f"   once: gzip {t_gz * 1000:6.1f} ms, br {t_br * 1000:6.1f} ms   serve {served[rel]:5.2f} ms")
    print("\nfirst visit of a page (its CSS and module graph), bytes before → after (br; gzip):")
    for page, entry in PAGES.items():
        files = module_graph(entry)
        before = sum(sizes[f][0] for f in files)
        after_gz = sum(sizes[f][1] if sizes[f][0] >= 1024 else sizes[f][0] for f in files)
        after_br = sum((sizes[f][2] or sizes[f][1]) if sizes[f][0] >= 1024 else sizes[f][0] for f in files)
        print(f"  {page:12s} {len(files):2d} files  {before:>9,d} → {after_br:>9,d} B ({after_gz:,d} with gzip)")
    print("\nrepeat visits: 0 bytes and no request for these files (Cache-Control: immutable under /static/v/<version>/)")


if __name__ == "__main__":
    main()
