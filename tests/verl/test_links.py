"""verl.links: a path is judged where its symbolic links really lead (real files in a temp data root)."""

from __future__ import annotations

import os

from argus.core.paths import DataLayout
from argus.verl.links import check_links


def _layout(tmp_path):
    root = tmp_path / "root"
    for d in ("users/alice/datasets", "users/bob/datasets", "hf"):
        (root / d).mkdir(parents=True)
    (root / "users/bob/datasets/x.parquet").write_bytes(b"PAR1")
    return root, DataLayout.at(root)


def test_links_into_another_home_or_out_of_bounds_are_refused(tmp_path):
    root, layout = _layout(tmp_path)
    mine = root / "users/alice/datasets"
    os.symlink(root / "users/bob/datasets/x.parquet", mine / "a.parquet")
    os.symlink(root / "users/bob", mine / "other")  # a linked folder in the middle of the path
    os.symlink("/etc/passwd", mine / "p.parquet")
    for value in (f"{mine}/a.parquet", f"{mine}/other/datasets/x.parquet", f"[{mine}/ok.parquet,{mine}/a.parquet]"):
        errs = check_links("data.train_files", value, "alice", layout, fld="train_file")
        assert len(errs) == 1 and "symbolic link" in errs[0].message, value
        assert "bob" not in errs[0].message  # never where the link leads
    assert check_links("data.train_files", f"{mine}/p.parquet", "alice", layout, fld="f")  # training data rule
    assert check_links("actor_rollout_ref.model.path", f"{mine}/other", "alice", layout, fld="model_id")


def test_plain_files_own_links_and_linked_shared_folders_pass(tmp_path):
    root, layout = _layout(tmp_path)
    mine = root / "users/alice/datasets"
    (mine / "t.parquet").write_bytes(b"PAR1")
    os.symlink(mine / "t.parquet", mine / "own.parquet")
    big = tmp_path / "bigdisk"
    (big / "gsm8k").mkdir(parents=True)
    os.symlink(big, root / "datasets")  # an admin put the shared datasets on another disk
    os.symlink(mine / "loop", mine / "loop")
    for value in (f"{mine}/t.parquet", f"{mine}/own.parquet", f"{root}/datasets/gsm8k/train.parquet",
                  f"{mine}/missing.parquet", f"{mine}/loop", "hdfs://x/y", "console"):
        assert check_links("data.train_files", value, "alice", layout, fld="f") == [], value
