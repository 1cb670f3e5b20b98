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
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

# ``step:N`` not preceded by a key character (``global_step:``, ``timing_s/step:``, ``val-step:``)
_STEP = re.compile(r"(?<![\w/.@\-])step:(\d+)(?= - |\s*$)")
_VALUE = re.compile(r"^(?:np\.\w+\((.*)\)|(.*))$")
_SPLIT = re.compile(r"\r\n|\r|\n")


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

    def add(self, step: int, values: dict[str, float]) -> None:
        for key, value in values.items():
            self.points.setdefault(key, {})[step] = value

    def merge(self, other: MetricSeries) -> None:
        for key, pts in other.points.items():
            self.points.setdefault(key, {}).update(pts)

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

    def feed(self, text: str) -> None:
        text = self._partial + text
        lines = _SPLIT.split(text)
        self._partial = lines.pop()
        for line in lines:
            parsed = parse_metric_line(line)
            if parsed:
                self.series.add(*parsed)
