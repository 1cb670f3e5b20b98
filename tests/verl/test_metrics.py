"""verl console metrics → time series: the pure parser, the incremental reader, the API and the CLI."""

from __future__ import annotations

import math
from pathlib import Path

from argus.core.metrics import MetricsParser, parse_metric_line
from argus.services.metrics import read_log_metrics

FIXTURE = Path(__file__).parent / "fixtures" / "verl_console.log"


def test_parse_line_formats():
    step, values = parse_metric_line("(TaskRunner pid=1) step:2 - a/b:0.5 - c@1:np.float64(0.25) - d:nan - e:1e-06")
    assert step == 2 and values["a/b"] == 0.5 and values["c@1"] == 0.25 and values["e"] == 1e-06
    assert math.isnan(values["d"])
    assert parse_metric_line("Training Progress: 3%| 2/58") is None
    assert parse_metric_line("WARNING: something mentions step:4 but is not a metrics line") is None


def test_fixture_series():
    p = MetricsParser()
    p.feed(FIXTURE.read_text())
    s = p.series
    assert s.last_step == 3
    pts = s.as_lists(["critic/score/mean", "actor/grad_norm"])
    assert pts["critic/score/mean"] == [(1, 0.125), (2, 0.1875), (3, 0.25)]
    assert pts["actor/grad_norm"] == [(1, 0.4521), (2, None), (3, 0.3977)]  # NaN is JSON null
    assert s.as_lists(["val-core/openai/gsm8k/reward/mean@1"])["val-core/openai/gsm8k/reward/mean@1"] == [(0, 0.0812)]


def test_incremental_reader_handles_partial_lines_and_rewrites(tmp_path):
    log = tmp_path / "attempt-1.log"
    text = FIXTURE.read_text()
    cut = text.index("step:2") + 20  # in the middle of a metrics line
    log.write_text(text[:cut])
    assert read_log_metrics(log).last_step == 1
    with log.open("a") as fh:
        fh.write(text[cut:])
    assert read_log_metrics(log).as_lists(["actor/pg_loss"])["actor/pg_loss"] == [(1, -0.00213), (2, 0.00102),
                                                                                   (3, -0.0051)]
    log.write_text("step:7 - x:1\n")  # shorter: the file was rewritten, parse again from the start
    assert read_log_metrics(log).keys == ["x"]


def test_metrics_api_and_cli(live, monkeypatch, capsys):
    from argus.cli.main import app as cli_app

    alice = live.new_user("mia")
    body = ("kind: advanced\nworkload: job\nnnodes: 1\nn_gpus_per_node: 0\n"
            "command: python3 -m argus.jobs.reward_check --reward x\n")
    r = alice.post("/api/v2/tasks", content=body.encode(), headers={"Content-Type": "application/yaml"})
    assert r.status_code == 201, r.text
    tid = r.json()["task_id"]
    assert alice.get(f"/api/v2/tasks/{tid}/metrics").json()["keys"] == []
    logs = live.ctx.settings.root / "users" / "mia" / "jobs" / tid / "logs"
    logs.mkdir(parents=True)
    (logs / "attempt-1.log").write_text(FIXTURE.read_text())
    (logs / "attempt-2.log").write_text("(TaskRunner pid=9) step:3 - critic/score/mean:0.5\n")
    out = alice.get(f"/api/v2/tasks/{tid}/metrics", params={"key": "critic/score/mean"}).json()
    assert out["last_step"] == 3 and "actor/pg_loss" in out["keys"]
    assert out["points"] == {"critic/score/mean": [[1, 0.125], [2, 0.1875], [3, 0.5]]}  # attempt 2 wins step 3
    other = live.new_user("noah")
    assert other.get(f"/api/v2/tasks/{tid}/metrics").status_code == 404

    from typer.testing import CliRunner

    token = alice.headers["Authorization"].split()[1]
    res = CliRunner().invoke(cli_app, ["metrics", tid], env={"ARGUS_URL": live.url, "ARGUS_TOKEN": token})
    assert res.exit_code == 0, res.output
    assert "critic/score/mean" in res.output and "last step: 3" in res.output
