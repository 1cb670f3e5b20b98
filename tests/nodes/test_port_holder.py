"""A taken Ray port is refused naming who holds it (nodes/local.py): the fix is then obvious to an operator."""

from __future__ import annotations

import os
import socket

from argus.nodes.local import _holder


def test_a_listening_port_names_its_process_and_a_free_one_nothing() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        assert (_holder(port) or "").startswith(f"held by pid {os.getpid()} (")
    assert _holder(port) is None
