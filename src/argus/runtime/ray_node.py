"""``python -m argus.runtime.ray_node start …``: ``ray start`` whose raylet starts every worker through the guard.

Ray starts each Python worker as ``python <setup_worker.py> --serialized-runtime-env-context=…
default_worker.py …``. Workers of a runtime_env are jailed by the agent's plugin
(:mod:`argus.runtime.ray_plugin`), but a worker whose runtime_env is empty never reaches the
agent — measured: a task that drops Ray's job config and calls ``ray.init()`` as a new
driver got unjailed workers that read another user's home. This wrapper runs the normal
``ray start`` CLI in-process with one change: the raylet's worker command runs
:mod:`argus.runtime.worker_guard` instead of Ray's setup_worker.py, and the guard lets a
worker start only when its interpreter command is this node's jail.
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

GUARD = Path(__file__).with_name("worker_guard.py")


def _patch() -> None:
    from ray._private import services

    original = services.start_raylet
    signature = inspect.signature(original)

    def start_raylet(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202 - Ray's own signature, passed through
        bound = signature.bind(*args, **kwargs)
        bound.arguments["setup_worker_path"] = str(GUARD)
        return original(*bound.args, **bound.kwargs)

    services.start_raylet = start_raylet


def main() -> None:
    _patch()
    from ray.scripts.scripts import main as ray_main

    sys.argv[0] = "ray"
    ray_main()


if __name__ == "__main__":
    main()
