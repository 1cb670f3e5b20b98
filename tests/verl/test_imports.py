"""The static import walk behind the doctor's "can the trainers start here?" check."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from argus.verl.imports import ENTRY_MODULES, imports_in, walk


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, src in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(src))


def test_walk_follows_function_level_and_relative_imports_and_classifies(tmp_path: Path) -> None:
    _write(tmp_path, {
        "fv/__init__.py": "import toplevel_dep\n",
        "fv/trainer/__init__.py": "",
        "fv/trainer/main.py": """
            import os
            from typing import TYPE_CHECKING
            if TYPE_CHECKING:
                import only_for_typing
            def run():
                import hidden_dep            # like transfer_queue in main_ppo.run
                from fv.workers import router
            """,
        "fv/workers/__init__.py": "from .impl import helper\n",
        "fv/workers/impl.py": """
            def helper():
                import importlib
                return importlib.import_module("fv.plugins.late")
            """,
        "fv/workers/router.py": """
            from cachetools_like import LRU   # like cachetools in verl's rollout router
            try:
                import guarded_kernel
            except ImportError:
                guarded_kernel = None
            def f():
                import vllm
            """,
        "fv/plugins/__init__.py": "",
        "fv/plugins/late.py": "import late_dep.sub\n",
        "fv/never.py": "import never_reached\n",
    })
    present = {"toplevel_dep", "late_dep"}
    rep = walk(["fv.trainer.main"], root=tmp_path, installed=lambda n: n in present)
    assert set(rep.packages) == {"toplevel_dep", "hidden_dep", "cachetools_like", "guarded_kernel", "vllm", "late_dep"}
    assert "fv.never" not in rep.modules and "fv.plugins.late" in rep.modules and rep.unresolved == []
    missing_required = [p.name for p in rep.missing(required=True)]
    assert missing_required == ["cachetools_like", "hidden_dep"]
    assert rep.packages["hidden_dep"].where.module == "fv.trainer.main"
    assert rep.packages["cachetools_like"].where.module == "fv.workers.router"
    optional = {p.name: p.optional for p in rep.missing(required=False)}
    assert "guarded" in optional["guarded_kernel"] and "rollout engine" in optional["vllm"]
    assert rep.packages["toplevel_dep"].installed and rep.packages["toplevel_dep"].required


def test_a_missing_entry_module_is_reported_unresolved(tmp_path: Path) -> None:
    _write(tmp_path, {"fv/__init__.py": ""})
    rep = walk(["fv.trainer.gone"], root=tmp_path, installed=lambda n: True)
    assert rep.unresolved == ["fv.trainer.gone"] and rep.packages == {}


def test_imports_in_resolves_relative_names_and_guards() -> None:
    src = textwrap.dedent("""
        from . import sibling
        from ..up import thing
        from contextlib import suppress
        with suppress(ImportError):
            import maybe
        try:
            import a.b
        except (ModuleNotFoundError, OSError):
            pass
        try:
            import not_guarded
        except ValueError:
            pass
    """)
    got = {(name, guarded) for name, _, guarded in imports_in(src, "pkg.sub.mod", is_package=False)}
    assert ("pkg.sub", False) in got and ("pkg.sub.sibling", False) in got
    assert ("pkg.up", False) in got and ("pkg.up.thing", False) in got
    assert ("maybe", True) in got and ("a.b", True) in got and ("not_guarded", False) in got


def test_the_installed_verl_has_every_required_package() -> None:
    """Catches a training environment without verl's `verl-core` extra (TransferQueue, cachetools, …)."""
    pytest.importorskip("verl")
    rep = walk(ENTRY_MODULES)
    assert rep.unresolved == [], rep.unresolved
    assert len(rep.modules) > 50
    for name in ("transfer_queue", "cachetools", "torch", "ray", "hydra", "tensordict", "transformers"):
        assert name in rep.packages and rep.packages[name].required, name
    missing = [f"{p.name} (imported at {p.where})" for p in rep.missing(required=True)]
    assert missing == [], "verl's trainers import packages this environment lacks: " + ", ".join(missing)
    assert not rep.packages["vllm"].required and not rep.packages["flash_attn"].required
