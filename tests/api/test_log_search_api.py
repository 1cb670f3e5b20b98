"""GET /tasks/{id}/logs/search and ranges of whole lines (issue 25: a GB log reachable without
downloading it): offsets of matching lines forward and backward, bounded scans, the same access
rule as the log itself, and every bad query named."""

from __future__ import annotations

import pytest

from argus.core.log_text import line_search, visible
from argus.services.log_search import search_log
from argus.services.logs import LogRef
from tests.helpers import live_server, submit_spec

SPEC = "kind: advanced\nworkload: job\nnnodes: 1\nn_gpus_per_node: 0\ncommand: python3 -m argus.jobs.sleep 1\n"


def test_visible_text_drops_escapes_and_keeps_the_last_redraw() -> None:
    assert visible("\x1b[36m(TaskRunner pid=1)\x1b[0m step\x1b[K") == "(TaskRunner pid=1) step"
    assert visible("a 10%\rb 50%\rc 100%\r") == "c 100%"


def _log(tmp_path, lines: list[str]) -> LogRef:  # noqa: ANN001
    p = tmp_path / "attempt-1.log"
    p.write_bytes("".join(line + "\n" for line in lines).encode())
    return LogRef("t", 1, p, tmp_path)


def test_search_forward_backward_and_bounded(tmp_path) -> None:  # noqa: ANN001
    lines = [f"line {i}" + (" NEEDLE" if i % 100 == 7 else "") for i in range(100_000)]
    lines[500] = "\x1b[31mNee\x1b[0mdle split by colour"  # matches as seen, not as bytes
    ref = _log(tmp_path, lines)
    offsets = {}
    pos = 0
    for i, line in enumerate(lines):
        offsets[i] = pos
        pos += len(line.encode()) + 1
    s = line_search("needle", False)
    r = search_log(ref, s, offset=0, max_matches=3)
    assert [m.offset for m in r.matches] == [offsets[7], offsets[107], offsets[207]]
    assert r.matches[0].text == "line 7 NEEDLE" and r.scanned_to == offsets[208] and not r.complete
    r = search_log(ref, s, offset=offsets[450], max_matches=2)
    assert [m.text for m in r.matches] == ["Needle split by colour", "line 507 NEEDLE"]
    r = search_log(ref, s, before=offsets[507], max_matches=2)  # the two before line 507
    assert [m.text for m in r.matches] == ["line 407 NEEDLE", "Needle split by colour"]
    assert r.scanned_from == offsets[407]
    r = search_log(ref, s, offset=0, max_matches=10_000, budget=100_000)  # bounded scan: go on from scanned_to
    assert 0 < r.scanned_to <= 100_000 + 1024 * 1024 and not r.complete
    r = search_log(ref, line_search(r"^line 9999\d$", True), offset=offsets[99_000], max_matches=50)
    assert len(r.matches) == 10 and r.complete and r.scanned_to == pos
    r = search_log(ref, line_search("^line 3$", True), before=pos, max_matches=5)
    assert [m.offset for m in r.matches] == [offsets[3]] and r.complete and r.scanned_from == 0


def test_block_prefilters_never_hide_a_line_that_shows_a_match(tmp_path) -> None:  # noqa: ANN001
    """Blocks are skipped when the escape-free text cannot match; a tqdm line (\r) is matched as last drawn."""
    ref = _log(tmp_path, ["x" * 50] * 5000 + ["bar 10%\rfoo done", "\x1b[1mfo\x1b[0mo bold", "tail"])
    for q, regex, want in [("^foo", True, ["foo done", "foo bold"]), ("^bar", True, []), ("foo", False, ["foo done", "foo bold"]),
                           ("bar", False, []), (r"o\s?bold$", True, ["foo bold"])]:
        assert [m.text for m in search_log(ref, line_search(q, regex)).matches] == want, q


def test_search_api_access_and_errors(settings) -> None:  # noqa: ANN001
    with live_server(settings) as srv:
        alice, bob = srv.new_user("alice"), srv.new_user("bob")
        tid = submit_spec(alice, SPEC)
        log = settings.root / "users" / "alice" / "jobs" / tid / "logs" / "attempt-1.log"
        log.parent.mkdir(parents=True)
        log.write_bytes(b"alpha\n(TaskRunner pid=1) Traceback here\nbeta\ngamma Traceback\n")
        url = f"/api/v2/tasks/{tid}/logs/search"
        r = alice.get(url, params={"q": "traceback"})
        assert r.status_code == 200, r.text
        body = r.json()
        assert [m["offset"] for m in body["matches"]] == [6, 45] and body["complete"] and body["size"] == 61
        assert body["matches"][0]["text"] == "(TaskRunner pid=1) Traceback here" and body["attempt"] == 1
        assert alice.get(url, params={"q": "Traceback", "before": 45}).json()["matches"][0]["offset"] == 6
        assert alice.get(url, params={"q": "^gam", "regex": "true"}).json()["matches"][0]["end"] == 61
        # another user's task is not there for bob, nor a missing attempt
        assert bob.get(url, params={"q": "alpha"}).status_code == 404
        assert alice.get(url, params={"q": "alpha", "attempt": 3}).status_code == 404
        # a bad query names the field, the value and the fix
        bad = alice.get(url, params={"q": "(", "regex": "true"})
        assert bad.status_code == 400
        err = bad.json()["detail"]["errors"][0]
        assert err["field"] == "q" and err["value"] == "(" and "regex=false" in err["message"]
        assert alice.get(url, params={"q": ""}).json()["detail"]["errors"][0]["field"] == "q"
        assert alice.get(url, params={"q": "x" * 501}).status_code == 400
        assert alice.get(url, params={"q": "a", "max": 0}).status_code in (400, 422)
        # ranges of whole lines: X-Offset where it starts, X-Next-Offset where the next one begins
        r = alice.get(f"/api/v2/tasks/{tid}/logs", params={"offset": 2, "limit": 45, "lines": "true"})
        assert r.status_code == 200
        assert r.content == b"(TaskRunner pid=1) Traceback here\nbeta\n"
        assert (r.headers["x-offset"], r.headers["x-next-offset"]) == ("6", "45")
        assert bob.get(f"/api/v2/tasks/{tid}/logs", params={"lines": "true"}).status_code == 404


def test_ripgrep_finds_what_the_python_scan_finds(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    """A plain-text query goes to ripgrep (services/log_grep.py) over the whole rest of the file: the same
    matches as Python's scan, forward and backward, escapes and redraws judged as the page shows the line, a
    rare text across more than one SCAN_BYTES found in one answer, and Python's answer when rg fails."""
    from argus.services import log_grep, log_search

    assert log_grep.binary(), "ripgrep is a pinned dependency (pyproject.toml)"
    monkeypatch.setattr(log_search, "SCAN_BYTES", 256 * 1024)  # the Python scan needs several answers here
    lines = [f"\x1b[36m(TaskRunner pid=4)\x1b[0m step:{i} loss 0.5" for i in range(60_000)]
    lines[100] = "\x1b[31mNee\x1b[0mdle split by colour"
    lines[200] = "old NEEDLE 10%\rredrawn without it"  # shows no match: judged as last drawn
    lines[30_000] = "rare needle in the middle"
    lines[59_000] = "NEEDLE near the end"
    ref = _log(tmp_path, lines)
    s = line_search("needle", False)
    fast = search_log(ref, s, offset=0, max_matches=50, budget=log_search.SCAN_BYTES)
    assert [m.text for m in fast.matches] == ["Needle split by colour", "rare needle in the middle", "NEEDLE near the end"]
    assert fast.complete  # one answer over ~2.6 MiB: Python's scan stops at each 256 KiB
    size = ref.path.stat().st_size
    back = search_log(ref, s, before=size, max_matches=2, budget=log_search.SCAN_BYTES)
    assert [m.text for m in back.matches] == ["rare needle in the middle", "NEEDLE near the end"]
    assert back.scanned_from == back.matches[0].offset and not back.complete
    far = search_log(ref, s, before=back.matches[0].offset, max_matches=5, budget=log_search.SCAN_BYTES)
    assert [m.text for m in far.matches] == ["Needle split by colour"] and far.complete
    failing = tmp_path / "rg"
    failing.write_text("#!/bin/sh\necho '1:0:bogus'\nexit 2\n")
    failing.chmod(0o755)
    for rg in (None, str(failing)):  # missing or failing: Python's scan, the same lines over several answers
        monkeypatch.setattr(log_grep, "binary", lambda rg=rg: rg)
        slow, pos = [], 0
        while True:
            r = search_log(ref, s, offset=pos, max_matches=50, budget=log_search.SCAN_BYTES)
            slow += r.matches
            if r.complete:
                break
            pos = r.scanned_to
        assert [(m.offset, m.end, m.text) for m in slow] == [(m.offset, m.end, m.text) for m in fast.matches]


@pytest.mark.hostile
def test_a_query_is_only_ever_text_to_ripgrep(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    """The query reaches ripgrep's command line: options, a preprocessor, shell words and escapes in it are
    looked for as plain text, never obeyed (no file written, no other file read)."""
    from argus.services import log_search

    canary = tmp_path / "pwned"
    secret = tmp_path / "secret.txt"
    secret.write_text("the other user's secret\n")
    hostile = ["--pre=touch " + str(canary), "-e", "--files", f"--file={secret}", "$(touch " + str(canary) + ")",
               "; touch " + str(canary), "--no-config --pre sh", "-", "\x1b[31m", "'\"`", "--" + "x" * 490]
    lines = [f"filler {i}" for i in range(40_000)] + [f"line with {q}" for q in hostile]
    ref = _log(tmp_path, lines)
    for q in hostile:
        r = search_log(ref, line_search(q, False), offset=0, max_matches=5, budget=log_search.SCAN_BYTES)
        shown = [visible(line) for line in lines]
        assert [m.text for m in r.matches] == [t[:log_search.MAX_TEXT] for t in shown if q.casefold() in t.casefold()][:5], q
    assert not canary.exists()
