"""Submit latency with verl validation on vs off (p50/p99), and the validator process's memory.

Run: ``.venv/bin/python bench/validation.py [--n 30]``. It starts a real API
server over SQLite, builds a tiny local model and datasets (no downloads), and
submits the same valid advanced GRPO spec N times with ``verl_validation=off``
and N times with ``required`` (real compose + validate_config + parquet checks;
one run with a custom reward adds the reward dry-run subprocess).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.helpers import live_server  # noqa: E402
from tests.verl.conftest import USER, populate_home  # noqa: E402
from tests.verl.test_verl_admission import PPO_ARGS, advanced  # noqa: E402

from argus.settings import Settings  # noqa: E402
from argus.verl.check import VerlCheck  # noqa: E402
from argus.verl.validator import VerlValidator  # noqa: E402


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(p / 100 * (len(xs) - 1)))]


def measure(mode: str, n: int, body: str, base: Path, validator: VerlValidator | None) -> list[float]:
    settings = Settings(state_dir=base / mode, sftp_enabled=False, verl_validation=mode, reward_check_rows=4)

    def configure(ctx):  # noqa: ANN001, ANN202
        ctx.checks = (VerlCheck(ctx.settings, validator),)

    with live_server(settings, configure) as srv:
        populate_home(settings.root)
        with srv.new_user(USER) as c:
            warm = c.post("/api/v2/tasks", content=body.encode(), headers={"Content-Type": "application/yaml"})
            assert warm.status_code == 201, warm.text
            times = []
            for _ in range(n):
                t = time.perf_counter()
                r = c.post("/api/v2/tasks", content=body.encode(), headers={"Content-Type": "application/yaml"})
                times.append((time.perf_counter() - t) * 1000)
                assert r.status_code == 201, r.text
    return times


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=30)
    args = ap.parse_args()
    validator = VerlValidator(sys.executable)
    t = time.perf_counter()
    validator.request({"op": "info"})
    start_s = time.perf_counter() - t
    plain = advanced(PPO_ARGS)
    reward = advanced(PPO_ARGS + ["reward.custom_reward_function.path=$HOME/code/reward.py"])
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        rows = [
            ("off", measure("off", args.n, plain, base / "a", None)),
            ("required", measure("required", args.n, plain, base / "b", validator)),
            ("required + reward dry-run", measure("required", max(5, args.n // 3), reward, base / "c", validator)),
        ]
    print(f"validator start (import verl + first compose): {start_s:.2f} s")
    print(f"validator RSS after the runs: {rss_mb(validator.pid):.0f} MB (pid {validator.pid})")
    print(f"{'mode':28} {'n':>4} {'p50 ms':>8} {'p99 ms':>8} {'mean ms':>8}")
    for name, xs in rows:
        print(f"{name:28} {len(xs):4d} {pct(xs, 50):8.1f} {pct(xs, 99):8.1f} {statistics.mean(xs):8.1f}")
    validator.stop()


if __name__ == "__main__":
    main()
