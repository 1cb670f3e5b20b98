"""The warm validator process: real verl, restart after a kill, timeouts, required/optional modes, templates."""

from __future__ import annotations

import itertools
import os
import signal
import sys
import time

import pytest

from argus.core.admission import AdmissionPolicy, Admitted, admit
from argus.core.builders import PathView, basic_overrides
from argus.core.paths import DataLayout
from argus.core.taskspec import parse_taskspec
from argus.settings import Settings
from argus.verl.check import KIND_FOR_ENTRY, VerlCheck
from argus.verl.entry import EntryModuleCheck
from argus.verl.messages import EXTRA_VALUES
from argus.verl.validator import ValidatorTimeout, ValidatorUnavailable, VerlValidator
from tests.waiting import wait_until

pytest.importorskip("verl")


def test_info_reports_the_installed_schema(validator):
    info = validator.request({"op": "info"})
    assert info["reward_moved"] is True  # verl 0.9: reward.custom_reward_function.* exists
    assert "grpo" in info["estimators"] and "gae" in info["estimators"]


def test_restart_after_kill(validator):
    validator.request({"op": "info"})
    pid, restarts = validator.pid, validator.restarts
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not validator.alive(), 10, what="the killed validator to end")
    resp = validator.request({"op": "validate", "config": "ppo_trainer", "overrides": ["data.train_batch_sz=1"]})
    assert resp["errors"][0]["key"] == "data.train_batch_sz"
    assert validator.pid != pid and validator.restarts == restarts + 1


def test_timeout_kills_and_next_request_works(validator):
    validator.request({"op": "info"})
    pid = validator.pid
    started = time.monotonic()
    with pytest.raises(ValidatorTimeout):
        validator.request({"op": "sleep", "seconds": 30}, timeout_s=0.5)
    assert time.monotonic() - started < 10
    assert validator.request({"op": "info"})["reward_moved"] is True
    assert validator.pid != pid


def test_the_budget_is_cpu_time_not_the_clock(validator):
    """A request slower on the clock than its budget but using little CPU, as on a busy head, is answered; the
    validator is the same process after it (issue 35)."""
    validator.request({"op": "info"})
    pid, started = validator.pid, time.monotonic()
    validator.request({"op": "sleep", "seconds": 3, "burn_every": 0.2}, timeout_s=1)
    assert time.monotonic() - started > 3 and validator.pid == pid


def test_concurrent_requests_are_serialized(validator):
    from concurrent.futures import ThreadPoolExecutor

    def one(i: int) -> str:
        r = validator.request({"op": "validate", "config": "ppo_trainer", "overrides": [f"data.train_batch_sz={i}"]})
        return r["errors"][0]["value"]

    with ThreadPoolExecutor(4) as pool:
        assert sorted(pool.map(one, range(4))) == ["0", "1", "2", "3"]


def _grpo_admitted(root) -> tuple[Admitted, list[str]]:  # noqa: ANN001
    layout = DataLayout.at(str(root))
    spec = parse_taskspec({"workload": "grpo", "model_id": "Qwen/Qwen2.5-0.5B", "nnodes": 1, "n_gpus_per_node": 1,
                           "train_file": "$HOME/datasets/t.parquet", "val_file": "$HOME/datasets/v.parquet"})
    admitted = admit(spec, "bob", AdmissionPolicy(layout=layout, entry_allowlist=("verl.trainer.",)))
    assert isinstance(admitted, Admitted)
    return admitted, basic_overrides(spec, PathView.real(layout, "bob", "t"), "t")


@pytest.mark.parametrize("mode", ["optional", "required"])
def test_unusable_verl_python(tmp_path, mode):
    settings = Settings(state_dir=tmp_path, verl_validation=mode, verl_python=str(tmp_path / "no-python"))
    check = VerlCheck(settings, VerlValidator(settings.verl_python))
    admitted, template = _grpo_admitted(settings.root)
    out = check(admitted, "bob", template)
    if mode == "optional":
        assert any("verl validation skipped" in w for w in out.warnings)
        # Argus's own checks never depend on verl's: the spec's data files do not exist here
        assert all(e.field != "(verl)" for e in out.errors), out.errors
        assert any("does not exist" in e.message for e in out.errors), out.errors
    else:
        assert out.errors and out.errors[0].field == "(verl)" and "no-python" in out.errors[0].message


def test_python_without_verl_is_unavailable(tmp_path):
    v = VerlValidator("/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable + "-none",
                      start_timeout_s=60)
    with pytest.raises(ValidatorUnavailable):
        v.request({"op": "info"})


def test_off_skips_everything(tmp_path):
    settings = Settings(state_dir=tmp_path, verl_validation="off")
    admitted, template = _grpo_admitted(tmp_path)
    out = VerlCheck(settings, None)(admitted, "bob", template)
    assert not out.errors and not out.warnings and not out.info


def test_non_verl_entries_are_skipped():
    assert "argus.jobs.reward_check" not in KIND_FOR_ENTRY


GRID = list(itertools.product(["ppo", "grpo"], [1, 3], [1, 2, 3, 8], [None, 4]))
GRID += [("sft", 1, g, None) for g in (1, 3, 4, 8)]


def test_basic_templates_pass_real_validation_for_any_gang(validator):
    """Every template × nnodes × n_gpus_per_node × rollout.n must pass verl's own validate_config."""
    failures = []
    for workload, nnodes, gpus, n in GRID:
        doc = {"workload": workload, "model_id": "Qwen/Qwen2.5-0.5B", "train_file": "/r/t.parquet",
               "val_file": "/r/v.parquet", "nnodes": nnodes, "n_gpus_per_node": gpus}
        if n:
            doc["rollout_n"] = n
        spec = parse_taskspec(doc)
        ov = basic_overrides(spec, PathView.as_written("t"), "t")
        config = "sft_trainer_engine" if workload == "sft" else "ppo_trainer"
        resp = validator.request({"op": "validate", "config": config, "overrides": ov})
        if resp["errors"]:
            failures.append((workload, nnodes, gpus, n, resp["errors"][0]["message"][:200]))
    assert not failures, failures


# ---------------------------------------------------------------- entry modules, values verl accepts


def test_find_module_looks_without_importing(validator):
    found = validator.request({"op": "find_module", "module": "verl.trainer.sft_trainer"})
    assert found["found"] is True and found["replacement"] is None
    gone = validator.request({"op": "find_module", "module": "verl.trainer.fsdp_sft_trainer"})
    assert gone == {**gone, "found": False, "replacement": "verl.trainer.sft_trainer"}
    assert validator.request({"op": "find_module", "module": "verl.trainer"})["found"] is False  # no __main__
    assert validator.request({"op": "find_module", "module": "verl..x"})["found"] is False


def _advanced_admitted(tmp_path, module: str) -> Admitted:
    spec = parse_taskspec({"kind": "advanced", "workload": "sft", "nnodes": 1, "n_gpus_per_node": 1,
                           "command": f"torchrun --nproc_per_node=1 --standalone -m {module} a=1"})
    admitted = admit(spec, "bob", AdmissionPolicy(layout=DataLayout.at(str(tmp_path)), entry_allowlist=("verl.",)))
    assert isinstance(admitted, Admitted), admitted
    return admitted


def test_entry_check_refuses_a_missing_module_and_names_the_replacement(tmp_path, validator):
    check = EntryModuleCheck(Settings(state_dir=tmp_path, verl_validation="required"), validator)
    out = check(_advanced_admitted(tmp_path, "verl.trainer.fsdp_sft_trainer"), "bob", [])
    assert [(e.field, e.value) for e in out.errors] == [("command", "verl.trainer.fsdp_sft_trainer")]
    assert "replaced by verl.trainer.sft_trainer" in out.errors[0].message
    assert not check(_advanced_admitted(tmp_path, "verl.trainer.sft_trainer"), "bob", []).errors


@pytest.mark.parametrize("mode", ["optional", "required"])
def test_entry_check_is_skipped_with_a_warning_without_a_validator(tmp_path, mode):
    settings = Settings(state_dir=tmp_path, verl_validation=mode, verl_python=str(tmp_path / "no-python"))
    out = EntryModuleCheck(settings, VerlValidator(settings.verl_python))(
        _advanced_admitted(tmp_path, "verl.trainer.fsdp_sft_trainer"), "bob", [])
    assert not out.errors and any("could not check that module" in w for w in out.warnings), out.warnings
    off = EntryModuleCheck(Settings(state_dir=tmp_path, verl_validation="off"), None)
    skipped = off(_advanced_admitted(tmp_path, "verl.trainer.fsdp_sft_trainer"), "bob", [])
    assert not skipped.errors and not skipped.warnings  # validation off: every verl check is skipped silently


@pytest.mark.parametrize(("config", "key", "value", "ok"), [
    ("sft_trainer_engine", "trainer.test_freq", "after_each_epoch", True),
    ("sft_trainer_engine", "trainer.save_freq", "after_each_epoch", True),
    ("sft_trainer_engine", "trainer.test_freq", "5", True),
    ("sft_trainer_engine", "trainer.test_freq", "every_epoch", False),
    ("ppo_trainer", "trainer.test_freq", "after_each_epoch", False),
    ("ppo_trainer", "trainer.save_freq", "after_each_epoch", False),
])
def test_type_checks_follow_what_the_trainer_accepts(validator, config, key, value, ok):
    resp = validator.request({"op": "validate", "config": config, "overrides": [f"{key}={value}"]})
    mine = [e for e in resp["errors"] if e["key"] == key]
    assert (not mine) if ok else (mine and "expects a number" in mine[0]["message"]), resp["errors"]


def test_the_extra_values_table_names_keys_verl_has(validator):
    """Every key in the table is a numeric leaf of its config (a renamed key would silently stop matching)."""
    for config, keys in EXTRA_VALUES.items():
        for key in keys:
            resp = validator.request({"op": "validate", "config": config, "overrides": [f"{key}=1"]})
            assert not [e for e in resp["errors"] if e["key"] == key], (config, key, resp["errors"])


# A server in miniature: one warm validator in its jail, started from a helper thread as the pool does
# (verl/pool.py: no --die-with-parent, which would tie the jail to that thread), its bwrap pid printed when ready.
HOLDER = """
import sys, threading, time
from pathlib import Path
from argus.settings import Settings
from argus.verl.sandbox import sandbox_prefix
from argus.verl.validator import VerlValidator
root = Path(sys.argv[1])
settings = Settings(data_root=root, state_dir=root / "state", sandbox="bwrap")
v = VerlValidator(sys.executable, jail=sandbox_prefix(settings, readable=[root], die_with_parent=False))
threading.Thread(target=v.start_background).start()
while not v.alive():
    time.sleep(0.2)
assert v.info  # it answered its first request: ready
print(v.pid, flush=True)
time.sleep(600)
"""


@pytest.mark.skipif(not __import__("shutil").which("bwrap"), reason="bubblewrap is not installed")
def test_a_jailed_validator_ends_with_the_server_that_started_it(tmp_path):
    """kill -9 of the server leaves no validator jail behind: the worker ends at its stdin's end (issue 36)."""
    import subprocess

    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        jail = int(holder.stdout.readline())
        assert os.path.exists(f"/proc/{jail}")
        holder.kill()
        holder.wait(10)
        wait_until(lambda: not os.path.exists(f"/proc/{jail}") or open(f"/proc/{jail}/stat").read().split()[2] == "Z",
                   60, every=0.2, what=f"the validator's jail (pid {jail}) to end after its server was killed")
    finally:
        if holder.poll() is None:
            holder.kill()
