import pytest

from argus.core.paths import DataLayout, normalize

L = DataLayout.at("/private")


@pytest.mark.parametrize(
    "text, expected",
    [
        ("$HOME/common/datasets/gsm8k/train.parquet", "/private/datasets/gsm8k/train.parquet"),
        ("${HOME}/common/datasets/x", "/private/datasets/x"),
        ("$HOME/common/hf/hub", "/private/hf/hub"),
        ("$HOME/common/hf", "/private/hf"),
        ("$HOME/datasets/a.parquet", "/private/users/alice/datasets/a.parquet"),
        ("${HOME}/code/r.py", "/private/users/alice/code/r.py"),
        ("$HOME", "/private/users/alice"),
        ("$HOME/common/datasetsX/y", "/private/users/alice/common/datasetsX/y"),
        ("$HOME/common/other", "/private/users/alice/common/other"),
        ("$HOMEDIR/x", "$HOMEDIR/x"),
        ("a=$HOME/x,b=$HOME/common/hf/y", "a=/private/users/alice/x,b=/private/hf/y"),
        ("~/datasets/x", "/private/users/alice/datasets/x"),
        ("key=~/code/r.py", "key=/private/users/alice/code/r.py"),
        ("a~b", "a~b"),
    ],
)
def test_expand_order_and_forms(text, expected):
    assert L.expand(text, "alice") == expected


def test_to_virtual_round_trips():
    for v in ("$HOME/common/datasets/x", "$HOME/common/hf/y", "$HOME/code/r.py", "$HOME"):
        assert L.to_virtual(L.expand(v, "bob"), "bob") == v


@pytest.mark.parametrize(
    "path, cwd, expected",
    [
        ("/private//users/./bob/../alice", None, "/private/users/alice"),
        ("//private/users/x", None, "/private/users/x"),
        ("../../bob", "/private/users/alice/jobs/t", "/private/users/alice/bob"),
        ("../../../bob", "/private/users/alice/jobs/t", "/private/users/bob"),
    ],
)
def test_normalize(path, cwd, expected):
    from pathlib import PurePosixPath

    assert str(normalize(path, PurePosixPath(cwd) if cwd else None)) == expected
