"""Dataset checks at admission: the files a task names exist and are parquet with the columns verl reads.

Only metadata, the schema and a handful of rows are read (``iter_batches``),
never a whole file: datasets are GBs and admission runs inside an API request.
RL (``RLHFDataset``) reads ``data.prompt_key`` (``prompt``), ``data_source`` and
``reward_model['ground_truth']``; SFT (``MultiTurnSFTDataset``) reads
``data.messages_key``. A missing column would otherwise surface as a KeyError
minutes into a GPU job.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq


@dataclass
class ParquetReport:
    path: str
    rows: int | None = None
    errors: list[str] = field(default_factory=list)
    sample: list[dict[str, Any]] = field(default_factory=list)


def required_columns(workload: str, resolved: dict[str, Any]) -> list[str]:
    """The columns the task's verl reads from every row, from its resolved config.

    SFT: verl 0.9's trainer reads ``data.messages_key``; an older verl's ``fsdp_sft_trainer`` (its
    config has ``data.multiturn``) reads ``data.multiturn.messages_key`` when multiturn is on, else
    the ``data.prompt_key`` and ``data.response_key`` columns (``question``/``answer`` by default;
    ``*_dict_keys`` pick inside them).
    """
    if workload == "sft":
        multiturn = resolved.get("data.multiturn.enable")
        if multiturn is None:
            return [resolved.get("data.messages_key") or "messages"]
        if multiturn:
            return [resolved.get("data.multiturn.messages_key") or "messages"]
        return [resolved.get("data.prompt_key") or "question", resolved.get("data.response_key") or "answer"]
    return [resolved.get("data.prompt_key") or "prompt", "data_source", "reward_model.ground_truth"]


def inspect_parquet(path: str, columns: list[str], *, sample_rows: int = 0) -> ParquetReport:
    """Row count, missing columns and the first ``sample_rows`` rows of one parquet file."""
    report = ParquetReport(path=path)
    p = Path(path)
    if not p.is_file():
        report.errors.append("file does not exist (upload it first, or check the path)" if not p.exists()
                             else "is not a regular file")
        return report
    try:
        pf = pq.ParquetFile(p)
    except (pa.ArrowException, OSError) as exc:
        report.errors.append(f"is not a readable parquet file ({str(exc).splitlines()[0][:200]})")
        return report
    report.rows = pf.metadata.num_rows
    schema = pf.schema_arrow
    missing = [c for c in columns if not _has_column(schema, c)]
    if missing:
        have = ", ".join(schema.names[:12])
        report.errors.append(f"missing column{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
                             f"(verl reads it from every row; the file has: {have})")
    if sample_rows and report.rows:
        top = sorted({c.split(".", 1)[0] for c in columns if _has_column(schema, c.split(".", 1)[0])}
                     | ({"extra_info"} if "extra_info" in schema.names else set()))
        try:
            batch = next(pf.iter_batches(batch_size=sample_rows, columns=top or None))
            report.sample = batch.to_pylist()[:sample_rows]
        except (pa.ArrowException, OSError, StopIteration) as exc:
            report.errors.append(f"rows cannot be read ({str(exc).splitlines()[0][:200]})")
    return report


def _has_column(schema: pa.Schema, dotted: str) -> bool:
    """``a.b`` means field ``b`` of struct column ``a`` (or a map column ``a``, checked per row by verl)."""
    head, _, rest = dotted.partition(".")
    if head not in schema.names:
        return False
    typ = schema.field(head).type
    while rest:
        part, _, rest = rest.partition(".")
        if pa.types.is_map(typ):
            return True  # a map is keyed per row; the sample rows show whether the key is there
        if not pa.types.is_struct(typ) or typ.get_field_index(part) < 0:
            return False
        typ = typ.field(part).type
    return True
