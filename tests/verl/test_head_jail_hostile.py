"""User code on the head (issue 33, critical): a reward dry-run and a user's own environment's interpreter try
every way out of their jail — unmount or cover what hides the state dir and the data root, remount ``/``
read-write, ``setns``, a new user namespace, ``/proc/1/root``, each secret (the database, the SSH host key,
the platform Ray's token, another home), the server's environment, processes and loopback port — as a
server running as root and as one running as uid 65534. Each attempt fails, and the probe's report proves
it ran (a jail that never ran the code would report nothing).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.accounts import NOBODY, nobody_python
from tests.verl.head_jail_world import MARKER
from tests.waiting import slack

pytestmark = pytest.mark.hostile
REPO = Path(__file__).resolve().parents[2]
# what the probe must have tried (tests/verl/head_jail_probe.py), each refused
EXPECTED = ("read the database", "read the SSH host key", "read the platform Ray's token",
            "read another user's file", "read the database through /proc/1/root", "write into another home",
            "write into the state dir", "unmount what covers the state dir", "unmount what covers the data root",
            "mount a new tmpfs on the state dir", "remount / read-write", "setns into pid 1's mount namespace",
            "a new user namespace (all capabilities in it)", "root inside", "a capability",
            "the server's environment", "see the server's process", "connect to the server on loopback",
            "read the database after the tricks", "read the platform Ray's token after the tricks")


@pytest.fixture(params=["root", "non-root"])
def account(request: pytest.FixtureRequest) -> Iterator[tuple[Path, list[str]]]:
    """(a base folder the account owns, the argv prefix of a Python with Argus that runs as it)."""
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed")
    if request.param == "root" and os.geteuid() != 0:
        pytest.skip("a server as root needs a root test process")
    python = nobody_python() if request.param == "non-root" else [sys.executable]
    base = Path(tempfile.mkdtemp(prefix="argus-head-jail-", dir="/tmp"))  # tmp_path is 0700 root
    try:
        if request.param == "non-root":
            os.chown(base, NOBODY, NOBODY)
        yield base, python
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("variant", ["reward", "interpreter"])
def test_user_code_on_the_head_gets_nothing_out_of_its_jail(account, variant: str) -> None:
    base, python = account
    done = subprocess.run([*python, "-m", "tests.verl.head_jail_world", str(base), variant, MARKER],
                          capture_output=True, text=True, cwd=REPO,
                          timeout=slack(300), env={**os.environ, "HOME": str(base)})
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    report = out["report"]
    assert report is not None, f"the probe did not run in the jail: {out['said']}"
    assert set(EXPECTED) <= set(report), sorted(set(EXPECTED) - set(report))
    escaped = {k: v for k, v in report.items() if not v.startswith("blocked")}
    assert not escaped, json.dumps(escaped, indent=1)
