"""The training environments Argus ships a lock for (``argus/envs/catalog/<name>/``).

Each entry is a folder: ``env.yaml`` (what it is for, the Python and platform its lock is
resolved for, its verl and rollout engines), ``requirements.in`` (what was asked for) and
``requirements.lock`` (every package pinned with its hashes, resolved by ``uv pip compile``
against the package index). A GPU environment's lock is resolved on any machine — no GPU,
nothing installed — for the GPU machine's Python and platform (``argus env lock``); building
installs exactly that lock (``argus env build``), so two builds from one lock hold the same files.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

import yaml

CATALOG_DIR = Path(__file__).with_name("catalog")
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
NAME_RULE = "1-64 characters: lower-case letters, digits, '.', '_' or '-', starting with a letter or digit"


@dataclass(frozen=True)
class CatalogEntry:
    name: str
    description: str
    python: str  # the Python version the lock is resolved for ("3.12")
    platform: str  # uv's --python-platform ("x86_64-manylinux_2_28")
    accelerator: str  # "cpu" or "cuda"
    verl: str
    folder: Path
    rollout: tuple[str, ...] = ()
    templates: bool = False  # the basic templates (verl 0.9 configs) are tested with this environment
    extra_index_urls: tuple[str, ...] = field(default=())
    sdist_only: tuple[str, ...] = field(default=("antlr4-python3-runtime",))  # pins PyPI has no wheel of
    cpu_plugin: bool = False  # install Argus's verl CPU platform after the lock (argus/envs/cpu_plugin)

    @property
    def requirements_in(self) -> Path:
        return self.folder / "requirements.in"

    @property
    def overrides(self) -> Path:
        """Versions that replace what a package declares (uv's --overrides), when the entry has them."""
        return self.folder / "overrides.txt"

    @property
    def excludes(self) -> Path:
        """Packages left out of the resolution whatever asks for them (uv's --excludes)."""
        return self.folder / "excludes.txt"

    @property
    def lock(self) -> Path:
        return self.folder / "requirements.lock"

    def lock_sha256(self) -> str | None:
        try:
            return hashlib.sha256(self.lock.read_bytes()).hexdigest()
        except OSError:
            return None


def load(folder: Path) -> CatalogEntry:
    data = yaml.safe_load((folder / "env.yaml").read_text()) or {}
    return CatalogEntry(
        name=folder.name, description=str(data.get("description", "")), python=str(data["python"]),
        platform=str(data.get("platform", "x86_64-manylinux_2_28")), accelerator=str(data.get("accelerator", "cpu")),
        verl=str(data["verl"]), folder=folder, rollout=tuple(data.get("rollout") or ()),
        templates=bool(data.get("templates", False)), extra_index_urls=tuple(data.get("extra_index_urls") or ()),
        sdist_only=tuple(data.get("sdist_only") or ("antlr4-python3-runtime",)),
        cpu_plugin=bool(data.get("cpu_plugin", False)))


def entries(catalog: Path = CATALOG_DIR) -> list[CatalogEntry]:
    return [load(p) for p in sorted(catalog.iterdir()) if (p / "env.yaml").is_file()]


def entry(name: str, catalog: Path = CATALOG_DIR) -> CatalogEntry | None:
    if not NAME_RE.match(name):
        return None
    folder = catalog / name
    return load(folder) if (folder / "env.yaml").is_file() else None


def uv_bin() -> str:
    """The ``uv`` that Argus installs with itself (a pinned dependency), else one on PATH."""
    try:
        from uv import find_uv_bin

        return find_uv_bin()
    except (ImportError, FileNotFoundError):
        pass
    beside = Path(sys.executable).with_name("uv")
    if beside.is_file():
        return str(beside)
    found = shutil.which("uv")
    if found is None:
        raise FileNotFoundError("uv is not installed (it comes with Argus: re-run scripts/bootstrap.sh)")
    return found


def find_links(extra: list[str] | None = None) -> list[str]:
    """Local wheel folders to look in: ``--find-links`` given, then pip's own ``PIP_FIND_LINKS`` (a site's
    wheelhouse, the local CPU torch wheel), so ``uv`` sees what ``pip install`` would."""
    links = list(extra or [])
    for value in (os.environ.get("PIP_FIND_LINKS", ""), os.environ.get("UV_FIND_LINKS", "")):
        links += [v for v in value.split() if v and v not in links]
    return links


def compile_argv(e: CatalogEntry, out: Path, *, links: list[str] | None = None) -> list[str]:
    """``uv pip compile`` resolving ``e``'s requirements for its Python and platform, with hashes, into ``out``.

    Resolution reads package metadata only: a GPU lock resolves here, with no GPU and without
    downloading the multi-GB CUDA wheels.
    """
    argv = [uv_bin(), "pip", "compile", str(e.requirements_in), "--python-version", e.python,
            "--python-platform", e.platform, "--generate-hashes", "--no-header", "--quiet",
            "--output-file", str(out)]
    if e.overrides.is_file():
        argv += ["--overrides", str(e.overrides)]
    if e.excludes.is_file():
        argv += ["--excludes", str(e.excludes)]
    for url in e.extra_index_urls:
        argv += ["--extra-index-url", url]
    for link in find_links(links):
        argv += ["--find-links", link]
    return argv


def pins(lock_text: str) -> dict[str, str]:
    """``{package: version}`` of a lock (``name==version \\`` lines; hashes and comments skipped)."""
    out: dict[str, str] = {}
    for line in lock_text.splitlines():
        m = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==([^\s;\\]+)", line)
        if m:
            out[m.group(1).lower().replace("_", "-")] = m.group(2)
    return out
