"""The home a corpus spec runs against: every model, dataset and config folder it names, made tiny."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path

from tests.verl.conftest import make_tiny_model, write_rl_parquet, write_sft_parquet

CORPUS = Path(__file__).parent / "corpus"
SPECS = sorted((CORPUS / "specs").glob("*.yaml"))
_REF = re.compile(r"\$HOME/(models|datasets)/([\w.\-/]+)")


def prepare(home: Path) -> None:
    """Tiny copies of every ``$HOME/models/<name>`` and ``$HOME/datasets/<file>`` the corpus names."""
    tiny = home / "models" / "tiny"
    if not tiny.exists():
        make_tiny_model(tiny)
    shutil.copytree(CORPUS / "code", home / "code", dirs_exist_ok=True)

    def dataset(target: Path, spec_text: str) -> None:
        (write_sft_parquet if "workload: sft" in spec_text else write_rl_parquet)(target, 16)

    populate(home, SPECS, tiny, dataset)


def populate(home: Path, specs: list[Path], tiny: Path, dataset: Callable[[Path, str], None]) -> None:
    """Every ``$HOME/models/<name>`` the specs name as a hard-linked copy of ``tiny``, every
    ``$HOME/datasets/<file>`` written by ``dataset(target, spec text)``; what exists is kept."""
    for spec in specs:
        text = spec.read_text()
        for kind, rel in _REF.findall(text):
            target = home / kind / rel.rstrip("/")
            if target.exists():
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            if kind == "models":
                shutil.copytree(tiny, target, copy_function=os.link)
            else:
                dataset(target, text)
