"""Team folders end to end (issue 26) on the e2e suite's real local Ray cluster, with the task sandbox.

alice writes into ``/teams/nlp`` over real SFTP (the product's SftpServer on the stack's database and
file store, a paramiko client); bob, another member, runs a task whose command names
``$HOME/teams/nlp/...``: it reads alice's file (through the spec's path and through ``$HOME`` at run
time), prints it and writes a file back, which alice then reads over SFTP and the files API. carol, in
no team, is refused at admission when her spec names the team folder, and a task of hers that looks for
it at run time (``<root>/teams``, ``<root>/teams/nlp/<file>``, ``$HOME/teams``) finds nothing: the
folder is not in her sandbox. Users have names of their own so the session's other tests keep theirs.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import paramiko
import pytest

from argus.services.files import shared_store
from argus.sftp.server import SftpServer
from tests.e2e.stack import Stack, spec, submit, wait_status
from tests.helpers import free_port, post_spec
from tests.sftp.conftest import LoopThread

pytestmark = pytest.mark.e2e
PASSWORD = "correct horse battery"
ALICE, BOB, CAROL, TEAM = "tf-alice", "tf-bob", "tf-carol", "nlp"
NOTE = "alice's team note 7f3a: rows for the nlp runs\n"

# bob's reader, kept in the team's own code/ folder: importing it reads alice's note at the path the
# spec expanded (its own folder's parent) and at $HOME/teams/nlp, prints it, and writes a file back
READER = """\
import os
from pathlib import Path

team = Path(__file__).resolve().parents[1]
note = (team / "notes.txt").read_text()
print("TEAM NOTE:", note.strip(), flush=True)
via_home = Path(os.environ["HOME"]) / "teams" / "nlp" / "notes.txt"
print("VIA HOME:", via_home.read_text().strip(), flush=True)
(team / "from-bob.txt").write_text("bob read: " + note)
print("WROTE", team / "from-bob.txt", flush=True)
print("TEAMS SEEN:", sorted(os.listdir(team.parent)), flush=True)

def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    return 1.0
"""

# carol's probe, in her own $HOME/code: every way she could name the team's folder at run time
PROBE = """\
import os
ROOT = {root!r}
for label, action in [
    ("list root", lambda: sorted(os.listdir(ROOT))),
    ("list teams", lambda: sorted(os.listdir(ROOT + "/teams"))),
    ("read note", lambda: open(ROOT + "/teams/nlp/notes.txt").read()),
    ("list team", lambda: sorted(os.listdir(ROOT + "/teams/nlp"))),
    ("list home teams", lambda: sorted(os.listdir(os.path.expanduser("~/teams")))),
    ("read home note", lambda: open(os.path.expanduser("~/teams/nlp/notes.txt")).read()),
    ("write team", lambda: open(ROOT + "/teams/nlp/planted.txt", "w").write("x")),
]:
    try:
        print("probe:", label, "->", action(), flush=True)
    except OSError as exc:
        print("probe:", label, "-> refused:", type(exc).__name__, flush=True)

def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    return 1.0
"""


@dataclass
class Team:
    stack: Stack
    sftp_port: int

    def client(self, user: str) -> httpx.Client:
        return self.stack.user(user)

    def sftp(self, user: str) -> paramiko.SSHClient:
        c = paramiko.SSHClient()
        c.set_missing_host_key_policy(paramiko.AutoAddPolicy())
        c.connect("127.0.0.1", self.sftp_port, username=user, password=PASSWORD, allow_agent=False,
                  look_for_keys=False, timeout=20, banner_timeout=20, auth_timeout=20)
        return c


@pytest.fixture(scope="module")
def team(stack: Stack) -> Iterator[Team]:
    """Team nlp (alice, bob), carol in none, and the product's SFTP server on the stack's db and store
    (the e2e stack runs without one)."""
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed: the task sandbox cannot run")
    assert stack.server is not None
    for name in (ALICE, BOB, CAROL):
        r = stack.user(name).post("/api/v2/me/password", json={"password": PASSWORD})
        assert r.status_code == 204, r.text
    with stack.server.admin() as admin:
        assert admin.post("/api/v2/teams", json={"name": TEAM}).status_code == 201
        for who in (ALICE, BOB):
            r = admin.post(f"/api/v2/teams/{TEAM}/members", json={"user": who})
            assert r.status_code == 201, r.text
    settings = stack.settings.model_copy(update={"sftp_enabled": True, "sftp_port": free_port()})
    server = SftpServer(settings, stack.server.ctx.db, shared_store(stack.server.ctx.extras, settings))
    loop = LoopThread()
    loop.run(server.start())
    try:
        yield Team(stack, settings.sftp_port)
    finally:
        loop.run(server.stop())
        loop.close()


def _log(c: httpx.Client, tid: str) -> str:
    return c.get(f"/api/v2/tasks/{tid}/logs").text


def test_members_share_the_team_folder_over_sftp_and_in_tasks(team: Team) -> None:
    root = team.stack.settings.root
    (root / "teams" / "tf-vision").mkdir(parents=True, exist_ok=True)  # another team's folder, bob not in it
    # 1. alice writes into /teams/nlp over SFTP
    with team.sftp(ALICE) as c, c.open_sftp() as s:
        assert "teams" in s.listdir("/") and s.listdir("/teams") == [TEAM]
        with s.open(f"/teams/{TEAM}/notes.txt", "w") as f:
            f.write(NOTE)
    assert (root / "teams" / TEAM / "notes.txt").read_text() == NOTE
    # 2. bob's task reads it via $HOME/teams/nlp/..., prints it, and writes a file back
    bob = team.client(BOB)
    assert bob.post("/api/v2/files/mkdir", json={"path": f"/teams/{TEAM}/code"}).status_code == 201
    r = bob.put("/api/v2/files/content", params={"path": f"/teams/{TEAM}/code/reader.py"}, content=READER.encode())
    assert r.status_code == 201, r.text
    tid = submit(bob, spec(f"python3 -m argus.jobs.reward_check --reward $HOME/teams/{TEAM}/code/reader.py"))
    t = wait_status(bob, tid, {"SUCCEEDED"}, timeout=120)
    log = _log(bob, tid)
    assert f"team folder(s) {TEAM} read-write" in log, log[-3000:]
    assert f"TEAM NOTE: {NOTE.strip()}" in log, log[-3000:]
    assert f"VIA HOME: {NOTE.strip()}" in log, log[-3000:]
    assert "TEAMS SEEN: ['nlp']" in log, log[-3000:]  # not tf-vision's folder, on disk beside it
    assert t["status"] == "SUCCEEDED"
    # alice reads bob's file over SFTP and through the files API
    with team.sftp(ALICE) as c, c.open_sftp() as s:
        assert "from-bob.txt" in s.listdir(f"/teams/{TEAM}")
        with s.open(f"/teams/{TEAM}/from-bob.txt") as f:
            assert f.read().decode() == "bob read: " + NOTE
    r = team.client(ALICE).get("/api/v2/files/content", params={"path": f"/teams/{TEAM}/from-bob.txt"})
    assert r.status_code == 200 and r.text == "bob read: " + NOTE


@pytest.mark.hostile
def test_a_non_member_reaches_the_team_folder_neither_at_admission_nor_at_run_time(team: Team) -> None:
    root = team.stack.settings.root
    (root / "teams" / TEAM).mkdir(parents=True, exist_ok=True)
    (root / "teams" / TEAM / "notes.txt").write_text(NOTE)
    carol = team.client(CAROL)
    # over SFTP carol has no /teams at all
    with team.sftp(CAROL) as c, c.open_sftp() as s:
        assert "teams" not in s.listdir("/")
        for path in ("/teams", f"/teams/{TEAM}", f"/teams/{TEAM}/notes.txt"):
            with pytest.raises(OSError):
                s.stat(path)
    # admission: a spec naming the team folder is refused, naming the team
    r = post_spec(carol, spec(f"python3 -m argus.jobs.reward_check --reward $HOME/teams/{TEAM}/code/reader.py "
                              f"--data $HOME/teams/{TEAM}/notes.txt"))
    assert r.status_code == 400, r.text
    errors = r.json()["detail"]["errors"]
    assert errors and all(f"team {TEAM}, which you are not in" in e["message"] for e in errors), errors
    # run time: her own code looks for the folder by the real path and under $HOME; nothing is there
    r = carol.put("/api/v2/files/content", params={"path": "/code/team_probe.py"},
                  content=PROBE.format(root=str(root)).encode())
    assert r.status_code == 201, r.text
    tid = submit(carol, spec("python3 -m argus.jobs.reward_check --reward $HOME/code/team_probe.py"))
    wait_status(carol, tid, {"SUCCEEDED", "FAILED"}, timeout=120)
    log = _log(carol, tid)
    print("\n".join(line for line in log.splitlines() if "probe:" in line))
    assert f"[argus] sandbox: {CAROL}'s home read-write, shared" in log, log[-3000:]  # no team folder
    listed = [line for line in log.splitlines() if "probe: list root ->" in line]
    assert listed and "teams" not in listed[0], listed
    for label in ("list teams", "read note", "list team", "list home teams", "read home note", "write team"):
        assert f"probe: {label} -> refused:" in log, (label, log[-3000:])
    assert NOTE.strip() not in log
    assert not (root / "teams" / TEAM / "planted.txt").exists()
