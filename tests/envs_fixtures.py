"""Training environments built from Argus's own catalog locks, once per lock, for every test session.

A build takes seconds from uv's cache and a few minutes the first time on a machine (it
downloads verl, Ray and their dependencies from the index; CPU torch is the local wheel). So
each environment is built into ``$ARGUS_TEST_ENV_CACHE`` (default ``~/.cache/argus/test-envs``),
one folder per catalog entry, lock hash and ``build.BUILD_REVISION``: a changed lock builds afresh, an unchanged one is
reused by the next session and the next CI run on the machine. Builds are atomic (a rename),
so an interrupted session leaves nothing half-built to reuse.

``install_env(root, name)`` registers a built environment under a test's data root by writing
its manifest (the probe's report kept from the build): no second multi-second check per test.
"""

from __future__ import annotations

import fcntl
import os
import shutil
from pathlib import Path

import pytest

from argus.envs import build, catalog
from argus.envs.registry import MANIFEST, Environment, Registry, run_probe

# Resolved once, at import: tests that point HOME at a temp dir must not rebuild (or re-download) anything.
CACHE = Path(os.environ.get("ARGUS_TEST_ENV_CACHE", Path.home() / ".cache" / "argus" / "test-envs"))
UV_CACHE = os.environ.get("UV_CACHE_DIR", str(Path.home() / ".cache" / "uv"))


def cache_dir() -> Path:
    return CACHE


def built(name: str) -> Environment:
    """The catalog environment ``name``, built once per lock into the cache; its manifest."""
    entry = catalog.entry(name)
    assert entry is not None, name
    sha = (entry.lock_sha256() or "nolock")[:12]
    root = cache_dir() / f"{name}-{sha}-b{build.BUILD_REVISION}"
    manifest = root / "envs" / name / MANIFEST
    if not manifest.is_file():
        root.mkdir(parents=True, exist_ok=True)
        # pytest-xdist workers may ask for the same environment at once: one builds, the others wait for it
        # (the build's own rename is atomic, but the clean-up of a half-built folder below is not).
        with open(root.parent / f".{root.name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not manifest.is_file():
                shutil.rmtree(root / "envs", ignore_errors=True)
                os.environ["UV_CACHE_DIR"] = UV_CACHE
                build.build(entry, Registry(root, "/nonexistent"), echo=None)
    env = Environment.load(manifest)
    if "lm_eval" not in env.probe:  # built by an older Argus: the facts its probe now adds are filled in, once
        with open(root.parent / f".{root.name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            env = Environment.load(manifest)
            fresh = run_probe(env.python, imports=False)
            env.probe = {**fresh, **env.probe, "versions": {**fresh.get("versions", {}), **env.probe.get("versions", {})}}
            env.dump(manifest.parent)
    return env


def install_env(data_root: Path, name: str, *, as_name: str | None = None) -> Environment:
    """Register the cached build of ``name`` under ``data_root`` (as ``as_name``) without re-probing it."""
    env = built(name)
    env.name = as_name or name
    env.dump(data_root / "envs" / env.name)
    return env


LM_EVAL_ENV = "verl-0.9.1-vllm-cpu"  # the catalog environment whose lock has lm-eval


def lm_eval_env(data_root: Path) -> str:
    """Register the environment with lm-eval under ``data_root``: an lm-eval task is refused elsewhere."""
    install_env(data_root, LM_EVAL_ENV)
    return LM_EVAL_ENV


@pytest.fixture(scope="session")
def verl041_python() -> str:
    """The interpreter of the verl 0.4.1 CPU environment (catalog entry verl-0.4.1-cpu)."""
    return built("verl-0.4.1-cpu").python


@pytest.fixture(scope="session")
def verl091_cpu_python() -> str:
    """The interpreter of the verl 0.9.1 CPU environment (catalog entry verl-0.9.1-cpu)."""
    return built("verl-0.9.1-cpu").python
