"""How much a build of each catalog environment downloads: the files its lock makes ``uv`` fetch.

    .venv/bin/python bench/env_sizes.py [NAME ...] [--wheels /opt/wheels] [--workers 16]

For every catalog entry (or the NAMEs given), reads the lock's pins and, for each, the file an
install on the entry's Python and platform would take: the best wheel for that interpreter
(cpXY, abi3, py3-none) and glibc (manylinux up to the entry's ``manylinux_2_N``), else the sdist.
Sizes come from PyPI's JSON API (``/pypi/<name>/<version>/json``; where a front end only serves
the project-level API, from the simple index's JSON form, PEP 691/700, which also gives sizes).
Local-version pins (``torch==2.13.0+cpu``) are not on PyPI: they are reported as local wheels and
sized from ``--wheels`` when the file is there. Nothing is downloaded but metadata; a package the
index does not answer for is reported, not fatal. Prints, per environment, the package count, the
total in MB and the five largest files, then one summary line per environment.
"""

from __future__ import annotations

import argparse
import re
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import httpx
from packaging.tags import Tag, compatible_tags, cpython_tags
from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion, Version

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from argus.envs import catalog  # noqa: E402 - after the path fix, so the bench runs from a checkout

PYPI = "https://pypi.org"
MB = 1e6
SIMPLE_JSON = "application/vnd.pypi.simple.v1+json"
PLATFORM_RE = re.compile(r"^(x86_64|aarch64)-manylinux_(\d+)_(\d+)$")
LEGACY_MANYLINUX = {17: "manylinux2014", 12: "manylinux2010", 5: "manylinux1"}
KINDS = {"wheel": "wheels", "sdist": "sdists (built at install)", "local wheel": "local wheels", "missing": "missing"}


@dataclass(frozen=True)
class File:
    filename: str
    size: int | None


@dataclass(frozen=True)
class Pick:
    """What one pin costs: the file chosen (or why none), its size and where it comes from."""

    name: str
    version: str
    kind: str  # "wheel", "sdist", "local wheel" or "missing"
    filename: str | None = None
    size: int | None = None
    note: str = ""


def supported_tags(python: str, platform: str) -> list[Tag]:
    """The wheel tags an install for ``python`` on ``platform`` accepts, best first (as pip ranks
    them), built for the target rather than read from this machine, which may differ."""
    m = PLATFORM_RE.match(platform)
    if m is None:
        raise ValueError(f"unsupported platform {platform!r} (expected ARCH-manylinux_2_N)")
    arch, glibc_minor = m.group(1), int(m.group(3))
    platforms = []
    for minor in range(glibc_minor, 4, -1):
        platforms.append(f"manylinux_2_{minor}_{arch}")
        if minor in LEGACY_MANYLINUX:
            platforms.append(f"{LEGACY_MANYLINUX[minor]}_{arch}")
    version = tuple(int(p) for p in python.split("."))[:2]
    interpreter = f"cp{version[0]}{version[1]}"
    return [*cpython_tags(version, platforms=platforms),
            *compatible_tags(version, interpreter=interpreter, platforms=platforms)]


def file_version(filename: str) -> tuple[str, Version | None]:
    """(``"wheel"``/``"sdist"``/``""``, version) of a distribution file name; ``""`` for others
    (eggs, exe installers), which an install never takes."""
    try:
        if filename.endswith(".whl"):
            return "wheel", parse_wheel_filename(filename)[1]
        if filename.endswith((".tar.gz", ".zip")):
            return "sdist", parse_sdist_filename(filename)[1]
    except (InvalidWheelFilename, InvalidSdistFilename, InvalidVersion):
        pass
    return "", None


def choose(files: list[File], ranks: dict[Tag, int]) -> tuple[str, File] | None:
    """The file an installer takes: the wheel whose best tag ranks highest, else an sdist."""
    best: tuple[int, File] | None = None
    sdist: File | None = None
    for f in files:
        kind, _ = file_version(f.filename)
        if kind == "sdist" and sdist is None:
            sdist = f
        elif kind == "wheel":
            rank = min((ranks[t] for t in parse_wheel_filename(f.filename)[3] if t in ranks), default=None)
            if rank is not None and (best is None or rank < best[0]):
                best = (rank, f)
    if best is not None:
        return "wheel", best[1]
    return ("sdist", sdist) if sdist is not None else None


class Index:
    """PyPI's file lists, fetched once per release (the same torch is in several environments)."""

    def __init__(self, client: httpx.Client) -> None:
        self.client = client
        self._projects: dict[str, list[dict] | None] = {}
        self._releases: dict[tuple[str, str], list[File] | None] = {}
        self._lock = threading.Lock()
        self.answered = {"release JSON": 0, "simple index": 0}  # which API the sizes came from

    def release(self, name: str, version: str) -> list[File] | None:
        """The files of ``name==version``, or None when the index has no such release."""
        key = (canonicalize_name(name), version)
        with self._lock:
            if key in self._releases:
                return self._releases[key]
        files = self._fetch_release(name, version)
        with self._lock:
            self._releases[key] = files
        return files

    def _fetch_release(self, name: str, version: str) -> list[File] | None:
        r = self.client.get(f"{PYPI}/pypi/{name}/{version}/json")
        if r.status_code == 200:
            self._count("release JSON")
            return [File(u["filename"], u.get("size")) for u in r.json().get("urls", [])]
        if r.status_code != 404:
            r.raise_for_status()
        # 404: no such release, or a front end that only serves /pypi/<name>/json; ask the simple index
        project = self._project(name)
        if project is None:
            return None
        want = Version(version)
        files = [File(f["filename"], f.get("size")) for f in project
                 if file_version(f["filename"])[1] == want]
        if files:
            self._count("simple index")
        return files or None

    def _count(self, source: str) -> None:
        with self._lock:
            self.answered[source] += 1

    def _project(self, name: str) -> list[dict] | None:
        key = canonicalize_name(name)
        with self._lock:
            if key in self._projects:
                return self._projects[key]
        r = self.client.get(f"{PYPI}/simple/{key}/", headers={"Accept": SIMPLE_JSON})
        if r.status_code == 404:
            files = None
        else:
            r.raise_for_status()
            files = r.json().get("files", [])
        with self._lock:
            self._projects[key] = files
        return files


def local_files(wheels: Path, name: str, version: str) -> list[File]:
    """Wheels of ``name==version`` in the local wheel folder (a local ``+cpu`` build is only there)."""
    if not wheels.is_dir():
        return []
    want, key = Version(version), canonicalize_name(name)
    out = []
    for p in wheels.glob("*.whl"):
        try:
            wname, wversion, _, _ = parse_wheel_filename(p.name)
        except (InvalidWheelFilename, InvalidVersion):
            continue
        if wname == key and wversion == want:
            out.append(File(p.name, p.stat().st_size))
    return out


def pick_local(name: str, version: str, ranks: dict[Tag, int], wheels: Path) -> Pick:
    chosen = choose(local_files(wheels, name, version), ranks)
    if chosen is None:
        return Pick(name, version, "local wheel", note=f"not on PyPI; no file in {wheels}")
    return Pick(name, version, "local wheel", chosen[1].filename, chosen[1].size)


def pick(index: Index, name: str, version: str, ranks: dict[Tag, int], wheels: Path) -> Pick:
    """The file one pin costs on one target; errors become a ``missing`` pick with the reason."""
    if "+" in version:
        return pick_local(name, version, ranks, wheels)
    try:
        files = index.release(name, version)
    except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:  # ValueError: bad JSON or version
        first_line = (str(exc).splitlines() or [""])[0]
        return Pick(name, version, "missing", note=f"{type(exc).__name__}: {first_line}")
    if files is None:
        return Pick(name, version, "missing", note="no such release on PyPI")
    chosen = choose(files, ranks)
    if chosen is None:
        return Pick(name, version, "missing", note="no wheel for this target and no sdist")
    kind, f = chosen
    note = "size unknown" if f.size is None else ("no wheel for this target: built at install" if kind == "sdist" else "")
    return Pick(name, version, kind, f.filename, f.size, note)


def measure(e: catalog.CatalogEntry, index: Index, pool: ThreadPoolExecutor, wheels: Path) -> list[Pick]:
    tags = supported_tags(e.python, e.platform)
    ranks = {t: i for i, t in reversed(list(enumerate(tags)))}  # a tag listed twice keeps its best rank
    pins = catalog.pins(e.lock.read_text())
    futures = [pool.submit(pick, index, n, v, ranks, wheels) for n, v in sorted(pins.items())]
    return [f.result() for f in futures]


def report(e: catalog.CatalogEntry, picks: list[Pick]) -> float:
    """Print one environment's table; returns its total in MB (for the summary)."""
    total = sum(p.size or 0 for p in picks) / MB
    local = sum(p.size or 0 for p in picks if p.kind == "local wheel") / MB
    counts = {k: sum(p.kind == k for p in picks) for k in KINDS}
    print(f"\n{e.name}  (Python {e.python}, {e.platform}, {e.accelerator})")
    print(f"  packages : {len(picks)}  ({', '.join(f'{n} {KINDS[k]}' for k, n in counts.items())})")
    print(f"  download : {total:9.1f} MB" + (f"  (of which {local:.1f} MB local wheels, not from PyPI)" if local else ""))
    print("  largest  :")
    for p in sorted(picks, key=lambda p: p.size or 0, reverse=True)[:5]:
        print(f"    {p.name + '==' + p.version:38s} {(p.size or 0) / MB:8.1f} MB  {p.filename}")
    for p in picks:
        if p.note:
            print(f"  note     : {p.name}=={p.version} ({p.kind}): {p.note}")
    return total


def selected(names: list[str]) -> list[catalog.CatalogEntry]:
    if not names:
        return catalog.entries()
    found = [(n, catalog.entry(n)) for n in names]
    unknown = [n for n, e in found if e is None]
    if unknown:
        sys.exit(f"no such catalog entry: {', '.join(unknown)} (known: {', '.join(e.name for e in catalog.entries())})")
    return [e for _, e in found if e is not None]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help="catalog entries (default: all)")
    ap.add_argument("--wheels", type=Path, default=Path("/opt/wheels"), help="local wheel folder")
    ap.add_argument("--workers", type=int, default=16)
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds per request")
    args = ap.parse_args()
    envs = selected(args.names)
    t0 = time.monotonic()
    transport = httpx.HTTPTransport(retries=2)
    with httpx.Client(timeout=args.timeout, transport=transport, follow_redirects=True) as client, \
            ThreadPoolExecutor(args.workers) as pool:
        index = Index(client)
        results = [(e, measure(e, index, pool, args.wheels)) for e in envs]
    totals = [(e, len(picks), report(e, picks)) for e, picks in results]
    sources = ", ".join(f"{n} from the {k}" for k, n in index.answered.items())
    print(f"\nsummary ({time.monotonic() - t0:.1f} s; distinct releases sized: {sources})")
    for e, n, mb in totals:
        print(f"  {e.name:22s} {n:4d} packages {mb:9.1f} MB")


if __name__ == "__main__":
    main()
