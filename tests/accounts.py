"""Running a piece of Argus as an unprivileged account (uid/gid 65534) from a root test process.

The hostile suite runs each isolation class as root and as a non-root platform account: as root, a
sandbox's user namespace maps its uid to host root; as uid 65534 bubblewrap needs unprivileged user
namespaces instead. ``setpriv`` (util-linux) switches the account.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

NOBODY = 65534
SETPRIV = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--"]


def _last_line(done: subprocess.CompletedProcess[str]) -> str:
    lines = (done.stdout + done.stderr).strip().splitlines()
    return lines[-1] if lines else f"exit {done.returncode}"


def skip_unless_userns_for_nobody() -> None:
    """Skip unless this root test process can run bubblewrap as uid 65534."""
    if os.geteuid() != 0:
        pytest.skip(f"running Argus as uid {NOBODY} needs a root test process (setpriv)")
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv (util-linux) is not installed: cannot run Argus as another account")
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed")
    userns = subprocess.run([*SETPRIV, "bwrap", "--ro-bind", "/", "/", "--unshare-user", "--unshare-pid",
                             "--proc", "/proc", "true"], capture_output=True, text=True, timeout=60, cwd="/")
    if userns.returncode != 0:
        pytest.skip(f"bubblewrap as uid {NOBODY} needs unprivileged user namespaces: {_last_line(userns)}")


def skip_unless_nobody_can_run_argus() -> None:
    """Skip unless this root test process can run Argus (this venv's interpreter) as uid 65534 with its sandbox."""
    skip_unless_userns_for_nobody()
    # through a shell: setpriv's own exec still resolves the path with root's capabilities, Argus's children do not
    venv = subprocess.run([*SETPRIV, "/bin/sh", "-c", '"$0" -c "import argus.cli.main, ray"', sys.executable],
                          capture_output=True, text=True, timeout=180, cwd="/")
    if venv.returncode != 0:
        pytest.skip(f"uid {NOBODY} cannot run this venv's interpreter {sys.executable} "
                    f"(-> {os.path.realpath(sys.executable)}; a parent directory not world-readable?): "
                    f"{_last_line(venv)}")


def nobody_python() -> list[str]:
    """An argv prefix that runs Python with Argus and its packages as uid 65534, or skip.

    This venv's interpreter may link into a folder only root may enter (a pyenv under ``/root``): then the
    system's Python of the same version runs with the venv's packages and the source on its path.
    """
    skip_unless_userns_for_nobody()
    for argv in ([sys.executable], _system_python()):
        # through a shell: setpriv's own exec still resolves the path with root's capabilities, Argus's children
        # (which start the same interpreter) do not
        as_nobody = [*SETPRIV, "/bin/sh", "-c", 'exec "$0" "$@"', *argv]
        if argv and subprocess.run([*as_nobody, "-c", "import argus.settings, pydantic"],
                                   capture_output=True, timeout=180, cwd="/").returncode == 0:
            return as_nobody
    pytest.skip(f"uid {NOBODY} can run neither {sys.executable} (-> {os.path.realpath(sys.executable)}) "
                f"nor a system python{sys.version_info[0]}.{sys.version_info[1]} with this venv's packages")


def _system_python() -> list[str]:
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    system = shutil.which(version, path="/usr/bin:/bin")
    if system is None:
        return []
    site = next(iter(Path(sys.prefix).glob(f"lib/{version}/site-packages")), None)
    src = Path(__file__).resolve().parents[1] / "src"
    return ["/usr/bin/env", f"PYTHONPATH={src}{os.pathsep}{site}", system] if site else []
