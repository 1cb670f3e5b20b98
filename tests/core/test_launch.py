"""core/launch.py: the two typed contracts between the server and a node's launcher (issue 36)."""

from __future__ import annotations

from pathlib import Path

import pytest

from argus.core.launch import AttemptStatus, LaunchSpec, LimitHit

FULL = LaunchSpec(
    job_dir=Path("/data/users/alice/jobs/t-1"), attempt=3, argv=("python3", "-m", "verl.trainer.main_ppo", "a=b c"),
    python="/envs/verl/bin/python", env="verl-0.4", attention="auto", user="alice", teams=("nlp", "rl"),
    sandbox=True, private_ray=True, ray_dashboard=True, cpus=2.5, gpus=4, device="cpu", nnodes=2,
    memory=3 << 30, pids_max=4096, tmp_size=1 << 30, cpu_quota=True, setenv=("HOME=/h", "X=a=b"))


@pytest.mark.parametrize("spec", [FULL, LaunchSpec(job_dir=Path("/j"), attempt=1, argv=("--", "x")),
                                  LaunchSpec(job_dir=Path("/j"), attempt=1, argv=("x",), python="", env="gone")])
def test_a_launch_spec_reads_back_from_its_own_flags(spec: LaunchSpec) -> None:
    """Each flag is spelled once: what the scheduler writes is what the launcher reads, field for field."""
    assert LaunchSpec.parse(spec.flags()) == spec


def test_a_launch_spec_without_a_command_is_a_usage_error() -> None:
    with pytest.raises(SystemExit) as exc:
        LaunchSpec.parse(["--job-dir", "/j", "--attempt", "1", "--"])
    assert exc.value.code == 2


def test_an_attempt_status_round_trips_and_a_forged_one_keeps_only_what_has_its_type() -> None:
    status = AttemptStatus(2, hostname="gpu-1", node_id="n1", cuda_visible_devices="", exit_code=0, oom_kills=1,
                           limit_hit=LimitHit("pids", 40, "hit"), usage={"gpu": []}, notes=["a"], argv=["x"])
    assert AttemptStatus.parse(status.as_dict(), 2) == status
    assert AttemptStatus.parse(status.as_dict(), 1) is None  # another attempt's
    forged = AttemptStatus.parse({"attempt": 2, "exit_code": True, "oom_kills": -5, "limit_hit": {"kind": 7},
                                  "notes": ["ok", 3], "argv": "rm -rf /", "heartbeat_s": 15}, 2)
    assert forged == AttemptStatus(2, notes=["ok"], heartbeat_s=15.0)
