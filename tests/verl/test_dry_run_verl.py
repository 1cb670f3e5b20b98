"""Dry-run admission with REAL verl validation: row counts, verl's "did you mean" at the right YAML line."""

from __future__ import annotations

from sqlalchemy import func, select

from argus.db.models import TaskModel
from tests.verl.test_verl_admission import PPO_ARGS, advanced


def dry(client, body: str):  # noqa: ANN001, ANN201
    return client.post("/api/v2/tasks", params={"dry_run": "true"}, content=body.encode(),
                       headers={"Content-Type": "application/yaml"})


def _tasks(server) -> int:  # noqa: ANN001
    with server.ctx.db.session() as s:
        return s.scalar(select(func.count()).select_from(TaskModel)) or 0


def test_dry_run_runs_verl_and_stores_nothing(verl_server, alice):
    before = _tasks(verl_server)
    r = dry(alice, advanced(PPO_ARGS))
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["info"]["train_rows"] == 24 and out["info"]["val_rows"] == 8 and out["info"]["verl_validation_s"] > 0
    assert out["resolved"]["entry_module"] == "verl.trainer.main_ppo"
    assert "/users/alice/models/tiny" in out["command_expanded"]
    assert _tasks(verl_server) == before


def test_dry_run_typo_key_points_at_its_line(verl_server, alice):
    args = [*PPO_ARGS[:3], "data.train_batch_sz=8", *PPO_ARGS[3:]]
    body = ("kind: advanced\nworkload: grpo\nnnodes: 1\nn_gpus_per_node: 2\ncommand: |\n"
            "  # 训练入口 (a comment line, as in the Advanced template)\n  python3 -m verl.trainer.main_ppo \\\n"
            + "".join(f"    {a} \\\n" for a in args[:-1]) + f"    {args[-1]}\n")
    r = dry(alice, body)
    assert r.status_code == 400, r.text
    err = next(e for e in r.json()["detail"]["errors"] if e["field"] == "command: data.train_batch_sz")
    assert "did you mean `data.train_batch_size`" in err["message"]
    assert err["line"] == 11 and body.splitlines()[10].strip() == "data.train_batch_sz=8 \\"
    real = alice.post("/api/v2/tasks", content=body.encode(), headers={"Content-Type": "application/yaml"})
    assert real.status_code == 400 and real.json() == r.json()
    assert _tasks(verl_server) == 0


def test_a_link_into_another_home_is_no_oracle(verl_server, alice):
    """A task can plant `ln -s <bob's file>` in alice's home; admission opens files on the head with the
    server's rights, so without the link check a (dry-run) submit would answer with bob's row count."""
    import os

    from tests.verl.conftest import write_rl_parquet

    root = verl_server.ctx.settings.root
    bob = root / "users" / "bob" / "datasets"
    bob.mkdir(parents=True, exist_ok=True)
    write_rl_parquet(bob / "secret.parquet", 77)
    mine = root / "users" / "alice" / "datasets"
    os.symlink(bob / "secret.parquet", mine / "first.parquet")
    os.symlink(bob / "missing.parquet", mine / "second.parquet")
    os.symlink(mine / "train.parquet", mine / "own_link.parquet")
    answers = []
    for link in ("first", "second"):
        body = advanced(PPO_ARGS, extra=[f"data.train_files=$HOME/datasets/{link}.parquet"], drop=("data.train_files",))
        r = dry(alice, body)
        assert r.status_code == 400, r.text
        assert "train_rows" not in r.text and "bob" not in r.text and "secret" not in r.text
        errs = r.json()["detail"]["errors"]
        assert any("symbolic link" in e["message"] for e in errs), errs
        answers.append([e["message"].replace(link, "LINK") for e in errs])
    assert answers[0] == answers[1]  # the same whether bob's file exists or not
    body = advanced(PPO_ARGS, extra=["data.train_files=$HOME/datasets/own_link.parquet"], drop=("data.train_files",))
    r = dry(alice, body)
    assert r.status_code == 200 and r.json()["info"]["train_rows"] == 24, r.text  # a link within my home is fine
