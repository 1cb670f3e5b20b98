"""`python3 -m argus.jobs.lm_eval --model DIR | --checkpoint STEP --tasks a,b …`: lm-eval on a model (issue 38).

The task program of a ``kind: eval`` spec with an ``lm_eval:`` block (``core.evaluation``). It runs in the task's
sandbox with the training environment's Python, which has the ``lm_eval`` package (EleutherAI's harness), so
the model, the task YAMLs and any ``!function`` they import are the user's code in the user's sandbox:

1. a verl checkpoint (``--checkpoint …/global_step_N``) is first merged into a Hugging Face folder under
   ``--out`` with ``verl.model_merger`` (FSDP, or Megatron when the step holds ``dist_ckpt/``): lm-eval
   loads Hugging Face folders only;
2. ``lm_eval.simple_evaluate`` with the ``hf`` model on that folder, the tasks found under
   ``--include-path`` (task YAMLs in the user's home) and lm-eval's own, offline (``HF_*_OFFLINE``: a task
   whose data is not local fails with the dataset's name instead of hanging on a download);
3. every result in ``<out>/results.json``, lm-eval's table, and the scores as one verl console metric line
   ``step:N - lm-eval/<task>/<metric>:<value> - …`` (N: the checkpoint's step, else 0), which Argus parses
   like any run's metrics: the task's scores, the checkpoint's scores, a pipeline gate's input.

It runs in the first ``--include-path`` folder, so a task YAML's relative ``data_files`` are read next to it.

Only the standard library is imported at the top: Argus's source is on the path of environments that have
no Argus installed (``launcher/userpath``), and ``--help`` works without lm-eval.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import subprocess
import sys

PREFIX = "lm-eval/"
_STEP = re.compile(r"global_step_(\d+)$")


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python3 -m argus.jobs.lm_eval", description=__doc__.splitlines()[0])
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--model", help="a Hugging Face model folder")
    src.add_argument("--checkpoint", help="a verl step folder (…/global_step_N), merged first")
    p.add_argument("--tasks", required=True, help="comma-separated lm-eval task (or group) names")
    p.add_argument("--include-path", action="append", default=[], help="a folder of task YAMLs (repeatable)")
    p.add_argument("--num-fewshot", type=int)
    p.add_argument("--limit", type=float, help="examples per task (a fraction when < 1)")
    p.add_argument("--batch-size", type=int, default=1)
    p.add_argument("--device", choices=("cpu", "cuda"), help="default: cuda when the task has a GPU, else cpu")
    p.add_argument("--out", default="lm_eval", help="where the merged model and results.json go")
    return p.parse_args(argv)


def _merge(checkpoint: str, target: str) -> None:
    """verl's own merger, as the export task runs it: an FSDP step keeps its shards under ``actor/``."""
    step = checkpoint.rstrip("/")
    actor = os.path.join(step, "actor")
    local = actor if os.path.isdir(actor) else step
    backend = "megatron" if os.path.isdir(os.path.join(local, "dist_ckpt")) else "fsdp"
    print(f"lm_eval: merging {local} ({backend}) into {target}", flush=True)
    subprocess.run([sys.executable, "-m", "verl.model_merger", "merge", "--backend", backend,
                    "--local_dir", local, "--target_dir", target], check=True, stdin=subprocess.DEVNULL)


def score_key(task: str, metric_filter: str) -> str | None:
    """``lm-eval/<task>/<metric>`` for lm-eval's ``"<metric>,<filter>"`` result key (``@<filter>`` kept unless
    it is ``none``); None for what is not a score (``alias``, ``samples``, the ``_stderr`` of a metric)."""
    metric, _, filt = metric_filter.partition(",")
    if not _ or metric.endswith("_stderr") or metric == "alias":
        return None
    return f"{PREFIX}{task}/{metric}" + ("" if filt in ("", "none") else f"@{filt}")


def scores(results: dict) -> dict[str, float]:
    """The finite numbers of lm-eval's per-task results (and groups'), keyed by ``score_key``."""
    out: dict[str, float] = {}
    for section in ("results", "groups"):
        for task, values in sorted((results.get(section) or {}).items()):
            for name, value in values.items():
                key = score_key(task, name)
                if key and isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
                    out[key] = float(value)
    return out


def metric_line(step: int, values: dict[str, float]) -> str:
    """verl's console metric line (``core.metrics`` parses it): ``step:N - key:value - …``."""
    return " - ".join([f"step:{step}", *(f"{k}:{v}" for k, v in values.items())])


def main(argv: list[str] | None = None) -> int:
    a = _args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    out = os.path.abspath(a.out)
    os.makedirs(out, exist_ok=True)
    model, step = a.model, 0
    if a.checkpoint:
        m = _STEP.search(a.checkpoint.rstrip("/"))
        step = int(m.group(1)) if m else 0
        model = os.path.join(out, "model")
        _merge(a.checkpoint, model)
    device = a.device or ("cuda" if os.environ.get("CUDA_VISIBLE_DEVICES", "").strip() else "cpu")

    import lm_eval  # the environment's harness: only here, so the module imports without it
    from lm_eval.tasks import TaskManager
    from lm_eval.utils import make_table

    include = [os.path.abspath(p) for p in a.include_path]
    if include:  # a task YAML's relative data_files are read next to it (datasets resolves them from the cwd)
        os.chdir(include[0])
    tasks = [t.strip() for t in a.tasks.split(",") if t.strip()]
    limit = None if a.limit is None else (int(a.limit) if a.limit >= 1 else a.limit)
    manager = TaskManager(include_path=include or None)
    unknown = [t for t in tasks if t not in manager.all_tasks]
    if unknown:
        print(f"lm_eval: unknown task(s) {', '.join(unknown)}: not among the YAMLs under "
              f"{', '.join(include) or '(no include_path)'} nor lm-eval's own tasks", file=sys.stderr)
        return 2
    print(f"lm_eval: {', '.join(tasks)} on {model} ({device}, limit {limit}, fewshot {a.num_fewshot})", flush=True)
    results = lm_eval.simple_evaluate(
        model="hf", model_args={"pretrained": model, "dtype": "float32" if device == "cpu" else "auto"},
        tasks=tasks, num_fewshot=a.num_fewshot, limit=limit, batch_size=a.batch_size, device=device,
        task_manager=manager, log_samples=False, bootstrap_iters=0)
    if results is None:  # a non-zero rank of a distributed run: rank 0 reports
        return 0
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(results, f, indent=2, default=str)
    print(make_table(results), flush=True)
    values = scores(results)
    if not values:
        print("lm_eval: the tasks reported no numeric score", file=sys.stderr)
        return 3
    print(metric_line(step, values), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
