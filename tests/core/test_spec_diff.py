"""Compare runs: two tasks' specs and Hydra overrides aligned by key, differences flagged (core/spec_diff.py)."""

from __future__ import annotations

from argus.core.spec_diff import align, command_words, flatten, spec_rows, split_argv

ARGV_A = ["python3", "-m", "verl.trainer.main_ppo", "--config-name=ppo_trainer", "data.train_batch_size=256",
          "actor_rollout_ref.actor.optim.lr=1e-6", "+trainer.val_before_train=False", "~reward_model"]
ARGV_B = ["python3", "-m", "verl.trainer.main_ppo", "--config-name=ppo_trainer",
          "actor_rollout_ref.actor.optim.lr=3e-6", "data.train_batch_size=256", "trainer.total_epochs=2"]


def test_overrides_are_keyed_not_positional():
    overrides, rest = split_argv(ARGV_A)
    assert overrides == {"data.train_batch_size": "256", "actor_rollout_ref.actor.optim.lr": "1e-6",
                         "trainer.val_before_train": "False", "~reward_model": ""}
    assert rest == "python3 -m verl.trainer.main_ppo --config-name=ppo_trainer"
    assert split_argv(["a=1", "a=2"])[0] == {"a": "2"}  # Hydra: the last one wins


def test_flatten_dots_nested_keys_and_keeps_lists_whole():
    assert flatten({"a": {"b": 1, "c": {"d": True}}, "e": [1, 2], "f": None, "g": "x", "h": {}}) == {
        "a.b": "1", "a.c.d": "true", "e": "[1, 2]", "f": "null", "g": "x", "h": "{}"}


def test_align_marks_differences_and_missing_keys():
    a = spec_rows({"name": "a", "nnodes": 1, "command": "ignored", "resources": {"gpus": 0}}, ARGV_A)
    b = spec_rows({"name": "b", "nnodes": 1, "command": "ignored", "resources": {"gpus": 0}}, ARGV_B)
    rows = {(r.section, r.key): r for r in align([a, b])}
    # a moved override is the same row; a changed one differs; one only B has is None for A
    assert not rows[("override", "data.train_batch_size")].differs
    assert rows[("override", "actor_rollout_ref.actor.optim.lr")].values == ("1e-6", "3e-6")
    assert rows[("override", "actor_rollout_ref.actor.optim.lr")].differs
    assert rows[("override", "trainer.total_epochs")].values == (None, "2")
    assert rows[("override", "~reward_model")].values == ("", None)
    assert rows[("spec", "name")].differs and not rows[("spec", "nnodes")].differs
    assert rows[("spec", "resources.gpus")].values == ("0", "0")
    assert ("spec", "command") not in rows  # the argv says it, key by key
    assert not rows[("command", "argv")].differs
    sections = [r.section for r in align([a, b])]
    assert sections == sorted(sections, key=["override", "spec", "command"].index)


def test_an_advanced_command_run_by_a_login_shell_is_split_like_the_shell():
    assert command_words(["bash", "-lc", "python3 -m x 'a.b=hello world' c=1 # note"]) == [
        "python3", "-m", "x", "a.b=hello world", "c=1"]
    assert command_words(["bash", "-lc", "python3 -m x a='open"]) == ["python3", "-m", "x", "a='open"]
    assert command_words(["python3", "-m", "x"]) == ["python3", "-m", "x"]
