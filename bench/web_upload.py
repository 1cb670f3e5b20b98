"""Server memory while big uploads stream through the Data page's endpoint, and its throughput.

    .venv/bin/python bench/web_upload.py [--size-mb 2048] [--no-browser]
    .venv/bin/python bench/web_upload.py --folder 100 [--listing 2000]   # issue 25: many small files

The server is ``argus server`` (API + SFTP parts) in a subprocess (``tests/sftp_process.py``). One
file of ``--size-mb`` is uploaded three ways into the same user's home, one after the other:

1. **page**: the Data page in Debian's Chromium (Playwright), file picked in ``#file-input``: the
   page's XMLHttpRequest ``PUT /api/v2/files/content`` (what a user's browser does);
2. **httpx**: the same PUT streamed from Python in 1 MiB chunks (no browser in the way);
3. **cli**: ``argus files put`` (the CLI's upload; its time includes the CLI's start, ~1-2 s).

While each runs, the server process's RSS (its API process; SFTP is a separate child) is sampled
every 50 ms. Printed per way: MB/s, RSS before, peak RSS and peak minus before. A server that
buffered the body would grow by about the file's size; a streaming one stays flat.

``--folder N`` (issue 25) measures the other end instead: a folder of N small files (1-8 KiB) picked in
``#folder-input``, timed from the pick to the page saying its uploads are idle with every file on disk;
then the same N PUTs from httpx one after the other, which is the server's own cost per small upload.
``--listing M`` also times opening a folder of M files in the page (listing API + DOM render, to the
next frame) and counts the table rows in the DOM (virtual scrolling keeps it small).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.sftp_process import TOKEN, sftp_server_process  # noqa: E402

MiB = 1 << 20
CHROMIUM = Path(os.environ.get("ARGUS_CHROMIUM", "/usr/bin/chromium"))


class RssSampler:
    def __init__(self, pid: int) -> None:
        self.proc = psutil.Process(pid)
        self.before = self.proc.memory_info().rss
        self.peak = self.before
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self.proc.memory_info().rss)
            time.sleep(0.05)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def make_source(path: Path, size: int) -> None:
    block = os.urandom(MiB)
    with path.open("wb") as f:
        for i in range(size // MiB):
            f.write(block[:-8] + i.to_bytes(8, "little"))


def via_httpx(url: str, token: str, src: Path, dest: str) -> None:
    def chunks():
        with src.open("rb") as f:
            while chunk := f.read(MiB):
                yield chunk

    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=600) as c:
        r = c.put("/api/v2/files/content", params={"path": dest}, content=chunks(),
                  headers={"Content-Length": str(src.stat().st_size)})
        assert r.status_code == 201, r.text


def via_cli(url: str, token: str, src: Path, dest: str) -> None:
    env = {**os.environ, "ARGUS_URL": url, "ARGUS_TOKEN": token}
    subprocess.run([sys.executable, "-m", "argus.cli.main", "files", "put", str(src), dest], env=env, check=True,
                   stdout=subprocess.DEVNULL)


def via_page(url: str, token: str, src: Path, folder: str) -> float:
    """Seconds from picking the file to the page showing it done (browser start and sign-in excluded)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM))
        try:
            page = b.new_page()
            page.set_default_timeout(600_000)
            page.goto(f"{url}/login")
            page.click('.tab[data-mode="token"]')
            page.fill("#login-token", token)
            page.click("#login-submit")
            page.wait_for_url(f"{url}/tasks")
            page.goto(f"{url}/data?path={folder}")
            page.wait_for_function(f"() => document.body.dataset.loaded === '{folder}'")
            t0 = time.perf_counter()
            page.set_input_files("#file-input", str(src))
            page.wait_for_function("() => document.body.dataset.uploads === 'idle'")
            dt = time.perf_counter() - t0  # a finished row is cleared; a failed one stays and says why
            assert page.locator("#up-list li").count() == 0, page.inner_text("#up-list")
            return dt
        finally:
            b.close()


def make_folder(top: Path, n: int) -> Path:
    folder = top / "small"
    for i in range(n):
        sub = folder / f"part{i % 4}"
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"f{i:04d}.txt").write_bytes(os.urandom(1024 + (i * 709) % 7168))
    return folder


def signed_in_page(p, url: str, token: str):  # noqa: ANN001, ANN201
    b = p.chromium.launch(executable_path=str(CHROMIUM))
    page = b.new_page(viewport={"width": 1360, "height": 900})
    page.set_default_timeout(600_000)
    page.goto(f"{url}/login")
    page.click('.tab[data-mode="token"]')
    page.fill("#login-token", token)
    page.click("#login-submit")
    page.wait_for_url(f"{url}/tasks")
    return b, page


def folder_via_page(url: str, token: str, src: Path, home: Path) -> float:
    """Seconds from picking the folder to every file on disk and the page idle."""
    from playwright.sync_api import sync_playwright

    files = sorted(p.relative_to(src.parent) for p in src.rglob("*") if p.is_file())
    with sync_playwright() as p:
        b, page = signed_in_page(p, url, token)
        try:
            page.goto(f"{url}/data?path=/datasets")
            page.wait_for_function("() => document.body.dataset.loaded === '/datasets'")
            t0 = time.perf_counter()
            page.set_input_files("#folder-input", str(src))
            page.wait_for_function("() => document.body.dataset.uploads === 'idle'")
            dt = time.perf_counter() - t0
        finally:
            b.close()
    missing = [str(f) for f in files if not (home / f).is_file()]
    assert not missing, f"{len(missing)} files missing, e.g. {missing[:3]}"
    return dt


def folder_via_httpx(url: str, token: str, src: Path) -> float:
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=60) as c:
        t0 = time.perf_counter()
        for f in sorted(src.rglob("*")):
            if f.is_file():
                dest = "/datasets/httpx-" + str(f.relative_to(src.parent))
                r = c.put("/api/v2/files/content", params={"path": dest, "parents": "true"}, content=f.read_bytes())
                if r.status_code == 404:  # a server without ?parents: make the folder first
                    c.post("/api/v2/files/mkdir", json={"path": dest.rsplit("/", 1)[0], "parents": True})
                    r = c.put("/api/v2/files/content", params={"path": dest}, content=f.read_bytes())
                assert r.status_code == 201, r.text
        return time.perf_counter() - t0


def listing_via_page(url: str, token: str, home: Path, n: int) -> tuple[float, int, int]:
    """(ms to open a folder of n files: listing API + render to the next frame, rows in the DOM, total rows)."""
    from playwright.sync_api import sync_playwright

    big = home / "many"
    big.mkdir(exist_ok=True)
    for i in range(n):
        (big / f"file-{i:05d}.txt").write_bytes(b"x")
    with sync_playwright() as p:
        b, page = signed_in_page(p, url, token)
        try:
            page.goto(f"{url}/data?path=/datasets")
            page.wait_for_function("() => document.body.dataset.loaded === '/datasets'")
            best = []
            for _ in range(3):  # the first open warms the server's code paths; report the median of 3
                page.goto(f"{url}/data?path=/datasets")
                page.wait_for_function("() => document.body.dataset.loaded === '/datasets'")
                ms = page.evaluate("""() => new Promise((done) => {
                    const t0 = performance.now();
                    document.querySelector('#files-body tr[data-name="many"] a.dir').click();
                    const wait = () => document.body.dataset.loaded === '/datasets/many'
                      ? requestAnimationFrame(() => done(performance.now() - t0)) : setTimeout(wait, 1);
                    wait(); })""")
                best.append(ms)
            rows = page.locator("#files-body tr").count()
        finally:
            b.close()
    return sorted(best)[1], rows, n


def main_folder(n: int, listing: int) -> None:
    with tempfile.TemporaryDirectory(prefix="argus-bench-folder-") as tmp_s:
        tmp = Path(tmp_s)
        src = make_folder(tmp / "src", n)
        with sftp_server_process(tmp, "uploader", quiet=True) as srv:
            with httpx.Client(base_url=srv.url, headers={"Authorization": f"Bearer {TOKEN}"}) as admin:
                token = admin.post("/api/v2/users/uploader/tokens", json={}).json()["token"]
            home = tmp / "state" / "private" / "users" / "uploader" / "datasets"
            print(f"folder of {n} small files ({sum(f.stat().st_size for f in src.rglob('*') if f.is_file()) // 1024}"
                  f" KiB in {len(list(src.iterdir()))} subfolders); load average {os.getloadavg()[0]:.1f} on "
                  f"{os.cpu_count()} CPUs (wall times are only comparable at a similar load)")
            if CHROMIUM.exists():
                print(f"  page   {folder_via_page(srv.url, token, src, home):6.2f} s  (pick to idle, every file on disk)")
            dt = folder_via_httpx(srv.url, token, src)
            print(f"  httpx  {dt:6.2f} s  one PUT after another ({dt / n * 1000:.1f} ms per small file)")
            if listing and CHROMIUM.exists():
                ms, rows, total = listing_via_page(srv.url, token, home, listing)
                print(f"  listing of {total} files: {ms:.0f} ms (API + render, median of 3), {rows} rows in the DOM")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mb", type=int, default=2048)
    ap.add_argument("--no-browser", action="store_true")
    ap.add_argument("--folder", type=int, default=0, help="upload a folder of this many small files instead")
    ap.add_argument("--listing", type=int, default=0, help="with --folder: also open a folder of this many files")
    args = ap.parse_args()
    if args.folder:
        main_folder(args.folder, args.listing)
        return
    size = args.size_mb * MiB
    with tempfile.TemporaryDirectory(prefix="argus-bench-upload-") as tmp_s:
        tmp = Path(tmp_s)
        src = tmp / "big.bin"
        make_source(src, size)
        with sftp_server_process(tmp, "uploader", quiet=True) as srv:
            with httpx.Client(base_url=srv.url, headers={"Authorization": f"Bearer {TOKEN}"}) as admin:
                token = admin.post("/api/v2/users/uploader/tokens", json={}).json()["token"]
            home = tmp / "state" / "private" / "users" / "uploader" / "datasets"
            ways = [("httpx", lambda: via_httpx(srv.url, token, src, "/datasets/httpx.bin"), "httpx.bin"),
                    ("cli", lambda: via_cli(srv.url, token, src, "/datasets/cli.bin"), "cli.bin")]
            if not args.no_browser and CHROMIUM.exists():
                ways.insert(0, ("page", lambda: via_page(srv.url, token, src, "/datasets"), "big.bin"))
            print(f"upload of {args.size_mb} MiB into the server's /api/v2/files/content (server pid {srv.proc.pid})")
            for name, run, stored in ways:
                with RssSampler(srv.proc.pid) as rss:
                    t0 = time.perf_counter()
                    inner = run()
                    dt = inner if inner is not None else time.perf_counter() - t0
                assert (home / stored).stat().st_size == size, name
                (home / stored).unlink()
                print(f"  {name:6s} {size / MiB / dt:8.1f} MiB/s  {dt:6.1f} s   server RSS before "
                      f"{rss.before / MiB:7.1f} MiB  peak {rss.peak / MiB:7.1f} MiB  growth {(rss.peak - rss.before) / MiB:6.1f} MiB")


if __name__ == "__main__":
    main()
