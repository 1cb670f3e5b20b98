"""A task's resource samples (launcher/telemetry.py) summarised: averages, peaks, idle GPUs (pure).

A sample is ``{"t": epoch_s, "cpu": CPUs busy, "rss": bytes, "gpu": [[util %, MiB used, W], …]}``.
A task **holds idle GPUs** when every one of its GPUs has been below ``IDLE_PCT`` % for the last
``IDLE_S`` seconds of samples: GPUs reserved for a run that is stuck, waiting on a slow CPU stage, or
misconfigured (a rollout engine on the wrong devices). CPU-only tasks never are.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

IDLE_PCT = 5.0
IDLE_S = 600
MAX_POINTS = 720  # what a chart gets: a week of 15 s samples is 40 320, shown as 720 buckets


@dataclass(frozen=True)
class Summary:
    samples: int
    first_t: int | None
    last_t: int | None
    cpu_mean: float | None
    cpu_max: float | None
    rss_max: int | None
    gpu_util_mean: list[float | None]
    gpu_mem_max_mib: list[int | None]
    gpu_power_mean_w: list[float | None]
    idle_since: int | None  # epoch s from which every GPU has been idle, when that is ≥ IDLE_S ago

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 2) if values else None


def idle_since(samples: list[dict[str, Any]], *, pct: float = IDLE_PCT, for_s: int = IDLE_S) -> int | None:
    """When the task's GPUs became idle (all below ``pct``), if they still are and have been ``for_s``."""
    since = None
    for s in reversed(samples):
        gpus = s.get("gpu") or []
        utils = [g[0] for g in gpus if isinstance(g, list) and g and g[0] is not None]
        if not utils or max(utils) >= pct:
            break
        since = s.get("t")
    if since is None or not samples:
        return None
    return since if int(samples[-1].get("t", 0)) - int(since) >= for_s else None


def summarize(samples: list[dict[str, Any]]) -> Summary:
    cpu = [float(s["cpu"]) for s in samples if isinstance(s.get("cpu"), int | float)]
    rss = [int(s["rss"]) for s in samples if isinstance(s.get("rss"), int)]
    width = max((len(s.get("gpu") or []) for s in samples), default=0)
    util: list[float | None] = []
    mem: list[int | None] = []
    power: list[float | None] = []
    for i in range(width):
        col = [s["gpu"][i] for s in samples if len(s.get("gpu") or []) > i and isinstance(s["gpu"][i], list)]
        util.append(_mean([g[0] for g in col if g[0] is not None]))
        mem.append(max((int(g[1]) for g in col if g[1] is not None), default=None))
        power.append(_mean([g[2] for g in col if g[2] is not None]))
    return Summary(len(samples), samples[0].get("t") if samples else None, samples[-1].get("t") if samples else None,
                   _mean(cpu), max(cpu, default=None), max(rss, default=None), util, mem, power, idle_since(samples))


def downsample(samples: list[dict[str, Any]], points: int = MAX_POINTS) -> list[dict[str, Any]]:
    """At most ``points`` samples for a chart: each bucket's mean (CPU, GPU) and peak (memory)."""
    if len(samples) <= points:
        return samples
    size = -(-len(samples) // points)
    out = []
    for i in range(0, len(samples), size):
        chunk = samples[i:i + size]
        s = summarize(chunk)
        row: dict[str, Any] = {"t": chunk[-1].get("t"), "cpu": s.cpu_mean, "rss": s.rss_max}
        if s.gpu_util_mean:
            row["gpu"] = [[u, m, p] for u, m, p in zip(s.gpu_util_mean, s.gpu_mem_max_mib, s.gpu_power_mean_w,
                                                       strict=True)]
        out.append(row)
    return out


def merge_nodes(nodes: list[list[dict[str, Any]]], every_s: int = 15) -> list[dict[str, Any]]:
    """A multi-node task's samples as one series: per ``every_s`` slot, CPUs and memory added up over the nodes
    and the GPUs listed node after node (the first node's first). A node with no sample in a slot adds nothing."""
    if len(nodes) == 1:
        return nodes[0]
    slots: dict[int, list[tuple[int, dict[str, Any]]]] = {}
    for k, samples in enumerate(nodes):
        for s in samples:
            slots.setdefault(int(s["t"]) // every_s, []).append((k, s))
    out = []
    for slot in sorted(slots):
        parts = sorted(slots[slot], key=lambda p: p[0])
        row: dict[str, Any] = {"t": max(int(s["t"]) for _, s in parts),
                               "cpu": round(sum(float(s.get("cpu") or 0) for _, s in parts), 2),
                               "rss": sum(int(s.get("rss") or 0) for _, s in parts)}
        gpus = [g for _, s in parts for g in s.get("gpu") or []]
        if gpus:
            row["gpu"] = gpus
        out.append(row)
    return out
