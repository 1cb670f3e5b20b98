"""Ray's setup_worker, behind a check: a Python worker on a jailing node starts only inside a jail.

Run by the raylet (see :mod:`argus.runtime.ray_node`) in the raylet's own, trusted
environment, before any of the task's variables apply. The runtime-env context it is
given comes from the node's agent, where the Argus plugin turned the interpreter into
``bwrap … -- python``; an empty runtime_env yields Ray's default context, whose
interpreter is the bare ``python`` — that worker is refused, and the task that asked for
it sees the worker fail to start.
"""

from __future__ import annotations

import argparse
import json
import os
import runpy
import shlex
import sys


def jailed(context: dict, bwrap: str) -> bool:
    return str(context.get("py_executable") or "").startswith(shlex.quote(bwrap) + " ")


def main() -> None:
    from argus.runtime.jail import CONFIG_ENV, JailConfig

    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--serialized-runtime-env-context", default=None)
    known, _ = parser.parse_known_args()
    path = os.environ.get(CONFIG_ENV)
    if path:
        cfg = JailConfig.load(path)
        context = json.loads(known.serialized_runtime_env_context or "{}")
        if not jailed(context, cfg.bwrap):
            sys.stderr.write("argus: refusing to start a Ray worker outside a task jail: its job has no Argus "
                             "runtime_env (a driver that did not come from Argus, or that dropped its job config)\n")
            sys.exit(1)
    import ray._private.workers.setup_worker as setup

    sys.argv[0] = setup.__file__
    runpy.run_path(setup.__file__, run_name="__main__")


if __name__ == "__main__":
    main()
