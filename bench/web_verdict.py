"""Benchmark: New Task editor, last keystroke → verdict rendered, in Chromium against real verl validation.

Issue 25 asks for the verdict within 0.5 s of the last keystroke on this machine. A real API server
over SQLite with a warm verl validator (required mode, like ``argus up``), a tiny local model and
parquet files in the user's home (``tests/verl/conftest.populate_home``), so every check composes
verl's config, runs its start-up validation and reads the datasets. Playwright drives
``/usr/bin/chromium``: each sample retypes the last value of the spec (three Backspaces, then a
new three-digit ``total_training_steps``, keys ``--key-ms`` apart, as a person types), and the page itself records the last keydown and the moment the
verdict is rendered (``#check-state[data-verdict]`` changes, new_task.js): the figure includes the
debounce, the request, verl's validation and the DOM update.

The page as it is by default; ``--old-debounce`` also serves new_task.js with issue 25's 900 ms debounce
(rewritten on the fly). Since issue 37 the page asks for the spec's own checks first (``checks=spec``) and shows
them while verl's full check runs: that step is timed too (``#check-state[data-quick]``). Also measured: the
dry-run request alone (server time, same spec) and the verl key list (GET /api/v2/verl/keys: first call
composes, later ones are the cache).

    .venv/bin/python bench/web_verdict.py [--samples 20] [--key-ms 80] [--old-debounce]

Prints figures; asserts nothing. Issue 37, before (the tree before it, ``PYTHONPATH=<that tree>/src``) and after,
run one after the other on the shared 2-core box (the load average is other helpers' test runs):

    load ~1:  before p50 403 ms, p95 443 ms     after p50 400 ms, p95 444 ms; spec checks shown p50 275 ms
    load ~3:  before p50 453 ms, p95 497 ms     after p50 436 ms, p95 470 ms; spec checks shown p50 282 ms
    load ~4:  before p50 479 ms, p95 575 ms     after p50 442 ms, p95 499 ms; spec checks shown p50 282 ms
    load ~15: before p50 512 ms, p95 653 ms     after p50 534 ms, p95 612 ms; spec checks shown p50 283 ms

With ``--old-debounce`` at load ~1: 900 ms debounce p50 1062 ms, p95 1105 ms (spec checks shown p50 931 ms).
The validation itself (bench/verdict_worker.py: the worker's spare copy of the merged config) went from p50
283 to 182 ms at load 15; in the page, with this tiny model and spec, that is within the noise. The 250 ms
debounce is most of the rest. Issue 25's figures (load 3–6): request alone p50 80 ms; with the 900 ms debounce p50 1016 ms; with
250 ms p50 398 ms. At load average ~15 the request alone took p50 787 ms then: on a busy head the 0.5 s goal
is missed (the time is CPU contention, not waiting).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.helpers import live_server  # noqa: E402
from tests.verl.conftest import USER, populate_home  # noqa: E402

from argus.settings import Settings  # noqa: E402
from argus.verl.check import VerlCheck  # noqa: E402
from argus.verl.entry import EntryModuleCheck  # noqa: E402
from argus.verl.validator import VerlValidator  # noqa: E402

SPEC = """workload: grpo
name: bench verdict
model_id: $HOME/models/tiny
train_file: $HOME/datasets/train.parquet
val_file: $HOME/datasets/val.parquet
nnodes: 1
n_gpus_per_node: 2
train_batch_size: 8
rollout_n: 2
max_prompt_length: 64
max_response_length: 32
total_training_steps: 100"""  # the bench retypes this value: every burst is a new spec that verl judges
# Records, in the page, the last keydown and each verdict's arrival (performance.now()).
PROBE = """(() => {
  window.__lastKey = 0; window.__verdicts = []; window.__quick = [];
  document.addEventListener('keydown', () => { window.__lastKey = performance.now(); }, true);
  new MutationObserver((records) => {
    for (const r of records) (r.attributeName === 'data-quick' ? window.__quick : window.__verdicts).push(performance.now());
  }).observe(document.getElementById('check-state'), { attributes: true, attributeFilter: ['data-verdict', 'data-quick'] });
})()"""


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(p / 100 * (len(xs) - 1)))]


def measure(page, url: str, samples: int, key_ms: int) -> tuple[list[float], list[str], list[float]]:  # noqa: ANN001
    """(milliseconds from the last keydown to the verdict, each verdict's state line, milliseconds from the last
    keydown to the spec's own checks on screen: ``data-quick``, issue 37; none with a page that has no such step)."""
    page.goto(url + "/tasks/new")
    page.locator("#editor .cm-content").wait_for()
    page.evaluate("localStorage.clear()")
    page.goto(url + "/tasks/new?template=basic-grpo")
    page.locator("#check-state[data-verdict]").wait_for(timeout=60_000)
    page.click(".cm-content")
    page.keyboard.press("Control+a")
    page.keyboard.press("Delete")
    page.keyboard.insert_text(SPEC)
    page.locator("#check-state[data-verdict]").wait_for()
    time.sleep(2)
    page.evaluate(PROBE)
    out, states, quick = [], [], []
    for i in range(samples):
        page.keyboard.press("Control+End")
        n = len(page.evaluate("window.__verdicts"))
        nq = len(page.evaluate("window.__quick"))
        for _ in range(3):
            page.keyboard.press("Backspace", delay=key_ms)
        page.keyboard.type(str(101 + i), delay=key_ms)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            time.sleep(0.05)
            got = page.evaluate("[window.__lastKey, window.__verdicts, window.__quick]")
            after = [v for v in got[1][n:] if v > got[0]]
            if after:
                out.append(after[-1] - got[0])
                first = [v for v in got[2][nq:] if got[0] < v <= after[-1]]
                if first:
                    quick.append(first[-1] - got[0])
                break
        time.sleep(1.2)  # idle between bursts, as a person reading the verdict
        states.append(page.inner_text("#check-state"))
    return out, states, quick


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=20)
    ap.add_argument("--key-ms", type=int, default=80)
    ap.add_argument("--old-debounce", action="store_true", help="also measure the page with issue 25's 900 ms debounce")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    validator = VerlValidator(sys.executable, timeout_s=60)
    validator.start_background()
    validator.request({"op": "info"}, 300)  # started and warm (import verl: seconds; more on a busy machine)

    def configure(ctx):  # noqa: ANN001, ANN202
        ctx.checks = (EntryModuleCheck(ctx.settings, validator), VerlCheck(ctx.settings, validator))
        ctx.extras["verl_validator"] = SimpleNamespace(get=lambda env: validator)  # the keys endpoint's pool

    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as tmp, live_server(
            Settings(state_dir=Path(tmp), sftp_enabled=False, verl_validation="required"), configure) as srv:
        populate_home(srv.ctx.settings.root)
        client = srv.new_user(USER)
        token = client.headers["Authorization"].split()[1]
        ok = client.post("/api/v2/tasks", params={"dry_run": "true"}, content=SPEC.encode(),
                         headers={"Content-Type": "application/yaml"})
        print(f"dry run of the spec: {ok.status_code} (validator warm)")
        server = []
        for _ in range(args.samples):
            t0 = time.perf_counter()
            client.post("/api/v2/tasks", params={"dry_run": "true"}, content=SPEC.encode(),
                        headers={"Content-Type": "application/yaml"})
            server.append((time.perf_counter() - t0) * 1000)
        keys = []
        for _ in range(3):
            t0 = time.perf_counter()
            n = len(client.get("/api/v2/verl/keys", params={"workload": "grpo"}).json()["keys"])
            keys.append((time.perf_counter() - t0) * 1000)
        print(f"dry-run request alone (HTTP, {args.samples}×): p50 {pct(server, 50):.0f} ms, "
              f"p95 {pct(server, 95):.0f} ms")
        print(f"GET /api/v2/verl/keys ({n} keys): first {keys[0]:.0f} ms, cached {statistics.median(keys[1:]):.1f} ms")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium")
            variants = (("before (900 ms debounce)", "900"), ("after", None)) if args.old_debounce else (("as it is", None),)
            for label, debounce in variants:
                ctx = browser.new_context(viewport={"width": 1360, "height": 900})
                page = ctx.new_page()
                page.on("pageerror", lambda e: print(f"page error: {e}"))
                assert page.request.post(f"{srv.url}/api/v2/session", data={"token": token}).ok
                if debounce:
                    js = (ROOT / "src/argus/web/static/js/new_task.js").read_text()
                    old = js.replace("const DEBOUNCE_MS = 250;", f"const DEBOUNCE_MS = {debounce};")
                    assert old != js, "new_task.js no longer sets DEBOUNCE_MS = 250"
                    page.route("**/js/new_task.js*",  # /static/v/<version>/js/…
                               lambda route, _request, body=old: route.fulfill(body=body, content_type="text/javascript"))
                xs, states, quick = measure(page, srv.url, args.samples, args.key_ms)
                print(f"last keystroke → verdict rendered, {label}: p50 {pct(xs, 50):.0f} ms, p95 {pct(xs, 95):.0f} ms, "
                      f"max {max(xs):.0f} ms ({len(xs)} edits of 6 keys, {args.key_ms} ms apart; "
                      f"verdicts: {', '.join(sorted(set(states)))})")
                if quick:
                    print(f"last keystroke → the spec's own checks shown first, {label}: p50 {pct(quick, 50):.0f} ms, "
                          f"p95 {pct(quick, 95):.0f} ms ({len(quick)} of {len(xs)} edits showed it before verl's verdict)")
                ctx.close()
            browser.close()
    validator.stop()


if __name__ == "__main__":
    main()
