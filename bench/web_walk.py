"""Benchmark: a private walk of every WebUI page in Debian's Chromium — desktop and phone, English and Chinese —
with timings (issue 37's check: "A private walk of every page in Chromium (desktop, phone, zh/en) against these
items, with timings").

A real uvicorn server over a real SQLite file (tests/helpers.py ``live_server``; no Ray: nothing runs, the
states a run leaves are written as the scheduler and the monitor write them, through
``services.tasks.switch_task_status`` and the monitor's own ``with_log_cause``). Seeded through the real API: an
admin (carol), alice and bob in team ``nlp``, files in alice's home, ``--tasks`` tasks in every state, among them
a FAILED verl-style run with a ``--log-mb`` MiB log (Ray actor prefixes, step metrics for the charts with the
driver's clock beside them, tqdm redraws, an upper-case ``ERROR`` and a traceback mid-log, a CUDA OOM at the end),
a run with checkpoints, a RUNNING and a QUEUED one, a sweep with two finished trials, a pipeline, a registered
model with an alias, a webhook channel. With verl installed (``--no-verl`` to skip), the server checks specs with
a warm verl validator (as ``argus up`` with verl validation required) once the seeding is done (the seeded specs
name a 7B model and data no verl check would pass here), and alice's home gets a tiny model and parquet
files (tests/verl/conftest.populate_home), so New Task's verdict is verl's.

Every page of templates/*.html (and each tab of the task page) is opened in a fresh tab in 4 configurations:
desktop 1366×800 and phone 390×844 (mobile, touch), each with the UI in English and in Chinese. For each:

* load: navigation start → load event (ms); content: navigation start → the page's main content filled (a
  selector per page, watched by a MutationObserver the walk injects before the page's scripts: its time is the
  page's own ``performance.now()``); a tab's row also gives click → content;
* JS console errors and uncaught exceptions; failed requests (HTTP ≥ 400, or not answered) except those the page
  expects (the not-found page's own 404); requests the page itself dropped (``net::ERR_ABORTED``: a body it never
  read, a stream it closed) are listed apart, not counted;
* on phone, horizontal overflow (``document.scrollingElement.scrollWidth`` > the layout width,
  ``documentElement.clientWidth``: a phone's ``innerWidth`` grows to fit the overflow itself) with the outermost
  elements that stick out (outside any scrolling box);
* in Chinese, visible English text in the page's main content: text nodes with a run of ≥ 3 plain ASCII words
  (≥ 4 in a node that also holds Chinese: an inline command), outside code/pre/log/spec/editor/inputs, not paths,
  ids or metric names, and not the names the walk seeded (user data). A heuristic: listed for a person to judge.

Then, desktop English, the interactions: the tasks list's first paint with all its rows (tasks.js's
``argus:tasks-render`` measure), Logs "First error" click → the line highlighted (the first click in this
server, after the walk's visits had the log's lines numbered; then again in a reloaded page), the log filter over
the whole log (type → the window filtered; "whole log" click → the server's list), New Task last keystroke →
verdict (5 edits), and the Metrics tab with several metrics (navigation → every chart drawn with all its points).

Prints one table (page × config) and the interaction timings, then every finding; writes everything as JSON to
``--out``. Asserts nothing: exits 0, or 1 when a page could not be opened at all.

First run (2-core box shared with other sessions, load average 5–8; verl validator on; 205 s in all): every page
opened in every configuration, load 80–1100 ms, content 80–1600 ms (the task page's Metrics tab and New Task the
slowest); no console error, no failed request; the page's own aborted log probe (``…/logs?offset=1e15&limit=0``,
its body never read) on every task page; on phone one overflow, the sweep page's chart canvas (753 px in 390);
in Chinese, server English on the tasks list (reason "canceled by alice"), the task page (status message, failure
hint, submit warnings, timeline), New Task's and Environments' environment hints, the Environments description
and the Nodes error. Interactions: tasks list fetch → rows 101 ms (navigation → rows 205 ms); First error →
highlighted 184 ms (again 147 ms) in an 8.3 MiB log; whole-log filter 104 ms; 5 charts of 8 metrics (12 000
points) drawn 216 ms after navigation; last keystroke → verl's verdict p50 404 ms.

    .venv/bin/python bench/web_walk.py [--out /tmp/web_walk.json] [--log-mb 8] [--tasks 40] [--no-verl]
                                       [--only tasks,task-logs] [--configs desktop-en,phone-zh]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import statistics
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402
from tests.helpers import live_server  # noqa: E402

from argus.core.metrics import clock_line  # noqa: E402
from argus.core.states import TaskStatus, TerminationReason  # noqa: E402
from argus.db.models import TaskAttemptModel, TaskModel  # noqa: E402
from argus.settings import Settings  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
CONFIGS = {  # name → (viewport, mobile, language)
    "desktop-en": ({"width": 1366, "height": 800}, False, "en"),
    "desktop-zh": ({"width": 1366, "height": 800}, False, "zh"),
    "phone-en": ({"width": 390, "height": 844}, True, "en"),
    "phone-zh": ({"width": 390, "height": 844}, True, "zh"),
}
SETTLE_S = 0.5  # after the content: late requests and console errors still count for the page
CONTENT_TIMEOUT_S = 30

BIG = "gsm8k grpo qwen2.5-7b"  # the FAILED run with the multi-MB log
GRPO = """kind: advanced
workload: grpo
name: {name}
nnodes: 1
n_gpus_per_node: 8
command: >-
  python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo data.train_files=$HOME/datasets/gsm8k/train.parquet
  data.val_files=$HOME/datasets/gsm8k/test.parquet actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct
  trainer.nnodes=1 trainer.n_gpus_per_node=8 trainer.total_training_steps=3000
"""
PPO = """kind: advanced
workload: ppo
name: {name}
nnodes: 1
n_gpus_per_node: 2
command: >-
  python3 -m verl.trainer.main_ppo data.train_files=$HOME/datasets/gsm8k/train.parquet
  data.val_files=$HOME/datasets/gsm8k/test.parquet trainer.nnodes=1 trainer.n_gpus_per_node=2
  trainer.default_local_dir=$HOME/runs/ppo
"""
JOB = "kind: advanced\nworkload: job\nname: {name}\nnnodes: 1\nn_gpus_per_node: {gpus}\ncommand: python3 -m argus.jobs.sleep 30\n"
SWEEP_METRIC = "val-core/steps/score/mean@1"
SWEEP = {
    "name": "lr sweep",
    "base": {"kind": "advanced", "workload": "job", "nnodes": 1, "n_gpus_per_node": 0,
             "command": "python3 -m argus.jobs.steps trainer.total_training_steps=6 trainer.test_freq=2 "
                        "trainer.save_freq=0 step_seconds=1"},
    "parameters": {"val_per_step": [0.4, 0.3, 0.2, 0.1]},
    "max_concurrent": 2, "budget_gpu_hours": 1.0, "metric": SWEEP_METRIC,
    "early_stop": {"rungs": [2], "keep": 0.5},
}
STEPS = "python3 -m argus.jobs.steps trainer.default_local_dir=ckpt trainer.test_freq=2 step_seconds=0"
PIPELINE = {
    "kind": "pipeline", "name": "train then keep",
    "steps": {
        "first": {"spec": {"kind": "advanced", "workload": "job", "nnodes": 1, "n_gpus_per_node": 0,
                           "command": f"{STEPS} val_per_step=0.1"}},
        "second": {"needs": ["first"], "spec": {"kind": "advanced", "workload": "job", "nnodes": 1, "n_gpus_per_node": 0,
                   "command": f"{STEPS} val_per_step=0.3 trainer.resume_mode=resume_path "
                              "trainer.resume_from_path={{ steps.first.checkpoint }}"}},
        "keep": {"needs": ["second"], "register": {"from": "second", "name": "chained", "alias": "candidate"},
                 "when": {"step": "second", "metric": SWEEP_METRIC, "op": ">=", "value": 1.0}},
    },
}
VERDICT_SPEC = """workload: grpo
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
total_training_steps: 100"""
METRIC_KEYS = ["actor/pg_loss", "actor/entropy", "actor/kl_loss", "actor/pg_clipfrac", "actor/grad_norm", "actor/lr",
               "critic/score/mean", "critic/score/max", "critic/rewards/mean", "critic/advantages/mean",
               "response_length/mean", "response_length/clip_ratio", "prompt_length/mean", "timing_s/gen",
               "timing_s/step", "timing_s/update_actor", "perf/throughput", "perf/max_memory_allocated_gb",
               "global_seqlen/mean", "training/epoch"]
CHARTS = [["critic/score/mean", "critic/score/max"], ["actor/entropy"], ["actor/kl_loss"],
          ["response_length/mean"], ["actor/pg_loss", "timing_s/gen", "perf/throughput"]]

MID_ERROR = ("\x1b[36m(WorkerDict pid=71, ip=10.0.0.3)\x1b[0m ERROR 2025-05-12 10:41:07 worker.py:512 -- reward worker "
             "failed on batch 17, retrying\n"
             "(WorkerDict pid=71, ip=10.0.0.3) Traceback (most recent call last):\n"
             "(WorkerDict pid=71, ip=10.0.0.3)   File \"/home/alice/code/reward.py\", line 12, in compute_score\n"
             "(WorkerDict pid=71, ip=10.0.0.3)     return correct / total\n"
             "(WorkerDict pid=71, ip=10.0.0.3) ZeroDivisionError: division by zero\n")
END_ERROR = ("(WorkerDict pid=72, ip=10.0.0.4) Traceback (most recent call last):\n"
             "(WorkerDict pid=72, ip=10.0.0.4)   File \"verl/workers/fsdp_workers.py\", line 610, in update_actor\n"
             "(WorkerDict pid=72, ip=10.0.0.4)     metrics = self.actor.update_policy(data=data)\n"
             "(WorkerDict pid=72, ip=10.0.0.4) torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.50 GiB. "
             "GPU 3 has a total capacity of 79.11 GiB of which 1.02 GiB is free.\n"
             "(TaskRunner pid=4242) ray.exceptions.RayTaskError(OutOfMemoryError): ray::WorkerDict.actor_rollout_update_actor()\n")

# Each row: key, label, who visits ("anon", "alice", "carol"), path (formatted with the seeded ids), content
# selector, optional tab to click, what to scan for English/overflow (scope), expected failures.
ROWS: list[dict[str, Any]] = [
    {"key": "login", "label": "login", "who": "anon", "path": "/login", "sel": "#login-submit"},
    {"key": "tasks", "label": "tasks", "who": "alice", "path": "/tasks", "sel": "#tasks-body tr"},
    {"key": "tasks-admin", "label": "tasks (admin, all users)", "who": "carol", "path": "/tasks", "sel": "#tasks-body tr"},
    {"key": "task-overview", "label": "task · Overview (failed)", "who": "alice", "path": "/tasks/{big}",
     "sel": "#s-user:not(:empty)", "scope": ".pagehead, .summary, #queue-block, #progress-block"},
    {"key": "task-logs", "label": "task · Logs", "who": "alice", "path": "/tasks/{big}", "sel": "#log .ln",
     "scope": '[data-pane="log"]'},
    {"key": "task-charts", "label": "task · Charts", "who": "alice", "path": "/tasks/{big}#metrics",
     "sel": '#charts figure.chart:not([data-points="0"])', "scope": '[data-pane="metrics"]'},
    {"key": "task-resources", "label": "task · Resources", "who": "alice", "path": "/tasks/{big}", "tab": "resources",
     "sel": "#res-summary:not(:empty), #res-empty:not([hidden]), #res-charts figure", "scope": '[data-pane="resources"]'},
    {"key": "task-checkpoints", "label": "task · Checkpoints", "who": "alice", "path": "/tasks/{ckpt}",
     "tab": "checkpoints", "sel": "#ckpt-body tr, #ckpt-empty:not([hidden])", "scope": '[data-pane="checkpoints"]'},
    {"key": "task-spec", "label": "task · Spec", "who": "alice", "path": "/tasks/{big}", "tab": "spec",
     "sel": "#spec:not(:empty)", "scope": '[data-pane="spec"]'},
    {"key": "task-events", "label": "task · Events", "who": "alice", "path": "/tasks/{big}", "tab": "events",
     "sel": "#events li", "scope": '[data-pane="events"]'},
    {"key": "task-running", "label": "task (running)", "who": "alice", "path": "/tasks/{running}",
     "sel": "#progress-block:not([hidden]) #p-step:not(:empty), #s-user:not(:empty)"},
    {"key": "task-queued", "label": "task (queued)", "who": "alice", "path": "/tasks/{queued}",
     "sel": "#log-waiting:not([hidden]):not(:empty)"},
    {"key": "new-task", "label": "new task", "who": "alice", "path": "/tasks/new", "sel": "#check-state[data-verdict]",
     "expect": [(400, "/api/v2/tasks?dry_run=true")]},  # the verdict of a spec with problems (the page shows them)
    {"key": "compare", "label": "compare", "who": "alice", "path": "/compare?tasks={big},{running}",
     "sel": "#compare-body tr"},
    {"key": "data", "label": "data", "who": "alice", "path": "/data", "sel": "#files-body tr"},
    {"key": "envs", "label": "envs", "who": "alice", "path": "/envs",
     "sel": "#envs-body tr, #envs-empty:not([hidden]), #envs-error:not([hidden]):not(:empty)"},
    {"key": "models", "label": "models", "who": "alice", "path": "/models", "sel": "#models-body tr"},
    {"key": "model", "label": "model (one)", "who": "alice", "path": "/models/{model}", "sel": "#versions-body tr"},
    {"key": "nodes", "label": "nodes", "who": "alice", "path": "/nodes",
     "sel": "#nodes-body tr, #nodes-empty:not([hidden]), #nodes-error:not([hidden]):not(:empty)"},
    {"key": "pipelines", "label": "pipelines", "who": "alice", "path": "/pipelines", "sel": "#pipelines-body tr"},
    {"key": "pipeline", "label": "pipeline (one)", "who": "alice", "path": "/pipelines/{pipeline}", "sel": "#steps-body tr"},
    {"key": "sweeps", "label": "sweeps", "who": "alice", "path": "/sweeps", "sel": "#sweeps-body tr"},
    {"key": "sweep", "label": "sweep (one)", "who": "alice", "path": "/sweeps/{sweep}", "sel": "#trials-body tr"},
    {"key": "teams", "label": "teams", "who": "alice", "path": "/teams",
     "sel": "#teams-list > *, #teams-empty:not([hidden])"},
    {"key": "account", "label": "account", "who": "alice", "path": "/account", "sel": "#tokens-body tr",
     "skip": "#notify-card"},
    {"key": "account-notify", "label": "account · notifications", "who": "alice", "path": "/account",
     "sel": "#notify-body tr", "scope": "#notify-card"},
    {"key": "admin", "label": "admin", "who": "carol", "path": "/admin", "sel": "#users-body tr"},
    {"key": "not-found", "label": "not found", "who": "alice", "path": "/no-such-page", "sel": "#not-found",
     "expect": [(404, "/no-such-page")]},
]

# Injected before the page's own scripts: the first moment each selector matches (performance.now(), ms since
# navigation start). The selectors of every row: the page's own is read after.
WATCH = """(() => {
  const sels = %s;
  const seen = {};
  window.__walkSeen = seen;
  function look() {
    let left = 0;
    for (const s of sels) {
      if (seen[s] !== undefined) continue;
      if (document.querySelector(s)) seen[s] = performance.now(); else left++;
    }
    return left;
  }
  function start() {
    if (!look()) return;
    const mo = new MutationObserver(() => { if (!look()) mo.disconnect(); });
    mo.observe(document.documentElement, { subtree: true, childList: true, attributes: true, characterData: true });
    setTimeout(() => mo.disconnect(), 120000);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start); else start();
})();"""

# Visible English in the page's main content (zh): runs of >= 3 plain words, outside code and user data.
ENGLISH = """([scope, skip, seeded]) => {
  const SKIP = 'code, pre, kbd, samp, textarea, input, select, option, datalist, script, style, svg, canvas, .mono, '
    + '.cm-editor, .log, .spec, .u-legend, .log-hit, .log-hits li, [translate="no"]' + (skip ? ', ' + skip : '');
  const roots = [...document.querySelectorAll(scope || 'main')];
  const WORD = /^[("'“‘]?[A-Za-z][a-z'’]*(?:-[a-z]+)*[)"'”’,.;:!?]*$/;
  const out = [];
  function desc(e) {
    const near = e.closest('[id]');
    let d = e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + (e.classList.length ? '.' + [...e.classList].join('.') : '');
    if (near && near !== e) d = '#' + near.id + ' ' + d;
    return d;
  }
  for (const root of roots) {
    const w = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    while (w.nextNode()) {
      const n = w.currentNode, p = n.parentElement;
      if (!p || p.closest(SKIP) || p.closest('[hidden]')) continue;
      const text = n.textContent.replace(/\\s+/g, ' ').trim();
      let rest = text;  // what is left once the names the walk gave (tasks, sweep, pipeline, model) are taken out
      for (const s of seeded) rest = rest.split(s).join(' ');
      if (!rest.trim()) continue;
      if (!p.getClientRects().length) continue;
      const cs = getComputedStyle(p);
      if (cs.visibility === 'hidden' || cs.display === 'none') continue;
      let run = 0, best = 0;
      for (const tok of rest.split(/\\s+/)) {
        if (WORD.test(tok) && !/^[A-Z]{2,}[,.:;]?$/.test(tok)) { run++; best = Math.max(best, run); } else run = 0;
      }
      // in a Chinese sentence, an inline command (`argus model register NAME`) is 3 words: ask for 4 there
      if (best >= (/[\\u3400-\\u9fff]/.test(rest) ? 4 : 3)) out.push({ text: text.slice(0, 240), where: desc(p) });
    }
  }
  return out;
}"""

OVERFLOW = """() => {
  // the layout width: a phone's innerWidth grows to fit what sticks out (608 for a 600 px box in a 390 px screen)
  const se = document.scrollingElement, w = document.documentElement.clientWidth;
  const res = { scroll_width: se.scrollWidth, inner_width: w, window_inner_width: innerWidth, overflow: se.scrollWidth > w,
                offenders: [] };
  if (!res.overflow) return res;
  function scrolls(e) {
    for (let a = e.parentElement; a && a !== document.body; a = a.parentElement) {
      const o = getComputedStyle(a).overflowX;
      if (o === 'auto' || o === 'scroll' || o === 'hidden' || o === 'clip') return true;
    }
    return false;
  }
  function desc(e) {
    const near = e.closest('[id]');
    let d = e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + (e.classList.length ? '.' + [...e.classList].join('.') : '');
    if (near && near !== e) d = '#' + near.id + ' ' + d;
    return d;
  }
  for (const e of document.body.querySelectorAll('*')) {
    const r = e.getBoundingClientRect();
    if (r.width === 0 || r.right <= w + 1 || scrolls(e)) continue;
    const p = e.parentElement;
    if (p && p !== document.body && p.getBoundingClientRect().right > w + 1 && !scrolls(p)) continue;
    res.offenders.push({ el: desc(e), right: Math.round(r.right), width: Math.round(r.width) });
    if (res.offenders.length >= 6) break;
  }
  return res;
}"""


# ---- seeding --------------------------------------------------------------------------------------------


def _block(n: int, step0: int, steps: int, keys: list[str], rng: random.Random) -> list[str]:
    """``steps`` steps of a verl run's output: metric lines among Ray actor chatter and tqdm redraws."""
    out = []
    for s in range(step0, step0 + steps):
        for k in range(n):
            if k % 7 == 0:
                out.append(f"\x1b[33m(WorkerDict pid=7{k % 4}, ip=10.0.0.{k % 8})\x1b[0m WARNING slow rollout batch "
                           f"{s}.{k}: 12.3 s\n")
            elif k % 5 == 0:
                out.append(f"Training Progress: {s % 100}%|####  | {s}/3000 [01:{s % 60:02d}<02:00]\r" * 3 + "\n")
            else:
                out.append(f"\x1b[36m(WorkerDict pid=7{k % 4}, ip=10.0.0.{k % 8})\x1b[0m INFO rollout {s}.{k}: "
                           f"generated 256 sequences, mean length {200 + k}\n")
        out.append(f"(TaskRunner pid=4242) step:{s} - "
                   + " - ".join(f"{k}:{rng.gauss(1, 0.3):.6g}" for k in keys) + "\n")
    return out


def write_big_log(log: Path, mib: float, steps: int) -> dict:
    """A verl run's log of about ``mib`` MiB over ``steps`` steps, its clock beside it; the first error (ERROR
    and a traceback) near the middle, the fatal CUDA OOM at the end."""
    rng = random.Random(0)
    log.parent.mkdir(parents=True, exist_ok=True)
    sample = "".join(_block(50, 1, 1, METRIC_KEYS, rng))
    chatter = max(1, round(mib * 1048576 / steps / (len(sample) / 50)))  # chatter lines per step
    t = time.time() - steps * 40
    mid_at = None
    with open(log, "wb") as f, open(log.with_suffix(".clock"), "wb") as c:
        for s in range(1, steps + 1, 10):
            f.write("".join(_block(chatter, s, min(10, steps + 1 - s), METRIC_KEYS, rng)).encode())
            c.write(clock_line(f.tell(), t + s * 40))
            if mid_at is None and s >= steps // 2:
                mid_at = f.tell()
                f.write(MID_ERROR.encode())
        f.write(END_ERROR.encode())
        c.write(clock_line(f.tell(), t + steps * 40 + 5))
    return {"bytes": log.stat().st_size, "steps": steps, "first_error_at_byte": mid_at}


def _attempt(srv, tid: str, status: str, *, hours: float, exit_code: int | None = None) -> None:  # noqa: ANN001
    now = datetime.now(UTC)
    with srv.ctx.db.session() as s:
        s.add(TaskAttemptModel(task_id=tid, attempt=1, submission_id=f"walk-{tid}", status=status, hostname="gpu-node-3",
                               node_id="a1b2c3d4e5f6", gpus={"visible": "0,1,2,3,4,5,6,7"},
                               started_at=now - timedelta(hours=hours),
                               finished_at=None if status == "RUNNING" else now, exit_code=exit_code,
                               resource_seconds=None if status == "RUNNING" else hours * 3600 * 8))
        s.get(TaskModel, tid).attempts = 1


def move(srv, tid: str, *to: str, **last: Any) -> None:  # noqa: ANN001
    """The scheduler's and the monitor's status changes, through the one writer (services.tasks)."""
    from argus.services.tasks import switch_task_status

    for i, st in enumerate(to):
        with srv.ctx.db.session() as s:
            task = s.get(TaskModel, tid)
            extra = last if i == len(to) - 1 else {}
            switch_task_status(s, task, TaskStatus(st), actor="scheduler" if st in ("SUBMITTED", "RUNNING") else "monitor",
                               **extra)


def fail_from_log(srv, tid: str, user: str) -> str:  # noqa: ANN001
    """FAILED as the monitor leaves it: "exit code 1: <cause>" and a hint, from the log (scheduler/monitor.py)."""
    from argus.scheduler.monitor import Outcome, with_log_cause

    layout = srv.ctx.layout
    out = with_log_cause(Outcome(TaskStatus.FAILED, TerminationReason.EXIT_NONZERO, "exit code 1", exit_code=1),
                         Path(str(layout.home(user))), Path(str(layout.attempt_log(user, tid, 1))))
    move(srv, tid, "SUBMITTED", "RUNNING", "FAILED", reason=out.reason, message=out.said(),  # coded, as the monitor
         **({"failure_kind": out.failure_kind, "failure_hint": out.failure_hint} if out.failure_kind else {}))
    return out.message or ""


def _yaml(c, path: str, doc: dict | str, **params):  # noqa: ANN001, ANN202
    body = doc if isinstance(doc, str) else yaml.safe_dump(doc, sort_keys=False)
    return c.post(path, content=body.encode(), params=params, headers={"Content-Type": "application/yaml"})


def submit(c, spec: str) -> str:  # noqa: ANN001
    r = _yaml(c, "/api/v2/tasks", spec)
    assert r.status_code == 201, r.text
    return r.json()["task_id"]


def seed(srv, args, notes: list[str]) -> dict:  # noqa: ANN001, PLR0915 — one linear script
    """Users, a team, files, tasks in every state, a sweep, a pipeline, a model, a webhook: through the API."""
    from tests.services.test_checkpoints import write_step

    admin = srv.admin()
    r = admin.post("/api/v2/users", json={"name": "carol", "is_admin": True})
    assert r.status_code == 201, r.text
    tokens = {"carol": admin.post("/api/v2/users/carol/tokens", json={}).json()["token"]}
    alice, bob = srv.new_user("alice"), srv.new_user("bob")
    for name, c in (("alice", alice), ("bob", bob)):
        tokens[name] = c.headers["Authorization"].split()[1]
    assert admin.post("/api/v2/teams", json={"name": "nlp", "weight": 2, "max_gpus": 16,
                                             "gpu_hours_month": 500}).status_code == 201
    for who, role in (("alice", "admin"), ("bob", "member")):
        r = admin.post("/api/v2/teams/nlp/members", json={"user": who, "role": role})
        assert r.status_code == 201, r.text
    seeded: list[str] = []  # the names given here (user data, English in any language); not the user names

    # files in alice's home
    for d in ("/datasets/gsm8k", "/code", "/models/exported", "/teams/nlp/shared"):
        r = alice.post("/api/v2/files/mkdir", json={"path": d, "parents": True})
        if r.status_code != 201:
            notes.append(f"mkdir {d}: {r.status_code} {r.text[:200]}")
    files = {"/datasets/gsm8k/train.parquet": b"PAR1" + b"\0" * 300_000, "/datasets/gsm8k/test.parquet": b"PAR1" + b"\0" * 40_000,
             "/code/reward.py": b"def compute_score(data_source, solution_str, ground_truth, extra_info=None):\n    return 0.0\n",
             "/README.md": b"# experiments\n\nnotes on the gsm8k runs\n", "/models/exported/config.json": b"{}",
             "/teams/nlp/shared/prompts.jsonl": b'{"prompt": "2+2"}\n' * 100}
    for path, data in files.items():
        r = alice.put("/api/v2/files/content", params={"path": path}, content=data)
        if r.status_code != 201:
            notes.append(f"upload {path}: {r.status_code} {r.text[:200]}")

    # the big FAILED run
    big = submit(alice, GRPO.format(name=BIG))
    log = Path(str(srv.ctx.layout.attempt_log("alice", big, 1)))
    t0 = time.perf_counter()
    info = write_big_log(log, args.log_mb, args.steps)
    info["written_s"] = round(time.perf_counter() - t0, 1)
    _attempt(srv, big, "FAILED", hours=33, exit_code=1)
    info["message"] = fail_from_log(srv, big, "alice")
    seeded.append(BIG)

    # a PPO run with checkpoints, SUCCEEDED
    ckpt = submit(alice, PPO.format(name="gsm8k ppo baseline"))
    home = Path(str(srv.ctx.layout.home("alice")))
    for step in (100, 200, 300):
        write_step(home / "runs" / "ppo", step)
    plog = Path(str(srv.ctx.layout.attempt_log("alice", ckpt, 1)))
    plog.parent.mkdir(parents=True, exist_ok=True)
    rng = random.Random(1)
    plog.write_text("".join(f"(TaskRunner pid=11) step:{s} - critic/score/mean:{0.2 + s / 400 + rng.gauss(0, .02):.4f}"
                            f" - actor/entropy:{1 - s / 600:.4f} - actor/kl_loss:{s / 9000:.5f}"
                            f" - response_length/mean:{180 + s / 3:.1f}\n" for s in range(1, 301)))
    _attempt(srv, ckpt, "SUCCEEDED", hours=4, exit_code=0)
    move(srv, ckpt, "SUBMITTED", "RUNNING", "SUCCEEDED", reason=TerminationReason.SUCCEEDED, message="exit code 0")
    seeded.append("gsm8k ppo baseline")

    # RUNNING with a log that grows no more (no monitor here)
    running = submit(alice, GRPO.format(name="gsm8k grpo lr 2e-6"))
    rlog = Path(str(srv.ctx.layout.attempt_log("alice", running, 1)))
    rlog.parent.mkdir(parents=True, exist_ok=True)
    with open(rlog, "wb") as f, open(rlog.with_suffix(".clock"), "wb") as c:
        t = time.time() - 120 * 40
        for s in range(1, 121):
            f.write((f"(TaskRunner pid=4243) step:{s} - "
                     + " - ".join(f"{k}:{rng.gauss(1, 0.3):.6g}" for k in METRIC_KEYS) + "\n").encode())
            c.write(clock_line(f.tell(), t + s * 40))
    _attempt(srv, running, "RUNNING", hours=1.3)
    move(srv, running, "SUBMITTED", "RUNNING")
    seeded.append("gsm8k grpo lr 2e-6")

    queued = submit(alice, GRPO.format(name="gsm8k grpo 32 gpus").replace("nnodes: 1", "nnodes: 4"))
    seeded.append("gsm8k grpo 32 gpus")
    canceled = submit(alice, JOB.format(name="smoke test", gpus=0))
    alice.post(f"/api/v2/tasks/{canceled}/cancel")
    seeded.append("smoke test")
    for i in range(2):
        submit(bob, JOB.format(name=f"bob eval {i}", gpus=1))
        seeded.append(f"bob eval {i}")
    states = [(), ("SUBMITTED", "RUNNING", "SUCCEEDED"), ("cancel",), ("SUBMITTED", "RUNNING", "FAILED")]
    for i in range(max(0, args.tasks - 5)):
        name = f"ablation {i:02d}"
        tid = submit(alice, JOB.format(name=name, gpus=i % 3))
        seeded.append(name)
        path = states[i % len(states)]
        if path and path[-1] in ("SUCCEEDED", "FAILED"):
            _attempt(srv, tid, path[-1], hours=0.1 * (i + 1), exit_code=0 if path[-1] == "SUCCEEDED" else 2)
        if path == ("cancel",):
            alice.post(f"/api/v2/tasks/{tid}/cancel")
        elif path:
            kw = ({"reason": TerminationReason.EXIT_NONZERO, "message": "exit code 2"} if path[-1] == "FAILED" else
                  {"reason": TerminationReason.SUCCEEDED, "message": "exit code 0"})
            move(srv, tid, *path, **kw)

    ids = {"big": big, "ckpt": ckpt, "running": running, "queued": queued, "canceled": canceled}

    # a sweep: two trials finished with their metric
    r = _yaml(alice, "/api/v2/sweeps", SWEEP)
    if r.status_code == 201:
        ids["sweep"] = r.json()["sweep_id"]
        trials = [t["task_id"] for t in r.json()["trials"]]
        for k, tid in enumerate(trials[:2]):
            p = Path(str(srv.ctx.layout.attempt_log("alice", tid, 1)))
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text("".join(f"step:{s} - loss:{1 / s:.3f} - {SWEEP_METRIC}:{0.2 + 0.1 * s * (k + 1):.3f}\n"
                                 for s in (2, 4, 6)))
            _attempt(srv, tid, "SUCCEEDED", hours=0.2, exit_code=0)
            move(srv, tid, "SUBMITTED", "RUNNING", "SUCCEEDED", reason=TerminationReason.SUCCEEDED, message="exit code 0")
        seeded += ["lr sweep"] + [t.get("name", "") for t in r.json()["trials"]]
    else:
        notes.append(f"sweep not created: {r.status_code} {r.text[:300]}")
    r = _yaml(alice, "/api/v2/pipelines", PIPELINE)
    if r.status_code == 201 and r.json():
        ids["pipeline"] = r.json()["pipeline_id"]
        try:
            from argus.services import pipelines as psvc
            with srv.ctx.db.session() as s:
                psvc.tick(s, srv.ctx.layout, psvc.Admission(srv.ctx.policy, (), srv.ctx.settings.max_spec_bytes),
                          datetime.now(UTC))
        except Exception as exc:  # noqa: BLE001 - the page is still worth a look with its steps waiting
            notes.append(f"pipeline tick: {exc!r}")
        seeded.append("train then keep")
    else:
        notes.append(f"pipeline not created: {r.status_code} {r.text[:300]}")
    r = alice.post("/api/v2/models", json={"name": "gsm8k-ppo", "task_id": ckpt})
    if r.status_code != 201:
        notes.append(f"model from the checkpoint: {r.status_code} {r.text[:300]}")
    r2 = alice.post("/api/v2/models", json={"name": "gsm8k-ppo", "path": "$HOME/models/exported"})
    if r2.status_code != 201:
        notes.append(f"model from a folder: {r2.status_code} {r2.text[:300]}")
    if r.status_code == 201 or r2.status_code == 201:
        ids["model"] = "gsm8k-ppo"
        alice.put("/api/v2/models/gsm8k-ppo/aliases/production", json={"version": 1})
        seeded.append("gsm8k-ppo")
    r = alice.post("/api/v2/notifications", json={"kind": "webhook", "target": "https://hooks.example.org/argus/alice",
                                                  "events": ["FAILED", "SUCCEEDED"]})
    if r.status_code != 201:
        notes.append(f"webhook: {r.status_code} {r.text[:300]}")
    for c in (admin, alice, bob):
        c.close()
    return {"ids": ids, "tokens": tokens, "log": info, "seeded": [s for s in seeded if s]}


# ---- the walk -------------------------------------------------------------------------------------------


class Walker:
    def __init__(self, browser, url: str, tokens: dict[str, str], seeded: list[str]) -> None:  # noqa: ANN001
        self.browser, self.url, self.tokens = browser, url, tokens
        self.seeded = sorted(set(seeded), key=len, reverse=True)  # the longest first: one name may hold another
        self.contexts: dict[tuple[str, str], Any] = {}
        sels = sorted({r["sel"] for r in ROWS})
        self.watch = WATCH % json.dumps(sels)

    def context(self, config: str, who: str):  # noqa: ANN201
        key = (config, who)
        if key not in self.contexts:
            viewport, mobile, lang = CONFIGS[config]
            ctx = self.browser.new_context(
                viewport=viewport, is_mobile=mobile, has_touch=mobile, device_scale_factor=2 if mobile else 1,
                locale="zh-CN" if lang == "zh" else "en-US", timezone_id="Asia/Shanghai",
                extra_http_headers={"Accept-Language": "zh-CN,zh;q=0.9" if lang == "zh" else "en-US,en;q=0.9"})
            ctx.add_cookies([{"name": "argus_lang", "value": lang, "url": self.url}])
            ctx.add_init_script(self.watch)
            if who != "anon":
                r = ctx.request.post(f"{self.url}/api/v2/session", data={"token": self.tokens[who]})
                assert r.ok, r.text()
            self.contexts[key] = ctx
        return self.contexts[key]

    def visit(self, config: str, row: dict, ids: dict) -> dict:
        lang = CONFIGS[config][2]
        out: dict[str, Any] = {"page": row["key"], "label": row["label"], "config": config, "console": [],
                               "failed": [], "aborted": [], "expected": [], "opened": True}
        try:
            path = row["path"].format(**ids)
        except KeyError as exc:
            out.update(opened=None, note=f"not seeded: {exc}")
            return out
        out["path"] = path
        page = self.context(config, row["who"]).new_page()
        page.set_default_timeout(CONTENT_TIMEOUT_S * 1000)
        expect = row.get("expect", [])
        live = [True]

        def expected(status: int, url: str) -> bool:
            return any(status == s and part in url for s, part in expect)

        def on_console(m) -> None:  # noqa: ANN001
            if not live[0] or m.type != "error":
                return
            loc = (m.location or {}).get("url", "")
            if "Failed to load resource" in m.text and any(part in loc for _, part in expect):
                return
            out["console"].append(f"{m.text[:400]}" + (f" ({loc.removeprefix(self.url)})" if loc else ""))

        def on_response(r) -> None:  # noqa: ANN001
            if live[0] and r.status >= 400:
                what = f"{r.status} {r.request.method} {r.url.removeprefix(self.url)}"
                out["expected" if expected(r.status, r.url) else "failed"].append(what)

        def on_failed(r) -> None:  # noqa: ANN001
            if not live[0]:
                return
            what = f"{r.failure} {r.method} {r.url.removeprefix(self.url)}"
            # net::ERR_ABORTED: the page dropped it (a body it never read, a stream it closed): listed apart
            out["aborted" if "ERR_ABORTED" in (r.failure or "") else "failed"].append(what)

        page.on("console", on_console)
        page.on("pageerror", lambda e: live[0] and out["console"].append(f"uncaught: {str(e)[:400]}"))
        page.on("response", on_response)
        page.on("requestfailed", on_failed)
        try:
            resp = page.goto(self.url + path, wait_until="load")
            status = resp.status if resp else None
            out["status"] = status
            if status is None or (status >= 400 and not expected(status, path)):
                out["opened"] = False
            out["load_ms"] = round(page.evaluate(
                "(() => { const n = performance.getEntriesByType('navigation')[0]; return n.loadEventEnd - n.startTime; })()"), 1)
            if row.get("tab"):
                out["click_at"] = page.evaluate("performance.now()")
                page.click(f'#tabs [data-tab="{row["tab"]}"]')
            try:
                page.locator(row["sel"]).first.wait_for(state="attached", timeout=CONTENT_TIMEOUT_S * 1000)
                seen = page.evaluate("(s) => window.__walkSeen && window.__walkSeen[s]", row["sel"])
                out["content_ms"] = round(seen, 1) if seen is not None else None
                if row.get("tab") and seen is not None:
                    out["tab_click_ms"] = round(seen - out["click_at"], 1)
            except Exception as exc:  # noqa: BLE001 - a page without its content is a finding, not the end
                out["content_ms"] = None
                out["note"] = f"content {row['sel']!r} not shown in {CONTENT_TIMEOUT_S} s: {str(exc).splitlines()[0][:200]}"
            page.wait_for_timeout(SETTLE_S * 1000)  # (Playwright delivers the page's events while it waits)
            if CONFIGS[config][1]:
                out["overflow"] = page.evaluate(OVERFLOW)
            if lang == "zh":
                out["english"] = page.evaluate(ENGLISH, [row.get("scope"), row.get("skip"), self.seeded])
        except Exception as exc:  # noqa: BLE001
            out["opened"] = False
            out["note"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
        finally:
            live[0] = False
            page.close()
        return out

    def close(self) -> None:
        for ctx in self.contexts.values():
            ctx.close()


# ---- interactions (desktop, English) ---------------------------------------------------------------------

CLICK_UNTIL = """async ([button, sel, root]) => {
  const t0 = performance.now();
  const done = () => document.querySelector(sel);
  const waited = new Promise((res) => {
    const mo = new MutationObserver(() => { if (done()) { mo.disconnect(); res(performance.now()); } });
    mo.observe(document.querySelector(root) || document.body, { subtree: true, childList: true, attributes: true });
    setTimeout(() => { mo.disconnect(); res(null); }, 60000);
  });
  document.querySelector(button).click();
  const t1 = await waited;
  return t1 === null ? null : t1 - t0;
}"""
FILTER_TYPED = """async (text) => {
  const q = document.getElementById('log-filter'), count = document.getElementById('log-fcount');
  const before = count.textContent;
  const t0 = performance.now();
  const waited = new Promise((res) => {
    const mo = new MutationObserver(() => { if (count.textContent && count.textContent !== before) { mo.disconnect(); res(performance.now()); } });
    mo.observe(count, { subtree: true, childList: true, characterData: true });
    setTimeout(() => { mo.disconnect(); res(null); }, 30000);
  });
  q.value = text;
  q.dispatchEvent(new Event('input', { bubbles: true }));
  const t1 = await waited;
  return t1 === null ? null : t1 - t0;
}"""
LISTED = """async () => {
  const hits = document.getElementById('log-hits');
  const t0 = performance.now();
  const final = () => hits.querySelector('ol');
  const waited = new Promise((res) => {
    const mo = new MutationObserver(() => { if (final()) { mo.disconnect(); res(performance.now()); } });
    mo.observe(hits, { subtree: true, childList: true, characterData: true });
    setTimeout(() => { mo.disconnect(); res(null); }, 60000);
  });
  document.getElementById('log-filter-all').click();
  const t1 = await waited;
  return t1 === null ? null : t1 - t0;
}"""
CHARTS_DRAWN = """async (want) => {
  const ok = () => Object.entries(want).every(([k, n]) => {
    const f = document.querySelector(`figure.chart[data-key="${k}"]`); return f && +f.dataset.points >= n; });
  if (ok()) return performance.now();
  return await new Promise((res) => {
    const mo = new MutationObserver(() => { if (ok()) { mo.disconnect(); res(performance.now()); } });
    mo.observe(document.body, { subtree: true, childList: true, attributes: true, attributeFilter: ['data-points'] });
    setTimeout(() => { mo.disconnect(); res(null); }, 60000);
  });
}"""
PROBE = """(() => {
  window.__lastKey = 0; window.__verdicts = [];
  document.addEventListener('keydown', () => { window.__lastKey = performance.now(); }, true);
  new MutationObserver(() => window.__verdicts.push(performance.now()))
    .observe(document.getElementById('check-state'), { attributes: true, attributeFilter: ['data-verdict'] });
})()"""


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(p / 100 * (len(xs) - 1)))]


def interactions(walker: Walker, ids: dict, log: dict, verl: bool, samples: int) -> dict:  # noqa: PLR0915
    ctx = walker.context("desktop-en", "alice")
    page = ctx.new_page()
    page.set_default_timeout(60_000)
    res: dict[str, Any] = {}

    # tasks list: fetch → every row of the first view in the DOM (tasks.js's measure), and navigation → painted
    renders, painted, rows = [], [], 0
    for _ in range(3):
        page.goto(walker.url + "/tasks")
        deadline = time.monotonic() + 30
        while not page.evaluate("performance.getEntriesByName('argus:tasks-render').length") and time.monotonic() < deadline:
            time.sleep(0.01)
        m = page.evaluate("(() => { const m = performance.getEntriesByName('argus:tasks-render')[0];"
                          " return m ? [m.startTime, m.duration] : null; })()")
        if m:
            renders.append(m[1])
            painted.append(m[0] + m[1])
        rows = page.evaluate("document.querySelectorAll('#tasks-body tr').length")
    total = page.inner_text("#range")
    res["tasks_list"] = {"render_ms_median": round(statistics.median(renders), 1) if renders else None,
                         "nav_to_rows_ms_median": round(statistics.median(painted), 1) if painted else None,
                         "rows_in_dom": rows, "range_text": total, "loads": len(renders)}

    # Logs: First error, the first click (the walk's visits already had the server number the log's lines), then
    # again in a reloaded page; the line highlighted
    fe = []
    for _ in range(2):
        page.goto(walker.url + f"/tasks/{ids['big']}")
        page.locator("#log .ln").first.wait_for()
        fe.append(page.evaluate(CLICK_UNTIL, ["#log-error", "#log .ln.err", "#log"]))
    line = page.locator("#log .ln.err").first
    res["first_error"] = {"first_ms": fe[0] and round(fe[0], 1), "again_ms": fe[1] and round(fe[1], 1),
                          "line": line.inner_text()[:200] if line.count() else None,
                          "info": page.inner_text("#log-errinfo")[:300]}

    # Logs: the filter in the window, then over the whole log (the server's list)
    page.goto(walker.url + f"/tasks/{ids['big']}")
    page.locator("#log .ln").first.wait_for()
    typed = page.evaluate(FILTER_TYPED, "Traceback")
    res["log_filter"] = {"query": "Traceback", "window_ms": typed and round(typed, 1),
                         "window_count": page.inner_text("#log-fcount")}
    try:
        page.locator("#log-filter-all").wait_for(state="visible", timeout=10_000)
        listed = page.evaluate(LISTED)
        res["log_filter"].update(whole_log_ms=listed and round(listed, 1),
                                 whole_log_head=page.inner_text("#log-hits p")[:200],
                                 whole_log_hits=page.locator("#log-hits li").count())
    except Exception as exc:  # noqa: BLE001
        res["log_filter"]["note"] = f"no whole-log button: {str(exc).splitlines()[0][:200]}"

    # Charts: several metrics (one chart of three keys of three units), navigation → every chart fully drawn
    view = ",".join("|".join(c) for c in CHARTS)
    want = {c[0]: log["steps"] * len(c) for c in CHARTS}
    drawn = []
    for _ in range(3):
        page.goto("about:blank")
        page.goto(f"{walker.url}/tasks/{ids['big']}#metrics&keys={view}&smooth=0.6&x=step&log=0",
                  wait_until="domcontentloaded")
        drawn.append(page.evaluate(CHARTS_DRAWN, want))
    got = page.evaluate("[...document.querySelectorAll('figure.chart')].map((f) => [f.dataset.key, +f.dataset.points])")
    ok = [d for d in drawn if d is not None]
    res["charts"] = {"charts": len(CHARTS), "keys": sum(len(c) for c in CHARTS), "points": sum(want.values()),
                     "nav_to_drawn_ms": [round(d, 1) if d is not None else None for d in drawn],
                     "median_ms": round(statistics.median(ok), 1) if ok else None, "drawn": got}

    # New Task: last keystroke → verdict
    page.goto(walker.url + "/tasks/new")
    page.locator("#editor .cm-content").wait_for()
    page.evaluate("localStorage.clear()")
    page.goto(walker.url + "/tasks/new")
    page.locator("#check-state[data-verdict]").wait_for(timeout=60_000)
    page.click(".cm-content")
    page.keyboard.press("Control+a")
    page.keyboard.press("Delete")
    page.keyboard.insert_text(VERDICT_SPEC)
    page.locator("#check-state[data-verdict]").wait_for()
    time.sleep(1.5)
    page.evaluate(PROBE)
    xs, verdicts = [], set()
    for i in range(samples):
        page.keyboard.press("Control+End")
        n = len(page.evaluate("window.__verdicts"))
        for _ in range(3):
            page.keyboard.press("Backspace", delay=80)
        page.keyboard.type(str(101 + i), delay=80)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            time.sleep(0.05)
            last, vs = page.evaluate("[window.__lastKey, window.__verdicts]")
            after = [v for v in vs[n:] if v > last]
            if after:
                time.sleep(0.4)  # a later verdict of the same burst (spec checks, then verl's) replaces it
                last, vs = page.evaluate("[window.__lastKey, window.__verdicts]")
                xs.append([v for v in vs[n:] if v > last][-1] - last)
                break
        time.sleep(1.0)
        verdicts.add(page.inner_text("#check-state")[:160])
    res["verdict"] = {"verl": verl, "edits": len(xs), "p50_ms": round(pct(xs, 50), 1) if xs else None,
                      "max_ms": round(max(xs), 1) if xs else None, "states": sorted(verdicts),
                      "note": None if verl else "verl is not installed (or --no-verl): the verdict is the spec's own "
                                                "checks, not verl's; bench/web_verdict.py times verl's"}
    page.close()
    return res


# ---- report -----------------------------------------------------------------------------------------------


def fmt_ms(v: float | None) -> str:
    return "—" if v is None else f"{v:.0f}"


def report(results: list[dict], inter: dict, meta: dict) -> None:
    print(f"\n{'page':28} {'config':10} {'status':>6} {'load ms':>8} {'content ms':>10} {'console':>7} "
          f"{'failed':>6} {'overflow':>8} {'EN-in-zh':>8}")
    for r in results:
        ov = r.get("overflow")
        ovs = "—" if ov is None else (f"+{ov['scroll_width'] - ov['inner_width']}px" if ov["overflow"] else "no")
        en = "—" if "english" not in r else str(len(r["english"]))
        content = fmt_ms(r.get("content_ms")) + (f" ({fmt_ms(r['tab_click_ms'])})" if r.get("tab_click_ms") is not None else "")
        print(f"{r['label'][:28]:28} {r['config']:10} {str(r.get('status', '—')):>6} {fmt_ms(r.get('load_ms')):>8} "
              f"{content:>10} {len(r['console']):>7} {len(r['failed']):>6} {ovs:>8} {en:>8}"
              + ("   !" + r["note"] if r.get("note") else ""))
    print("(content ms: navigation start → the page's content; a tab's row adds (click → content))")

    print("\ninteractions (desktop 1366×800, English, alice):")
    tl = inter.get("tasks_list", {})
    print(f"  tasks list first paint, all rows of the view: fetch → rows {fmt_ms(tl.get('render_ms_median'))} ms, "
          f"navigation → rows {fmt_ms(tl.get('nav_to_rows_ms_median'))} ms (median of {tl.get('loads')}; "
          f"{tl.get('rows_in_dom')} rows in the DOM, {tl.get('range_text')!r})")
    fe = inter.get("first_error", {})
    print(f"  Logs \"First error\" click → line highlighted: first click {fmt_ms(fe.get('first_ms'))} ms, "
          f"again {fmt_ms(fe.get('again_ms'))} ms ({meta['log']['bytes'] / 1048576:.1f} MiB log; {fe.get('info')!r}; "
          f"line {fe.get('line')!r})")
    lf = inter.get("log_filter", {})
    print(f"  log filter {lf.get('query')!r}: typed → window filtered {fmt_ms(lf.get('window_ms'))} ms "
          f"({lf.get('window_count')!r}); whole log click → list {fmt_ms(lf.get('whole_log_ms'))} ms "
          f"({lf.get('whole_log_head')!r}, {lf.get('whole_log_hits')} lines)" + (f" {lf['note']}" if lf.get("note") else ""))
    ch = inter.get("charts", {})
    print(f"  charts, {ch.get('charts')} charts of {ch.get('keys')} metrics ({ch.get('points') or 0:,} points): navigation → "
          f"all drawn {', '.join(fmt_ms(x) for x in ch.get('nav_to_drawn_ms', []))} ms (median {fmt_ms(ch.get('median_ms'))})")
    v = inter.get("verdict", {})
    print(f"  New Task last keystroke → verdict ({'verl validator' if v.get('verl') else 'spec checks only'}): "
          f"p50 {fmt_ms(v.get('p50_ms'))} ms, max {fmt_ms(v.get('max_ms'))} ms over {v.get('edits')} edits; "
          f"states {v.get('states')}" + (f"\n    note: {v['note']}" if v.get("note") else ""))
    if inter.get("error"):
        print(f"  interactions stopped: {inter['error']}")

    print("\nfindings:")
    byp: dict[str, dict[str, Any]] = {}
    for r in results:
        f = byp.setdefault(r["label"], {"console": {}, "failed": {}, "aborted": {}, "expected": {}, "overflow": [], "english": {}, "notes": []})
        for c in r["console"]:
            f["console"].setdefault(c, {})[r["config"]] = 1
        for c in r["failed"]:
            f["failed"].setdefault(c, {})[r["config"]] = 1
        for c in r["aborted"]:
            f["aborted"].setdefault(c, {})[r["config"]] = 1
        for c in r["expected"]:
            f["expected"].setdefault(c, {})[r["config"]] = 1
        if r.get("overflow", {}).get("overflow"):
            ov = r["overflow"]
            f["overflow"].append(f"{r['config']}: scrollWidth {ov['scroll_width']} > {ov['inner_width']} (layout width); "
                                 + "; ".join(f"{o['el']} (right {o['right']})" for o in ov["offenders"]))
        for e in r.get("english", []):
            f["english"].setdefault((e["text"], e["where"]), {})[r["config"]] = 1
        if r.get("note"):
            f["notes"].append(f"{r['config']}: {r['note']}")
    any_ = False
    for label, f in byp.items():
        if not any(f.values()):
            continue
        any_ = True
        print(f"- {label}")
        for c, cfgs in f["console"].items():
            print(f"    console error [{','.join(cfgs)}]: {c}")
        for c, cfgs in f["failed"].items():
            print(f"    failed request [{','.join(cfgs)}]: {c}")
        for c, cfgs in f["aborted"].items():
            print(f"    aborted by the page (not counted as failed) [{','.join(cfgs)}]: {c}")
        for c, cfgs in f["expected"].items():
            print(f"    expected by the page (not counted as failed) [{','.join(cfgs)}]: {c}")
        for o in f["overflow"]:
            print(f"    overflow {o}")
        for (text, where), cfgs in f["english"].items():
            print(f"    English in zh [{','.join(cfgs)}] {where}: {text!r}")
        for n in f["notes"]:
            print(f"    note {n}")
    if not any_:
        print("  none")
    for n in meta.get("notes", []):
        print(f"  seeding note: {n}")


def main() -> int:  # noqa: PLR0915
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(Path(tempfile.gettempdir()) / "web_walk.json"))
    ap.add_argument("--log-mb", type=float, default=8.0, help="size of the failed run's log")
    ap.add_argument("--steps", type=int, default=1500, help="steps in that log (points per chart)")
    ap.add_argument("--tasks", type=int, default=40, help="alice's tasks (the list)")
    ap.add_argument("--samples", type=int, default=5, help="New Task edits timed")
    ap.add_argument("--no-verl", action="store_true", help="no verl validator even where verl is installed")
    ap.add_argument("--only", default="", help="comma-separated page keys (default: every page)")
    ap.add_argument("--configs", default=",".join(CONFIGS), help="comma-separated: " + ", ".join(CONFIGS))
    ap.add_argument("--no-interactions", action="store_true")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    started = time.perf_counter()
    verl = not args.no_verl and importlib.util.find_spec("verl") is not None
    validator = None
    if verl:
        from argus.verl.validator import VerlValidator
        validator = VerlValidator(sys.executable, timeout_s=60)
        validator.start_background()
        warm = threading.Thread(target=lambda: validator.request({"op": "info"}, 300), daemon=True)
        warm.start()
    rows = [r for r in ROWS if not args.only or r["key"] in args.only.split(",")]
    configs = [c for c in args.configs.split(",") if c in CONFIGS]
    notes: list[str] = []
    results: list[dict] = []
    inter: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as tmp, live_server(
            Settings(state_dir=Path(tmp), sftp_enabled=False, verl_validation="off")) as srv:
        t0 = time.perf_counter()
        meta = seed(srv, args, notes)
        print(f"seeded in {time.perf_counter() - t0:.1f} s: {json.dumps(meta['ids'])}; big log "
              f"{meta['log']['bytes'] / 1048576:.1f} MiB, {meta['log']['steps']} steps ({meta['log']['message']!r})")
        if verl:
            from tests.verl.conftest import populate_home

            from argus.verl.check import VerlCheck
            from argus.verl.entry import EntryModuleCheck
            populate_home(srv.ctx.settings.root)  # alice's tiny model and parquet files (the verdict's spec)
            warm.join()
            # from here on specs are checked as by `argus up` (required); the seeding's specs were not
            checked = srv.ctx.settings.model_copy(update={"verl_validation": "required"})
            srv.ctx.checks = (EntryModuleCheck(checked, validator), VerlCheck(checked, validator))
            srv.ctx.extras["verl_validator"] = SimpleNamespace(get=lambda env: validator)
            print(f"verl validator warm after {time.perf_counter() - started:.1f} s")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM)
            walker = Walker(browser, srv.url, meta["tokens"], meta["seeded"])
            for config in configs:
                t1 = time.perf_counter()
                for row in rows:
                    results.append(walker.visit(config, row, meta["ids"]))
                print(f"{config}: {len(rows)} pages in {time.perf_counter() - t1:.1f} s")
            if not args.no_interactions:
                try:
                    inter = interactions(walker, meta["ids"], meta["log"], verl, args.samples)
                except Exception as exc:  # noqa: BLE001 - report what was measured
                    inter["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
            walker.close()
            browser.close()
    if validator is not None:
        validator.stop()
    meta["notes"] = notes
    report(results, inter, meta)
    Path(args.out).write_text(json.dumps({"pages": results, "interactions": inter, "seed": {
        k: v for k, v in meta.items() if k != "tokens"}, "wall_s": round(time.perf_counter() - started, 1)},
        indent=1, ensure_ascii=False))
    print(f"\nJSON: {args.out}; walked in {time.perf_counter() - started:.0f} s")
    return 1 if any(r["opened"] is False for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
