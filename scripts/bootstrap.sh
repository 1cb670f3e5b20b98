#!/usr/bin/env bash
# Create or refresh the project's virtual environment (.venv) from pyproject.toml + constraints.txt.
# Idempotent and quick when nothing changed: a stamp records what was installed.
#   scripts/bootstrap.sh          runtime (argus + verl + CPU torch)
#   scripts/bootstrap.sh --dev    also the test/lint tools
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
extras="verl"
[[ "${1:-}" == "--dev" ]] && extras="verl,dev"

py="${PYTHON:-python3}"
if ! "$py" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null; then
  echo "bootstrap: Python ≥ 3.11 is required (found: $("$py" --version 2>&1))" >&2
  exit 1
fi
if [[ ! -x .venv/bin/python ]]; then
  echo "bootstrap: creating .venv" >&2
  "$py" -m venv .venv
fi
want="$(cat pyproject.toml constraints.txt 2>/dev/null | sha256sum | cut -c1-16)-$extras"
have="$(cat .venv/.argus-stamp 2>/dev/null || true)"
# A dev install satisfies a runtime request.
if [[ "$have" == "$want" || ( "$extras" == "verl" && "$have" == "${want%-verl}-verl,dev" ) ]]; then
  exit 0
fi
echo "bootstrap: installing dependencies into .venv (extras: $extras); the first run takes a few minutes" >&2
# torch is pinned to 2.13.0: that CPU wheel is available locally; other versions pull GBs of CUDA packages.
.venv/bin/python -m pip install -q --upgrade "pip>=24" >&2
.venv/bin/python -m pip install -q -c constraints.txt -e ".[$extras]" >&2
echo "$want" > .venv/.argus-stamp
