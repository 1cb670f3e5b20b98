"""Turn verl's own example run scripts into Argus advanced specs (the admission corpus, issue 9).

    python scripts/verl_corpus.py <verl checkout> <out dir> SCRIPT...

Each script is run by bash with ``python3``/``python``/``torchrun``/``ray`` replaced by a stub that
records the fully expanded argv (so the script's own variables, defaults and quoting are applied
exactly as bash would), then:

* ``$HOME/data/...`` (and any other data file) becomes ``$HOME/datasets/...``; model paths and Hugging
  Face ids become ``$HOME/models/<name>``; other absolute paths move under ``$HOME/work/``: what a
  user of Argus writes instead of the script author's machine paths;
* ``$@``, ``2>&1 | tee ...`` and the like disappear (bash consumed them);
* the spec records its source (repository, commit, path) and verl's verdict, computed by
  ``tests/verl/corpus_truth.py`` (verl's own config stage, run apart from Argus).

Nothing here runs in the tests: the specs it wrote are checked in under ``tests/verl/corpus/``.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

STUB = """#!/bin/sh
i=0; f="$CAPTURE_DIR/$(date +%s%N)"
for a in "$0" "$@"; do printf '%s\\0' "$a"; done > "$f"
"""
RAY_STUB = """#!/bin/sh
while [ $# -gt 0 ] && [ "$1" != "--" ]; do shift; done
[ $# -gt 0 ] && shift && exec "$@"
"""
MODEL_KEYS = ("model.path", "model.tokenizer_path", "model.partial_pretrain", "reward_model.model.path",
              "model.hf_config_path", "model.lora_adapter_path")
DATA_KEYS = ("data.train_files", "data.val_files")
FAKE_HOME = "/corpus-home"


def capture(script: Path, verl: Path) -> list[list[str]]:
    with tempfile.TemporaryDirectory() as tmp:
        bindir, cap = Path(tmp, "bin"), Path(tmp, "cap")
        bindir.mkdir()
        cap.mkdir()
        for name in ("python3", "python", "torchrun"):
            (bindir / name).write_text(STUB)
        (bindir / "ray").write_text(RAY_STUB)
        for name in ("nvidia-smi", "huggingface-cli", "hf", "wget", "pip", "pip3", "git", "sleep"):
            (bindir / name).write_text("#!/bin/sh\nexit 0\n")
        for p in bindir.iterdir():
            p.chmod(0o755)
        env = {"PATH": f"{bindir}:/usr/bin:/bin", "HOME": FAKE_HOME, "CAPTURE_DIR": str(cap)}
        subprocess.run(["bash", str(script), *(["8", f"{FAKE_HOME}/checkpoints/sft"] if "/sft/" in str(script) else [])], cwd=verl, env=env, timeout=30, capture_output=True)
        out = []
        for f in sorted(cap.iterdir()):
            argv = f.read_bytes().split(b"\0")[:-1]
            out.append([a.decode() for a in argv])
        return out


def _model_name(value: str) -> str:
    return value.rstrip("/").rsplit("/", 1)[-1] or "model"


def rewrite_value(key: str, value: str) -> str:
    base = key.split(".", 1)[-1] if key.startswith(("actor_rollout_ref.", "critic.", "+")) else key
    if any(key.endswith(k) for k in MODEL_KEYS) or base in MODEL_KEYS:
        if value and value not in ("null", "None") and not value.startswith("$"):
            return f"$HOME/models/{_model_name(value)}"
    if key in DATA_KEYS:
        value = re.sub(r"(?:/corpus-home|~)/data/|/[\w./-]*/data/", "$HOME/datasets/", value)
        value = re.sub(r"(^|(?<=[\[',\" ]))data/", "$HOME/datasets/", value)  # relative to the verl checkout
        # any other machine path: the file's folder and name under $HOME/datasets
        return re.sub(r"(?<![\w$])/(?:[\w.-]+/)*([\w.-]+/[\w.-]+)", r"$HOME/datasets/\1", value)
    value = value.replace(FAKE_HOME + "/", "$HOME/")
    value = re.sub(r"/\S*?/(?:examples|recipe)/", "$HOME/code/", value)  # the script's own files: user code
    return re.sub(r"(?<![\w$:/])/(?:[\w.-]+/)+[\w.-]+", lambda m: "$HOME/work" + m.group(0), value)


def to_command(argv: list[str]) -> tuple[str, str | None]:
    """A spec command (one word per line) and the entry module."""
    program = "torchrun" if os.path.basename(argv[0]) == "torchrun" else "python3"
    words: list[str] = []
    i = 1
    module = None
    while i < len(argv):
        a = argv[i]
        if a == "-m" and module is None and i + 1 < len(argv):
            module = argv[i + 1]
            words.insert(0, " ".join([program, *words, "-m", module]))
            del words[1:]
            i += 2
            continue
        if a.startswith("--config-path="):
            a = "--config-path=" + rewrite_value("", a.split("=", 1)[1])
        m = re.match(r"^(\+\+|\+|~)?([A-Za-z_][\w.\-/@]*)=(.*)$", a, re.S)
        if m:
            a = f"{m.group(1) or ''}{m.group(2)}={rewrite_value(m.group(2), m.group(3))}"
        words.append(a)
        i += 1
    return " \\\n  ".join([words[0], *(_quote(w) for w in words[1:])]), module


def _quote(word: str) -> str:
    if "$HOME" in word:  # Argus expands $HOME itself: keep it visible, quote the rest for the shell
        return '"' + word.replace('"', '\\"').replace("`", "\\`") + '"' if re.search(r"[\s'\[\]*?{}]", word) else word
    return shlex.quote(word)


def main() -> None:
    verl, out = Path(sys.argv[1]), Path(sys.argv[2])
    commit = subprocess.run(["git", "-C", str(verl), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    version = (verl / "verl" / "version" / "version").read_text().strip()
    out.mkdir(parents=True, exist_ok=True)
    for rel in sys.argv[3:]:
        runs = [r for r in capture(verl / rel, verl) if "-m" in r]
        if not runs:
            print(f"skip {rel}: no python -m command captured", file=sys.stderr)
            continue
        command, module = to_command(runs[0])
        command = command.replace(f"$HOME/work{verl.resolve()}", "$HOME/work")  # the checkout's own folder
        text = " ".join(runs[0])
        if re.search(r"data\.(train|val)_files=(\s|$)", command) or "custom_reward_function" in command:
            print(f"skip {rel}: data files set outside the script / a reward needing its recipe", file=sys.stderr)
            continue
        workload = "sft" if module and "sft" in module else "grpo" if "adv_estimator=grpo" in text else "ppo"
        nnodes = re.search(r"trainer\.nnodes=(\d+)", text)
        gpus = re.search(r"trainer\.n_gpus_per_node=(\d+)", text) or re.search(r"--nproc_per_node[= ](\d+)", text)
        name = rel.removeprefix("examples/").removesuffix(".sh").replace("/", "__")
        spec = (f"# source: volcengine/verl@{commit[:12]} {rel} (verl {version})\n"
                f"kind: advanced\nworkload: {workload}\nname: {name[:100]}\n"
                f"nnodes: {nnodes.group(1) if nnodes else 1}\nn_gpus_per_node: {gpus.group(1) if gpus else 8}\n"
                "command: |\n" + "".join(f"  {line}\n" for line in command.splitlines()))
        (out / f"{name}.yaml").write_text(spec)
        print(f"wrote {name}.yaml")


if __name__ == "__main__":
    main()
