"""What the Data page shows about a file or folder without downloading it: previews and tree sizes.

Everything goes through ``UserFiles`` (``services.files``), so the same confinement holds as for
SFTP and the other file endpoints: no path outside the user's areas, no symbolic link followed
out of them, only regular files opened. Every answer is bounded (bytes read, lines, rows,
columns, characters per cell, entries walked) so a hostile or huge file cannot make a preview
expensive: a parquet preview reads the footer and the first rows' pages, never the whole file.
"""

from __future__ import annotations

import json
import os
from typing import Any

from argus.errors import ClientError
from argus.services.files import UserFiles

TEXT_BYTES = 64 * 1024
TEXT_LINES = 200
MAX_ROWS = 100
MAX_COLUMNS = 64
CELL_CHARS = 400
TREE_ENTRIES = 100_000
ROW_GROUP_BYTES = 256 * 1024 * 1024
# The columns verl's datasets read (mirrors argus.verl.datasets.required_columns, which services
# may not import): RL reads prompt, data_source and reward_model.ground_truth; SFT reads messages.
VERL_COLUMNS = ("prompt", "data_source", "reward_model", "reward_model.ground_truth", "messages")
PARQUET_MAGIC = b"PAR1"


def preview(files: UserFiles, path: object, *, rows: int = 20) -> dict[str, Any]:
    """``{"kind": "parquet"|"text"|"binary", ...}`` for a regular file the user may read."""
    rows = max(1, min(int(rows), MAX_ROWS))
    with files.open_read(path) as handle:
        head = handle.pread(0, 4)
        tail = handle.pread(max(0, handle.size - 4), 4) if handle.size >= 8 else b""
        if head == PARQUET_MAGIC and tail == PARQUET_MAGIC:
            return _parquet(handle.fd, handle.path, handle.size, rows)
        data = handle.pread(0, TEXT_BYTES)
        return _text(data, handle.size)


def _text(data: bytes, size: int) -> dict[str, Any]:
    if b"\0" in data:
        return {"kind": "binary", "size": size}
    text = data.decode("utf-8", errors="replace")
    lines = text.splitlines()
    cut = len(data) < size and not text.endswith("\n")
    if cut and lines:
        lines = lines[:-1]  # the last line was cut by the byte limit
    return {"kind": "text", "size": size, "lines": lines[:TEXT_LINES],
            "truncated": len(data) < size or len(lines) > TEXT_LINES}


def _cell(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= CELL_CHARS else text[:CELL_CHARS] + "…"


def _parquet(fd: int, vpath: str, size: int, rows: int) -> dict[str, Any]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    with os.fdopen(os.dup(fd), "rb") as f:
        try:
            pf = pq.ParquetFile(f)
            schema = pf.schema_arrow
            names = schema.names[:MAX_COLUMNS]
            first: list[dict[str, Any]] = []
            # the first rows cost a read of the first row group's column chunks: skip them when huge
            rows_skipped = pf.metadata.num_row_groups > 0 and pf.metadata.row_group(0).total_byte_size > ROW_GROUP_BYTES
            if pf.metadata.num_rows and names and not rows_skipped:
                batch = next(pf.iter_batches(batch_size=rows, columns=names), None)
                first = batch.to_pylist()[:rows] if batch is not None else []
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise ClientError(f"{vpath}: not a readable parquet file ({exc})", code="bad_parquet") from exc
    columns = [{"name": f.name, "type": str(f.type)} for f in schema][:MAX_COLUMNS]
    present = set(schema.names)
    for field in schema:
        if pa.types.is_struct(field.type):
            present |= {f"{field.name}.{sub.name}" for sub in field.type}
    return {"kind": "parquet", "size": size, "num_rows": pf.metadata.num_rows,
            "num_row_groups": pf.metadata.num_row_groups, "columns": columns,
            "columns_truncated": len(schema.names) > MAX_COLUMNS,
            "verl_columns": [c for c in VERL_COLUMNS if c in present],
            "rows": [{k: _cell(v) for k, v in r.items()} for r in first], "rows_skipped": rows_skipped}


def tree_summary(files: UserFiles, path: object, *, limit: int = TREE_ENTRIES) -> dict[str, Any]:
    """How many files and folders a folder holds and their bytes (links counted, never followed).

    The Data page names these counts before a recursive delete. The walk stops after ``limit``
    entries (``truncated``: the numbers are then lower bounds).
    """
    info = files.stat(path, follow=False)
    if info.type != "dir":
        return {"files": 1, "dirs": 0, "bytes": info.size if info.type == "file" else 0, "truncated": False}
    counts = {"files": 0, "dirs": 0, "bytes": 0}
    pending, seen = [info.path], 0
    while pending and seen < limit:
        for entry in files.list(pending.pop()):
            seen += 1
            if entry.type == "dir" and not (entry.path == "/common"):
                counts["dirs"] += 1
                pending.append(entry.path)
            elif entry.type != "dir":
                counts["files"] += 1
                counts["bytes"] += entry.size if entry.type == "file" else 0
    return {**counts, "truncated": bool(pending)}
