"""core.spec_lines: errors mapped back to the line of the YAML the user wrote."""

from __future__ import annotations

from argus.core.spec_lines import SpecLines, with_lines
from argus.errors import FieldError

BASIC = """\
# my run
workload: grpo
name: demo
nnodes: 1
n_gpus_per_node: 2
model_id: $HOME/models/tiny
train_file: $HOME/datasets/train.parquet
overrides:
  - trainer.val_before_train=False
  - data.train_batch_sz=8
  -   "actor_rollout_ref.rollout.n=4"
"""

ADVANCED = """\
kind: advanced
workload: ppo
nnodes: 1
n_gpus_per_node: 2
command: |
  # 中文注释: 训练入口
  PYTHONUNBUFFERED=1 python3 -m verl.trainer.main_ppo \\
    data.train_files=$HOME/datasets/train.parquet \\
    +data.train_batch_sz=8 \\
    'trainer.total_epochs=1' \\
    ~critic.model.path \\
    --nnodes=2 \\
    data.train_files_extra=1
name: after the command
"""


def test_top_level_fields_map_to_their_key_line():
    lines = SpecLines(BASIC)
    assert lines.line_of("workload") == 2
    assert lines.line_of("nnodes", 1) == 4
    assert lines.line_of("model_id") == 6
    assert lines.line_of("overrides") == 8
    assert lines.line_of("typo") is None  # not in the text
    assert lines.line_of("val_file") is None  # a missing field has no line
    assert lines.line_of("(verl)") is None and lines.line_of("(body)") is None


def test_list_items_in_both_spellings():
    lines = SpecLines(BASIC)
    assert lines.line_of("overrides[0]") == 9
    assert lines.line_of("overrides.1") == 10  # pydantic's spelling
    assert lines.line_of("overrides[2]") == 11
    assert lines.line_of("overrides[7]") == 8  # past the end: the list itself


def test_command_keys_in_a_block_scalar():
    lines = SpecLines(ADVANCED)
    assert lines.line_of("command") == 5
    assert lines.line_of("command: data.train_files") == 8  # not the longer data.train_files_extra (line 13)
    assert lines.line_of("command: data.train_files_extra") == 13
    assert lines.line_of("command: data.train_batch_sz") == 9  # written with a + prefix
    assert lines.line_of("command: trainer.total_epochs") == 10  # in quotes
    assert lines.line_of("command: critic.model.path") == 11  # ~ deletion, no '='
    assert lines.line_of("command: trainer.nnodes") == 5  # not written: the command key
    assert lines.line_of("command", "--nnodes=2") == 12  # a command error naming a piece of it
    assert lines.line_of("command", "verl.trainer.main_ppo") == 7
    assert lines.line_of("command", "not there") == 5
    assert lines.line_of("name") == 14


def test_command_keys_in_plain_and_folded_scalars():
    text = "kind: advanced\nworkload: job\nnnodes: 1\nn_gpus_per_node: 0\ncommand: python3 -m x a.b=1\n"
    assert SpecLines(text).line_of("command: a.b") == 5
    assert SpecLines(text).line_of("command: kind") == 5  # "kind:" on line 1 is not inside the command
    folded = "command: >\n  python3 -m x\n  a.b=1\n  c.d=2\nnnodes: 1\n"
    assert SpecLines(folded).line_of("command: c.d") == 4


def test_duplicate_keys_point_at_the_last_one():
    assert SpecLines("nnodes: 1\nworkload: ppo\nnnodes: 2\n").line_of("nnodes") == 3


def test_with_lines_fills_only_yaml_and_never_raises():
    errors = [FieldError("nnodes", 0, "must be ≥ 1"), FieldError("command: data.train_batch_sz", "8", "did you mean"),
              FieldError("(verl)", None, "x"), FieldError("(body)", None, "bad", line=3)]
    out = with_lines(errors, ADVANCED)
    assert [e.line for e in out] == [3, 9, None, 3]
    assert out[0].as_dict() == {"field": "nnodes", "value": 0, "message": "must be ≥ 1", "line": 3}
    assert "line" not in out[2].as_dict()
    json_body = '{"nnodes": 0,\n "workload": "ppo"}'
    assert [e.line for e in with_lines(errors[:1], json_body, "application/json")] == [None]  # JSON: no lines
    for hostile in ("", "[[[", "a: *x", "- 1\n- 2", "\x00", "{" * 10_000, "nnodes: [" * 40):
        assert [e.line for e in with_lines(errors[:2], hostile)] == [None, None]


def test_a_key_or_operator_in_a_comment_line_of_the_command_is_not_where_the_error_is():
    """Issue 37: an old value kept in a `#` line of a `|` command pinned the error to that comment."""
    text = ("kind: advanced\nworkload: ppo\nnnodes: 1\nn_gpus_per_node: 2\ncommand: |\n"
            "  # was: data.train_batch_size=4 && echo\n"
            "  PYTHONUNBUFFERED=1 python3 -m verl.trainer.main_ppo \\\n"
            "    data.train_files=$HOME/datasets/train.parquet \\\n"
            "    data.train_batch_size=8 \\\n"
            "    trainer.nnodes=1 && echo done\n")
    lines = SpecLines(text)
    assert lines.line_of("command: data.train_batch_size") == 9
    assert lines.line_of("command", "&&") == 10
    assert lines.line_of("command: critic.model.path") == 5  # not written: the command key
