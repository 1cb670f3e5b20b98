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


def spec_templates(lang: str) -> dict[str, str]:
    return {name: (DIR / f"{name}.{lang}.yaml").read_text(encoding="utf-8") for name in NAMES}
