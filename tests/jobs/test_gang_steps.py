"""argus.jobs.gang_steps: each node's trainer writes every step once, in order, with its pid (bench/outage_multinode.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from argus.jobs.gang_steps import Stepper, _args


def test_a_node_trainer_logs_each_step_once_in_order_with_its_pid(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert Stepper().run(2, 3, 0.01, str(tmp_path / "steps")) == os.getpid()
    lines = [f"step:{k} - node:2 pid:{os.getpid()}" for k in (1, 2, 3)]
    assert (tmp_path / "steps" / "node-2.log").read_text().splitlines() == lines
    assert capsys.readouterr().out.splitlines() == lines  # what Ray forwards to the task's log


def test_keys_are_key_value_words() -> None:
    assert _args(["nodes=2", "total=5"]) == {"nodes": "2", "total": "5"}
    with pytest.raises(SystemExit, match="expected key=value"):
        _args(["nodes"])
