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
from argus.services import registry
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


@pytest.fixture
def lined_up(monkeypatch: pytest.MonkeyPatch) -> threading.Barrier:
    """Every registration waits for the other N-1 just before it numbers its version, so all N read the same
    latest version at once (without it the window is too short to hit reliably)."""
    barrier = threading.Barrier(N)
    lineage = registry._lineage

    def waiting(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        try:
            barrier.wait(timeout=20)
        except threading.BrokenBarrierError:
            pass
        return lineage(*args, **kwargs)

    monkeypatch.setattr(registry, "_lineage", waiting)
    return barrier


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
