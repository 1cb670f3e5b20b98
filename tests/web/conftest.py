"""The WebUI suite: ONE real ``argus up`` (real Ray, real SQLite, verl validation required) and one Chromium
for the browser modules (package scope: under pytest-xdist, one per worker that runs them, stopped when it
leaves tests/web; each start costs ~40 s of a busy 2-core machine, 13 of them were a quarter of the run).
Modules therefore share users and tasks: a module creates users under names of its own, and restores
what it changes on alice and bob (passwords, disabled). Playwright drives Debian's Chromium
(``/usr/bin/chromium``).

Browser tests are marked ``browser`` (``pytest -m browser``). scripts/test.sh installs ``chromium``;
the tests skip, saying why, only when no Chromium binary exists (a machine where the test command
did not run). Every page request of every browser context is recorded, and a test fails when one
of them left the server's origin (the UI must work offline: no CDN, no web fonts).
Screenshots go to ``$ARGUS_ARTIFACTS/web`` (default ``<tmp>/argus-artifacts/web``); the path is printed.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from tests.helpers import free_port
from tests.waiting import wait_until

CHROMIUM = Path(os.environ.get("ARGUS_CHROMIUM", "/usr/bin/chromium"))
ARTIFACTS = Path(os.environ.get("ARGUS_ARTIFACTS", Path(tempfile.gettempdir()) / "argus-artifacts")) / "web"
PASSWORDS = {"alice": "alice-pw-1234567", "bob": "bob-pw-1234567"}


@dataclass
class Up:
    """A running ``argus up`` and its users' API clients (for setup and for checking what the page did)."""

    url: str
    state: Path
    admin_token: str
    tokens: dict[str, str] = field(default_factory=dict)

    def api(self, user: str | None = None) -> httpx.Client:
        token = self.admin_token if user is None else self.tokens[user]
        return httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {token}"}, timeout=60)

    def add_user(self, name: str, password: str) -> None:
        with self.api() as a:
            assert a.post("/api/v2/users", json={"name": name}).status_code == 201
            r = a.post(f"/api/v2/users/{name}/tokens", json={})
            assert r.status_code == 201, r.text
            self.tokens[name] = r.json()["token"]
        with self.api(name) as c:
            r = c.post("/api/v2/me/password", json={"password": password})
            assert r.status_code in (200, 204), r.text

    @property
    def root(self) -> Path:
        return self.state / "private"


def _start_up(state: Path, port: int) -> tuple[subprocess.Popen[bytes], str]:
    token = secrets.token_urlsafe(24)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ARGUS_", "RAY_ADDRESS"))}
    env.update(ARGUS_ADMIN_TOKEN=token, ARGUS_SCHEDULER_TICK_S="0.5", ARGUS_VERL_VALIDATION="required")
    state.mkdir(parents=True)
    proc = subprocess.Popen([sys.executable, "-m", "argus.cli.main", "up", "--state-dir", str(state),
                             "--port", str(port), "--gpus", "0", "--no-sftp"],
                            env=env, stdout=open(state / "out.log", "wb"), stderr=subprocess.STDOUT,  # noqa: SIM115
                            start_new_session=True)

    def out() -> str:
        return (state / "out.log").read_text(errors="replace")

    def healthy() -> bool:
        said = out()
        assert proc.poll() is None, f"argus up exited:\n{said[-3000:]}"
        return ("admin token: " in said
                and httpx.get(f"http://127.0.0.1:{port}/api/v2/health", timeout=5).status_code == 200)

    wait_until(healthy, 240, every=0.3, ignore=(httpx.HTTPError,),
               what=lambda: f"argus up not healthy:\n{out()[-3000:]}")
    return proc, token


@pytest.fixture(scope="package")
def up(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Up]:
    """A real ``argus up --no-sftp --gpus 0`` with users alice and bob (passwords as for SFTP)."""
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is not installed (scripts/test.sh installs Debian's chromium)")
    state = tmp_path_factory.mktemp("web") / "state"
    port = free_port()
    proc, token = _start_up(state, port)
    server = Up(url=f"http://127.0.0.1:{port}", state=state, admin_token=token)
    try:
        for name, pw in PASSWORDS.items():
            server.add_user(name, pw)
        yield server
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(90)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


def launched_chromium() -> Iterator[object]:
    """Debian's Chromium under Playwright, for a fixture to yield from (skips the test where it is not
    installed); screenshots go to ARTIFACTS."""
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is not installed (scripts/test.sh installs Debian's chromium)")
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM))
        try:
            yield b
        finally:
            b.close()


@pytest.fixture(scope="package")
def chromium() -> Iterator[object]:
    """The browser modules' one Chromium (package scope; Playwright's sync API allows one per thread, so
    a module must not launch a second one beside it: ask for this fixture instead)."""
    yield from launched_chromium()


@pytest.fixture(scope="package")
def browser(up: Up, chromium) -> Iterator[object]:  # noqa: ANN001
    """The shared Chromium, for tests against the shared ``argus up``."""
    print(f"\nWebUI screenshots: {ARTIFACTS}")
    yield chromium


class Pages:
    """New browser contexts for a test; each records its requests to check they stay on the server."""

    def __init__(self, browser, up: Up) -> None:  # noqa: ANN001
        self.browser, self.up = browser, up
        self.contexts: list = []
        self.requests: list[str] = []

    def new(self, lang: str = "en", user: str | None = None):  # noqa: ANN201
        ctx = self.browser.new_context(locale="zh-CN" if lang == "zh" else "en-US",
                                       extra_http_headers={"Accept-Language": "zh-CN,zh;q=0.9" if lang == "zh" else "en-US,en;q=0.9"},
                                       viewport={"width": 1360, "height": 900}, timezone_id="Asia/Shanghai")
        ctx.on("request", lambda r: self.requests.append(r.url))
        self.contexts.append(ctx)
        page = ctx.new_page()
        page.set_default_timeout(30_000)
        if user:
            sign_in(page, self.up, user)
        return page

    def close(self) -> None:
        for c in self.contexts:
            c.close()


def sign_in(page, up: Up, user: str, password: str | None = None) -> None:  # noqa: ANN001
    page.goto(f"{up.url}/login")
    page.fill("#login-user", user)
    page.fill("#login-password", password if password is not None else PASSWORDS[user])
    page.click("#login-submit")
    page.wait_for_url(f"{up.url}/tasks")


def signed_in(pages: Pages, up: Up, user: str, password: str, lang: str):  # noqa: ANN201
    """A new page in ``lang``, signed in with the user's password."""
    page = pages.new(lang=lang)
    sign_in(page, up, user, password)
    return page


def sign_in_with_token(page, url: str, token: str) -> None:  # noqa: ANN001
    """The sign-in page's API-token tab, as a user pasting a token would use it."""
    page.goto(f"{url}/login")
    page.click('.tab[data-mode="token"]')
    page.fill("#login-token", token)
    page.click("#login-submit")
    page.wait_for_url(f"{url}/tasks")


@pytest.fixture
def pages(browser, up: Up) -> Iterator[Pages]:  # noqa: ANN001
    p = Pages(browser, up)
    try:
        yield p
    finally:
        p.close()
    foreign = [u for u in p.requests if not (u.startswith(up.url + "/") or u.startswith("data:"))]
    assert not foreign, f"the page loaded something from outside the server: {foreign[:5]}"


def answer(page, accept: bool = True, text: str | None = None) -> str:  # noqa: ANN001
    """Answer the page's in-page dialog (common.js ``ask``: the pages open no native confirm/prompt/alert):
    type ``text`` into a prompt, then OK or Cancel; returns the question it asked."""
    dlg = page.locator("dialog.argus-dialog[open]")
    dlg.wait_for(timeout=30_000)
    message = dlg.locator(".dialog-message").inner_text()
    if text is not None:
        dlg.locator(".dialog-input").fill(text)
    dlg.locator(".dialog-ok" if accept else ".dialog-cancel").click()
    dlg.wait_for(state="detached", timeout=30_000)
    return message


def shot(page, name: str) -> Path:  # noqa: ANN001
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
