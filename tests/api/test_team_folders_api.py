"""Team folders through /api/v2/files (issue 26): ``/teams/<team>`` in every member's home, read-write for
members, absent for everyone else (the same answer as a team that does not exist), the team's storage quota."""

from __future__ import annotations

import os

import pytest

from tests.helpers import LiveServer


def put(c, path: str, data: bytes):  # noqa: ANN001, ANN201
    return c.put("/api/v2/files/content", params={"path": path}, content=data)


def names(c, path: str) -> list[str]:  # noqa: ANN001
    r = c.get("/api/v2/files", params={"path": path})
    assert r.status_code == 200, r.text
    return [e["name"] for e in r.json()["entries"]]


@pytest.fixture
def team(live: LiveServer):  # noqa: ANN201
    admin = live.admin()
    people = {n: live.new_user(n) for n in ("alice", "bob", "carol")}
    assert admin.post("/api/v2/teams", json={"name": "nlp", "quota_bytes": 1000}).status_code == 201
    for who in ("alice", "bob"):
        assert admin.post("/api/v2/teams/nlp/members", json={"user": who}).status_code == 201
    return people


def test_members_share_the_team_folder(live: LiveServer, team) -> None:  # noqa: ANN001
    alice, bob = team["alice"], team["bob"]
    assert "teams" in names(alice, "/") and names(alice, "/teams") == ["nlp"]
    assert alice.post("/api/v2/files/mkdir", json={"path": "/teams/nlp/data"}).status_code == 201
    assert put(alice, "/teams/nlp/data/train.txt", b"shared rows").status_code == 201
    r = bob.get("/api/v2/files/content", params={"path": "/teams/nlp/data/train.txt"})
    assert r.status_code == 200 and r.content == b"shared rows"
    # the bytes live in the team's folder under the data root, not in alice's home
    root = live.ctx.settings.root
    assert (root / "teams" / "nlp" / "data" / "train.txt").read_bytes() == b"shared rows"
    assert not (root / "users" / "alice" / "teams" / "nlp" / "data").exists()
    # bob may change what alice wrote: the folder is the team's
    assert bob.post("/api/v2/files/move", json={"src": "/teams/nlp/data/train.txt",
                                                "dst": "/teams/nlp/data/t.txt"}).status_code == 200
    assert names(alice, "/teams/nlp/data") == ["t.txt"]


def test_a_non_member_sees_no_team_folder(live: LiveServer, team) -> None:  # noqa: ANN001
    alice, carol = team["alice"], team["carol"]
    put(alice, "/teams/nlp/secret.txt", b"x")
    assert "teams" not in names(carol, "/")
    for path in ("/teams", "/teams/nlp", "/teams/nlp/secret.txt", "/teams/nosuch"):
        r = carol.get("/api/v2/files", params={"path": path})
        assert r.status_code == 404, (path, r.text)
    # the same answer for a team that exists and one that does not: names stay private
    exists = carol.get("/api/v2/files", params={"path": "/teams/nlp/x"}).json()["detail"]["message"]
    missing = carol.get("/api/v2/files", params={"path": "/teams/zzz/x"}).json()["detail"]["message"]
    assert exists.replace("nlp", "zzz") == missing
    assert put(carol, "/teams/nlp/evil.txt", b"x").status_code == 404
    assert carol.get("/api/v2/files/content", params={"path": "/teams/nlp/secret.txt"}).status_code == 404
    # a real folder named teams in carol's home is shadowed, never another team's folder
    os.makedirs(live.ctx.settings.root / "users" / "carol" / "teams" / "nlp", exist_ok=True)
    assert carol.get("/api/v2/files", params={"path": "/teams/nlp"}).status_code == 404


@pytest.mark.hostile
def test_traversal_and_links_do_not_reach_another_team(live: LiveServer, team) -> None:  # noqa: ANN001
    admin, alice, carol = live.admin(), team["alice"], team["carol"]
    assert admin.post("/api/v2/teams", json={"name": "vision"}).status_code == 201
    assert admin.post("/api/v2/teams/vision/members", json={"user": "carol"}).status_code == 201
    put(carol, "/teams/vision/private.txt", b"vision only")
    for path in ("/teams/nlp/../vision/private.txt", "/teams/nlp/../../teams/vision/private.txt",
                 "/../teams/vision/private.txt"):
        r = alice.get("/api/v2/files/content", params={"path": path})
        assert r.status_code in (403, 404), (path, r.status_code)
        assert b"vision only" not in r.content
    # a link planted in a team folder (by a task) towards another team's folder is refused
    os.symlink(live.ctx.settings.root / "teams" / "vision", live.ctx.settings.root / "teams" / "nlp" / "peek")
    r = alice.get("/api/v2/files/content", params={"path": "/teams/nlp/peek/private.txt"})
    assert r.status_code == 403 and b"vision only" not in r.content
    # the synthetic /teams is read-only: no new team folder by mkdir
    assert alice.post("/api/v2/files/mkdir", json={"path": "/teams/vision2"}).status_code in (403, 404)
    assert alice.delete("/api/v2/files", params={"path": "/teams/nlp"}).status_code == 403


def test_team_quota_counts_the_teams_bytes(live: LiveServer, team) -> None:  # noqa: ANN001
    alice, bob = team["alice"], team["bob"]
    assert put(alice, "/teams/nlp/a.bin", b"a" * 850).status_code == 201
    r = put(bob, "/teams/nlp/b.bin", b"b" * 400)
    assert r.status_code == 413, r.text
    assert "team nlp's storage quota exceeded" in r.json()["detail"]["message"]
    assert put(bob, "/b.bin", b"b" * 400).status_code == 201  # bob's own home is not the team's quota
    usage = alice.get("/api/v2/files/usage").json()
    assert usage["teams"] == [{"team": "nlp", "path": "/teams/nlp", "used_bytes": 850, "quota_bytes": 1000,
                               "level": "near"}]
    assert alice.delete("/api/v2/files", params={"path": "/teams/nlp/a.bin"}).status_code == 204
    assert put(bob, "/teams/nlp/b.bin", b"b" * 400).status_code == 201


def test_leaving_the_team_closes_the_folder(live: LiveServer, team) -> None:  # noqa: ANN001
    admin, bob = live.admin(), team["bob"]
    put(team["alice"], "/teams/nlp/x.txt", b"x")
    assert bob.get("/api/v2/files/content", params={"path": "/teams/nlp/x.txt"}).status_code == 200
    assert admin.delete("/api/v2/teams/nlp/members/bob").status_code == 204
    assert bob.get("/api/v2/files/content", params={"path": "/teams/nlp/x.txt"}).status_code == 404


def test_a_spec_may_use_the_team_folder_only_for_members(live: LiveServer, team) -> None:  # noqa: ANN001
    """The submit path reads the owner's teams (services.tasks.policy_for): alice's spec naming
    $HOME/teams/nlp is accepted, carol's is refused under each key, naming the team."""
    spec = ("kind: advanced\nworkload: ppo\nnnodes: 1\nn_gpus_per_node: 1\ncommand: >-\n"
            "  python3 -m verl.trainer.main_ppo data.train_files=$HOME/teams/nlp/d/t.parquet\n"
            "  data.val_files=$HOME/teams/nlp/d/v.parquet trainer.default_local_dir=$HOME/teams/nlp/ckpt\n"
            "  trainer.nnodes=1 trainer.n_gpus_per_node=1\n")
    ok = team["alice"].post("/api/v2/tasks", params={"dry_run": "true"}, content=spec,
                            headers={"content-type": "application/yaml"})
    assert ok.status_code == 200, ok.text
    assert "/teams/nlp/ckpt" in ok.json()["command_expanded"]
    r = team["carol"].post("/api/v2/tasks", params={"dry_run": "true"}, content=spec,
                           headers={"content-type": "application/yaml"})
    assert r.status_code == 400, r.text
    errors = r.json()["detail"]["errors"]
    assert errors and all("team nlp, which you are not in" in e["message"] for e in errors)


def test_a_team_made_again_under_a_deleted_ones_name_starts_empty(live: LiveServer, team) -> None:  # noqa: ANN001
    admin, alice, carol = live.admin(), team["alice"], team["carol"]
    put(alice, "/teams/nlp/old.txt", b"the old team's")
    assert admin.delete("/api/v2/teams/nlp").status_code == 204
    assert admin.post("/api/v2/teams", json={"name": "nlp"}).status_code == 201
    assert admin.post("/api/v2/teams/nlp/members", json={"user": "carol"}).status_code == 201
    assert names(carol, "/teams/nlp") == []  # carol never sees the old team's files
    kept = [p.name for p in (live.ctx.settings.root / "teams").iterdir() if p.name.startswith(".deleted-nlp-")]
    assert len(kept) == 1  # kept aside for an administrator, reachable by no one's view or task
