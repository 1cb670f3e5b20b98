"""``python3 -m argus.jobs.build_env --name NAME --requirements FILE``: a user builds a training environment
of their own, in their home, as a task (issue 22).

    kind: advanced
    workload: job
    nnodes: 1
    n_gpus_per_node: 0
    command: python3 -m argus.jobs.build_env --name myverl --requirements $HOME/code/requirements.txt

Why a task: installing a requirements file runs code (build backends, a fork's ``setup.py``),
so it runs where the user's code runs — in their sandbox on a worker, which shows only their
home read-write, as their quota counts it. The environment is
``$HOME/envs/<name>/venv``; its manifest (``argus-env.json``, owner = the user) makes it
nameable as ``env: ~/envs/<name>`` in that user's specs only. The environment's interpreter
is then checked (real imports of verl, torch, Ray: ``argus.envs.probe``), and a build whose
check fails exits 1 with the reasons, leaving the manifest marked broken.

Standard library only (plus the ``uv`` binary that comes with Argus, named by ``ARGUS_UV``):
this runs under whatever environment the build task itself names.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

NAME_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")  # argus.envs.catalog.NAME_RE
MANIFEST = "argus-env.json"  # argus.envs.registry.MANIFEST
PROBE = Path(__file__).resolve().parents[1] / "envs" / "probe.py"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python3 -m argus.jobs.build_env", description=__doc__.splitlines()[0])
    p.add_argument("--name", required=True, help="the environment's name: env: ~/envs/NAME")
    p.add_argument("--requirements", required=True, type=Path, help="a requirements file in your home")
    p.add_argument("--python", default="3.11", help="the Python version to build it for (installed on the worker)")
    p.add_argument("--description", default="")
    p.add_argument("--force", action="store_true", help="replace an environment of the same name")
    ns = p.parse_args(argv)
    if not NAME_RE.match(ns.name):
        p.error(f"--name {ns.name!r}: 1-64 characters: lower-case letters, digits, '.', '_' or '-'")
    return ns


def uv_binary() -> str:
    found = os.environ.get("ARGUS_UV") or shutil.which("uv")
    if not found or not os.access(found, os.X_OK):
        raise SystemExit("build_env: uv is not available on this worker (ARGUS_UV unset): ask an admin")
    return found


def run(argv: list[str]) -> None:
    print("$", " ".join(argv), flush=True)
    done = subprocess.run(argv, stdin=subprocess.DEVNULL)
    if done.returncode:
        raise SystemExit(f"build_env: {argv[1]} {argv[2]} failed (exit {done.returncode})")


def main(args: list[str] | None = None) -> int:
    ns = parse_args(args)
    home = Path(os.environ.get("HOME", "."))
    user = os.environ.get("ARGUS_USER", "")
    folder = home / "envs" / ns.name
    if (folder / MANIFEST).exists() and not ns.force:
        raise SystemExit(f"build_env: {folder} exists; pass --force to replace it")
    requirements = ns.requirements.expanduser()
    if not requirements.is_file():
        raise SystemExit(f"build_env: {requirements} is not a file (upload it to your home first)")
    uv = uv_binary()
    started = time.monotonic()
    work = home / "envs" / f".building-{ns.name}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    run([uv, "venv", "--relocatable", "--python", ns.python, str(work / "venv")])
    links = [a for v in (os.environ.get("PIP_FIND_LINKS", ""), os.environ.get("UV_FIND_LINKS", "")) for a in v.split()]
    # bytecode now, once: each task's processes would otherwise compile the packages again (argus.envs.build)
    run([uv, "pip", "install", "--python", str(work / "venv" / "bin" / "python"), "--compile-bytecode",
         "-r", str(requirements), *(f"--find-links={link}" for link in links)])
    shutil.copyfile(requirements, work / "requirements.txt")
    shutil.rmtree(folder, ignore_errors=True)
    os.replace(work, folder)
    python = str(folder / "venv" / "bin" / "python")
    done = subprocess.run([python, "-I", str(PROBE), "--imports"], capture_output=True, text=True, timeout=600)
    try:
        report = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        report = {"problems": [f"the check could not run: {done.stderr.strip()[-500:]}"]}
    now = datetime.now(UTC).isoformat(timespec="seconds")
    verl = (report.get("versions") or {}).get("verl") or ""
    manifest = {"name": ns.name, "python": python, "prefix": str(folder / "venv"), "owner": user,
                "source": "requirements", "description": ns.description or f"built from {requirements.name}",
                "created_at": now, "checked_at": now, "templates": verl.startswith("0.9."), "probe": report}
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    took = time.monotonic() - started
    if report.get("problems"):
        print(f"build_env: built in {took:.0f} s but the check failed: " + "; ".join(report["problems"]), flush=True)
        return 1
    print(f"build_env: ~/envs/{ns.name} ready in {took:.0f} s: verl {verl}, torch "
          f"{(report.get('versions') or {}).get('torch')}; name it in a spec with env: ~/envs/{ns.name}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
