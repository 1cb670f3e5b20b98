"""The Data page for daily work (issue 25) in a real Chromium against a real ``argus up``.

Parallel folder uploads (every file arrives, finished rows are cleared, several PUTs in flight),
the name filter, multi-select with shift-click, bulk move and bulk delete with per-item results,
the quota bar, and virtual rows for a 2 000-file folder. One server for the module
(tests/web/conftest.py); the disk and the API check what the page did.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.web.conftest import Pages, Up, answer, shot

pytestmark = [pytest.mark.browser, pytest.mark.e2e]


def home(up: Up, user: str) -> Path:
    return up.root / "users" / user


def opened(page, up: Up, path: str) -> None:  # noqa: ANN001
    page.goto(f"{up.url}/data?path={path}")
    page.wait_for_function(f"() => document.body.dataset.loaded === {path!r}")


def names(page) -> list[str]:  # noqa: ANN001
    return page.eval_on_selector_all("#files-body tr", "rows => rows.map(r => r.dataset.name)")


def test_a_folder_of_100_files_uploads_in_parallel_and_finished_rows_are_cleared(up: Up, pages: Pages,
                                                                                  tmp_path: Path) -> None:
    src = tmp_path / "hundred"
    expected = {}
    for i in range(100):
        rel = f"part{i % 3}/f{i:03d}.txt"
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        expected[rel] = os.urandom(500 + i * 37)
        (src / rel).write_bytes(expected[rel])
    page = pages.new(user="alice")
    in_flight, peak, puts = set(), [0], []

    def started(r) -> None:  # noqa: ANN001
        if r.method == "PUT" and "/api/v2/files/content" in r.url:
            in_flight.add(r)
            puts.append(r.url)
            peak[0] = max(peak[0], len(in_flight))

    page.on("request", started)
    page.on("requestfinished", lambda r: in_flight.discard(r))
    page.on("requestfailed", lambda r: in_flight.discard(r))
    opened(page, up, "/datasets")
    t0 = time.monotonic()
    page.set_input_files("#folder-input", str(src))
    page.wait_for_function("() => document.body.dataset.uploads === 'idle'", timeout=60_000)
    took = time.monotonic() - t0
    dest = home(up, "alice") / "datasets" / "hundred"
    for rel, data in expected.items():
        assert (dest / rel).read_bytes() == data, rel
    assert len(puts) == 100 and peak[0] >= 3, f"uploads did not overlap: at most {peak[0]} PUTs in flight"
    assert page.locator("#up-list li").count() == 0  # every finished row cleared
    assert page.locator("#uploads").is_hidden()
    assert page.evaluate("document.body.dataset.uploadsDone") == "100"
    page.locator('#files-body tr[data-name="hundred"]').wait_for()
    print(f"\n100 small files through the page: {took:.2f} s (noisy: other suites share this machine)")
    # a failure stays, with the server's message and a Retry; the retry succeeds once the cause is gone
    blocker = home(up, "alice") / "datasets" / "retry.txt"
    blocker.mkdir()  # a folder where the file should go: the server refuses the PUT
    one = tmp_path / "retry.txt"
    one.write_text("again\n")
    page.set_input_files("#file-input", str(one))
    row = page.locator('#up-list li[data-state="failed"]')
    row.wait_for()
    assert "is a directory" in row.inner_text() and "/datasets/retry.txt" in row.inner_text(), row.inner_text()
    page.locator("#up-overall-text", has_text="1 did not arrive").wait_for()
    shot(page, "data-upload-failed-en")
    blocker.rmdir()
    row.locator(".up-retry").click()
    page.wait_for_function("() => document.body.dataset.uploads === 'idle' && !document.querySelector('#up-list li')")
    assert (home(up, "alice") / "datasets" / "retry.txt").read_text() == "again\n"


def test_filter_select_range_bulk_move_and_delete(up: Up, pages: Pages) -> None:
    base = home(up, "bob") / "datasets" / "bulk"
    (base / "sub").mkdir(parents=True)
    for name in ("file-a1.txt", "file-a2.txt", "file-a3.txt", "other-b1.txt", "other-b2.txt"):
        (base / name).write_text(name)
    target = home(up, "bob") / "datasets" / "target"
    target.mkdir()
    (target / "file-a3.txt").write_text("already here")
    page = pages.new(user="bob")
    opened(page, up, "/datasets/bulk")
    assert len(names(page)) == 6
    page.fill("#data-filter", "FILE-A")  # as you type, case-insensitive
    page.wait_for_function("() => document.querySelectorAll('#files-body tr').length === 3")
    assert names(page) == ["file-a1.txt", "file-a2.txt", "file-a3.txt"]
    assert "3 of 6" in page.locator("#data-shown").inner_text()
    page.locator('#files-body tr[data-name="file-a1.txt"] .data-pick').click()
    page.locator('#files-body tr[data-name="file-a3.txt"] .data-pick').click(modifiers=["Shift"])
    page.locator("#data-bulk-count", has_text="3 selected").wait_for()
    assert page.evaluate("document.querySelector('#data-select-all').checked")
    # a target that is not a folder of yours: refused before any move, naming the field and value
    page.fill("#data-bulk-dest", "/../../alice")
    page.click("#data-bulk-move")
    err = page.locator("#data-error")
    err.wait_for()
    assert "Move to folder" in err.inner_text() and "New folder" in err.inner_text(), err.inner_text()
    assert sorted(p.name for p in target.iterdir()) == ["file-a3.txt"]
    page.fill("#data-bulk-dest", "/datasets/target")
    page.click("#data-bulk-move")
    page.wait_for_function("() => (document.body.dataset.bulk || '').startsWith('move:')")
    assert page.evaluate("document.body.dataset.bulk") == "move:2/3"
    failed = page.locator('#data-bulk-list li[data-result="failed"]')
    assert failed.count() == 1 and "already exists" in failed.inner_text() and "file-a3.txt" in failed.inner_text()
    assert page.locator('#data-bulk-list li[data-result="ok"]').count() == 2
    assert (target / "file-a1.txt").read_text() == "file-a1.txt" and (target / "file-a2.txt").exists()
    assert (target / "file-a3.txt").read_text() == "already here" and (base / "file-a3.txt").exists()
    shot(page, "data-bulk-move-en")
    # filter off: select all shown, untick one, delete the rest after confirming
    page.fill("#data-filter", "")
    page.wait_for_function("() => document.querySelectorAll('#files-body tr').length === 4")
    page.click("#data-select-all")
    page.locator('#files-body tr[data-name="other-b2.txt"] .data-pick').click()
    page.locator("#data-bulk-count", has_text="3 selected").wait_for()
    assert page.evaluate("document.querySelector('#data-select-all').indeterminate")
    messages: list[str] = []
    page.click("#data-bulk-delete")
    messages.append(answer(page))
    page.wait_for_function("() => (document.body.dataset.bulk || '').startsWith('delete:')")
    assert page.evaluate("document.body.dataset.bulk") == "delete:3/3"
    assert messages and "3 items" in messages[0] and "sub" in messages[0], messages
    assert sorted(p.name for p in base.iterdir()) == ["other-b2.txt"]
    page.wait_for_function("() => document.querySelectorAll('#files-body tr').length === 1")
    assert page.locator("#data-bulk").is_hidden()


def test_quota_bar_colours_near_the_limit(up: Up, pages: Pages) -> None:
    page = pages.new(user="bob")
    opened(page, up, "/datasets")
    bar = page.locator("#data-quota")
    bar.wait_for()
    assert "no quota" in bar.inner_text() and page.locator("#data-quota-bar").is_hidden()
    with up.api("bob") as c:
        assert c.put("/api/v2/files/content", params={"path": "/datasets/q.bin"}, content=b"q" * 4096).status_code == 201
        used = c.get("/api/v2/files/usage").json()["used_bytes"]
    with up.api() as a:
        assert a.patch("/api/v2/users/bob", json={"quota_bytes": int(used / 0.9) + 1}).status_code == 200
    opened(page, up, "/datasets")
    page.wait_for_function("() => document.getElementById('data-quota').dataset.level === 'near'")
    assert "90%" in bar.inner_text() or "89%" in bar.inner_text(), bar.inner_text()
    fill = page.eval_on_selector("#data-quota-fill", "e => getComputedStyle(e).backgroundColor")
    assert fill == "rgb(221, 107, 32)", fill  # orange near the limit
    shot(page, "data-quota-near-en")
    with up.api() as a:
        assert a.patch("/api/v2/users/bob", json={"quota_bytes": None}).status_code == 200


def test_a_2000_file_folder_keeps_few_rows_in_the_dom(up: Up, pages: Pages) -> None:
    many = home(up, "alice") / "datasets" / "many"
    many.mkdir(parents=True)
    for i in range(2000):
        (many / f"file-{i:05d}.txt").write_bytes(b"x")
    page = pages.new(user="alice")
    opened(page, up, "/datasets")
    ms = page.evaluate("""() => new Promise((done) => {
        const t0 = performance.now();
        document.querySelector('#files-body tr[data-name="many"] a.dir').click();
        const wait = () => document.body.dataset.loaded === '/datasets/many'
          ? requestAnimationFrame(() => done(performance.now() - t0)) : setTimeout(wait, 1);
        wait(); })""")
    print(f"\nopening a 2000-file folder: {ms:.0f} ms (listing API + render; noisy machine)")
    assert ms < 1500, ms  # the bench reports the figure; here only a gross regression fails
    rows = page.locator("#files-body tr").count()
    assert 10 <= rows <= 120, rows
    assert names(page)[0] == "file-00000.txt"
    page.eval_on_selector("#files-scroll", "s => { s.scrollTop = s.scrollHeight; }")
    page.locator('#files-body tr[data-name="file-01999.txt"]').wait_for()
    assert page.locator("#files-body tr").count() <= 120
    assert page.locator('#files-body tr[data-name="file-00000.txt"]').count() == 0
    # the filter and the selection work on every row, not only the drawn ones
    page.fill("#data-filter", "file-019")
    page.wait_for_function("() => document.querySelectorAll('#files-body tr').length === 100")
    page.fill("#data-filter", "file-01")
    page.wait_for_function("() => document.body.dataset.filtered === '1000'")
    page.click("#data-select-all")
    page.locator("#data-bulk-count", has_text="1000 selected").wait_for()
    page.eval_on_selector("#files-scroll", "s => { s.scrollTop = s.scrollHeight; }")
    last = page.locator('#files-body tr[data-name="file-01999.txt"] .data-pick')
    last.wait_for()
    assert last.is_checked()
    shot(page, "data-virtual-en")
