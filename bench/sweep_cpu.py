"""The shipped CPU sweep for real (issue 38): examples/sweep-cpu.yaml's 4 GRPO trials on a fresh ``argus up``.

    .venv/bin/python bench/sweep_cpu.py [--budget NODE_HOURS] [--keep]

On a fresh state dir: the CPU training environment (``verl-0.9.1-vllm-cpu``, built once per lock into the test
cache, as the suite does) is registered, the README tour's uploads are put in the admin's home (the tiny model
and GSM8K-style data of ``scripts/smoke_tiny.py``, ``examples/reward.py`` as ``$HOME/code/reward.py``), ``argus
up`` starts as bench/outage.py starts it, and the admin submits ``examples/sweep-cpu.yaml`` as written plus
``cpus_per_node: 1`` on its base (the example's trials count 2 CPUs each, so on a 2-core machine they would run
one at a time whatever ``max_concurrent`` says) — and ``budget_gpu_hours`` replaced by ``--budget`` if given,
to see the budget stop trials.

Printed: each trial's parameters, state, why it ended, its validation metric per step and its wall time; the
sweep's end, best trial and node-hours; the most trials running at once (from their attempts' times); the time
from submit to the first trial running; and the overhead per trial (the sweep's wall time against the sum of
its trials' own run times, divided by the slots).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

import httpx
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.outage import admin_token, free_port, stop_all, up, wait_healthy  # noqa: E402
from tests.envs_fixtures import install_env  # noqa: E402
from tests.waiting import wait_until  # noqa: E402

ENV = "verl-0.9.1-vllm-cpu"


def _at(text: str | None) -> float | None:
    return datetime.fromisoformat(text).timestamp() if text else None


def uploads(home: Path) -> None:
    """What the README tour uploads, into ``home``."""
    tiny = Path(tempfile.mkdtemp(prefix="sweep-tiny-"))
    subprocess.run([sys.executable, str(REPO / "scripts" / "smoke_tiny.py"), str(tiny)], check=True,
                   capture_output=True, timeout=600)
    shutil.copytree(tiny / "model", home / "models" / "tiny")
    shutil.copytree(tiny / "gsm8k", home / "datasets" / "gsm8k")
    (home / "code").mkdir(parents=True, exist_ok=True)
    shutil.copy(REPO / "examples" / "reward.py", home / "code" / "reward.py")
    shutil.rmtree(tiny, ignore_errors=True)


@contextmanager
def cpu_tour(prefix: str, keep: bool) -> Iterator[tuple[httpx.Client, Path]]:
    """A fresh ``argus up`` (as bench/outage.py starts it) with the CPU environment registered and the README
    tour's uploads in the admin's home: the admin's client and that home. Stopped after, and its state dir
    removed unless ``keep``."""
    from argus.settings import Settings

    state = Path(tempfile.mkdtemp(prefix=prefix))
    root = Settings(state_dir=state).root
    install_env(root, ENV)
    procs: list[subprocess.Popen[bytes]] = []
    try:
        port = free_port()
        procs.append(proc := up(state, port, "up.log"))
        wait_healthy(proc, port, state / "up.log")
        token = admin_token(proc, state / "up.log")
        home = root / "users" / "admin"
        uploads(home)
        yield httpx.Client(base_url=f"http://127.0.0.1:{port}", headers={"Authorization": f"Bearer {token}"},
                           timeout=60), home
    finally:
        left = stop_all(procs, state)
        if left:
            print(f"left behind and killed: {left}")
        if not keep:
            shutil.rmtree(state, ignore_errors=True)


def sweep_body(budget: float | None) -> bytes:
    doc = yaml.safe_load((REPO / "examples" / "sweep-cpu.yaml").read_text())
    doc["base"]["cpus_per_node"] = 1
    if budget is not None:
        doc["budget_gpu_hours"] = budget
    return yaml.safe_dump(doc, sort_keys=False).encode()


def peak_running(attempts: list[tuple[float, float]]) -> int:
    edges = sorted([(a, 1) for a, _ in attempts] + [(b, -1) for _, b in attempts])
    now = peak = 0
    for _, d in edges:
        now += d
        peak = max(peak, now)
    return peak


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--budget", type=float, help="budget_gpu_hours instead of the example's (node-hours on CPU)")
    p.add_argument("--keep", action="store_true", help="keep the state dir")
    ns = p.parse_args()
    with cpu_tour("argus-sweep-cpu-", ns.keep) as (c, _home):
        asked = time.time()
        r = c.post("/api/v2/sweeps", content=sweep_body(ns.budget), headers={"Content-Type": "application/yaml"})
        assert r.status_code == 201, r.text
        sid = r.json()["sweep_id"]
        print(f"sweep {sid}: {len(r.json()['trials'])} trials checked and queued in {time.time() - asked:.1f} s")
        out = wait_until(lambda: (s := c.get(f"/api/v2/sweeps/{sid}").json())["status"] != "RUNNING" and s or None,
                         7200, every=5.0, what=f"sweep {sid} to end")
        took = time.time() - asked
        spans: list[tuple[float, float]] = []
        for t in out["trials"]:
            task = c.get(f"/api/v2/tasks/{t['task_id']}").json()
            mine = [(_at(a.get("started_at")), _at(a.get("finished_at"))) for a in task.get("attempts") or []]
            mine = [(a, b) for a, b in mine if a and b]
            spans += mine
            wall = sum(b - a for a, b in mine)
            print(f"  trial {t['trial']} {t['params']}: {t['status']}"
                  f"{' (' + t['termination_reason'] + ')' if t.get('termination_reason') else ''}, "
                  f"metric {t['metric']}, ran {wall:.0f} s — {(t.get('status_message') or '')[:120]}")
        first = min((a for a, _ in spans), default=None)
        slots = max(peak_running(spans), 1)
        busy = sum(b - a for a, b in spans)
        print(f"sweep {out['status']}: {out.get('message')}; best {out.get('best_task')}; "
              f"{out['hours_used']:.3f} node-hours of a budget of {out['budget_gpu_hours']}")
        print(f"{took:.0f} s from submit to its end; first trial running {first - asked:.1f} s after submit; "
              f"at most {peak_running(spans)} trials at once (max_concurrent {out['max_concurrent']}); "
              f"overhead per trial {(took - busy / slots) / max(len(out['trials']), 1):.1f} s "
              f"({took:.0f} s of wall for {busy:.0f} s of trials on {slots} slots)")
        budget_stop = ns.budget is not None and "budget reached" in (out.get("message") or "")
        return 0 if out["status"] == "SUCCEEDED" or budget_stop else 1  # --budget: stopping is what is measured


if __name__ == "__main__":
    sys.exit(main())
