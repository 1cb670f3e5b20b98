"""Concurrent registrations of one name into one registry — a user's own and a team's — through real HTTP, on
SQLite and on PostgreSQL: each is a version of its own, numbered 1..N with none lost, and none is a 500 (two
registrations that read the same latest version and both inserted the next one met the unique index)."""

import itertools
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from sqlalchemy import func, select

from argus.db.models import AuditEventModel
from argus.services import model_registries, registry
from argus.settings import Settings
from tests.helpers import LiveServer, live_server
from tests.pg import create_database, postgres_server

N = 8
_n = itertools.count()


@pytest.fixture(scope="module")
def pg_admin_url() -> Iterator[str]:
    with postgres_server() as url:
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[LiveServer]:
    url = None
    if request.param == "postgresql":
        url = create_database(request.getfixturevalue("pg_admin_url"), f"argus_race_{next(_n)}")
    settings = Settings(state_dir=tmp_path / "state", sftp_enabled=False, verl_validation="off",
                        **({"database_url": url} if url else {}))
    with live_server(settings) as srv:
        yield srv


def _line_up(monkeypatch: pytest.MonkeyPatch, owner: object, attr: str) -> threading.Barrier:
    """The first N calls of ``owner.attr`` wait for each other, so the N racing requests pass that point at
    once (without it the window is too short to hit reliably); later calls (the replies' own reads) pass."""
    barrier, calls, guard = threading.Barrier(N), itertools.count(), threading.Lock()
    real = getattr(owner, attr)

    def waiting(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        with guard:
            first = next(calls) < N
        if first:
            try:
                barrier.wait(timeout=20)
            except threading.BrokenBarrierError:
                pass
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, attr, waiting)
    return barrier


@pytest.fixture
def lined_up(monkeypatch: pytest.MonkeyPatch) -> threading.Barrier:
    """Every registration waits for the others just before it numbers its version, so all N read the same
    latest version at once."""
    return _line_up(monkeypatch, registry, "_lineage")


def _race(posts: list) -> list:  # noqa: ANN001
    with ThreadPoolExecutor(N) as pool:
        return list(pool.map(lambda post: post(), posts))


def _check(server: LiveServer, answers: list, ref: str) -> None:
    assert [r.status_code for r in answers] == [201] * N, [r.text for r in answers]
    assert sorted(r.json()["version"] for r in answers) == list(range(1, N + 1))
    with server.ctx.db.session() as s:  # each one's audit event: nothing lost, nothing twice
        targets = s.scalars(select(AuditEventModel.target).where(AuditEventModel.action == "model.registered")).all()
        assert sorted(targets) == sorted(f"{ref}:{v}" for v in range(1, N + 1))
        assert s.scalar(select(func.count()).select_from(AuditEventModel).where(
            AuditEventModel.action == "model.registered")) == N


def test_concurrent_registrations_of_one_name_each_get_a_version(server: LiveServer,
                                                                 lined_up: threading.Barrier) -> None:
    alice = server.new_user("alice")
    folder = Path(server.ctx.settings.root) / "users" / "alice" / "models" / "m"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    answers = _race([lambda: alice.post("/api/v2/models", json={"name": "m", "path": "$HOME/models/m"})] * N)
    _check(server, answers, "m")
    assert alice.get("/api/v2/models").json() == [
        {"name": "m", "team": None, "ref": "m", "versions": N, "latest": N, "aliases": {}}]


def test_concurrent_registrations_into_a_teams_registry_each_get_a_version(server: LiveServer,
                                                                          lined_up: threading.Barrier) -> None:
    admin, alice, bob = server.admin(), server.new_user("alice"), server.new_user("bob")
    assert admin.post("/api/v2/teams", json={"name": "nlp"}).status_code == 201
    for user in ("alice", "bob"):
        assert admin.post("/api/v2/teams/nlp/members", json={"user": user}).status_code == 201
    folder = Path(server.ctx.settings.root) / "teams" / "nlp" / "models" / "m"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    body = {"name": "m", "path": "$HOME/teams/nlp/models/m"}
    answers = _race([lambda c=c: c.post("/api/v2/models", json=body) for c in (alice, bob) * (N // 2)])
    _check(server, answers, "nlp/m")
    assert [(m["ref"], m["versions"], m["latest"]) for m in bob.get("/api/v2/models").json()] == [("nlp/m", N, N)]


@pytest.fixture
def aliases_lined_up(monkeypatch: pytest.MonkeyPatch) -> threading.Barrier:
    """The first N reads of a model's versions — one per alias move, read just before it looks for the alias —
    wait for each other, so all N look for the alias at once."""
    return _line_up(monkeypatch, model_registries, "versions")


def _check_moves(server: LiveServer, answers: list, target: str, moved_by: set[str], reader) -> None:  # noqa: ANN001
    """All N moves answered 200; the alias is at one of the versions; one audit event per move, and read in
    order the events chain: the first was set from nothing, each later one from the version the last one set."""
    codes = [r.status_code for r in answers]
    assert codes == [200] * N, " ".join(map(str, codes)) + ": " + next(r.text for r in answers if r.status_code != 200)
    with server.ctx.db.session() as s:
        events = s.scalars(select(AuditEventModel).where(AuditEventModel.action == "model.alias_moved")
                           .order_by(AuditEventModel.id)).all()
        assert len(events) == N and {e.target for e in events} == {target}, [(e.target, e.detail) for e in events]
        assert {e.actor for e in events} == moved_by
        moves = [(e.detail["from"], e.detail["to"]) for e in events]
        assert sorted(to for _, to in moves) == list(range(1, N + 1)), moves
        assert [before for before, _ in moves] == [None] + [to for _, to in moves[:-1]], moves
        final = moves[-1][1]
    name, _, alias = target.partition("@")
    shown = next(r.json() for r in answers if r.status_code == 200)
    assert shown["aliases"][alias] in range(1, N + 1)
    assert reader.get(f"/api/v2/models/{name}").json()["aliases"] == {alias: final}


def _versions(client, ref: str, folder: Path, home: str) -> None:  # noqa: ANN001
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    for v in range(1, N + 1):
        r = client.post("/api/v2/models", json={"name": Path(ref).name, "path": home})
        assert r.status_code == 201 and r.json()["version"] == v, r.text


def test_concurrent_first_settings_of_an_alias_all_move_it(server: LiveServer,
                                                           aliases_lined_up: threading.Barrier) -> None:
    """N moves of one's own new alias at once, each to another version: every one lands, in some order."""
    alice = server.new_user("alice")
    _versions(alice, "m", Path(server.ctx.settings.root) / "users" / "alice" / "models" / "m", "$HOME/models/m")
    answers = _race([lambda v=v: alice.put("/api/v2/models/m/aliases/prod", json={"version": v})
                     for v in range(1, N + 1)])
    _check_moves(server, answers, "m@prod", {"alice"}, alice)


def test_two_team_admins_setting_a_new_team_alias_at_once_both_move_it(server: LiveServer,
                                                                       aliases_lined_up: threading.Barrier) -> None:
    """``argus model alias nlp/m prod V`` by the team's two admins at once, N times over."""
    admin, alice, bob = server.admin(), server.new_user("alice"), server.new_user("bob")
    assert admin.post("/api/v2/teams", json={"name": "nlp"}).status_code == 201
    for user in ("alice", "bob"):
        assert admin.post("/api/v2/teams/nlp/members", json={"user": user, "role": "admin"}).status_code == 201
    _versions(alice, "nlp/m", Path(server.ctx.settings.root) / "teams" / "nlp" / "models" / "m",
              "$HOME/teams/nlp/models/m")
    answers = _race([lambda c=c, v=v: c.put("/api/v2/models/nlp/m/aliases/prod", json={"version": v})
                     for v, c in enumerate((alice, bob) * (N // 2), start=1)])
    _check_moves(server, answers, "nlp/m@prod", {"alice", "bob"}, bob)
