"""What runs is confined, not only what was written (issues 16 and 21; ARCHITECTURE §7).

On the real local cluster of the e2e suite (token auth, sandbox config on every node, as
``argus up`` runs it): a hostile reward run as a CPU job and inside the task's own Ray
actors cannot read or write another home or the shared folders; a hostile task tries every
way out of its sandbox (tests/e2e/hostile_probe.py) while bob's Ray task runs, and each one
is blocked; a ``code/argus`` package cannot replace the launcher; and each task sees only
the GPUs Ray gave it, for plain and Ray programs alike.
"""

from __future__ import annotations

import io
import json
import os
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.e2e.stack import Stack, spec, submit, wait_status

pytestmark = [pytest.mark.e2e, pytest.mark.hostile]

EVIL_REWARD = """\
import os
ROOT = {root!r}
for label, action in [
    ("read bob", lambda: open(ROOT + "/users/bob/datasets/secret.txt").read()),
    ("write bob", lambda: open(ROOT + "/users/bob/datasets/planted.txt", "w").write("x")),
    ("write shared", lambda: open(ROOT + "/datasets/planted.txt", "w").write("x")),
    ("list users", lambda: sorted(os.listdir(ROOT + "/users"))),
]:
    try:
        print("evil:", label, "->", action(), flush=True)
    except OSError as exc:
        print("evil:", label, "-> refused:", type(exc).__name__, exc, flush=True)

def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    return 1.0
"""


def _put(client, path: str, data: bytes) -> None:
    parent = path.rsplit("/", 1)[0]
    client.post("/api/v2/files/mkdir", json={"path": parent, "parents": True})
    r = client.put("/api/v2/files/content", params={"path": path}, content=data)
    assert r.status_code in (200, 201), r.text


def _parquet() -> bytes:
    table = pa.table({"data_source": ["gsm8k"], "prompt": [[{"role": "user", "content": "1+1?"}]],
                      "reward_model": [{"ground_truth": "2", "style": "rule"}]})
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()


@pytest.fixture(scope="module")
def victims(stack: Stack):
    """bob has a secret; alice has the evil reward and a dataset in her home."""
    bob, alice = stack.user("bob"), stack.user("alice")
    _put(bob, "/datasets/secret.txt", b"BOB-SECRET-42")
    _put(alice, "/code/evil_reward.py", EVIL_REWARD.format(root=str(stack.settings.root)).encode())
    _put(alice, "/datasets/train.parquet", _parquet())
    return alice


def _log(client, tid: str) -> str:
    return client.get(f"/api/v2/tasks/{tid}/logs").text


def _no_leak(stack: Stack, log: str) -> None:
    root = stack.settings.root
    assert "BOB-SECRET-42" not in log
    assert "evil: read bob -> refused" in log
    assert "evil: list users -> ['alice']" in log  # the jail shows no other home
    assert not (root / "users" / "bob" / "datasets" / "planted.txt").exists()
    assert not (root / "datasets" / "planted.txt").exists()


def test_a_hostile_reward_in_a_cpu_job_reaches_no_other_home(stack: Stack, victims) -> None:
    tid = submit(victims, spec("python3 -m argus.jobs.reward_check --reward $HOME/code/evil_reward.py "
                               "--data $HOME/datasets/train.parquet --rows 1"))
    wait_status(victims, tid, {"SUCCEEDED", "FAILED"}, timeout=120)
    log = _log(victims, tid)
    assert "[argus] sandbox: alice's home read-write" in log, log
    _no_leak(stack, log)


def test_a_hostile_reward_in_the_tasks_own_ray_actors_is_confined(stack: Stack, victims) -> None:
    """The actors of the task's private Ray run in its sandbox too, whatever runtime_env they ask for."""
    cmd = ("python3 -m argus.jobs.ray_gpus --gpus 0 --reward $HOME/code/evil_reward.py "
           f"--actor-runtime-env '{json.dumps({'env_vars': {'X': '1'}})}'")
    body = json.dumps({"kind": "advanced", "workload": "job", "nnodes": 1, "n_gpus_per_node": 0, "command": cmd})
    tid = submit(victims, body)  # JSON is YAML
    wait_status(victims, tid, "SUCCEEDED", timeout=180)
    log = _log(victims, tid)
    assert "[argus] private Ray cluster of this task" in log, log
    assert re.search(r"own-runtime-env-0 .* jail=alice reward=1.0", log), log
    _no_leak(stack, log)


PROBE = Path(__file__).with_name("hostile_probe.py")


def run_hostile_probe(alice, bob, *, knows: dict, timeout: float = 400) -> tuple[str, str]:
    """bob runs a Ray program holding a secret; alice's task probes every way out. (alice's log, bob's task id)."""
    _put(bob, "/datasets/secret.txt", b"BOB-SECRET-42")
    bob_tid = submit(bob, spec("python3 -m argus.jobs.ray_gpus --gpus 0 --hold 300"))
    t = wait_status(bob, bob_tid, set(), timeout=180,
                    until=lambda _t: "ray_gpus: holding" in bob.get(f"/api/v2/tasks/{bob_tid}/logs").text)
    bob_log = bob.get(f"/api/v2/tasks/{bob_tid}/logs").text
    port = re.search(r"RAY_ADDRESS=([0-9.]+:\d+)", bob_log)
    assert port, bob_log
    knows = {**knows, "bob_sid": t["attempts"][-1]["submission_id"], "bob_ray": port.group(1),
             "bob_marker": "argus.jobs.ray_gpus", "bob_secret": knows["data_root"] + "/users/bob/datasets/secret.txt"}
    _put(alice, "/code/hostile_probe.py", PROBE.read_bytes())
    _put(alice, "/code/knows.json", json.dumps(knows).encode())
    tid = submit(alice, spec("python3 -m argus.jobs.reward_check --reward $HOME/code/hostile_probe.py"))
    wait_status(alice, tid, {"SUCCEEDED", "FAILED"}, timeout=timeout)
    log = _log(alice, tid)
    assert bob.get(f"/api/v2/tasks/{bob_tid}").json()["status"] == "RUNNING"  # untouched by alice
    bob.post(f"/api/v2/tasks/{bob_tid}/cancel")
    return log, bob_tid


def assert_all_blocked(log: str) -> None:
    probes = re.findall(r"^PROBE (\S+(?: /\S+)?) (blocked|LEAK) (.*)$", log, re.M)
    print("\n".join(" ".join(p) for p in probes))  # shown with -s, and on a failure
    leaks = [p for p in probes if p[1] == "LEAK"]
    assert not leaks, leaks
    names = {p[0] for p in probes}
    expected = {"ray-client", "platform-gcs", "platform-gcs-own-token", "environment", "jobs-api-list",
                "jobs-api-stop", "state-api", "bob-private-ray", "ray-metrics", "platform-files", "processes",
                "signal-server", "capabilities", "proc-root", "umount /tmp", "bob-home", "dev-shm", "gpu-devices"}
    assert expected <= names, (sorted(expected - names), log[-3000:])


def probe_knowledge(*, gcs: str, dashboard: str, client_port: int, server_pid: int, state_dir: Path,
                    data_root: Path, platform_paths: list[str], secret_values: list[str]) -> dict:
    marker = f"argus-hostile-{os.getpid()}"
    (Path("/dev/shm") / marker).write_text("the node's shared memory")
    return {"host": gcs.rsplit(":", 1)[0], "gcs": gcs, "dashboard": dashboard, "client_port": client_port,
            "server_pid": server_pid, "state_dir": str(state_dir), "data_root": str(data_root),
            "platform_paths": platform_paths, "secret_values": secret_values, "shm_marker": marker}


def test_a_hostile_task_reaches_neither_the_platform_nor_another_task(stack: Stack) -> None:
    """Issue 21's items 1-7 from inside an ordinary task, with bob's Ray task running beside it."""
    s, cluster = stack.settings, stack.cluster
    knows = probe_knowledge(
        gcs=stack.gcs_address, dashboard=stack.dashboard_url, client_port=cluster.settings.ray_client_server_port,
        server_pid=os.getpid(), state_dir=s.state_dir, data_root=s.root,
        platform_paths=[str(s.state_dir / "argus.db"), str(s.root / ".argus" / "ray-auth-token"),
                        str(cluster.temp_dir / "session_latest"), str(s.state_dir / "jail" / "node.json")],
        secret_values=[s.ray_auth_token or cluster.settings.ray_auth_token])
    try:
        log, _ = run_hostile_probe(stack.user("alice"), stack.user("bob"), knows=knows)
    finally:
        (Path("/dev/shm") / knows["shm_marker"]).unlink(missing_ok=True)
    assert_all_blocked(log)
    # the probe can tell: outside any sandbox, with the platform's token, the same call connects
    import sys

    sys.path.insert(0, str(PROBE.parent))
    from hostile_probe import ray_connects

    env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": cluster.settings.ray_auth_token or ""}
    assert ray_connects(stack.gcs_address, env, timeout=60)[0]


def test_a_code_argus_package_cannot_replace_the_driver(stack: Stack) -> None:
    mallory = stack.user("mallory")
    fake = b"print('PWNED: user code runs as the driver', flush=True)\n"
    for path, body in [("/code/argus/__init__.py", fake), ("/code/argus/launcher/__init__.py", fake),
                       ("/code/argus/launcher/driver.py", fake), ("/code/argus/jobs/__init__.py", fake),
                       ("/code/argus/jobs/sleep.py", fake)]:
        _put(mallory, path, body)
    tid = submit(mallory, spec("python3 -m argus.jobs.sleep 0 --lines 1"))
    wait_status(mallory, tid, "SUCCEEDED", timeout=120)
    log = _log(mallory, tid)
    assert "PWNED" not in log and "[argus] attempt 1" in log and "sleep: done" in log, log


def _ids(line_pattern: str, log: str) -> list[str]:
    return [v for m in re.finditer(line_pattern, log) for v in m.group(1).split(",") if v]


def test_each_task_sees_only_the_gpus_ray_gave_it(stack: Stack) -> None:
    carol = stack.user("carol")
    worker = stack.add_worker(gpus=4)
    try:
        held = [submit(carol, spec("python3 -m argus.jobs.gpus --hold 25", gpus=1, name=f"held-{i}"))
                for i in range(2)]
        placed = submit(carol, spec("python3 -m argus.jobs.ray_gpus --gpus 2 --hold 2", gpus=2, name="placed"))
        wait_status(carol, placed, "SUCCEEDED", timeout=180)
        for tid in held:  # still holding their GPUs while the Ray-placed task ran: the three overlapped
            assert carol.get(f"/api/v2/tasks/{tid}").json()["status"] == "RUNNING"
        for tid in held:
            wait_status(carol, tid, "SUCCEEDED", timeout=120)
    finally:
        stack.kill_worker(worker)
    held_ids = [_ids(r"gpus: CUDA_VISIBLE_DEVICES=([0-9,]*)", _log(carol, t)) for t in held]
    placed_log = _log(carol, placed)
    actor_ids = _ids(r"ray_gpus: actor-\d+ .*?CUDA_VISIBLE_DEVICES=([0-9,]*)", placed_log)
    task_ids = _ids(r"ray_gpus: driver CUDA_VISIBLE_DEVICES=([0-9,]*)", placed_log)
    assert [len(ids) for ids in held_ids] == [1, 1] and len(actor_ids) == 2, (held_ids, placed_log)
    everything = [*held_ids[0], *held_ids[1], *actor_ids]
    assert len(set(everything)) == 4, everything  # no two tasks, no two actors share a GPU
    # the task's private Ray hands out exactly the task's GPUs (logical GPUs here: no device files to hide)
    assert sorted(task_ids) == sorted(actor_ids), placed_log


def test_a_two_node_task_gets_one_private_ray_over_both_sandboxes_and_another_task_sees_neither(stack: Stack) -> None:
    """Two worker nodes with logical GPUs: the task's private Ray spans a sandbox on each, STRICT_SPREAD works."""
    erin, dave = stack.user("erin"), stack.user("dave")
    workers = [stack.add_worker(gpus=2) for _ in range(2)]
    try:
        gang = submit(erin, spec("python3 -m argus.jobs.ray_gpus --gpus 2 --strategy STRICT_SPREAD --hold 15",
                                 gpus=1, nnodes=2, name="gang"))
        wait_status(erin, gang, set(), timeout=240,
                    until=lambda _t: "ray_gpus: cluster" in _log(erin, gang))
        other = submit(dave, spec("python3 -m argus.jobs.ray_gpus --gpus 1", gpus=1, name="beside"))
        wait_status(dave, other, "SUCCEEDED", timeout=240)
        wait_status(erin, gang, "SUCCEEDED", timeout=240)
    finally:
        for w in workers:
            stack.kill_worker(w)
    log, other_log = _log(erin, gang), _log(dave, other)
    assert "[argus] nodes 2-2 of this task: one sandbox each" in log, log
    assert "ray_gpus: cluster nodes=2 GPU=2 CPU=" in log, log  # both sandboxes, the task's share of each
    actor_nodes = re.findall(r"ray_gpus: actor-\d+ .* node=(\w+)", log)
    assert len(set(actor_nodes)) == 2, log  # STRICT_SPREAD over the task's own two nodes
    assert "ray_gpus: cluster nodes=1 GPU=1 CPU=" in other_log, other_log  # dave's Ray: his node, his GPU only
