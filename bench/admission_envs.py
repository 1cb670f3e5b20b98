"""Admission latency with two training environments warm (issue 22), and what each one's validator costs.

Run: ``.venv/bin/python bench/admission_envs.py [--n 40]``. A real API server over SQLite with
verl validation required and two environments built from Argus's catalog locks (cached, see
tests/envs_fixtures.py): ``verl-0.9.1-cpu`` and ``verl-0.4.1-cpu``. Submits alternate between
a verl 0.9-style advanced GRPO spec (validated by verl 0.9.1) and a verl 0.4-style one
(validated by verl 0.4.1), so both validators stay warm and every request may switch
environments. Prints p50/p95 per environment, each validator's cold start (import verl +
first compose) and its resident memory (RSS and PSS) once warm.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.envs.test_envs_api import OLD_STYLE, advanced  # noqa: E402
from tests.envs_fixtures import install_env  # noqa: E402
from tests.helpers import live_server  # noqa: E402

from argus.settings import Settings  # noqa: E402

NEW_STYLE = ("python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo data.train_batch_size=8 "
             "actor_rollout_ref.rollout.n=4 actor_rollout_ref.actor.ppo_mini_batch_size=8 "
             "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=1 actor_rollout_ref.model.path=$HOME/models/tiny "
             "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=1 "
             "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=1 trainer.n_gpus_per_node=1 trainer.nnodes=1")
ENVS = {"verl-0.9.1-cpu": NEW_STYLE, "verl-0.4.1-cpu": OLD_STYLE}


def memory_mb(pid: int) -> tuple[float, float]:
    """(RSS, PSS) of a process and its children (the validator runs under bubblewrap when installed)."""
    import psutil

    rss = pss = 0.0
    proc = psutil.Process(pid)
    for p in [proc, *proc.children(recursive=True)]:
        try:
            full = p.memory_full_info()
        except psutil.Error:
            continue
        rss += full.rss / 2**20
        pss += getattr(full, "pss", 0) / 2**20
    return rss, pss


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(p / 100 * (len(xs) - 1)))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=40, help="submits per environment")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(state_dir=Path(tmp), sftp_enabled=False, verl_validation="required", model_check="off")
        for name in ENVS:
            install_env(settings.root, name)
        with live_server(settings) as srv, srv.new_user("alice") as c:
            cold: dict[str, float] = {}
            for name, command in ENVS.items():  # the first request of each starts its validator
                t = time.perf_counter()
                r = c.post("/api/v2/tasks", content=advanced(command, name).encode(),
                           headers={"Content-Type": "application/yaml"})
                cold[name] = time.perf_counter() - t
                assert r.status_code == 201, r.text
            times: dict[str, list[float]] = {name: [] for name in ENVS}
            for _ in range(args.n):
                for name, command in ENVS.items():
                    t = time.perf_counter()
                    r = c.post("/api/v2/tasks", content=advanced(command, name).encode(),
                               headers={"Content-Type": "application/yaml"})
                    times[name].append((time.perf_counter() - t) * 1000)
                    assert r.status_code == 201, r.text
            refused: list[float] = []  # issue 35: refused by 0.9.1, then tried in 0.4.1, which accepts it
            for _ in range(args.n):
                t = time.perf_counter()
                r = c.post("/api/v2/tasks", params={"dry_run": "true"},
                           content=advanced(OLD_STYLE, "verl-0.9.1-cpu").encode(),
                           headers={"Content-Type": "application/yaml"})
                refused.append((time.perf_counter() - t) * 1000)
                assert r.status_code == 400 and "accepted as written" in r.json()["detail"]["errors"][0]["message"]
            pool = srv.ctx.extras["verl_validator"]
            warm = {w["python"]: w["pid"] for w in pool.warm()}
            print(f"admission with {len(ENVS)} environments warm ({args.n} submits each, alternating; "
                  "verl validation required; POST /api/v2/tasks over HTTP)")
            print(f"{'environment':16} {'cold first submit':>18} {'p50 ms':>8} {'p95 ms':>8} {'mean ms':>8} "
                  f"{'validator RSS MB':>17} {'PSS MB':>8}")
            for name, xs in times.items():
                pid = next(pid for py, pid in warm.items() if f"/{name}/" in py)
                rss, pss = memory_mb(pid)
                print(f"{name:16} {cold[name]:>16.2f} s {pct(xs, 50):>8.0f} {pct(xs, 95):>8.0f} "
                      f"{statistics.mean(xs):>8.0f} {rss:>17.0f} {pss:>8.0f}")
            print(f"a 0.4-style spec refused by verl-0.9.1-cpu and found accepted as written by verl-0.4.1-cpu "
                  f"(two validations): p50 {pct(refused, 50):.0f} ms, p95 {pct(refused, 95):.0f} ms")


if __name__ == "__main__":
    main()
