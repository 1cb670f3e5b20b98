"""What the committed front-end bundles were built from, so a test can tell a stale bundle.

``scripts/build-web.sh`` bundles the npm packages pinned in ``web/frontend/package-lock.json``
with the entry files in ``web/frontend/src/`` and then runs ``python -m argus.web.buildinfo
write``: it records a digest of those inputs and of every built file, plus each bundled
package's version and license (``BUILD-INFO.json``, ``THIRD_PARTY.md``). The test recomputes
the digests without Node, so CI needs no npm to notice that someone changed the lockfile or
an entry file and forgot to rebuild, or edited a built file by hand.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

INFO = "BUILD-INFO.json"
NOTICE = "THIRD_PARTY.md"


def source_digest(frontend: Path) -> str:
    h = hashlib.sha256()
    for p in [frontend / "package.json", frontend / "package-lock.json", *sorted((frontend / "src").glob("*.js"))]:
        h.update(p.relative_to(frontend).as_posix().encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def built_digests(out: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(out.iterdir()) if p.is_file() and p.name not in (INFO, NOTICE)}


def bundled_packages(frontend: Path) -> list[dict[str, str]]:
    """Every runtime package of the lockfile (dev-only ones such as esbuild are not shipped)."""
    lock = json.loads((frontend / "package-lock.json").read_text())
    found = []
    for key, meta in sorted(lock.get("packages", {}).items()):
        if not key.startswith("node_modules/") or meta.get("dev"):
            continue
        name = key.removeprefix("node_modules/")
        found.append({"name": name, "version": meta.get("version", "?"), "license": meta.get("license", "?")})
    return found


def write(frontend: Path, out: Path) -> None:
    pkgs = bundled_packages(frontend)
    info = {"sources": source_digest(frontend), "files": built_digests(out), "packages": pkgs}
    (out / INFO).write_text(json.dumps(info, indent=1, sort_keys=True) + "\n")
    rows = "\n".join(f"| {p['name']} | {p['version']} | {p['license']} |" for p in pkgs)
    (out / NOTICE).write_text(
        "# Third-party code in these bundles\n\n"
        "Built by `scripts/build-web.sh` with esbuild from the npm registry, pinned by\n"
        "`web/frontend/package-lock.json`. Each package's license text is in its npm package.\n\n"
        "| package | version | license |\n|---|---|---|\n" + rows + "\n")


if __name__ == "__main__":  # python -m argus.web.buildinfo write FRONTEND OUT
    if len(sys.argv) != 4 or sys.argv[1] != "write":
        sys.exit("usage: python -m argus.web.buildinfo write FRONTEND_DIR OUT_DIR")
    write(Path(sys.argv[2]), Path(sys.argv[3]))
