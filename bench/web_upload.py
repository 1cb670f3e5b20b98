"""Server memory while big uploads stream through the Data page's endpoint, and its throughput.

    .venv/bin/python bench/web_upload.py [--size-mb 2048] [--no-browser]

The server is ``argus server`` (API + SFTP parts) in a subprocess (``tests/sftp_process.py``). One
file of ``--size-mb`` is uploaded three ways into the same user's home, one after the other:

1. **page**: the Data page in Debian's Chromium (Playwright), file picked in ``#file-input``: the
   page's XMLHttpRequest ``PUT /api/v2/files/content`` (what a user's browser does);
2. **httpx**: the same PUT streamed from Python in 1 MiB chunks (no browser in the way);
3. **cli**: ``argus files put`` (the CLI's upload; its time includes the CLI's start, ~1-2 s).

While each runs, the server process's RSS (its API process; SFTP is a separate child) is sampled
every 50 ms. Printed per way: MB/s, RSS before, peak RSS and peak minus before. A server that
buffered the body would grow by about the file's size; a streaming one stays flat.
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
            page.wait_for_function("() => ['done', 'failed'].includes(document.querySelector('#up-list li')?.dataset.state)")
            dt = time.perf_counter() - t0
            assert page.get_attribute("#up-list li", "data-state") == "done", page.inner_text("#up-list")
            return dt
        finally:
            b.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mb", type=int, default=2048)
    ap.add_argument("--no-browser", action="store_true")
    args = ap.parse_args()
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
