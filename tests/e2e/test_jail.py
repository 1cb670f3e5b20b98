"""What runs is confined, not only what was written (issue: isolation at run time; ARCHITECTURE §7).

On the real local cluster of the e2e suite (its nodes load the Argus jail plugin and start
workers through the guard, as ``argus up`` does): a hostile reward run as a CPU job and
inside Ray actors — one of them with its own ``runtime_env`` — cannot read or write another
home or the shared folders; a ``code/argus`` package cannot replace the driver; and each
task sees only the GPUs Ray gave it, for driver-held and Ray-placed programs alike.
"""

from __future__ import annotations

import io
import json
import re
import sys

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
    assert "[argus] jail: alice's home read-write" in log, log
    _no_leak(stack, log)


def test_a_hostile_reward_in_ray_actors_is_confined_even_with_its_own_runtime_env(stack: Stack, victims) -> None:
    attempts = [{"py_executable": sys.executable},  # "run me with the bare interpreter"
                {"argus_jail": None},  # "run me without an owner"
                {"py_executable": sys.executable, "argus_jail": None}]
    cmd = "python3 -m argus.jobs.ray_gpus --gpus 0 --reward $HOME/code/evil_reward.py " + " ".join(
        f"--actor-runtime-env '{json.dumps(a)}'" for a in attempts)
    body = json.dumps({"kind": "advanced", "workload": "job", "nnodes": 1, "n_gpus_per_node": 0, "command": cmd})
    tid = submit(victims, body)  # JSON is YAML
    wait_status(victims, tid, "SUCCEEDED", timeout=180)
    log = _log(victims, tid)
    # each actor either ran in alice's jail (Ray kept the job's owner) or was refused by the node
    assert re.search(r"own-runtime-env-0 .* jail=alice reward=1.0", log), log  # its own interpreter, still jailed
    for i in range(1, len(attempts)):
        assert re.search(rf"own-runtime-env-{i} .* jail=alice reward=1.0", log) or (
            f"own-runtime-env-{i} refused: RuntimeEnvSetupError" in log and "no valid 'argus_jail'" in log), log
    assert "own-runtime-env-2 refused: RuntimeEnvSetupError" in log, log  # measured with Ray 2.60
    _no_leak(stack, log)


def test_a_code_argus_package_cannot_replace_the_driver(stack: Stack) -> None:
    mallory = stack.user("mallory")
    fake = b"print('PWNED: user code runs as the driver', flush=True)\n"
    for path, body in [("/code/argus/__init__.py", fake), ("/code/argus/runtime/__init__.py", fake),
                       ("/code/argus/runtime/driver.py", fake), ("/code/argus/jobs/__init__.py", fake),
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
    assert [len(ids) for ids in held_ids] == [1, 1] and len(actor_ids) == 2, (held_ids, placed_log)
    everything = [*held_ids[0], *held_ids[1], *actor_ids]
    assert len(set(everything)) == 4, everything  # no two tasks, no two actors share a GPU
    assert "ray_gpus: driver CUDA_VISIBLE_DEVICES=\n" in placed_log  # the Ray-placed driver holds none
