"""The New Task page's starting points: Basic PPO / GRPO / SFT and Advanced, in each UI language.

They are plain YAML files beside this module (comments in the page's language; the Advanced one
is the founding design's template, §2.2, with its Chinese comments). tests/web/test_templates.py
checks that each parses into a task spec. Their model and data paths are examples a new user has not
uploaded: ``core/example_paths.EXAMPLE_PATHS`` lists them (tests/core/test_example_paths.py checks), so
the first check says "upload your data first" once instead of an error per file.
"""

from __future__ import annotations

from pathlib import Path

NAMES = ("basic-ppo", "basic-grpo", "basic-sft", "advanced")
DIR = Path(__file__).parent / "spec_templates"


# ``device: cpu`` as the basic templates carry it when the default environment trains on CPU (services/first_run)
CPU_LINE = {
    "en": "device: cpu                                       # train on CPU: n_gpus_per_node counts CPU training workers\n",
    "zh": "device: cpu                                       # 在 CPU 上训练:n_gpus_per_node 为 CPU 训练进程数\n",
}


def spec_templates(lang: str, device: str = "gpu") -> dict[str, str]:
    """Each template's text; with ``device="cpu"`` the basic ones ask for CPU training (after their name line)."""
    out = {name: (DIR / f"{name}.{lang}.yaml").read_text(encoding="utf-8") for name in NAMES}
    if device == "cpu":
        for name in NAMES:
            if name.startswith("basic-"):
                head, sep, rest = out[name].partition("\nname:")
                line, nl, tail = rest.partition("\n")
                out[name] = f"{head}{sep}{line}{nl}{CPU_LINE[lang]}{tail}"
    return out
