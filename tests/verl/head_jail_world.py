"""``python -m tests.verl.head_jail_world BASE VARIANT MARKER``: a head with secrets, and user code run in its jail.

Run by tests/verl/test_head_jail_hostile.py as root and as uid 65534 (the account the server runs as):
it makes a state dir, a data root with alice's and bob's homes, the platform Ray's token, puts an admin
token in its own environment and listens on loopback, then runs tests/verl/head_jail_probe.py as
``VARIANT`` — ``reward`` (admission's reward dry-run, argus.verl.rewards.check_reward) or ``interpreter``
(alice's own environment's interpreter, started by the validator pool as admission does) — and prints
the probe's report as JSON on its last line.
"""

from __future__ import annotations

import json
import os
import re
import socket
import sys
from pathlib import Path

from argus.envs.registry import Environment
from argus.launcher.ray_auth import token_path
from argus.settings import Settings
from argus.verl.pool import ValidatorPool
from argus.verl.rewards import check_reward
from argus.verl.validator import ValidatorUnavailable

PROBE = Path(__file__).with_name("head_jail_probe.py")
MARKER = "head-jail-world-marker"


def world(base: Path) -> tuple[Settings, dict]:
    settings = Settings(state_dir=base / "state", sandbox="bwrap", reward_check_timeout_s=120, verl_timeout_s=120)
    root, state = settings.root, settings.state_dir
    token = "admin-" + os.urandom(12).hex()
    os.environ["ARGUS_ADMIN_TOKEN"] = token  # as `argus up` may be started
    secrets = {"the database": state / "argus.db", "the SSH host key": state / "sftp_host_key",
               "the platform Ray's token": token_path(root), "another user's file": root / "users/bob/secret.txt"}
    for path in secrets.values():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"SECRET {token}")
        path.chmod(0o600)
    (root / "users" / "alice" / "code").mkdir(parents=True)
    listener = socket.create_server(("127.0.0.1", 0))  # the server's API, on loopback outside the jail
    targets = {"secrets": {k: str(v) for k, v in secrets.items()}, "state": str(state), "root": str(root),
               "other_home": str(root / "users" / "bob"), "token": token, "port": listener.getsockname()[1],
               "marker": MARKER, "_listener": listener}
    return settings, targets


def probe_copy(folder: Path, targets: dict) -> Path:
    """The probe, with what it looks for written in (not passed in the environment: that would be a leak)."""
    shown = {k: v for k, v in targets.items() if not k.startswith("_")}
    text = PROBE.read_text().replace("TARGETS: dict = {}", f"TARGETS: dict = json.loads({json.dumps(shown)!r})")
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / "head_jail_probe.py"
    out.write_text(text)
    return out


def run_reward(settings: Settings, targets: dict) -> str:
    reward = probe_copy(settings.root / "users" / "alice" / "code", targets)
    result = check_reward(settings, str(reward), None, None)
    return result.error or f"no error: {result.summary}"


def run_interpreter(settings: Settings, targets: dict) -> str:
    folder = settings.root / "users" / "alice" / "envs" / "mine"
    probe = probe_copy(folder, targets)
    python = folder / "bin" / "python"
    python.parent.mkdir(parents=True)
    # alice's "interpreter" runs her own code instead of the validator (the system Python: always in the jail)
    python.write_text(f"#!/bin/sh\nexec /usr/bin/python3 -I {probe}\n")
    python.chmod(0o755)
    env = Environment(name="~/envs/mine", python=str(python), prefix=str(folder), owner="alice")
    pool = ValidatorPool(settings)
    try:
        pool.get(env).request({"op": "info"}, 120)
    except ValidatorUnavailable as e:
        return str(e)
    finally:
        pool.stop()
    return "the hostile interpreter was taken for a validator"


def main() -> None:
    base, variant = Path(sys.argv[1]), sys.argv[2]
    settings, targets = world(base)
    said = (run_reward if variant == "reward" else run_interpreter)(settings, targets)
    found = re.search(r"REPORT (\{.*\})", said)
    report = json.loads(found.group(1)) if found else None
    if report is not None:  # a write counts where the host sees it (the jail's own tmpfs takes any write)
        for name, folder in (("write into another home", targets["other_home"]),
                             ("write into the state dir", targets["state"])):
            planted = Path(folder) / "planted"
            if name in report:
                report[name] = f"ESCAPED: {planted} on the host" if planted.exists() else \
                    f"blocked: not on the host (in the jail: {report[name]})"
    print(json.dumps({"said": said[-2000:], "report": report}))


if __name__ == "__main__":  # argv[3]: MARKER, what the probe looks for in every /proc/*/cmdline it can see
    main()
