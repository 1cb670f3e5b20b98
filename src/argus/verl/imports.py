"""Which third-party packages can verl's trainers reach, and which of them are missing here?

Why static: the first GPU run showed basic GRPO tasks dying after half a minute of start-up on
``No module named 'transfer_queue'`` (an import inside ``TaskRunnerV1.run`` in
``verl/trainer/main_ppo.py``) and then on ``cachetools`` (``verl/workers/rollout/router.py``,
reached only from inside functions). Importing the entry modules does not execute those
imports; walking the source does. This module walks the verl modules that the trainers Argus
templates (``verl.trainer.main_ppo``, ``verl.trainer.sft_trainer``) import, transitively and
including imports inside functions, with :mod:`ast` only (nothing is imported, so it also works
where verl's own dependencies are broken), and collects the third-party top-level packages.

Classification of a third-party package (first match wins):

* **optional, guarded**: every import site sits in the body of a ``try`` whose handler catches
  ``ImportError`` (or ``ModuleNotFoundError``/``Exception``/bare), or in
  ``with contextlib.suppress(ImportError)``, or in a verl module that only such a guarded import
  reaches (verl's engine registry imports its Megatron/torchtitan/VeOmni engines that way): verl
  itself carries on without it;
* **optional, a backend**: the package belongs to one of the :data:`OPTIONAL` families below: an
  engine or kernel that a config key selects (``rollout.name``, ``strategy``, ``trainer.logger``…),
  not one that every task needs. The families are listed with their reasons;
* otherwise **required**: a basic task may execute that import, so a missing one is a failure.

Imports under ``if TYPE_CHECKING:`` are ignored. A new verl that imports a package not yet in a
family shows up as *required*: loud on purpose (``tests/verl/test_imports.py`` runs this on the
installed verl), so the list is extended deliberately, with a reason, never silently.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

ENTRY_MODULES = ("verl.trainer.main_ppo", "verl.trainer.sft_trainer")

# Engines and kernels a config key (or the platform) selects; verl 0.9.1 imports each of these
# somewhere on the trainers' import graph without a try/except. Packages that verl imports only
# under a guard, or in a module that only a guarded import reaches (mbridge, hdfs_io, the
# torchtitan/VeOmni/automodel engines, the NCCL/NIXL/Mooncake checkpoint engines), need no entry:
# the guard says it. Top-level import names, grouped by the reason.
OPTIONAL: dict[str, tuple[str, ...]] = {
    "a rollout engine, chosen by actor_rollout_ref.rollout.name (pynvml: TensorRT-LLM's rollout)":
        ("vllm", "sglang", "tensorrt_llm", "flashinfer", "pynvml"),
    "Megatron or FSDP-turbo, chosen by the actor's strategy / fsdp_config": ("megatron", "fsdp_turbo"),
    "an attention or fused kernel (flash-attn, Liger, linear attention, Triton); sdpa works without":
        ("flash_attn", "liger_kernel", "fla", "triton", "einops"),
    "Ascend NPU only": ("torch_npu", "vllm_ascend"),
    "an experiment tracker, chosen by trainer.logger (Argus's templates log to the console)":
        ("wandb", "tensorboard", "mlflow", "swanlab", "clearml", "trackio", "weave", "volcengine_ml_platform",
         "rl_insight"),
    "quantisation-aware training and FP8/NVFP4 export": ("compressed_tensors", "modelopt"),
    "a model hub other than Hugging Face (VERL_USE_MODELSCOPE)": ("modelscope",),
    "a critic with a TRL value head": ("trl",),
}
_FAMILY = {pkg: reason for reason, pkgs in OPTIONAL.items() for pkg in pkgs}
_IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}


@dataclass(frozen=True)
class Site:
    """One ``import`` statement: where it is and whether a ``try/except ImportError`` guards it."""

    module: str
    line: int
    guarded: bool

    def __str__(self) -> str:
        return f"{self.module}:{self.line}" + (" (guarded)" if self.guarded else "")


@dataclass
class Package:
    """A third-party top-level package that verl's trainers import."""

    name: str
    sites: list[Site] = field(default_factory=list)
    installed: bool = False
    optional: str | None = None  # why it is optional; None: required

    @property
    def required(self) -> bool:
        return self.optional is None

    @property
    def where(self) -> Site:
        """The import that makes it needed: the first unguarded one, else the first."""
        return min(self.sites, key=lambda s: (s.guarded, s.module, s.line))


@dataclass
class ImportReport:
    entries: tuple[str, ...]
    modules: list[str]  # verl modules walked
    packages: dict[str, Package]
    unresolved: list[str]  # entry modules (or unreadable files) not found in the source tree

    def missing(self, *, required: bool) -> list[Package]:
        return [p for _, p in sorted(self.packages.items()) if not p.installed and p.required == required]


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(getattr(t, "id", getattr(t, "attr", None)) in _IMPORT_ERRORS for t in types)


def _suppresses_import_error(node: ast.With) -> bool:
    for item in node.items:
        call = item.context_expr
        if isinstance(call, ast.Call) and getattr(call.func, "id", getattr(call.func, "attr", "")) == "suppress":
            if any(getattr(a, "id", getattr(a, "attr", None)) in _IMPORT_ERRORS for a in call.args):
                return True
    return False


def _is_type_checking(test: ast.expr) -> bool:
    return getattr(test, "id", getattr(test, "attr", None)) == "TYPE_CHECKING"


def imports_in(source: str, module: str, *, is_package: bool) -> list[tuple[str, int, bool]]:
    """Every absolute module name ``source`` imports, with its line and whether it is guarded.

    ``from a import b`` yields both ``a`` and ``a.b`` (``b`` may be a submodule); relative
    imports are resolved against ``module``. Imports anywhere count (functions, classes,
    branches) except under ``if TYPE_CHECKING:``; so do ``importlib.import_module("literal")``
    calls.
    """
    package = module if is_package else module.rpartition(".")[0]
    found: list[tuple[str, int, bool]] = []

    def visit(node: ast.AST, guarded: bool) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child, guarded)
            return
        if isinstance(node, ast.Try | ast.TryStar):
            body_guarded = guarded or any(_catches_import_error(h) for h in node.handlers)
            for child in node.body:
                visit(child, body_guarded)
            for child in [*node.handlers, *node.orelse, *node.finalbody]:
                visit(child, guarded)
            return
        if isinstance(node, ast.With | ast.AsyncWith) and _suppresses_import_error(node):
            for child in node.body:
                visit(child, True)
            return
        if isinstance(node, ast.Import):
            found.extend((a.name, node.lineno, guarded) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1])
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            found.append((target, node.lineno, guarded))
            found.extend((f"{target}.{a.name}", node.lineno, guarded) for a in node.names if a.name != "*")
        elif (isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "import_module"
              and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
              and not node.args[0].value.startswith(".")):
            found.append((node.args[0].value, node.lineno, guarded))
        for child in ast.iter_child_nodes(node):
            visit(child, guarded)

    visit(ast.parse(source), False)
    return found


def _source_of(root: Path, module: str) -> Path | None:
    """The file of ``module`` under ``root`` (the folder that holds the top-level package)."""
    base = root.joinpath(*module.split("."))
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    return None


def package_root(top: str = "verl") -> Path | None:
    """The folder holding package ``top``, found without importing it (its deps may be broken)."""
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))).parent


def is_installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def walk(entries: Iterable[str] = ENTRY_MODULES, *, root: Path | None = None,
         installed=is_installed, stdlib: Iterable[str] = sys.stdlib_module_names) -> ImportReport:
    """Follow ``entries``' imports through their top-level package's source; classify the rest."""
    entries = tuple(entries)
    top = entries[0].split(".")[0]
    root = root or package_root(top)
    skip = set(stdlib) | {"__future__", top}
    packages: dict[str, Package] = {}
    seen: set[str] = set()
    unresolved: set[str] = set()
    # Two passes: first what unguarded imports reach ("hard"), then what only a guarded import
    # reaches (e.g. verl.workers.engine's `try: from .megatron import ...`): every import in
    # such a module is as optional as the guarded import that leads there.
    queue = [(m, False) for m in entries]
    soft: list[tuple[str, bool]] = []
    while queue or soft:
        module, guarded_path = queue.pop() if queue else soft.pop()
        if module in seen:
            continue
        seen.add(module)
        path = _source_of(root, module) if root else None
        if path is None:
            unresolved.add(module)
            continue
        try:
            found = imports_in(path.read_text(encoding="utf-8"), module, is_package=path.name == "__init__.py")
        except (SyntaxError, UnicodeDecodeError, OSError):
            unresolved.add(module)
            continue
        for name, line, guarded in found:
            guarded = guarded or guarded_path
            first = name.split(".")[0]
            if first == top:
                parts = name.split(".")
                # importing a.b.c runs a/__init__, a/b/__init__ and c; `from a.b import x` may name a
                # function rather than a module, so only names with a source file are followed
                for i in range(1, len(parts) + 1):
                    sub = ".".join(parts[:i])
                    if sub not in seen and _source_of(root, sub):
                        (soft if guarded else queue).append((sub, guarded))
            elif first and first not in skip:
                packages.setdefault(first, Package(first)).sites.append(Site(module, line, guarded))
    for pkg in packages.values():
        pkg.installed = installed(pkg.name)
        if all(s.guarded for s in pkg.sites):
            pkg.optional = "every import of it is guarded by try/except ImportError (or only a guarded import leads there)"
        else:
            pkg.optional = _FAMILY.get(pkg.name)
    return ImportReport(entries, sorted(seen - unresolved), packages, sorted(unresolved))


def main() -> int:
    """``python -m argus.verl.imports``: print the analysis (the doctor prints the same facts)."""
    rep = walk()
    print(f"walked {len(rep.modules)} verl modules from {', '.join(rep.entries)}; "
          f"{len(rep.packages)} third-party packages")
    for name, pkg in sorted(rep.packages.items()):
        state = "installed" if pkg.installed else "MISSING"
        kind = "required" if pkg.required else f"optional ({pkg.optional})"
        print(f"{name:24} {state:9} {kind}; imported at {pkg.where}")
    return 1 if rep.missing(required=True) else 0


if __name__ == "__main__":
    sys.exit(main())
