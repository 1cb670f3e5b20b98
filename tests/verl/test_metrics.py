"""verl console metrics → time series: the pure parser, the incremental reader, the API and the CLI."""

from __future__ import annotations

import math
from pathlib import Path

from sqlalchemy import update

from argus.core.metrics import MetricsParser, parse_metric_line
from argus.db.models import TaskModel
from argus.services.metrics import read_log_metrics

FIXTURES = Path(__file__).parent / "fixtures"
FIXTURE = FIXTURES / "verl_console.log"
SFT_LOG = FIXTURES / "verl_sft_torchrun.log"  # verl.trainer.sft_trainer under torchrun: tqdm bar + "\r" + "]step:"
PPO_LOG = FIXTURES / "verl_ppo_ray.log"  # verl.trainer.main_ppo under Ray: coloured actor prefixes, nan/inf


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
    assert pts["actor/grad_norm"] == [(1, 0.4521), (2, "nan"), (3, 0.3977)]  # JSON has no NaN: a string
    assert s.as_lists(["val-core/openai/gsm8k/reward/mean@1"])["val-core/openai/gsm8k/reward/mean@1"] == [(0, 0.0812)]


def test_sft_trainer_under_torchrun_every_step():
    """tqdm redraws with "\r" and the metrics print lands right after the bar: every step is found."""
    text = SFT_LOG.read_bytes().decode()
    assert "]step:2 - " in text and "\r" in text
    p = MetricsParser()
    p.feed(text)
    s = p.series
    assert s.last_step == 10
    loss = s.as_lists(["train/loss"])["train/loss"]
    assert [step for step, _ in loss] == list(range(1, 11))
    assert dict(loss) == {1: 6.5312, 2: 6.0312, 3: "nan", 4: 5.2188, 5: 4.9062, 6: "inf", 7: "-inf",
                          8: 4.125, 9: 4.0, 10: 3.875}
    assert s.as_lists(["val/loss"])["val/loss"] == [(5, 5.0), (10, 4.25)]
    assert s.as_lists(["train/total_tokens(B)"])["train/total_tokens(B)"][-1] == (10, 0.0001024)
    assert "global step" not in " ".join(s.keys)


def test_main_ppo_under_ray_prefixes_and_non_finite_values():
    p = MetricsParser()
    p.feed(PPO_LOG.read_bytes().decode())
    s = p.series
    assert s.last_step == 3  # "timing_s/step:61 - …", "training/global_step:9 - …", "… step:4 but …" are not steps
    assert s.as_lists(["actor/pg_loss"])["actor/pg_loss"] == [(1, -0.00213), (2, 0.00102), (3, -0.01)]
    assert s.as_lists(["actor/grad_norm"])["actor/grad_norm"] == [(1, 0.4521), (2, "nan"), (3, "inf")]
    assert s.as_lists(["critic/advantages/min"])["critic/advantages/min"] == [(3, "-inf")]
    assert s.as_lists(["val-core/openai/gsm8k/reward/mean@1"])["val-core/openai/gsm8k/reward/mean@1"] == [
        (0, 0.0812), (3, "nan")]
    assert s.as_lists(["training/global_step"])["training/global_step"] == [(1, 1.0), (2, 2.0)]
    assert s.as_lists(["timing_s/step"])["timing_s/step"] == [(1, 58.12), (2, 55.01), (3, 54.2)]


def test_step_must_not_be_part_of_a_key():
    assert parse_metric_line("global_step:3 - a:1") is None
    assert parse_metric_line("timing_s/step:3 - a:1") is None
    assert parse_metric_line("val-step:3 - a:1") is None
    assert parse_metric_line("| 2/5 [00:07<00:10,  3.67s/it]step:2 - train/lr(1e-3):0.0001") == (
        2, {"train/lr(1e-3)": 0.0001})
    assert parse_metric_line("[default0]:step:4 - a:-inf") == (4, {"a": float("-inf")})


def test_feed_splits_on_carriage_returns_across_chunks():
    p = MetricsParser()
    text = SFT_LOG.read_bytes().decode()
    for i in range(0, len(text), 7):  # arbitrary chunk boundaries, "\r" and "\n" split between feeds
        p.feed(text[i:i + 7])
    assert p.series.last_step == 10 and len(p.series.points["train/loss"]) == 10
    p = MetricsParser()
    p.feed("\rbar 1/5" * 100_000)  # a bar redrawn for hours without a newline is not buffered as one line
    assert len(p._partial) < 100


def test_incremental_reader_handles_partial_lines_and_rewrites(tmp_path):
    log = tmp_path / "attempt-1.log"
    text = FIXTURE.read_text()
    cut = text.index("step:2") + 20  # in the middle of a metrics line
    log.write_text(text[:cut])
    assert read_log_metrics(tmp_path, log).last_step == 1
    with log.open("a") as fh:
        fh.write(text[cut:])
    assert read_log_metrics(tmp_path, log).as_lists(["actor/pg_loss"])["actor/pg_loss"] == [(1, -0.00213), (2, 0.00102),
                                                                                   (3, -0.0051)]
    log.write_text("step:7 - x:1\n")  # shorter: the file was rewritten, parse again from the start
    assert read_log_metrics(tmp_path, log).keys == ["x"]


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
    with live.ctx.db.session() as s:  # the task's two attempts (only real attempts' logs are read)
        s.execute(update(TaskModel).where(TaskModel.id == tid).values(attempts=2))
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


def test_metrics_api_and_cli_non_finite_values(live):
    """JSON has no NaN: the API sends "nan"/"inf"/"-inf" strings, the CLI shows them as nan/inf."""
    from typer.testing import CliRunner

    from argus.cli.main import app as cli_app

    alice = live.new_user("ivy")
    body = ("kind: advanced\nworkload: job\nnnodes: 1\nn_gpus_per_node: 0\n"
            "command: python3 -m argus.jobs.reward_check --reward x\n")
    r = alice.post("/api/v2/tasks", content=body.encode(), headers={"Content-Type": "application/yaml"})
    assert r.status_code == 201, r.text
    tid = r.json()["task_id"]
    logs = live.ctx.settings.root / "users" / "ivy" / "jobs" / tid / "logs"
    logs.mkdir(parents=True)
    (logs / "attempt-1.log").write_bytes(SFT_LOG.read_bytes())
    r = alice.get(f"/api/v2/tasks/{tid}/metrics", params={"key": "train/loss"})
    assert r.status_code == 200, r.text
    assert "NaN" not in r.text and "Infinity" not in r.text
    assert r.json()["points"]["train/loss"][2:7] == [[3, "nan"], [4, 5.2188], [5, 4.9062], [6, "inf"], [7, "-inf"]]
    assert r.json()["last_step"] == 10
    token = alice.headers["Authorization"].split()[1]
    env = {"ARGUS_URL": live.url, "ARGUS_TOKEN": token}
    res = CliRunner().invoke(cli_app, ["metrics", tid, "--key", "train/loss"], env=env)
    assert res.exit_code == 0, res.output
    rows = {line.split()[0]: line.split()[1] for line in res.output.splitlines() if line.strip()[:1].isdigit()}
    assert rows["3"] == "nan" and rows["6"] == "inf" and rows["7"] == "-inf" and rows["4"] == "5.2188"
