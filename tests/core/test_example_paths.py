"""The templates' example files a new user has not uploaded are one to-do with a link, never a wall (issue 25)."""

from __future__ import annotations

import re

import yaml

from argus.core.example_paths import DATA_PAGE, EXAMPLE_PATHS, fold_example_paths
from argus.errors import FieldError
from argus.web.templates_catalog import DIR, NAMES

MISSING = "file does not exist (upload it first, or check the path)"


def test_missing_example_files_fold_into_one_error_with_the_data_page():
    errors = [
        FieldError("model_id", "$HOME/models/tiny", "actor_rollout_ref.model.path=$HOME/models/tiny: model folder "
                   "does not exist; upload the Hugging Face model folder there first"),
        FieldError("nnodes", 0, "must be ≥ 1"),
        FieldError("train_file", "$HOME/datasets/gsm8k/train.parquet", f"$HOME/datasets/gsm8k/train.parquet: {MISSING}"),
        FieldError("val_file", "$HOME/datasets/gsm8k/test.parquet", f"$HOME/datasets/gsm8k/test.parquet: {MISSING}"),
    ]
    out = fold_example_paths(errors)
    assert [e.field for e in out] == ["model_id", "nnodes"]  # the to-do where the first one was; the rest kept
    todo = out[0]
    assert todo.link == DATA_PAGE and todo.as_dict()["link"] == "/data"
    for path in ("$HOME/models/tiny", "$HOME/datasets/gsm8k/train.parquet", "$HOME/datasets/gsm8k/test.parquet"):
        assert path in todo.message
    assert "model_id, train_file, val_file" in todo.message and "upload" in todo.message


def test_a_path_the_user_typed_keeps_its_own_error():
    typed = FieldError("train_file", "$HOME/datasets/mine.parquet", f"$HOME/datasets/mine.parquet: {MISSING}")
    wrong_kind = FieldError("train_file", "$HOME/datasets/gsm8k/train.parquet", "is not a parquet file")
    assert fold_example_paths([typed]) == [typed]
    assert fold_example_paths([wrong_kind]) == [wrong_kind]  # exists but broken: that is news, not a to-do
    assert fold_example_paths([]) == []


def test_every_template_path_is_an_example_path():
    """A template edit that adds a path must add it here too, or a new user meets its error again."""
    for name in NAMES:
        for lang in ("en", "zh"):
            text = (DIR / f"{name}.{lang}.yaml").read_text(encoding="utf-8")
            doc = yaml.safe_load(text)
            written = [doc[k] for k in ("model_id", "train_file", "val_file") if k in doc]
            written += re.findall(r"=(\$HOME/[^\s\\]+)", doc.get("command", ""))
            assert written, name
            for path in written:
                assert path in EXAMPLE_PATHS, (name, lang, path)
