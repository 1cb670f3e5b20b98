"""Parse verl's console metric lines into a time series (pure: text in, points out).

verl's console logger (``verl/utils/logger/aggregate_logger.py``,
``concat_dict_to_str``) prints one line per training step::

    step:12 - actor/pg_loss:-0.0123 - critic/score/mean:0.5 - timing_s/gen:1.93

keys are ``/``-separated and values are ``pprint.pformat`` of numbers (with
numpy 2 that can read ``np.float64(0.5)``; a diverged run prints ``nan``/``inf``).
Under Ray the line carries an actor prefix such as ``(TaskRunner pid=4242)``
(coloured with ANSI codes unless ``RAY_COLOR_PREFIX=0``). verl's SFT trainer runs
under torchrun with a tqdm bar on stderr: tqdm redraws with ``\\r`` and no newline,
so the metrics line lands right after the bar on the same line
(``…| 2/5 [00:07<00:10,  3.67s/it]step:3 - train/loss:6.03``). Lines are therefore
split on ``\\r`` as well as ``\\n``, and ``step:`` may follow any character that cannot
be part of a key (so ``global_step:`` and ``timing_s/step:`` are never taken for it).
The parser is incremental so the service can feed only the bytes appended to a
log since its last read.

Wall time per step (charts' "wall time" x axis). verl's line carries no time, and the time the
*server* first parses a line is neither stable (a restarted server re-reads every log "now") nor
right (nobody may look at the chart for hours). So the driver, which reads the task's pipe as it
is written, keeps a *clock* beside each log (``attempt-<n>.clock``, :data:`CLOCK_SUFFIX`): one
``<byte offset> <unix time>`` line after each write that holds ``step:`` (so a few bytes per
step, not per tqdm redraw). A step's time is the time of the first clock entry past the byte
where its line starts, i.e. when the chunk holding the line reached the log. It is written once,
on the shared filesystem, so every request and every server restart reads the same times. Logs
written before clocks existed (or whose clock could not be written) simply have no times: the
API omits those steps from ``times`` and the chart says so rather than inventing any.
"""

from __future__ import annotations

import bisect
import math
import re
from dataclasses import dataclass, field

# ``step:N`` not preceded by a key character (``global_step:``, ``timing_s/step:``, ``val-step:``)
_STEP = re.compile(r"(?<![\w/.@\-])step:(\d+)(?= - |\s*$)")
_VALUE = re.compile(r"^(?:np\.\w+\((.*)\)|(.*))$")
_SPLIT = re.compile(r"\r\n|\r|\n")
_SPLIT_BYTES = re.compile(rb"\r\n|\r|\n")
CLOCK_SUFFIX = ".clock"
CLOCK_MARK = b"step:"  # the driver stamps a write that holds this (or completes it across two writes)


def _number(text: str) -> float | None:
    m = _VALUE.match(text.strip())
    raw = (m.group(1) or m.group(2) or "").strip() if m else ""
    if raw in ("True", "False"):
        return float(raw == "True")
    try:
        value = float(raw)
    except ValueError:
        return None
    return value


# verl ≥ 0.6: val-core/…, val-aux/…; older verl: val/…; Argus's lm-eval program (argus.jobs.lm_eval): lm-eval/…
VALIDATION_PREFIXES = ("val-", "val/", "lm-eval/")


def is_training_step(values: dict[str, float]) -> bool:
    """Whether a metric line reports a training step, not only a validation: verl validates before training
    (``step:0 - val-core/…``) and, resumed from ``global_step_N``, logs that validation as ``step:N`` before
    its first training step N+1 (measured on the first real resumed GRPO run, issue 34)."""
    return any(not key.startswith(VALIDATION_PREFIXES) for key in values)


def parse_metric_line(line: str) -> tuple[int, dict[str, float]] | None:
    """``(step, {key: value})`` for a verl console metric line, else None. ``nan``/``inf`` are kept."""
    m = _STEP.search(line)
    if not m:
        return None
    step = int(m.group(1))
    values: dict[str, float] = {}
    for part in line[m.end():].split(" - "):
        key, sep, raw = part.strip().rpartition(":")
        if not sep or not key:
            continue
        value = _number(raw)
        if value is not None:
            values[key] = value
    return step, values


def json_value(value: float) -> float | str:
    """A metric value for JSON, which has no NaN/Infinity: those become the strings ``"nan"``, ``"inf"``, ``"-inf"``."""
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value


@dataclass
class MetricSeries:
    """Points per key, in step order; a later line for the same step replaces the earlier value."""

    points: dict[str, dict[int, float]] = field(default_factory=dict)
    times: dict[int, float] = field(default_factory=dict)  # step → unix seconds, where a clock said

    def add(self, step: int, values: dict[str, float]) -> None:
        for key, value in values.items():
            self.points.setdefault(key, {})[step] = value

    def merge(self, other: MetricSeries) -> None:
        for key, pts in other.points.items():
            self.points.setdefault(key, {}).update(pts)
        self.times.update(other.times)

    @property
    def keys(self) -> list[str]:
        return sorted(self.points)

    @property
    def last_step(self) -> int | None:
        steps = [s for pts in self.points.values() for s in pts]
        return max(steps) if steps else None

    def as_lists(self, keys: list[str] | None = None) -> dict[str, list[tuple[int, float | str]]]:
        """JSON-ready ``{key: [(step, value), ...]}``; NaN/±inf become ``"nan"``/``"inf"``/``"-inf"``."""
        wanted = self.keys if keys is None else [k for k in keys if k in self.points]
        return {k: [(s, json_value(v)) for s, v in sorted(self.points[k].items())] for k in wanted}


@dataclass
class MetricsParser:
    """Feed text chunks as they are appended to a log; keeps the unfinished last line for the next chunk.

    A ``\\r\\n`` split across two chunks only yields one empty line, which is harmless.
    """

    series: MetricSeries = field(default_factory=MetricSeries)
    _partial: str = ""
    _partial_bytes: bytes = b""
    offset: int = 0  # bytes fed so far (feed_bytes)
    step_offsets: dict[int, int] = field(default_factory=dict)  # step → byte where its (last) line starts

    def feed(self, text: str) -> None:
        text = self._partial + text
        lines = _SPLIT.split(text)
        self._partial = lines.pop()
        for line in lines:
            parsed = parse_metric_line(line)
            if parsed:
                self.series.add(*parsed)

    def feed_bytes(self, data: bytes) -> None:
        """Like :meth:`feed` for raw log bytes, also noting where each step's line starts (for the clock).

        Lines are decoded one by one, so a UTF-8 character split across two reads is never mangled.
        """
        buf = self._partial_bytes + data
        start = self.offset - len(self._partial_bytes)
        pos = 0
        for m in _SPLIT_BYTES.finditer(buf):
            parsed = parse_metric_line(buf[pos:m.start()].decode("utf-8", errors="replace"))
            if parsed:
                self.series.add(*parsed)
                self.step_offsets[parsed[0]] = start + pos
            pos = m.end()
        self._partial_bytes = buf[pos:]
        self.offset += len(data)


def parse_clock(text: str) -> list[tuple[int, float]]:
    """``<offset> <unix time>`` lines → sorted pairs; a torn or foreign line is skipped, not fatal."""
    out: list[tuple[int, float]] = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) != 2:
            continue
        try:
            offset, at = int(parts[0]), float(parts[1])
        except ValueError:
            continue
        if math.isfinite(at):
            out.append((offset, at))
    out.sort()
    return out


def clock_line(offset: int, at: float) -> bytes:
    """What the driver appends to the clock after a write that ended at byte ``offset``."""
    return f"{offset} {at:.3f}\n".encode()


def step_times(step_offsets: dict[int, int], clock: list[tuple[int, float]]) -> dict[int, float]:
    """Each step's time: the first clock entry whose offset is past the byte where the step's line starts.

    A step with no such entry (the clock is missing, or behind the log) gets no time.
    """
    ends = [offset for offset, _ in clock]
    out: dict[int, float] = {}
    for step, start in step_offsets.items():
        i = bisect.bisect_right(ends, start)
        if i < len(clock):
            out[step] = clock[i][1]
    return out
