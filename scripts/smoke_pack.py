"""``scripts/gpu-smoke.sh pack DIR [PRESENT.txt]``: the wheels a Python 3.12 + CUDA torch GPU machine lacks.

Run on a connected machine. Writes into DIR:

* cp312 manylinux x86_64 wheels (``pip download --only-binary=:all: --no-deps``) of every pin in
  ``constraints.txt`` except: torch; what the GPU machine already has (PRESENT.txt: ``pip freeze``
  output or one name per line, added to :data:`TORCH_WHEEL_DEPS`, what the torch 2.11 wheel itself
  installs, which is the default); and :data:`LEFT_OUT` (test tools, and large packages no smoke task imports: see there);
* sdist-only pins (antlr4-python3-runtime) built into wheels here (they are pure Python);
* ray, repacked without its Java jars and the libraries neither Argus, verl nor ``ray start`` use
  (rllib, tune, llm, source maps): :data:`RAY_DROP`;
  its binaries are stored LZMA-compressed;
* an argus wheel built from the checkout.

Prints each wheel's size and the total; exits 1 when the total exceeds 60 MiB (64 MiB may be carried to
the GPU machine). ``scripts/gpu-smoke.sh install DIR`` installs it with ``--no-index --no-deps``.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

LZMA_OVER = 4 * 2**20  # members larger than this are stored LZMA-compressed (repack_ray)
LIMIT = 60 * 2**20  # 64 MiB may travel in all: the checkout (~2 MiB) and shared/ go too
PLATFORMS = ("manylinux2014_x86_64", "manylinux_2_17_x86_64", "manylinux_2_27_x86_64", "manylinux_2_28_x86_64",
             "manylinux_2_31_x86_64", "manylinux_2_34_x86_64")
# What `pip install torch==2.11.0` (CUDA, Linux) brings besides the nvidia-* libraries and triton.
TORCH_WHEEL_DEPS = ("torch", "filelock", "typing-extensions", "sympy", "mpmath", "networkx", "jinja2",
                    "markupsafe", "fsspec", "setuptools", "triton")
LEFT_OUT = {
    # the test suite's tools, not the product's
    "pytest": "tests", "pytest-asyncio": "tests", "pytest-rerunfailures": "tests", "pytest-timeout": "tests",
    "hypothesis": "tests", "sortedcontainers": "tests (hypothesis)", "iniconfig": "tests", "pluggy": "tests",
    "ruff": "lint", "import-linter": "lint", "grimp": "lint", "paramiko": "tests (SFTP client)",
    "invoke": "tests (paramiko)", "psycopg": "PostgreSQL (the smoke test uses SQLite)",
    "psycopg-binary": "PostgreSQL (the smoke test uses SQLite)",
    # large, and only reached when a config asks for it
    "av": "video decoding for vision-language data (qwen_vl_utils); 30+ MB",
    "torchcodec": "video decoding for vision-language data; needs FFmpeg anyway",
    "wandb": "trainer.logger=wandb only (the templates log to the console); ~20 MB",
    "tensorboard": "trainer.logger=tensorboard only; 11 MB with its data server",
    "tensorboard-data-server": "tensorboard", "markdown": "tensorboard", "werkzeug": "tensorboard",
    "absl-py": "tensorboard",
    "py-spy": "stall forensics only (launcher/stacks.py names the processes without it; the smoke task never stalls)",
    "nvtx": "NVTX ranges for Nsight (verl checks is_nvtx_available() and falls back); 2.9 MB",
    # the SFTP server and `argus keys`: the smoke test runs with ARGUS_SFTP_ENABLED=false
    "asyncssh": "SFTP (off in the smoke test)", "cryptography": "SFTP (asyncssh); 4.5 MB",
    "pynacl": "SFTP (asyncssh)", "bcrypt": "SFTP (asyncssh)",
    "playwright": "tests (WebUI browser tests); 51 MB", "aiosmtpd": "tests (a real SMTP server receives e-mails)",
    "uv": "`argus env build` (the smoke test trains in Argus's own interpreter unless TRAIN_ENV is set); 17 MB",
    "virtualenv": "Ray's runtime_env virtualenvs, which Argus refuses", "distlib": "virtualenv",
    "python-discovery": "virtualenv", "platformdirs": "virtualenv",
}
# The dashboard's web UI stays: Ray 2.60's dashboard (and with it the Jobs API) refuses to start
# without its build folder and build/static.
RAY_DROP = (re.compile(r"^ray/(jars|rllib|tune|llm)/"), re.compile(r"\.map$"))


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(constraints: Path) -> dict[str, str]:
    out = {}
    for line in constraints.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if "==" in line:
            name, ver = line.split("==", 1)
            out[norm(name)] = ver.strip()
    return out


def present(path: Path | None) -> set[str]:
    names = {norm(n) for n in TORCH_WHEEL_DEPS}  # CUDA torch is there in any case
    if path is None:
        return names
    for line in path.read_text().splitlines():
        m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", line)
        if m and not line.lstrip().startswith("#"):
            names.add(norm(m.group(1)))
    return names


def pip(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pip", *args], capture_output=True, text=True)


def download(name: str, ver: str, dest: Path) -> bool:
    plat = [a for p in PLATFORMS for a in ("--platform", p)]
    r = pip("download", "-q", "--no-deps", "--only-binary=:all:", "--python-version", "3.12",
            "--implementation", "cp", "--abi", "cp312", "--abi", "abi3", "--abi", "none", *plat,
            "-d", str(dest), f"{name}=={ver}")
    return r.returncode == 0


def build(spec: str, dest: Path) -> bool:
    r = pip("wheel", "-q", "--no-deps", "-w", str(dest), spec)
    if r.returncode:
        print(r.stderr[-2000:], file=sys.stderr)
    return r.returncode == 0


def repack_ray(whl: Path) -> Path:
    """The same wheel without RAY_DROP's files; RECORD rewritten so pip accepts it."""
    tmp = whl.with_suffix(".tmp")
    dropped = 0
    with zipfile.ZipFile(whl) as src, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as dst:
        record_name = next(n for n in src.namelist() if n.endswith(".dist-info/RECORD"))
        rows = []
        for info in src.infolist():
            if info.filename == record_name:
                continue
            if any(p.search(info.filename) for p in RAY_DROP):
                dropped += info.file_size
                continue
            data = src.read(info)
            # Ray's three ELF binaries are 75 % of the wheel: LZMA packs them ~25 % smaller than deflate,
            # and pip installs through zipfile, which reads LZMA members.
            big = len(data) > LZMA_OVER
            dst.writestr(info, data, compress_type=zipfile.ZIP_LZMA if big else zipfile.ZIP_DEFLATED,
                         compresslevel=None if big else 9)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            rows.append(f"{info.filename},sha256={digest},{len(data)}")
        rows.append(f"{record_name},,")
        dst.writestr(record_name, "\n".join(rows) + "\n")
    tmp.replace(whl)
    print(f"ray repacked: dropped {dropped / 2**20:.0f} MiB uncompressed (jars, rllib, tune, llm, *.map)")
    return whl


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("present", type=Path, nargs="?", help="packages already on the GPU machine (pip freeze)")
    ap.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    a = ap.parse_args(argv)
    out: Path = a.dir
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.whl"):
        old.unlink()
    have = present(a.present)
    todo = {n: v for n, v in pins(a.root / "constraints.txt").items() if n not in have and n not in LEFT_OUT}
    print(f"{len(todo)} pins to bring; left out: {len(LEFT_OUT)} by choice, {len(have)} present on the GPU machine")
    failed = []
    for name, ver in sorted(todo.items()):
        if download(name, ver, out):
            continue
        print(f"{name}=={ver}: no cp312 manylinux wheel; building one from the sdist")
        if not build(f"{name}=={ver}", out):
            failed.append(f"{name}=={ver}")
    with tempfile.TemporaryDirectory() as tmp:  # a clean copy: no venv, no caches, no build/ leftovers
        src = Path(tmp) / "argus"
        shutil.copytree(a.root, src, ignore=shutil.ignore_patterns(
            ".venv", ".git", "__pycache__", "*.egg-info", "build", "dist", ".pytest_cache", ".ruff_cache", ".gpu*"))
        if not build(str(src), out):
            failed.append("argus (from the checkout)")
    for whl in out.glob("ray-*.whl"):
        repack_ray(whl)
    total = 0
    for whl in sorted(out.glob("*.whl"), key=lambda p: p.stat().st_size, reverse=True):
        total += whl.stat().st_size
        print(f"{whl.stat().st_size / 2**20:7.2f} MiB  {whl.name}")
    print(f"total: {total / 2**20:.1f} MiB in {len(list(out.glob('*.whl')))} wheels (limit {LIMIT / 2**20:.0f} MiB)")
    if failed:
        print(f"FAILED to get: {', '.join(failed)}")
    if total > LIMIT:
        print(f"FAIL: the wheelhouse is larger than {LIMIT / 2**20:.0f} MiB")
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
