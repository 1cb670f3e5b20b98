"""Listing a task's checkpoint folder (services/checkpoints.py) on a real filesystem, hostile contents included."""

import os
from pathlib import Path, PurePosixPath

import pytest

from argus.errors import ClientError, Conflict
from argus.services.checkpoints import list_folder


def write_step(folder: Path, n: int, *, critic: bool = True, tracker: bool = True) -> None:
    """verl's order: actor/, critic/, data.pt, then the tracker."""
    step = folder / f"global_step_{n}"
    (step / "actor").mkdir(parents=True)
    (step / "actor" / "model_world_size_1_rank_0.pt").write_bytes(b"w" * 1000)
    (step / "actor" / "huggingface").mkdir()
    (step / "actor" / "huggingface" / "config.json").write_text("{}")
    if critic:
        (step / "critic").mkdir()
        (step / "critic" / "model_world_size_1_rank_0.pt").write_bytes(b"c" * 500)
    (step / "data.pt").write_bytes(b"d" * 10)
    if tracker:
        (folder / "latest_checkpointed_iteration.txt").write_text(str(n))


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "users" / "alice"
    h.mkdir(parents=True)
    return h


def test_complete_steps_follow_the_tracker(home: Path) -> None:
    folder = home / "jobs" / "t1" / "checkpoints"
    write_step(folder, 2)
    write_step(folder, 4)
    write_step(folder, 6, tracker=False)  # verl was writing step 6 when it stopped
    (folder / "global_step_junk").mkdir()
    listing = list_folder(home, PurePosixPath(folder), active=True)
    assert listing.latest == 4
    assert [(s.step, s.state) for s in listing.steps] == [(2, "complete"), (4, "complete"), (6, "writing")]
    s4 = listing.steps[1]
    assert {c.name: (c.kind, c.size_bytes) for c in s4.components} == {
        "actor": ("actor", 1002), "critic": ("critic", 500), "data.pt": ("dataloader", 10)}
    assert s4.size_bytes == 1512 and s4.size_exact and s4.modified_at is not None
    assert listing.latest_complete().step == 4
    ended = list_folder(home, PurePosixPath(folder), active=False)
    assert ended.steps[-1].state == "incomplete"
    assert ended.pick(None).step == 4 and ended.pick(2).step == 2
    with pytest.raises(ClientError) as exc:
        ended.pick(6)
    assert exc.value.errors[0].field == "step" and "complete steps: 2, 4" in exc.value.errors[0].message
    with pytest.raises(ClientError):
        ended.pick(99)


def test_no_tracker_no_complete_step(home: Path) -> None:
    folder = home / "ck"
    write_step(folder, 1, tracker=False)  # async_save runs never write it; neither does a run cut off mid-step
    listing = list_folder(home, PurePosixPath(folder), active=False)
    assert [s.state for s in listing.steps] == ["incomplete"]
    with pytest.raises(Conflict):
        listing.pick(None)
    assert list_folder(home, PurePosixPath(home / "missing"), active=False).steps == []


def test_links_and_special_files_are_never_followed(home: Path, tmp_path: Path) -> None:
    secret = tmp_path / "users" / "bob" / "ck"
    write_step(secret, 8)
    folder = home / "ck"
    write_step(folder, 2)
    os.symlink(secret / "global_step_8", folder / "global_step_8")  # a step that is a link to bob's
    os.symlink(secret / "global_step_8" / "actor", folder / "global_step_2" / "linked")  # a link inside a step
    os.mkfifo(folder / "global_step_2" / "fifo")
    (folder / "latest_checkpointed_iteration.txt").unlink()
    os.symlink(secret / "latest_checkpointed_iteration.txt", folder / "latest_checkpointed_iteration.txt")
    listing = list_folder(home, PurePosixPath(folder), active=False)
    assert [s.step for s in listing.steps] == [2] and listing.latest is None  # the linked tracker reads as absent
    assert {c.name for c in listing.steps[0].components} == {"actor", "critic", "data.pt"}
    # the folder itself reached through a link, or outside the home: nothing
    os.symlink(secret, home / "linked-ck")
    assert list_folder(home, PurePosixPath(home / "linked-ck"), active=False).steps == []
    assert list_folder(home, PurePosixPath(secret), active=False).steps == []
    assert list_folder(home, PurePosixPath(home), active=False).steps == []
