"""`python3 -m argus.jobs.steps key=value …`: a CPU job that trains nothing but checkpoints like verl.

It exists to check checkpoints, resume and retries end to end without GPUs: each "step" sleeps
``step_seconds`` and prints ``step:K - loss:…`` (verl's console metric line); every
``trainer.save_freq`` steps it writes ``<trainer.default_local_dir>/global_step_K/`` exactly in
verl's order — ``actor/`` and ``data.pt`` first, then ``latest_checkpointed_iteration.txt``
(via a rename) — and it resumes as verl does from ``trainer.resume_mode=resume_path
trainer.resume_from_path=…/global_step_K``: the step count continues from K and the state saved
in ``actor/state.json`` is loaded. Unlike verl its default ``resume_mode`` is ``disable``
(verl's is ``auto``), so a test sees that a resume came from Argus's overrides.

Keys: ``trainer.default_local_dir`` (default ``checkpoints``), ``trainer.total_training_steps``
(default 6), ``trainer.save_freq`` (default 2), ``trainer.resume_mode``, ``trainer.resume_from_path``,
``step_seconds`` (default 0.5). For the training-health tests (issue 24): ``hang_at=K`` prints step K,
then prints nothing more and never ends (a hung collective); ``resume_skew=D`` makes a resumed run
start at checkpoint step + 1 + D (a resume that skips, or with D < 0 repeats, steps); ``hold_mib=N``
keeps N MiB of memory (touched) for the whole run and ``busy=1`` spins a core instead of sleeping
(what the task's resource samples must show). For sweeps (issue 38): ``trainer.test_freq=F`` with
``val_per_step=X`` also logs a validation every F steps (and at the last), as verl does:
``val-core/steps/score/mean@1`` = X × step — a trial's quality a sweep can rank by.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time


def _args(argv: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for word in argv:
        key, sep, value = word.lstrip("+").partition("=")
        if not sep:
            raise SystemExit(f"argus.jobs.steps: expected key=value, got {word!r}")
        out[key] = value
    return out


def _save(folder: str, step: int, state: dict) -> None:
    step_dir = os.path.join(folder, f"global_step_{step}")
    os.makedirs(os.path.join(step_dir, "actor"), exist_ok=True)
    with open(os.path.join(step_dir, "actor", "state.json"), "w") as f:
        json.dump(state, f)
    with open(os.path.join(step_dir, "data.pt"), "w") as f:
        json.dump({"consumed": step}, f)
    tmp = os.path.join(folder, "latest_checkpointed_iteration.txt.tmp")
    with open(tmp, "w") as f:
        f.write(str(step))
    os.rename(tmp, os.path.join(folder, "latest_checkpointed_iteration.txt"))
    print(f"saved checkpoint {step_dir}", flush=True)


def main(argv: list[str] | None = None) -> int:
    a = _args(sys.argv[1:] if argv is None else argv)
    folder = a.get("trainer.default_local_dir", "checkpoints")
    total = int(a.get("trainer.total_training_steps", "6"))
    save_freq = int(a.get("trainer.save_freq", "2"))
    pause = float(a.get("step_seconds", "0.5"))
    start, state = 0, {"weight": 0.0}
    if a.get("trainer.resume_mode", "disable") == "resume_path":
        path = a.get("trainer.resume_from_path", "")
        m = re.search(r"global_step_(\d+)$", path.rstrip("/"))
        if not m:
            raise SystemExit(f"argus.jobs.steps: resume ckpt must specify the global_steps: {path!r}")
        start = int(m.group(1))
        with open(os.path.join(path, "actor", "state.json")) as f:
            state = json.load(f)
        print(f"resumed from step {start} ({path})", flush=True)
    else:
        print("training from scratch", flush=True)
    os.makedirs(folder, exist_ok=True)
    hang_at = int(a.get("hang_at", "0"))
    held = bytearray(int(a.get("hold_mib", "0")) * 2**20)
    for i in range(0, len(held), 4096):
        held[i] = 1  # touched: resident, not just reserved
    busy = a.get("busy", "0") == "1"
    test_freq = int(a.get("trainer.test_freq", "-1"))
    val_per_step = float(a["val_per_step"]) if "val_per_step" in a else None
    if start:
        start += int(a.get("resume_skew", "0"))
    for step in range(start + 1, total + 1):
        if busy:
            until = time.monotonic() + pause
            while time.monotonic() < until:
                pass
        else:
            time.sleep(pause)
        state["weight"] += 1.0
        line = f"step:{step} - loss:{1.0 / step:.4f} - weight:{state['weight']:.1f}"
        if val_per_step is not None and test_freq > 0 and (step % test_freq == 0 or step == total):
            line += f" - val-core/steps/score/mean@1:{val_per_step * step:.6g}"
        print(line, flush=True)
        if save_freq > 0 and step % save_freq == 0:
            _save(folder, step, state)
        while step == hang_at:  # silent and alive, like a rank stuck in a collective
            time.sleep(3600)
    print(f"done at step {total}, weight {state['weight']:.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
