#!/usr/bin/env bash
# The whole test suite on a fresh machine: system packages, the venv, lint, layering, tests.
#   scripts/test.sh [pytest args...]
# pytest runs on 2 pytest-xdist workers (ARGUS_TEST_WORKERS=N; 0: one process) in two lanes
# (tests/scheduling.py): one worker runs the units that start Ray, an argus up or Chromium one after the other,
# the other runs the in-process units at a lower CPU priority beside them. The 50 slowest tests are listed at
# the end and the JUnit report is kept in $ARGUS_ARTIFACTS (scripts/test-durations.py turns it into
# tests/durations.json, the order units are handed out in).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

# System packages the tests drive for real: the OpenSSH sftp client (SFTP suite),
# a PostgreSQL server (the schema and API also run on PostgreSQL),
need=()
command -v sftp >/dev/null 2>&1 || need+=(openssh-client)
compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || need+=(postgresql)
# bubblewrap: the jail around head-side user code (reward dry-run, verl validator)
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
# Debian's chromium: the WebUI browser tests (tests/web, -m browser) drive it with Playwright
[[ -x /usr/bin/chromium ]] || need+=(chromium)
# a CJK font, so the Chinese UI's screenshots show characters, not boxes
[[ -e /usr/share/fonts/truetype/wqy/wqy-microhei.ttc ]] || need+=(fonts-wqy-microhei)
# OpenLDAP's slapd: the directory sign-in tests start a private one (tests/ldap_fixtures.py; never the
# package's own service or /etc/ldap config); ldap-utils: ldapsearch & co. to look into it by hand
[[ -x /usr/sbin/slapd ]] || need+=(slapd)
command -v ldapsearch >/dev/null 2>&1 || need+=(ldap-utils)
if ((${#need[@]})); then
  echo "test: installing system packages: ${need[*]}" >&2
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  $SUDO apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >&2
fi

scripts/bootstrap.sh --dev
export PATH="$root/.venv/bin:$PATH"
echo "== ruff" >&2
ruff check src tests bench
echo "== import-linter (layering, ARCHITECTURE §3)" >&2
lint-imports
echo "== pytest" >&2
artifacts="${ARGUS_ARTIFACTS:-${TMPDIR:-/tmp}/argus-artifacts}"
mkdir -p "$artifacts"
args=(--durations=50 --junitxml="$artifacts/junit.xml")
workers="${ARGUS_TEST_WORKERS:-2}"
parallel=$((workers > 0))
for a in "$@"; do
  case "$a" in -n|-n[0-9]*|--numprocesses|--numprocesses=*|no:xdist|-pno:xdist) parallel=0 ;; esac
done
((parallel)) && args+=(-n "$workers" --dist loadscope --no-loadscope-reorder)
exec pytest "${args[@]}" "$@"
