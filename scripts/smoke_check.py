"""HTTP checks for ``scripts/gpu-smoke.sh`` (httpx, and transformers for ``generate``; ``ARGUS_URL`` and ``ARGUS_TOKEN`` from the env).

    smoke_check.py health TIMEOUT [--pid P]    wait for GET /api/v2/health (give up if process P exits)
    smoke_check.py nodes GPUS TIMEOUT          wait until the workers report >= GPUS GPUs in total
    smoke_check.py wait TASK TIMEOUT           print each status change; exit 0 SUCCEEDED, 1 FAILED/CANCELED, 2 timeout
    smoke_check.py verify TASK --gpus N [--steps K] [--driver-holds-gpus]
                                               one line per check: "PASS|FAIL <check>: <detail>"; exit 1 on a FAIL
    smoke_check.py summary RESULTS_TSV         the PASS/FAIL/SKIPPED table; exit 1 if any FAIL

The RL acceptance of ``tests/e2e/test_rl_cpu_on_ray.py``, on a GPU: each prints one "PASS|FAIL<TAB>detail" line
(the script names the row):

    smoke_check.py marker TASK TEXT            TEXT (the user's reward's marker) is a line of the task's log
    smoke_check.py reward TASK LOW HIGH --steps K
                                               critic/score/mean at steps 1..K is a mean of LOW/HIGH values only
    smoke_check.py moved TASK                  actor/kl_loss > 0 at some step, training/rollout_probs_diff_max < 1e-2
    smoke_check.py checkpoints TASK STEP...    GET /checkpoints lists exactly these complete global_step_N
    smoke_check.py resumed TASK STEP LAST      SUCCEEDED, the resume check's event, metric steps STEP+1..LAST
    smoke_check.py steps TASK FIRST LAST KEY...
                                               every KEY has exactly the steps FIRST..LAST
    smoke_check.py torchrun TASK               ran under torch.distributed.run, a *loss key at every step
    smoke_check.py generate DIR                transformers loads DIR and generates 4 tokens (CPU)
    smoke_check.py resume TASK STEP            POST /resume {"step"}: prints the new task's id
    smoke_check.py export TASK STEP NAME       POST /export {"step", "to"}: prints the export task's id

``verify`` reads what the task itself recorded: ``status.json`` and the first log line (the driver
writes ``CUDA_VISIBLE_DEVICES`` in both) through the files/logs API, ``/metrics`` for the steps, and
``/resources`` for the driver's NVML samples of the task's GPUs (issue 24; a task shorter than one
15 s sample interval has none). ``generate`` imports transformers (Argus's own interpreter has it).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import sys
import time

import httpx

URL = os.environ.get("ARGUS_URL", "http://127.0.0.1:8080").rstrip("/")
TERMINAL = {"SUCCEEDED", "FAILED", "CANCELED"}


def _headers() -> dict[str, str]:
    return {"Authorization": f"Bearer {os.environ.get('ARGUS_TOKEN', '')}"}


def api(path: str, **params) -> httpx.Response:
    return httpx.get(URL + path, params=params or None, headers=_headers(), timeout=30)


def post(path: str, body: dict) -> httpx.Response:
    return httpx.post(URL + path, json=body, headers=_headers(), timeout=60)


def _alive(pid: int | None) -> bool:
    if pid is None:
        return True
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def health(timeout: float, pid: int | None = None) -> int:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if not _alive(pid):
            print(f"the server (pid {pid}) exited after {time.monotonic() - t0:.1f} s")
            return 2
        try:
            if api("/api/v2/health").status_code == 200:
                print(f"API ready after {time.monotonic() - t0:.1f} s")
                return 0
        except httpx.HTTPError:
            pass
        time.sleep(1)
    print(f"API not ready after {timeout:.0f} s")
    return 2


def nodes(gpus: int, timeout: float) -> int:
    t0, body = time.monotonic(), None
    while time.monotonic() - t0 < timeout:
        try:
            body = api("/api/v2/nodes").json()
            total = int(body.get("gpus_total") or 0)
            if total >= gpus:
                print(f"{total} GPU(s) in the cluster after {time.monotonic() - t0:.1f} s")
                return 0
        except (httpx.HTTPError, ValueError, AttributeError, TypeError):
            pass
        time.sleep(1)
    print(f"fewer than {gpus} GPU(s) after {timeout:.0f} s: {json.dumps(body)[:2000]}")
    return 2


def wait(task: str, timeout: float) -> int:
    t0, last = time.monotonic(), None
    while True:
        try:
            t = api(f"/api/v2/tasks/{task}").json()
        except (httpx.HTTPError, ValueError) as e:
            t = {"status": f"? {e!r}"}
        cur = tuple(str(t.get(k)) for k in ("status", "pending_reason", "termination_reason", "status_message")
                    if t.get(k))
        if cur != last:
            print(f"[{time.monotonic() - t0:6.1f} s] {task} {' | '.join(cur)}", flush=True)
            last = cur
        if t.get("status") in TERMINAL:
            return 0 if t["status"] == "SUCCEEDED" else 1
        if time.monotonic() - t0 > timeout:
            print(f"[{time.monotonic() - t0:6.1f} s] {task} still {t.get('status')}: timeout")
            return 2
        time.sleep(2)


def _ids(cvd: str | None) -> list[str]:
    return [x.strip() for x in (cvd or "").split(",") if x.strip()]


def verify(task: str, gpus: int, steps: int | None, driver_holds: bool) -> int:
    results: list[tuple[bool, str, str]] = []
    t = api(f"/api/v2/tasks/{task}").json()
    results.append((t.get("status") == "SUCCEEDED", "status",
                    f"{t.get('status')} {t.get('termination_reason') or ''} {t.get('status_message') or ''}".strip()))
    attempt = (t.get("attempts") or [{}])[-1].get("attempt", 1)
    r = api("/api/v2/files/content", path=f"/jobs/{task}/status.json")
    status = r.json() if r.status_code == 200 else {}
    cvd = status.get("cuda_visible_devices")
    log = api(f"/api/v2/tasks/{task}/logs", attempt=attempt, offset=0, limit=4096).text
    first = log.splitlines()[0] if log else ""
    m = re.search(r"CUDA_VISIBLE_DEVICES=(\S*?),? ", first)
    logged = m.group(1) if m else None
    if logged == "''":  # the driver's way of showing an empty list ("'' (no GPU)")
        logged = ""
    same = (logged == "<unset>" and cvd is None) or logged == (cvd or "")
    results.append((bool(status) and same, "CUDA_VISIBLE_DEVICES recorded",
                    f"status.json {cvd!r}, first log line {logged!r}"))
    if driver_holds:
        ok = len(_ids(cvd)) == gpus and len(set(_ids(cvd))) == gpus
        results.append((ok, "driver got its GPUs", f"{cvd!r}: expected {gpus} distinct id(s)"))
    else:  # verl's Ray trainers place their own GPU workers; the driver holds none
        results.append((not _ids(cvd) or len(_ids(cvd)) == gpus, "driver holds no GPU (Ray-placed workers)",
                        f"{cvd!r}"))
    met = api(f"/api/v2/tasks/{task}/metrics").json()
    seen = sorted({int(s) for pts in (met.get("points") or {}).values() for s, _ in pts})
    last = met.get("last_step") or 0
    every = bool(seen) and seen == list(range(1, last + 1)) and (steps is None or last == steps)
    results.append((every, "argus metrics has every step",
                    f"steps {seen[:20]}{'…' if len(seen) > 20 else ''}, last {last}"
                    + (f", expected {steps}" if steps else "") + f", {len(met.get('keys') or [])} keys"))
    results.append(_gpu_telemetry(task, gpus, cvd))
    for ok, name, detail in results:
        print(f"{'PASS' if ok else 'FAIL'}\t{name}\t{detail}")
    return 0 if all(ok for ok, _, _ in results) else 1


def _gpu_telemetry(task: str, gpus: int, cvd: str | None) -> tuple[bool, str, str]:
    """Issue 24: the driver's samples of the task's GPUs (NVML): one series per GPU of the task, busy at some point."""
    r = api(f"/api/v2/tasks/{task}/resources").json()
    samples, summary = r.get("samples") or [], r.get("summary") or {}
    widths = {len(s.get("gpu") or []) for s in samples}
    peak = max((u for u in summary.get("gpu_util_mean") or [] if u is not None), default=None)
    mem = [m for m in summary.get("gpu_mem_max_mib") or [] if m is not None]
    ok = bool(samples) and widths == {gpus} and bool(mem) and max(mem) > 0
    return (ok, "GPU telemetry of the task", f"{len(samples)} samples, GPUs per sample {sorted(widths)} (want {gpus}, "
            f"CUDA_VISIBLE_DEVICES {cvd!r}), mean util {summary.get('gpu_util_mean')}, peak memory {mem} MiB, "
            f"best mean {peak}")


def row(ok: bool, detail: str) -> int:
    print(f"{'PASS' if ok else 'FAIL'}\t{detail}")
    return 0 if ok else 1


def _points(task: str) -> dict[str, list[tuple[int, float | str]]]:
    return {k: [(int(s), v) for s, v in pts] for k, pts in (api(f"/api/v2/tasks/{task}/metrics").json()
                                                             .get("points") or {}).items()}


def _steps_of(points: dict[str, list[tuple[int, float | str]]], key: str) -> list[int]:
    return [s for s, _ in points.get(key, [])]


def _num(v: float | str) -> float:
    return float(v)  # "nan", "inf" too


def _override(argv: list[str], key: str) -> str | None:
    """The last ``key=`` (or ``+key=``) of a task's command: a basic template's argv or an advanced bash -lc."""
    words = shlex.split(argv[2]) if len(argv) == 3 and argv[0] in ("bash", "sh") else argv
    found = [w.split("=", 1)[1] for w in words if w.lstrip("+").startswith(key + "=")]
    return found[-1] if found else None


def marker(task: str, text: str) -> int:
    log = api(f"/api/v2/tasks/{task}/logs").text
    n = sum(text in ln for ln in log.splitlines())
    return row(n > 0, f"{n} log lines with {text!r} (the reward's own print, from verl's reward workers)")


def reward(task: str, low: float, high: float, steps: int) -> int:
    """Each response scores ``low`` or ``high``: a step's mean over N = train_batch_size × rollout.n responses is
    low + (high - low)·k/N for a whole k, which verl's own rewards (GSM8K: 0 or 1) do not give."""
    argv = api(f"/api/v2/tasks/{task}/spec").json().get("argv") or []
    try:
        n = int(_override(argv, "data.train_batch_size") or "") * int(_override(argv, "actor_rollout_ref.rollout.n") or "")
    except ValueError:
        return row(False, "data.train_batch_size or actor_rollout_ref.rollout.n not in the task's command")
    pts = _points(task).get("critic/score/mean", [])

    def own(v: float | str) -> bool:
        k = (_num(v) - low) / (high - low) * n
        return -1e-3 <= k <= n + 1e-3 and abs(k - round(k)) < 1e-3

    ok = [s for s, _ in pts] == list(range(1, steps + 1)) and all(own(v) for _, v in pts)
    return row(ok, f"steps/means {[(s, round(_num(v), 5)) for s, v in pts]}; want steps 1..{steps}, each "
                   f"{low} + {high - low}·k/{n}")


def moved(task: str) -> int:
    """The actor moved off the reference, and the rollout got its weights each step (vLLM's probabilities follow)."""
    pts = _points(task)
    kl = [_num(v) for _, v in pts.get("actor/kl_loss", [])]
    diff = [_num(v) for _, v in pts.get("training/rollout_probs_diff_max", [])]
    ok = any(v > 0 for v in kl) and bool(diff) and all(v < 1e-2 for v in diff)
    return row(ok, f"actor/kl_loss {[round(v, 6) for v in kl]} (want one > 0); "
                   f"training/rollout_probs_diff_max {[round(v, 6) for v in diff]} (want each < 0.01)")


def checkpoints(task: str, want: list[int]) -> int:
    ck = api(f"/api/v2/tasks/{task}/checkpoints").json()
    got = [(s.get("step"), s.get("complete")) for s in ck.get("steps") or []]
    ok = got == [(s, True) for s in want] and ck.get("latest") == want[-1]
    return row(ok, f"{ck.get('folder')}: (step, complete) {got}, latest {ck.get('latest')}; want {want} complete")


def resumed(task: str, step: int, last: int) -> int:
    t = api(f"/api/v2/tasks/{task}").json()
    said = [e.get("message") or "" for e in api(f"/api/v2/tasks/{task}/events").json()]
    text = f"resumed from checkpoint global_step_{step}: first step {step + 1}, as expected"
    seen = _steps_of(_points(task), "critic/score/mean")
    ok = t.get("status") == "SUCCEEDED" and any(text in m for m in said) and seen == list(range(step + 1, last + 1))
    about = [m for m in said if "resum" in m.lower()]
    return row(ok, f"{task} {t.get('status')}; events {about}; steps {seen} (want {step + 1}..{last})")


def steps(task: str, first: int, last: int, keys: list[str]) -> int:
    pts = _points(task)
    got = {k: _steps_of(pts, k) for k in keys}
    ok = all(v == list(range(first, last + 1)) for v in got.values())
    return row(ok, f"{got} (want {first}..{last}); {len(pts)} keys")


def torchrun(task: str) -> int:
    cmd = api(f"/api/v2/tasks/{task}/spec").json().get("command_expanded") or ""
    met = api(f"/api/v2/tasks/{task}/metrics").json()
    last = met.get("last_step") or 0
    loss = {k: sorted(int(s) for s, _ in pts) for k, pts in (met.get("points") or {}).items() if k.endswith("loss")}
    every = [k for k, s in loss.items() if last and s == list(range(1, last + 1))]
    ok = "torch.distributed.run" in cmd and bool(every)
    return row(ok, f"torch.distributed.run in the command: {'torch.distributed.run' in cmd}; loss keys at every "
                   f"step 1..{last}: {every or sorted(loss)}")


def generate(folder: str) -> int:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model, tok = AutoModelForCausalLM.from_pretrained(folder), AutoTokenizer.from_pretrained(folder)
    enc = tok("Sam has 3 apples", return_tensors="pt")
    out = model.generate(enc.input_ids, attention_mask=enc.attention_mask, max_new_tokens=4, min_new_tokens=4,
                         do_sample=False)
    new = out.shape[1] - enc.input_ids.shape[1]
    return row(new == 4, f"{folder}: {type(model).__name__}, generated {new} tokens {tok.decode(out[0, -new:])!r}")


def submit_from(task: str, action: str, body: dict) -> int:
    """POST /resume or /export; the new task's id on stdout, Argus's refusal on stderr."""
    r = post(f"/api/v2/tasks/{task}/{action}", body)
    if r.status_code != 201:
        print(f"{r.status_code} {r.text[:600]}", file=sys.stderr)
        return 1
    print(r.json()["task_id"])
    return 0


def summary(path: str) -> int:
    rows = [ln.rstrip("\n").split("\t", 2) for ln in open(path, encoding="utf-8") if ln.strip()]
    w = max((len(r[1]) for r in rows), default=10)
    print(f"{'result':8} {'check':{w}}  detail")
    for res, name, detail in ((r + ["", ""])[:3] for r in rows):
        print(f"{res:8} {name:{w}}  {detail[:160]}")
    counts = {k: sum(r[0] == k for r in rows) for k in ("PASS", "FAIL", "SKIPPED")}
    print(f"\n{counts['PASS']} passed, {counts['FAIL']} failed, {counts['SKIPPED']} skipped")
    return 1 if counts["FAIL"] or not rows else 0


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    h = sub.add_parser("health")
    h.add_argument("timeout", type=float)
    h.add_argument("--pid", type=int, help="give up when this process (argus up) exits")
    n = sub.add_parser("nodes")
    n.add_argument("gpus", type=int)
    n.add_argument("timeout", type=float)
    w = sub.add_parser("wait")
    w.add_argument("task")
    w.add_argument("timeout", type=float)
    v = sub.add_parser("verify")
    v.add_argument("task")
    v.add_argument("--gpus", type=int, required=True)
    v.add_argument("--steps", type=int)
    v.add_argument("--driver-holds-gpus", action="store_true")
    sub.add_parser("summary").add_argument("results")
    for name, args in (("marker", ("task", "text")), ("moved", ("task",)), ("torchrun", ("task",)),
                       ("generate", ("folder",))):
        c = sub.add_parser(name)
        for arg in args:
            c.add_argument(arg)
    r = sub.add_parser("reward")
    r.add_argument("task")
    r.add_argument("low", type=float)
    r.add_argument("high", type=float)
    r.add_argument("--steps", type=int, required=True)
    c = sub.add_parser("checkpoints")
    c.add_argument("task")
    c.add_argument("want", type=int, nargs="+")
    c = sub.add_parser("resumed")
    c.add_argument("task")
    c.add_argument("step", type=int)
    c.add_argument("last", type=int)
    c = sub.add_parser("steps")
    c.add_argument("task")
    c.add_argument("first", type=int)
    c.add_argument("last", type=int)
    c.add_argument("keys", nargs="+")
    c = sub.add_parser("resume")
    c.add_argument("task")
    c.add_argument("step", type=int)
    c = sub.add_parser("export")
    c.add_argument("task")
    c.add_argument("step", type=int)
    c.add_argument("to")
    a = p.parse_args(argv)
    if a.cmd == "health":
        return health(a.timeout, a.pid)
    if a.cmd == "nodes":
        return nodes(a.gpus, a.timeout)
    if a.cmd == "wait":
        return wait(a.task, a.timeout)
    if a.cmd == "verify":
        return verify(a.task, a.gpus, a.steps, a.driver_holds_gpus)
    if a.cmd == "summary":
        return summary(a.results)
    one = {
        "marker": lambda: marker(a.task, a.text),
        "reward": lambda: reward(a.task, a.low, a.high, a.steps),
        "moved": lambda: moved(a.task),
        "checkpoints": lambda: checkpoints(a.task, a.want),
        "resumed": lambda: resumed(a.task, a.step, a.last),
        "steps": lambda: steps(a.task, a.first, a.last, a.keys),
        "torchrun": lambda: torchrun(a.task),
        "generate": lambda: generate(a.folder),
        "resume": lambda: submit_from(a.task, "resume", {"step": a.step}),
        "export": lambda: submit_from(a.task, "export", {"step": a.step, "to": a.to}),
    }[a.cmd]
    try:
        return one()
    except Exception as e:  # the row says what broke, and the table goes on
        if a.cmd in ("resume", "export"):  # stdout is the new task's id: nothing else goes there
            print(f"{type(e).__name__}: {e}", file=sys.stderr)
            return 1
        return row(False, f"{type(e).__name__}: {e}"[:600])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
