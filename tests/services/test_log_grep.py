"""ripgrep's search of a long log span (services/log_grep.py) answers exactly what the Python search answers
(services/log_index.py): the same first error, line, worker and exception, the same place to go on from, on
the logs where the two could part — the unfinished last line, a line longer than a block, lookalike lines by
the thousand, a log grown by more than a block, CRLF and escapes — and it falls back to Python when ripgrep
fails or is missing."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from argus.services import log_grep, log_index
from argus.services.home_files import open_plain
from argus.services.log_index import BLOCK, FAST_BYTES, first_error
from argus.services.logs import LogRef

FILL = b"".join(b"(TaskRunner pid=42) step:%d - actor/pg_loss:0.01 - val/error_rate:0.0\n" % i for i in range(200_000))
assert len(FILL) > FAST_BYTES  # long enough for ripgrep
HALF = FILL[:FILL.index(b"\n", len(FILL) // 2) + 1]


@pytest.fixture(autouse=True)
def _fresh_indexes():
    log_index._INDEXES.clear()
    yield
    log_index._INDEXES.clear()


def _ref(tmp_path: Path, name: str, data: bytes) -> LogRef:
    p = tmp_path / name
    p.write_bytes(data)
    return LogRef("t", 1, p, tmp_path)


def _both(tmp_path: Path, data: bytes, monkeypatch: pytest.MonkeyPatch, grown: bytes = b"") -> tuple:
    """(answer, searched, exception done) by ripgrep and by Python, each on its own copy of the log (then ``grown`` appended and
    asked again, when given)."""
    out = []
    assert log_grep.binary(), "ripgrep is a pinned dependency (pyproject.toml): the venv's rg"
    for name, rg in (("rg.log", log_grep.binary()), ("py.log", None)):
        monkeypatch.setattr(log_grep, "binary", lambda rg=rg: rg)
        ref = _ref(tmp_path, name, data)
        got = first_error(ref)
        if grown:
            with ref.path.open("ab") as f:
                f.write(grown)
            got = first_error(ref)
        idx = log_index._INDEXES[str(ref.path)]
        # where a search goes on from matters only while no error is found (Python's stops at a block's end)
        out.append((got, idx.searched if idx.first is None else None, idx.first_exception_done))
    return tuple(out)


LOGS = {
    "an error at the end": FILL + b"\x1b[31m(WorkerDict pid=7, ip=10.0.0.7)\x1b[0m ERROR: reward failed\n",
    "a traceback deep in": HALF + b"Traceback (most recent call last):\n  File \"r.py\", line 1\n"
                           b"ZeroDivisionError: division by zero\n" + FILL,
    "the first line": b"[rank2]: RuntimeError: NCCL timeout\n" + FILL,
    "no error": FILL,
    "an unfinished error line at the end": FILL + b"FATAL: out of disk",
    "CRLF and a tqdm redraw": FILL + b"progress 10%\rprogress 20%\rcritical: disk\r\n" + FILL[:100],
    "a line longer than a block": FILL + b"x" * (BLOCK + 10) + b" error\n" + b"ValueError: later\n",
}


@pytest.mark.parametrize("case", sorted(LOGS))
def test_ripgrep_answers_what_python_answers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    rg, py = _both(tmp_path, LOGS[case], monkeypatch)
    assert rg == py, case
    if case == "an unfinished error line at the end":
        assert rg[0][0] is None and rg[1] == len(FILL)  # looked at once it ends


def test_the_same_after_an_append_of_more_than_a_block(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rg, py = _both(tmp_path, FILL, monkeypatch, grown=FILL + b"[rank0]: ERROR late\n" + FILL[:50])
    assert rg == py and rg[0][0] is not None and rg[0][0].line == 2 * 200_000 + 1 and rg[0][0].rank == "rank0"


def test_the_line_numbers_after_a_ripgrep_search(tmp_path: Path) -> None:
    """ripgrep counts no marks: the lines around the error are numbered all the same (counted on demand or by
    the background build first_error starts)."""
    ref = _ref(tmp_path, "a.log", LOGS["a traceback deep in"])
    found, size = first_error(ref)
    line = HALF.count(b"\n") + 1
    assert found is not None and found.line == line and found.exception == "ZeroDivisionError: division by zero"
    with open_plain(tmp_path, ref.path) as f:
        assert log_index.line_number(ref, f, found.offset) == line
        assert log_index.line_number(ref, f, size) == line + 3 + 200_000


def test_a_failing_ripgrep_leaves_the_search_to_python(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "rg"
    fake.write_text("#!/bin/sh\necho '1:0:bogus'\necho 'rg: I/O error' >&2\nexit 2\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(log_grep, "binary", lambda: str(fake))
    found, _ = first_error(_ref(tmp_path, "a.log", LOGS["an error at the end"]))
    assert found is not None and found.line == 200_001 and found.worker == "WorkerDict pid=7, ip=10.0.0.7"


def test_ripgrep_reads_the_open_file_not_its_path(tmp_path: Path) -> None:
    """The span is read from the file the caller opened (no link followed), even if its name now points
    elsewhere, and the caller's own position is untouched."""
    ref = _ref(tmp_path, "a.log", b"ok\n" * 10 + b"ERROR here\n")
    with open_plain(tmp_path, ref.path) as f:
        f.read(5)
        os.replace(tmp_path / _ref(tmp_path, "b.log", b"ERROR elsewhere\n").path.name, ref.path)
        with log_grep.lines_with(f.fileno(), 3, (b"RROR",)) as hits:
            assert list(hits) == [(10, 27)]
        assert f.tell() == 5 and f.read(3) == b"\nok"


def test_the_lines_around_the_error_are_numbered_before_the_log_is_counted(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The page asks for the lines around the first error right after the answer: numbered from the error's
    line, which ripgrep counted, while the marks are still being built (here: never, to be sure)."""
    monkeypatch.setattr(log_index, "SYNC_BYTES", BLOCK)
    monkeypatch.setattr(log_index, "_build_later", lambda ref, idx: None)
    data = FILL + b"ERROR: here\n" + FILL
    ref = _ref(tmp_path, "a.log", data)
    found, size = first_error(ref)
    assert found is not None and found.line == 200_001
    near = [found.offset - len(FILL) // 8, found.offset - 1, found.offset, found.end, found.end + 777, size]
    with open_plain(tmp_path, ref.path) as f:
        got = [log_index.line_number(ref, f, o) for o in near]
        assert log_index.line_number(ref, f, found.offset // 2) is None  # far from both: left to the build
    assert got == [data[:o].count(b"\n") + 1 for o in near[:-1]] + [None]
