"""`argus pipeline submit | ls | show | cancel` and `argus submit` of a pipeline, against a live server (real HTTP)."""

import json

import yaml

from tests.api.test_pipelines_api import PIPELINE, _tick
from tests.cli.test_checkpoints_cli import cli  # noqa: F401 - the fixture


def test_a_pipeline_from_the_command_line(cli, live, tmp_path):  # noqa: F811
    alice = live.new_user("alice")
    token = alice.headers["Authorization"].removeprefix("Bearer ")
    spec = tmp_path / "pipeline.yaml"
    spec.write_text(yaml.safe_dump(PIPELINE, sort_keys=False))
    r = cli("pipeline", "submit", str(spec), "--dry-run", token=token)
    assert r.exit_code == 0 and "would be accepted" in r.output, r.output
    r = cli("submit", str(spec), "-o", "json", token=token)  # argus submit hands a pipeline to the pipelines API
    assert r.exit_code == 0, r.output
    pid = json.loads(r.output)["pipeline_id"]
    _tick(live)
    r = cli("pipeline", "show", pid, token=token)
    assert r.exit_code == 0 and "first" in r.output and "running" in r.output and "waiting" in r.output, r.output
    r = cli("pipeline", "ls", token=token)
    assert pid in r.output and "RUNNING" in r.output, r.output
    r = cli("pipeline", "cancel", pid, token=token)
    assert r.exit_code == 0 and f"canceled {pid}" in r.output, r.output
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({**PIPELINE, "steps": {"x": {"spec": {"kind": "advanced"}, "export": {"from": "x"}}}}))
    r = cli("submit", str(bad), token=token)
    assert r.exit_code == 1 and "exactly one of spec" in r.output, r.output
