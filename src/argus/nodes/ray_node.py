"""``python -m argus.nodes.ray_node start …``: ``ray start`` for the platform's nodes, with no Ray Client server.

The platform's Ray cluster runs only platform code (issue 21): launchers and Ray's own job
supervisors. Nothing of Argus uses the Ray Client, and a Ray Client server is a way into the
cluster that starts "specific server" processes through Ray's plain worker setup — measured
before issue 21: from inside a task, ``ray.init("ray://head:10001")`` got one with the platform
account's full rights. Ray's CLI always starts one on a head when the client's packages are
installed (there is no flag to turn it off; a port is required), so this wrapper runs the
normal CLI in-process with that one step skipped. Token auth (``RAY_AUTH_MODE=token``) guards
everything else the head listens on.
"""

from __future__ import annotations

import logging
import sys

log = logging.getLogger(__name__)


def _patch() -> None:
    from ray._private.node import Node

    def start_ray_client_server(self: Node) -> None:  # noqa: ARG001 - Ray's method, skipped on purpose
        log.info("argus: no Ray Client server on the platform's head")

    Node.start_ray_client_server = start_ray_client_server  # type: ignore[method-assign]


def main() -> None:
    _patch()
    from ray.scripts.scripts import main as ray_main

    sys.argv[0] = "ray"
    ray_main()


if __name__ == "__main__":
    main()
