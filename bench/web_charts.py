"""Benchmark: the task page's charts in Debian's Chromium for a verl-sized run (issue 37, "charts for real runs").

A real verl PPO/GRPO run logs 100+ keys per step (actor/…, critic/…, response_length/…, timing_s/…,
perf/…) for thousands of steps. This writes such a log (``--keys`` keys × ``--steps`` steps, with the
driver's clock beside it) for a task of a real server (uvicorn over SQLite, no Ray: nothing runs), opens
its Metrics tab with the four default charts plus one chart of ``--together`` keys of four units (so
four y axes), and measures in the page:

* open: navigation → every chart drawn with all its points (the first load parses the whole log on
  the server: cold; then the median of --loads warm loads);
* refresh: one poll of the drawn keys (fetch + JSON + setData of every chart), median of 5, beside the
  same request alone and the redraw alone (the page's part);
* add a key to a chart ("＋ metric"): chosen → drawn with its points;
* the shared cursor: a mouse move over one chart → every chart's cursor and legend at that step
  (the handler, and to the next frame), median of 50 moves;
* full screen: the button → the chart redrawn at the window's size, and Esc back;
* the page's JS heap after all that.

Measured (2-core box shared with a CI run, load average 20–50, so server figures swing 2×; defaults:
3 000 steps × 120 keys, 11 MiB of log, 36 000 points on 5 charts): the page's own work stays small —
redraw of every chart 18–33 ms, the shared cursor's handler 0.6–0.9 ms for 5 charts (next frame
16–26 ms), full screen 2–4 ms —; what a user waits for is the server: the first open parses the whole
log (6.5–15 s at that load), a refresh of the 12 drawn keys 0.35–1.3 s (the request alone 0.4–1.2 s),
adding a key asks for that key only (0.16 s request, 0.76–1.5 s to drawn through Playwright).

Prints figures; asserts nothing.

    .venv/bin/python bench/web_charts.py [--steps 3000] [--keys 120] [--together 8] [--loads 3]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.helpers import live_server  # noqa: E402

from argus.core.metrics import clock_line  # noqa: E402
from argus.settings import Settings  # noqa: E402

SPEC = ("kind: advanced\nworkload: job\nnnodes: 1\nn_gpus_per_node: 8\nname: charts-bench\n"
        "command: python3 -m argus.jobs.sleep 1\n")  # 8 GPUs on a server without Ray: it stays queued
# names as verl prints them; the rest of --keys are more actor/critic-style keys
REAL = ["actor/pg_loss", "actor/entropy", "actor/kl_loss", "actor/pg_clipfrac", "actor/ppo_kl", "actor/grad_norm",
        "actor/lr", "critic/score/mean", "critic/score/max", "critic/score/min", "critic/rewards/mean",
        "critic/advantages/mean", "critic/returns/mean", "response_length/mean", "response_length/max",
        "response_length/clip_ratio", "prompt_length/mean", "timing_s/gen", "timing_s/step", "timing_s/update_actor",
        "timing_s/old_log_prob", "timing_s/ref", "timing_s/adv", "timing_per_token_ms/gen", "perf/throughput",
        "perf/time_per_step", "perf/total_num_tokens", "perf/max_memory_allocated_gb", "perf/mfu/actor",
        "global_seqlen/mean", "global_seqlen/minmax_diff", "val-core/openai/gsm8k/reward/mean@1", "training/epoch"]
DEFAULTS = ["critic/score/mean", "actor/kl_loss", "actor/entropy", "response_length/mean"]
TOGETHER = ["actor/pg_loss", "timing_s/gen", "response_length/max", "perf/throughput", "actor/grad_norm",
            "timing_s/step", "prompt_length/mean", "perf/max_memory_allocated_gb", "critic/rewards/mean",
            "actor/pg_clipfrac", "timing_s/update_actor", "global_seqlen/mean"]


def keys_of(n: int) -> list[str]:
    extra = [f"{('actor', 'critic', 'perf', 'val-aux')[i % 4]}/extra_metric_{i}" for i in range(max(0, n - len(REAL)))]
    return (REAL + extra)[:max(n, len(DEFAULTS) + len(TOGETHER))]


def write_log(log: Path, keys: list[str], steps: int) -> None:
    rng = random.Random(0)
    log.parent.mkdir(parents=True, exist_ok=True)
    t = time.time() - steps * 40
    with open(log, "wb") as f, open(log.with_suffix(".clock"), "wb") as c:
        for step in range(1, steps + 1):
            f.write((f"(TaskRunner pid=4242) step:{step} - "
                     + " - ".join(f"{k}:{rng.gauss(1, 0.3):.6g}" for k in keys) + "\n").encode())
            c.write(clock_line(f.tell(), t + step * 40))


def main() -> None:  # noqa: PLR0915 — one linear script
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--keys", type=int, default=120)
    ap.add_argument("--together", type=int, default=8, help="keys on the one chart of several (≤ 12)")
    ap.add_argument("--loads", type=int, default=3)
    a = ap.parse_args()
    from playwright.sync_api import sync_playwright

    keys = keys_of(a.keys)
    together = TOGETHER[:max(2, min(a.together, len(TOGETHER)))]
    charts = [[k] for k in DEFAULTS] + [together]
    want = {c[0]: a.steps * len(c) for c in charts}  # chart (by its first key) → points when drawn
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as tmp, live_server(
        Settings(state_dir=Path(tmp), sftp_enabled=False, verl_validation="off")
    ) as srv:
        user = srv.new_user("bench")
        r = user.post("/api/v2/tasks", content=SPEC, headers={"Content-Type": "application/yaml"})
        assert r.status_code == 201, r.text
        tid = r.json()["task_id"]
        log = Path(str(srv.ctx.layout.attempt_log("bench", tid, 1)))
        write_log(log, keys, a.steps)
        print(f"log: {a.steps} steps × {len(keys)} keys = {log.stat().st_size / 2**20:.1f} MiB; charts: "
              f"{len(charts)} ({len(DEFAULTS)} of one key, one of {len(together)} keys in "
              f"{len({k.split('/')[0] for k in together})} groups), {sum(want.values()):,} points drawn")
        token = user.headers["Authorization"].split()[1]
        view = ",".join("|".join(c) for c in charts)
        url = f"{srv.url}/tasks/{tid}#metrics&keys={view}&smooth=0.6&x=step&log=0"
        drawn = ("(want) => Object.entries(want).every(([k, n]) => { const f = document.querySelector("
                 "`figure.chart[data-key=\"${k}\"]`); return f && +f.dataset.points === n; })")

        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium")
            ctx = browser.new_context(viewport={"width": 1360, "height": 900})
            page = ctx.new_page()
            assert page.request.post(f"{srv.url}/api/v2/session", data={"token": token}).ok
            opens = []
            for _ in range(a.loads + 1):
                page.goto("about:blank")  # a new document each time (the same URL with a hash would not reload)
                t0 = time.perf_counter()
                page.goto(url)
                page.wait_for_function(drawn, arg=want, timeout=300_000, polling=20)
                opens.append((time.perf_counter() - t0) * 1000)
            print(f"open → every chart drawn: cold (server parses the log) {opens[0]:.0f} ms, "
                  f"warm median of {a.loads} {statistics.median(opens[1:]):.0f} ms")

            refresh = page.evaluate("""async (query) => { const out = [], fetches = [];
                for (let i = 0; i < 5; i++) { let t = performance.now();
                  await document.getElementById('charts')._refresh(); out.push(performance.now() - t);
                  t = performance.now();
                  await (await fetch(location.pathname.replace('/tasks/', '/api/v2/tasks/') + '/metrics' + query)).json();
                  fetches.push(performance.now() - t); }
                return [out, fetches]; }""", "?" + "&".join(f"key={k}" for c in charts for k in c))
            med, fetched = statistics.median(refresh[0]), statistics.median(refresh[1])
            print(f"refresh (fetch {sum(len(c) for c in charts)} keys + redraw {len(charts)} charts): median {med:.0f} ms "
                  f"(of 5: {', '.join(f'{x:.0f}' for x in refresh[0])}); the same request alone (server + JSON): "
                  f"median {fetched:.0f} ms")
            draw = page.evaluate("""() => { const board = document.querySelector('figure.chart')._chart.board;
                const out = [];
                for (let i = 0; i < 5; i++) { const t = performance.now(); board.setSources(board.sources, board.keys);
                  out.push(performance.now() - t); }
                return out.sort((a, b) => a - b)[2]; }""")
            print(f"redraw alone (setSources with the same data: every series, EMA, join, uPlot setData): median {draw:.0f} ms")

            first = charts[0][0]
            adds = []
            for extra in ("critic/advantages/mean", "timing_s/ref", "perf/mfu/actor"):
                before = want[first]
                t0 = time.perf_counter()
                page.locator(f'figure.chart[data-key="{first}"] select.chart-add').select_option(extra)
                page.wait_for_function(f"""() => +document.querySelector('figure.chart[data-key="{first}"]')
                                          .dataset.points === {before + a.steps}""", timeout=120_000, polling=10)
                adds.append((time.perf_counter() - t0) * 1000)
                want[first] = before + a.steps
            one = page.evaluate("""async () => { const out = [];
                for (let i = 0; i < 5; i++) { const t = performance.now();
                  await (await fetch(location.pathname.replace('/tasks/', '/api/v2/tasks/') + '/metrics?key=timing_s/ref')).json();
                  out.push(performance.now() - t); }
                return out.sort((a, b) => a - b)[2]; }""")
            print(f"add a key to a chart → drawn: median {statistics.median(adds):.0f} ms (of {len(adds)}; it asks for that "
                  f"key only: the request alone, median of 5, {one:.0f} ms)")

            cursor = page.evaluate("""async (n) => {
                const fig = document.querySelector('figure.chart'); const over = fig.querySelector('.u-over');
                over.scrollIntoView({block: 'center'});
                const r = over.getBoundingClientRect(); const sync = [], frame = [];
                for (let i = 0; i < n; i++) {
                  const x = r.left + r.width * (0.05 + 0.9 * i / n), y = r.top + r.height / 2;
                  const t = performance.now();
                  over.dispatchEvent(new MouseEvent('mousemove', {clientX: x, clientY: y, bubbles: true}));
                  sync.push(performance.now() - t);
                  await new Promise((ok) => requestAnimationFrame(() => ok()));
                  frame.push(performance.now() - t);
                }
                const idx = [...document.querySelectorAll('figure.chart')].map((f) => f._chart.plot.cursor.idx);
                sync.sort((a, b) => a - b); frame.sort((a, b) => a - b);
                return {sync: sync[n >> 1], frame: frame[n >> 1], same: idx.every((i) => i === idx[0]), idx};
            }""", 50)
            print(f"shared cursor over {len(charts)} charts: handler {cursor['sync']:.1f} ms, to next frame "
                  f"{cursor['frame']:.1f} ms (median of 50); every chart at the same step: {cursor['same']}")

            full = page.evaluate(f"""async () => {{
                const fig = document.querySelector('figure.chart[data-key="{together[0]}"]');
                let t = performance.now(); fig.querySelector('.chart-full').click(); const on = performance.now() - t;
                await new Promise((ok) => requestAnimationFrame(() => ok()));
                const size = [fig._chart.plot.width, fig._chart.plot.height];
                t = performance.now();
                document.dispatchEvent(new KeyboardEvent('keydown', {{key: 'Escape', bubbles: true}}));
                return {{on, off: performance.now() - t, size}}; }}""")
            print(f"full screen ({full['size'][0]}×{full['size'][1]} px, {len(together)} keys): open "
                  f"{full['on']:.0f} ms, Esc {full['off']:.0f} ms")
            cdp = ctx.new_cdp_session(page)
            cdp.send("Performance.enable")
            m = {x["name"]: x["value"] for x in cdp.send("Performance.getMetrics")["metrics"]}
            print(f"page: JS heap {m['JSHeapUsedSize'] / 2**20:.1f} MiB, {m['Nodes']:.0f} DOM nodes")
            browser.close()


if __name__ == "__main__":
    main()
