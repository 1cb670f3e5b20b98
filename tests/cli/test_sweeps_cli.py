"""`argus sweep submit | ls | show | cancel` and `argus submit` of a sweep, against a live server (real HTTP)."""

import json

import yaml

from tests.api.test_sweeps_api import SWEEP, _run, _tick
from tests.cli.test_checkpoints_cli import cli  # noqa: F401 - the fixture


def test_a_sweep_from_the_command_line(cli, live, tmp_path):  # noqa: F811
    alice = live.new_user("alice")
    token = alice.headers["Authorization"].removeprefix("Bearer ")
    spec = tmp_path / "sweep.yaml"
    spec.write_text(yaml.safe_dump({"kind": "sweep", **SWEEP}, sort_keys=False))
    r = cli("sweep", "submit", str(spec), "--dry-run", token=token)
    assert r.exit_code == 0 and "its 4 trials would be accepted" in r.output and "val_per_step=0.1" in r.output, \
        r.output
    r = cli("submit", str(spec), "-o", "json", token=token)  # argus submit hands a sweep to the sweeps API
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    sid, ids = out["sweep_id"], [t["task_id"] for t in out["trials"]]
    _run(live, ids[0], "step:2 - val-core/steps/score/mean@1:0.8\n")
    _run(live, ids[1], "step:2 - val-core/steps/score/mean@1:0.6\n")
    _tick(live)
    r = cli("sweep", "show", sid, token=token)
    assert r.exit_code == 0 and f"best trial: {ids[0]}" in r.output, r.output
    assert "CANCELING (stopped)" in r.output and "2=0.8" in r.output, r.output
    r = cli("sweep", "ls", token=token)
    assert r.exit_code == 0 and sid in r.output and "RUNNING" in r.output, r.output
    r = cli("sweep", "cancel", sid, token=token)
    assert r.exit_code == 0 and f"canceled {sid}" in r.output, r.output
    r = cli("sweep", "cancel", sid, token=token)
    assert r.exit_code == 1 and "already ended" in r.output, r.output
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({**SWEEP, "kind": "sweep", "metric": "critic/score/mean"}))
    r = cli("submit", str(bad), token=token)
    assert r.exit_code == 1 and "metric" in r.output and "validation metric" in r.output, r.output
