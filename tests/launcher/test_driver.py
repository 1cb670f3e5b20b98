"""The driver as Ray runs it, but without Ray: a real subprocess, real signals, real files."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from argus.launcher.driver import ray_node_id
from tests.waiting import slack, wait_until

DRIVER = [sys.executable, "-m", "argus.launcher.driver"]


def start(job_dir: Path, *argv: str, attempt: int = 1, python: str | None = None) -> subprocess.Popen[str]:
    # the task's HOME, as the scheduler sets it (the launcher clears the rest of the environment)
    cmd = [*DRIVER, "--job-dir", str(job_dir), "--attempt", str(attempt), f"--setenv=HOME={job_dir.parent}"]
    if python:
        cmd += ["--python", python]
    return subprocess.Popen([*cmd, "--", *argv], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def run(job_dir: Path, *argv: str, **kw) -> tuple[int, str]:
    p = start(job_dir, *argv, **kw)
    out, _ = p.communicate(timeout=60)
    return p.returncode, out


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is dead for our purpose (its parent has not reaped it yet)
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"


def test_exit_code_log_and_status(tmp_path: Path) -> None:
    job = tmp_path / "users" / "alice" / "jobs" / "t-1"
    code, out = run(job, "bash", "-c", "echo to-stdout; echo to-stderr >&2; exit 3", attempt=2)
    assert code == 3
    log = (job / "logs" / "attempt-2.log").read_text()
    lines = log.splitlines()
    assert lines[0].startswith("[argus] attempt 2 on ") and "CUDA_VISIBLE_DEVICES=" in lines[0]
    assert lines[1].startswith("[argus] bounds: memory ")  # the task's cgroup (launcher/task_bounds.py)
    assert lines[2:4] == ["to-stdout", "to-stderr"]  # merged, in order
    assert lines[-1].startswith("[argus] exit code 3")
    assert out == log  # echoed to Ray's log as well
    status = json.loads((job / "status.json").read_text())
    assert status["attempt"] == 2 and status["exit_code"] == 3
    assert status["hostname"] == os.uname().nodename
    assert status["started_at"] <= status["finished_at"]
    assert status["argv"][0] == "bash"
    assert not list(job.glob(".status.json*"))  # the atomic write left no temp file


def test_runs_in_job_dir_with_train_python_first_on_path(tmp_path: Path) -> None:
    code, out = run(tmp_path / "j", "bash", "-c", "pwd; python3 -c 'import sys; print(sys.executable)'",
                    python=sys.executable)
    assert code == 0, out
    lines = [line for line in out.splitlines() if not line.startswith("[argus] bounds")]
    assert lines[1] == str((tmp_path / "j").resolve())
    assert lines[2] == sys.executable  # the venv's interpreter, with its site-packages, not PATH's python3


def test_train_python_survives_a_login_shell(tmp_path: Path) -> None:
    """Advanced commands run as ``bash -lc``; /etc/profile resets PATH, the driver puts it back."""
    code, out = run(tmp_path / "j", "bash", "-lc", "X=1 python3 -c 'import sys, httpx; print(sys.executable)'",
                    python=sys.executable)
    assert code == 0, out
    assert out.splitlines()[2] == sys.executable  # after the first line and the bounds line


def test_unknown_command_exits_127(tmp_path: Path) -> None:
    code, out = run(tmp_path / "j", "no-such-program-xyz")
    assert code == 127 and "cannot start 'no-such-program-xyz'" in out


def test_sigterm_reaches_the_whole_child_group(tmp_path: Path) -> None:
    job = tmp_path / "j"
    p = start(job, "bash", "-c", "sleep 300 & echo $! > grandchild.pid; wait")
    pid_file = job / "grandchild.pid"
    wait_until(lambda: pid_file.exists() and pid_file.read_text().strip(), 10, every=0.05,
               what="grandchild.pid")
    grandchild = int(pid_file.read_text())
    p.send_signal(signal.SIGTERM)
    p.communicate(timeout=slack(20))
    assert p.returncode == 128 + signal.SIGTERM  # bash died of the forwarded SIGTERM
    wait_until(lambda: not alive(grandchild), 10, every=0.05, what="the grandchild to end")
    assert json.loads((job / "status.json").read_text())["signal"] == "SIGTERM"


def test_a_stop_before_supervision_is_kept_not_fatal(tmp_path: Path) -> None:
    """SIGTERM as soon as the driver's status.json exists, before or while it starts the child (a cancel
    under load): exit 143 and the signal recorded, never the driver killed by the default action (-15)."""
    for i in range(3):
        job = tmp_path / f"j{i}"
        p = start(job, "bash", "-c", "sleep 300 & echo $! > grandchild.pid; wait")
        wait_until(lambda job=job: (job / "status.json").exists(), 20, every=0.005, what="status.json")
        time.sleep(0.02 * i)  # before the start, around it, after it
        p.send_signal(signal.SIGTERM)
        p.communicate(timeout=slack(20))
        assert p.returncode == 128 + signal.SIGTERM, p.returncode
        assert json.loads((job / "status.json").read_text())["signal"] == "SIGTERM"
        pid_file = job / "grandchild.pid"
        if pid_file.exists() and pid_file.read_text().strip():
            wait_until(lambda f=pid_file: not alive(int(f.read_text())), 10, every=0.05, what="the grandchild to end")


def test_child_dies_with_a_killed_driver(tmp_path: Path) -> None:
    job = tmp_path / "j"
    p = start(job, sys.executable, "-c", "import os, time; open('child.pid', 'w').write(str(os.getpid())); time.sleep(300)")
    pid_file = job / "child.pid"
    wait_until(lambda: pid_file.exists() and pid_file.read_text(), 10, every=0.05, what="child.pid")
    child = int(pid_file.read_text())
    p.kill()  # SIGKILL: the driver cannot forward anything; the parent-death signal does the job
    p.wait(slack(10))
    wait_until(lambda: not alive(child), 10, every=0.05, what="the child to end")


def test_leftover_background_process_is_killed_when_the_child_exits(tmp_path: Path) -> None:
    job = tmp_path / "j"
    started = time.monotonic()
    code, _ = run(job, "bash", "-c", "sleep 300 & echo $! > bg.pid; echo done")
    assert code == 0 and time.monotonic() - started < 20  # did not wait for the background sleep
    wait_until(lambda: not alive(int((job / "bg.pid").read_text())), 10, every=0.05,
               what="the background process to end")


def test_ray_node_id_is_none_outside_ray() -> None:
    assert ray_node_id() is None


def test_no_command_is_an_error(tmp_path: Path) -> None:
    code, out = run(tmp_path / "j")
    assert code == 2 and "no command given" in out


def test_custom_reward_is_announced_in_the_log(tmp_path: Path) -> None:
    code = tmp_path / "code"
    code.mkdir()
    (code / "reward.py").write_text("def my_score(data_source, solution_str, ground_truth, extra_info=None, **kw):\n"
                                    "    return 1.0\n")
    cmd = (f"{sys.executable} -c 'print(42)' reward.custom_reward_function.path={code / 'reward.py'} "
           "reward.custom_reward_function.name=my_score")
    rc, out = run(tmp_path / "job", "bash", "-lc", cmd, python=sys.executable)
    assert rc == 0, out
    log = (tmp_path / "job" / "logs" / "attempt-1.log").read_text()
    banner = f"using customized reward function 'my_score' from '{code / 'reward.py'}'"
    assert banner in log and banner in out
    assert log.index(banner) < log.index("42\n")  # before training starts


def test_broken_reward_is_reported_and_training_still_starts(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("import no_such_module\n")
    rc, _out = run(tmp_path / "job", sys.executable, "-c", "print('trainer ran')",
                   f"custom_reward_function.path={bad}", python=sys.executable)
    log = (tmp_path / "job" / "logs" / "attempt-1.log").read_text()
    assert rc == 0 and "cannot load customized reward function 'compute_score'" in log
    assert "ModuleNotFoundError" in log and "trainer ran" in log


def test_outside_its_jail_a_task_that_requires_one_never_starts(tmp_path: Path) -> None:
    job = tmp_path / "users" / "alice" / "jobs" / "t-1"
    marker = tmp_path / "ran"
    p = subprocess.run([*DRIVER, "--job-dir", str(job), "--attempt", "1", "--user", "alice", "--sandbox", "--",
                        "touch", str(marker)], capture_output=True, text=True, timeout=60,
                       env={k: v for k, v in os.environ.items() if k != "ARGUS_JAIL_CONFIG"})
    assert p.returncode == 126 and not marker.exists()
    status = json.loads((job / "status.json").read_text())
    assert "must run in alice's sandbox" in status["error"] and status["exit_code"] == 126
    assert "[argus] error: this task must run in alice's sandbox" in (job / "logs" / "attempt-1.log").read_text()


def test_a_basic_template_gets_the_attention_kernel_this_worker_has(tmp_path: Path) -> None:
    """No flash-attn here: the sdpa overrides go in right after the module, before the template's own."""
    job = tmp_path / "users" / "alice" / "jobs" / "t-1"
    probe = tmp_path / "verl" / "trainer"
    probe.mkdir(parents=True)
    for d in (tmp_path / "verl", probe):
        (d / "__init__.py").write_text("")
    (probe / "sft_trainer.py").write_text("import sys; print('ARGS', sys.argv[1:])\n")
    p = subprocess.run([*DRIVER, "--job-dir", str(job), "--attempt", "1", "--attention", "auto",
                        f"--setenv=PYTHONPATH={tmp_path}", "--",
                        sys.executable, "-m", "verl.trainer.sft_trainer", "trainer.total_epochs=1"],
                       capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert p.returncode == 0, p.stdout
    log = (job / "logs" / "attempt-1.log").read_text()
    assert "[argus] attention: sdpa (flash-attn is not installed on this worker" in log
    assert ("ARGS ['+model.override_config.attn_implementation=sdpa', 'model.use_remove_padding=False', "
            "'trainer.total_epochs=1']") in log
    assert json.loads((job / "status.json").read_text())["notes"][0].startswith("attention: sdpa")


# ---------------------------------------------------------------- a jobs folder that refuses writes (issue 11)

CHATTY = ("import os, signal, sys\n"
          "open(sys.argv[1], 'w').write(str(os.getpid()))\n"
          "signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a stubborn trainer: only SIGKILL ends it\n"
          "line = 'x' * 99 + '\\n'\n"
          "while True:\n"
          "    sys.stdout.write(line)\n")


def start_limited(job_dir: Path, fsize: int, *argv: str) -> subprocess.Popen[str]:
    """The driver with RLIMIT_FSIZE: its writes past ``fsize`` bytes fail (EFBIG), like a quota filling mid-run."""
    import resource

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

    cmd = [*DRIVER, "--job-dir", str(job_dir), "--attempt", "1", "--", *argv]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, preexec_fn=limit)


def last_line(out: str) -> str:
    return out.rstrip("\n").rsplit("\n", 1)[-1]


def test_a_log_that_stops_taking_writes_mid_run_stops_the_task_and_says_why(tmp_path: Path) -> None:
    job = tmp_path / "users" / "alice" / "jobs" / "t-1"
    pid_file = tmp_path / "child.pid"
    p = start_limited(job, 64 * 1024, sys.executable, "-c", CHATTY, str(pid_file))
    out, _ = p.communicate(timeout=60)  # before the fix: the child blocked on a full pipe, forever
    assert p.returncode == 74, out[-2000:]
    assert last_line(out).startswith("[argus] LOG_WRITE_FAILED: file too large in $HOME/jobs/t-1/logs; "), out[-500:]
    assert "of output not written; the task was stopped (exit code 137)" in last_line(out)
    assert "[argus] LOG_WRITE_FAILED: file too large in $HOME/jobs/t-1/logs; stopping the task\n" in out
    assert not alive(int(pid_file.read_text())), "the child ignored SIGTERM and got SIGKILL"
    assert (job / "logs" / "attempt-1.log").stat().st_size == 64 * 1024  # what fitted was kept
    status = json.loads((job / "status.json").read_text())
    assert status["exit_code"] == 137 and status["log_dropped_bytes"] > 0 and status["log_dropped_lines"] > 0
    assert status["log_error"] == last_line(out).removeprefix("[argus] LOG_WRITE_FAILED: ")
    assert status["finished_at"] is not None


def test_a_full_log_before_the_task_starts_does_not_start_it(tmp_path: Path) -> None:
    from tests.tinyfs import tmpfs

    job = tmp_path / "users" / "alice" / "jobs" / "t-2"
    ran = tmp_path / "ran"
    with tmpfs(job / "logs", "size=64k") as logs:  # a full filesystem: every write, ENOSPC
        try:
            with open(logs / "filler", "wb") as f:
                while True:
                    f.write(b"x" * 4096)
                    f.flush()
        except OSError:
            pass
        code, out = run(job, "touch", str(ran))
    assert code == 74 and not ran.exists()
    assert last_line(out).startswith("[argus] LOG_WRITE_FAILED: no space left on $HOME/jobs/t-2/logs; ")
    assert last_line(out).endswith("of output not written; the task was not started")
    status = json.loads((job / "status.json").read_text())
    assert status["exit_code"] is None and status["log_error"].startswith("no space left on $HOME/jobs/t-2/logs")


@pytest.mark.hostile
def test_a_linked_job_folder_or_log_is_refused_and_nothing_is_written_through_it(tmp_path: Path) -> None:
    """Hostile (issue 36's review): the root launcher must not follow a link its task or owner planted in the job
    folder — the job folder itself, its logs/, or the log: the task does not start, the target is untouched."""
    victim_dir = tmp_path / "etc"
    victim_dir.mkdir()
    (victim_dir / "passwd").write_text("root:x:0:0\n")
    ran = tmp_path / "ran"
    home = tmp_path / "users" / "mallory"
    (home / "jobs").mkdir(parents=True)
    (home / "jobs" / "t-9").symlink_to(victim_dir)  # the job folder is a link
    code, out = run(home / "jobs" / "t-9", "touch", str(ran))
    assert code == 74 and not ran.exists(), out
    (home / "jobs" / "t-8" / "logs").mkdir(parents=True)
    (home / "jobs" / "t-8" / "logs" / "attempt-1.log").symlink_to(victim_dir / "passwd")  # the log is a link
    code, out = run(home / "jobs" / "t-8", "touch", str(ran))
    assert code == 74 and not ran.exists(), out
    assert sorted(p.name for p in victim_dir.iterdir()) == ["passwd"]
    assert (victim_dir / "passwd").read_text() == "root:x:0:0\n"


def test_a_read_only_jobs_folder_names_itself(tmp_path: Path) -> None:
    from tests.tinyfs import tmpfs

    jobs = tmp_path / "users" / "alice" / "jobs"
    ran = tmp_path / "ran"
    with tmpfs(jobs, "ro", "size=64k"):
        code, out = run(jobs / "t-3", "touch", str(ran))
    assert code == 74 and not ran.exists(), out
    assert last_line(out) == ("[argus] LOG_WRITE_FAILED: read-only file system at $HOME/jobs/t-3; "
                              "the task was not started"), out


def test_a_tiny_jobs_filesystem_filling_mid_run(tmp_path: Path) -> None:
    """The report's setup: the jobs folder on a small filesystem and a task that prints a lot."""
    from tests.tinyfs import tmpfs

    jobs = tmp_path / "users" / "alice" / "jobs"
    pid_file = tmp_path / "child.pid"
    with tmpfs(jobs, "size=64k"):
        p = start(jobs / "t-4", sys.executable, "-c", CHATTY, str(pid_file))
        out, _ = p.communicate(timeout=60)
        log_size = (jobs / "t-4" / "logs" / "attempt-1.log").stat().st_size
    assert p.returncode == 74, out[-2000:]
    assert last_line(out).startswith("[argus] LOG_WRITE_FAILED: no space left on $HOME/jobs/t-4/logs; "), out[-500:]
    assert "the task was stopped (exit code 137)" in last_line(out)
    assert 0 < log_size <= 64 * 1024
    assert not alive(int(pid_file.read_text()))


def test_cpu_training_gets_logical_gpus_and_slots_in_its_private_ray(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    """Issue 34: --device cpu: the private Ray advertises the task's workers as GPUs (no device file, no
    CUDA_VISIBLE_DEVICES: Ray refuses GPUs that an empty one says are absent) and CPU slots for verl's actors;
    every node of it is a worker node (the templates pin TransferQueue there)."""
    from argus.launcher import private_ray
    from argus.launcher.driver import parse_args
    from argus.launcher.task_sandbox import Sandbox, private_ray_share

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    ns = parse_args(["--job-dir", str(tmp_path / "j"), "--attempt", "1", "--private-ray", "--device", "cpu",
                     "--cpus", "2", "--gpus", "1", "--", "python3", "-m", "verl.trainer.main_ppo"])
    assert private_ray_share(ns) == (16.0, 1)
    box = Sandbox(ns, tmp_path / "j")
    assert "CUDA_VISIBLE_DEVICES" not in box.env({"CUDA_VISIBLE_DEVICES": ""}, "/bin")
    inner = box.inner("/env/bin/python", ["python3", "x.py"])
    assert inner[inner.index("--cpus") + 1] == "16.0" and inner[inner.index("--gpus") + 1] == "1"
    gpu = parse_args(["--job-dir", str(tmp_path / "j"), "--attempt", "1", "--cpus", "7", "--gpus", "1", "--", "x"])
    assert private_ray_share(gpu) == (7.0, 1)
    start = private_ray.ray_start_argv(private_ray.parse_args(["--head", "1", "--client-port", "2", "--", "x"]))
    assert '--resources={"worker_node": 1}' in start


def test_the_attempt_record_mirrors_the_heartbeat_and_a_stop_request_ends_the_task(tmp_path: Path) -> None:
    """Out of the owner's reach (launcher/attempt_record): the record the server decides on when Ray lost the job,
    and the stop request it answers like a cancel's SIGTERM."""
    from argus.launcher import attempt_record

    root = tmp_path / "root"
    job = root / "users" / "alice" / "jobs" / "job-1"
    p = start(job, "bash", "-c", "echo started; sleep 300")
    wait_until(lambda: attempt_record.read(root, "job-1", 1).get("driver_pid") == p.pid, 20, every=0.05,
               what="the attempt's record")
    record = attempt_record.read(root, "job-1", 1)
    assert record["finished_at"] is None and record["heartbeat_s"] and record["alive_at"]
    assert oct(attempt_record.folder(root).stat().st_mode & 0o777) == "0o700"
    wait_until(lambda: "started" in (job / "logs" / "attempt-1.log").read_text(), 20, every=0.05, what="the start")
    attempt_record.request_stop(root, "job-1", 1)
    out, _ = p.communicate(timeout=slack(30))
    assert p.returncode == 128 + signal.SIGTERM, out
    assert "the server asked this attempt to stop" in out
    record = attempt_record.read(root, "job-1", 1)
    assert record["exit_code"] == 143 and record["finished_at"] and record["signal"] == "SIGTERM"
