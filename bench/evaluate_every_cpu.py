"""``evaluate_checkpoints`` on a real run (issue 38): examples/grpo-cpu.yaml with each checkpoint scored by lm-eval.

    .venv/bin/python bench/evaluate_every_cpu.py [--steps 4] [--save-freq 2] [--keep]

On a fresh ``argus up`` set up as bench/sweep_cpu.py sets it up (the CPU training environment, the README tour's
uploads, plus ``examples/lm_tasks`` as ``$HOME/code/lm_tasks``), the admin submits ``examples/grpo-cpu.yaml`` as
written plus ``evaluate_checkpoints: {lm_eval: {tasks: [tiny_arith], include_path: $HOME/code/lm_tasks,
limit: 8}}``. The scheduler's look queues one lm-eval task per complete checkpoint while the run trains, each
merging its step first.

Printed, per checkpoint: when its folder was complete, when its evaluation was queued (the lag is the look's
interval plus the admission of the evaluation), when that evaluation ended and its scores; then whether every
checkpoint got exactly one evaluation, how long after the run's end the last score came, and what
``/checkpoints/best`` picks by ``lm-eval/tiny_arith/acc``. Exit 0 only when every checkpoint was scored once.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from datetime import datetime
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.sweep_cpu import cpu_tour  # noqa: E402
from tests.waiting import wait_until  # noqa: E402

METRIC = "lm-eval/tiny_arith/acc"
ENDED = {"SUCCEEDED", "FAILED", "CANCELED"}


def _at(text: str | None) -> float | None:
    return datetime.fromisoformat(text).timestamp() if text else None


def spec_body(steps: int, save_freq: int) -> bytes:
    doc = yaml.safe_load((REPO / "examples" / "grpo-cpu.yaml").read_text())
    doc.update(total_training_steps=steps, save_freq=save_freq, evaluate_checkpoints={"lm_eval": {
        "tasks": ["tiny_arith"], "include_path": "$HOME/code/lm_tasks", "limit": 8}})
    return yaml.safe_dump(doc, sort_keys=False).encode()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=4, help="total_training_steps (default 4)")
    p.add_argument("--save-freq", type=int, default=2, help="save_freq (default 2: a checkpoint at steps 2 and 4)")
    p.add_argument("--keep", action="store_true", help="keep the state dir")
    ns = p.parse_args()
    with cpu_tour("argus-evaluate-every-", ns.keep) as (c, home):
        shutil.copytree(REPO / "examples" / "lm_tasks", home / "code" / "lm_tasks")
        asked = time.time()
        r = c.post("/api/v2/tasks", content=spec_body(ns.steps, ns.save_freq),
                   headers={"Content-Type": "application/yaml"})
        assert r.status_code == 201, r.text
        tid = r.json()["task_id"]
        print(f"run {tid} accepted in {time.time() - asked:.1f} s; warnings: {r.json().get('warnings') or '-'}")
        run = wait_until(lambda: (t := c.get(f"/api/v2/tasks/{tid}").json())["status"] in ENDED and t or None,
                         3600, every=5.0, what=f"run {tid} to end")
        run_end = _at(run.get("finished_at")) or time.time()
        print(f"run {run['status']} {run_end - asked:.0f} s after submit — {(run.get('status_message') or '')[:160]}")
        steps = [s for s in c.get(f"/api/v2/tasks/{tid}/checkpoints").json()["steps"] if s["complete"]]

        def all_ended() -> list[dict] | None:
            evals = c.get(f"/api/v2/tasks/{tid}/evaluations").json()
            done = len(evals) >= len(steps) and all(e["status"] in ENDED for e in evals)
            return evals if done else None

        evals = wait_until(all_ended, 1800, every=5.0, what="every checkpoint's evaluation to end")
        ok = sorted(e["step"] for e in evals) == sorted(s["step"] for s in steps)
        for s in sorted(steps, key=lambda s: s["step"]):
            mine = [e for e in evals if e["step"] == s["step"]]
            saved = _at(s.get("modified_at"))
            for e in mine:
                queued, ended = _at(e["created_at"]), _at(e.get("finished_at"))
                ok = ok and e["status"] == "SUCCEEDED" and bool(e.get("scores"))
                print(f"  step {s['step']}: complete at +{saved - asked:.0f} s; evaluation {e['task_id']} queued "
                      f"{queued - saved:.1f} s later, {e['status']} {ended - queued:.0f} s after that; "
                      f"{METRIC} = {(e.get('scores') or {}).get(METRIC)}")
            if len(mine) != 1:
                print(f"  step {s['step']}: {len(mine)} evaluations (want exactly 1)")
        last = max((_at(e.get("finished_at")) or 0 for e in evals), default=run_end)
        print(f"{len(steps)} checkpoints, {len(evals)} evaluations; the last score {last - run_end:.0f} s after "
              f"the run ended; {last - asked:.0f} s from submit to the last score")
        best = c.get(f"/api/v2/tasks/{tid}/checkpoints/best", params={"metric": METRIC})
        print(f"best by {METRIC}: {best.json().get('step') if best.status_code == 200 else best.text[:200]}")
        return 0 if ok and run["status"] == "SUCCEEDED" else 1


if __name__ == "__main__":
    sys.exit(main())
