"""SFTP keeps a live task's folder and log too (issue 37): the same UserFiles rule as the files API.

OpenSSH ``sftp`` against the real server: ``rm`` of a QUEUED task's log, ``rename`` of its folder and
``rmdir`` of its ``logs`` fail (the client reports a failure; the files stay), and succeed once it ended.
"""

from __future__ import annotations

from tests.helpers import submit_spec
from tests.sftp.conftest import SftpEnv

SPEC = ("kind: advanced\nworkload: job\nname: guarded\nnnodes: 1\nn_gpus_per_node: 0\n"
        "command: python3 -m argus.jobs.sleep 600\n")


def test_sftp_cannot_remove_or_rename_a_live_tasks_log(env: SftpEnv) -> None:
    with env.live.admin() as a:  # alice (made by the fixture, with her SSH key) gets a token to submit with
        r = a.post("/api/v2/users/alice/tokens", json={})
        assert r.status_code == 201, r.text
    with env.live.client(r.json()["token"]) as alice:
        tid = submit_spec(alice, SPEC)
        logs = env.home("alice") / "jobs" / tid / "logs"
        logs.mkdir(parents=True)
        (logs / "attempt-1.log").write_text("step:1\n")
        for cmd in (f"rm jobs/{tid}/logs/attempt-1.log\n", f"rename jobs/{tid} jobs/moved\n",
                    f"rmdir jobs/{tid}/logs\n", "rename jobs old-jobs\n"):
            proc = env.sftp("alice", cmd, check=False)
            assert proc.returncode != 0, (cmd, proc.stdout, proc.stderr)
        assert (logs / "attempt-1.log").read_text() == "step:1\n"
        assert alice.post(f"/api/v2/tasks/{tid}/cancel").json()["status"] == "CANCELED"
        env.sftp("alice", f"rm jobs/{tid}/logs/attempt-1.log\nrmdir jobs/{tid}/logs\nrename jobs/{tid} jobs/moved\n")
        assert not logs.exists() and (env.home("alice") / "jobs" / "moved").is_dir()
