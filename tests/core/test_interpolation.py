"""Interpolations, resolved-path rules and command environment assignments (pure admission, no verl)."""

import pytest

from argus.core.admission import AdmissionPolicy, Admitted, Rejected, admit
from argus.core.envvars import DEFAULT_ENV_ALLOWLIST
from argus.core.interpolation import find_interpolations, is_output_key, is_path_key
from argus.core.pathrules import check_path_value
from argus.core.paths import DataLayout
from argus.core.taskspec import parse_taskspec
from argus.settings import DEFAULT_ENTRY_ALLOWLIST

pytestmark = pytest.mark.hostile  # the hostile-input suite: grows with every hole found

LAYOUT = DataLayout.at("/private")
POLICY = AdmissionPolicy(layout=LAYOUT, entry_allowlist=tuple(DEFAULT_ENTRY_ALLOWLIST))
ARGS = ("data.train_files=$HOME/common/datasets/gsm8k/train.parquet data.val_files=$HOME/datasets/v.parquet "
        "trainer.nnodes=1 trainer.n_gpus_per_node=4")


def adv(command):
    spec = parse_taskspec({"kind": "advanced", "workload": "ppo", "nnodes": 1, "n_gpus_per_node": 4,
                           "command": command})
    assert not isinstance(spec, list), spec
    return admit(spec, "alice", POLICY)


def basic(*overrides, **kw):
    doc = {"workload": "grpo", "model_id": "Qwen/Qwen2.5-0.5B-Instruct", "train_file": "$HOME/datasets/t.parquet",
           "val_file": "$HOME/common/datasets/v.parquet", "nnodes": 1, "n_gpus_per_node": 4,
           "overrides": list(overrides), **kw}
    spec = parse_taskspec(doc)
    assert not isinstance(spec, list), spec
    return admit(spec, "alice", POLICY)


def messages(verdict):
    assert isinstance(verdict, Rejected), verdict
    return [f"{e.field} | {e.value} | {e.message}" for e in verdict.errors]


# ---------------------------------------------------------------- resolvers (text)


@pytest.mark.parametrize(("text", "refused"), [
    ("${trainer.experiment_name}", False),
    ("${.sibling}", False),
    ("${a.${b}}", False),
    ("${oc.select:trainer.project_name,null}", False),
    ("${oc.dict.keys:trainer}", False),
    ("${now:%Y-%m-%d}", False),
    ("${oc.env:HOME}", True),
    ("${oc.env:SOME_VAR,../bob}", True),
    ("${env:HOME}", True),
    ("${oc.decode:${x}}", True),
    ("${oc.create:${x}}", True),
    ("${hydra:runtime.cwd}", True),
    ("${my_resolver:1}", True),
    ("${${a}:HOME}", True),  # a resolver name built by interpolation
    ("${oc.select:x,${oc.env:HOME}}", True),  # nested in an allowed one
    ("${PWD%/*}", True),  # bash syntax, not a config key
    ("${oc.env:HOME", True),  # unterminated
])
def test_resolver_rules(text, refused):
    assert any(i.refused for i in find_interpolations(text)) is refused, find_interpolations(text)


@pytest.mark.parametrize("value", ["${oc.env:SOME_VAR,../bob}", "${oc.env:HOME}", "${oc.decode:'${x}'}",
                                   "${hydra:runtime.cwd}", "${anything:1}"])
def test_environment_and_code_resolvers_are_refused_in_overrides(value):
    msgs = messages(basic(f"trainer.experiment_name={value}"))
    assert any("overrides[0]" in m and "resolver" in m and "not allowed" in m for m in msgs), msgs


def test_resolvers_are_refused_in_advanced_commands():
    msgs = messages(adv(f"python3 -m verl.trainer.main_ppo {ARGS} 'trainer.experiment_name=${{oc.env:USER}}'"))
    assert any("'oc.env' resolver" in m and "server's environment" in m for m in msgs), msgs


def test_typed_basic_fields_take_no_interpolation():
    msgs = messages(basic(train_file="$HOME/${x}/../bob/t.parquet"))
    assert any(m.startswith("train_file |") and "only accepted in 'overrides'" in m for m in msgs), msgs


# ---------------------------------------------------------------- unresolved (validation off / unavailable)


@pytest.mark.parametrize(("overrides", "field", "text"), [
    (["+x=..", "trainer.default_local_dir=$HOME/${x}/bob/ck"], "overrides[1]", "is a path and contains"),
    (["trainer.experiment_name=../bob", "trainer.default_local_dir=$HOME/${trainer.experiment_name}/ck"],
     "overrides[0]", "plain name"),
    (["+a=/private/us", "+b=ers/bob/ck", "trainer.default_local_dir=${a}${b}"], "overrides[2]", "is a path"),
    (["trainer.project_name=..", "trainer.experiment_name=../../../../bob"], "overrides[1]", "plain name"),
    (["+x=${trainer.default_local_dir}/../../../bob"], "overrides[0]", "reads the path trainer.default_local_dir"),
])
def test_interpolated_paths_are_pending_until_resolved(overrides, field, text):
    """admit() accepts them pending resolution; without it (validation off/unavailable) these errors stand."""
    verdict = basic(*overrides)
    assert isinstance(verdict, Admitted), verdict
    hits = [e for e in verdict.unresolved if e.field == field]
    assert hits and any(text in e.message and "cannot resolve the config" in e.message for e in hits), verdict.unresolved


def test_advanced_interpolation_is_pending_too():
    verdict = adv(f"python3 -m verl.trainer.main_ppo {ARGS} '+x=..' 'trainer.default_local_dir=$HOME/${{x}}/bob/ck'")
    assert isinstance(verdict, Admitted), verdict
    assert [e.field for e in verdict.unresolved] == ["command: trainer.default_local_dir"]


def test_safe_names_have_nothing_pending():
    verdict = basic("trainer.experiment_name=exp1", "trainer.default_local_dir=$HOME/jobs/x/ck")
    assert isinstance(verdict, Admitted) and verdict.unresolved == []


# ---------------------------------------------------------------- path rules (literal and resolved)


@pytest.mark.parametrize(("key", "value", "ok"), [
    ("trainer.default_local_dir", "/private/users/alice/jobs/x/ck", True),
    ("trainer.default_local_dir", "checkpoints/argus/exp", True),  # relative: the job dir
    ("trainer.default_local_dir", "~/ck", True),
    ("trainer.default_local_dir", "/private/users/alice/../bob/ck", False),
    ("trainer.default_local_dir", "checkpoints/p/../../../../../bob", False),  # verl's default, escaped
    ("trainer.default_local_dir", "/tmp/ck", False),  # outputs stay in the home
    ("trainer.default_local_dir", "/private/datasets/x", False),  # shared is read-only
    ("hydra.run.dir", "outputs/2026-01-01/10-00-00", True),
    ("hydra.run.dir", "/private/users/bob/out", False),
    ("actor_rollout_ref.model.path", "/private/hf/Qwen", True),
    ("actor_rollout_ref.model.path", "Qwen/Qwen2.5-0.5B", True),  # a hub id
    ("actor_rollout_ref.model.path", "/private/users/bob/models/m", False),
    ("actor_rollout_ref.model.path", "/private/secret", False),  # in the data root, not shared
    ("actor_rollout_ref.rollout.prometheus.file", "/tmp/ray/session_latest/metrics/prometheus/prometheus.yml", True),
    ("data.train_files", "/private/datasets/t.parquet", True),
    ("data.train_files", "/private/hf/t.parquet", False),
    ("reward.custom_reward_function.path", "/private/users/alice/code/r.py", True),
    ("reward.custom_reward_function.path", "/private/users/alice/datasets/r.py", False),
    ("trainer.experiment_name", "../../../bob", False),  # any key: never another home
    ("trainer.experiment_name", "a/b", True),
    ("model.path", "~bob/m", False),
    ("trainer.default_hdfs_dir", "hdfs://nn/x", True),  # a URL is not a local path
])
def test_path_rules(key, value, ok):
    errs = check_path_value(key, value, "alice", LAYOUT, fld="f", resolved=True)
    assert (not errs) is ok, errs
    if errs:
        assert key in errs[0].message and "resolves to" in errs[0].message


def test_path_like_keys():
    assert is_path_key("data.train_files") and is_path_key("actor_rollout_ref.model.tokenizer_path")
    assert is_path_key("hydra.searchpath") and is_path_key("trainer.default_local_dir")
    assert not is_path_key("trainer.experiment_name")
    assert is_output_key("trainer.rollout_data_dir") and is_output_key("global_profiler.save_path")
    assert not is_output_key("actor_rollout_ref.model.path")


def test_literal_output_paths_are_checked_at_admission():
    msgs = messages(basic("trainer.default_local_dir=/tmp/ck", "trainer.rollout_data_dir=$HOME/common/datasets/d"))
    assert any("overrides[0]" in m and "only write inside your home" in m for m in msgs), msgs
    assert any("overrides[1]" in m and "$HOME/common/datasets/d" in m for m in msgs), msgs


def test_hydra_chdir_is_refused():
    msgs = messages(basic("hydra.job.chdir=True"))
    assert any("hydra.job.chdir" in m for m in msgs), msgs


# ---------------------------------------------------------------- environment assignments


@pytest.mark.parametrize(("assign", "text"), [
    ("CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7", "from the GPUs Ray gives this task"),
    ("LD_PRELOAD=$HOME/code/x.so", "native code"),
    ("PATH=", "setting PATH is not allowed"),
    ("HOME=/private/users/bob", "setting HOME is not allowed"),
    ("PYTHONHOME=/usr", "setting PYTHONHOME is not allowed"),
    ("PYTHONPATH=$HOME/code", "setting PYTHONPATH is not allowed"),
    ("RAY_ADDRESS=auto", "its Ray cluster"),
    ("WANDB_MODE=online", "may only be set to offline, disabled"),
    ("SOME_RANDOM_VAR=1", "NCCL_*"),
])
def test_env_outside_the_allowlist_is_refused(assign, text):
    msgs = messages(adv(f"{assign} python3 -m verl.trainer.main_ppo {ARGS}"))
    name = assign.split("=", 1)[0]
    assert any(f"command | {name}=" in m and text in m for m in msgs), msgs


@pytest.mark.parametrize("assign", ["PYTHONUNBUFFERED=1", "HYDRA_FULL_ERROR=1", "NCCL_DEBUG=INFO",
                                    "VLLM_ATTENTION_BACKEND=XFORMERS", "WANDB_MODE=offline", "TORCH_NCCL_AVOID_RECORD_STREAMS=1",
                                    "CUDA_DEVICE_MAX_CONNECTIONS=1", "VERL_LOGGING_LEVEL=INFO",
                                    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"])
def test_allowed_env_is_accepted(assign):
    assert isinstance(adv(f"{assign} python3 -m verl.trainer.main_ppo {ARGS}"), Admitted)


@pytest.mark.parametrize("assign", ["VERL_FILE_LOGGER_ROOT=/private/users/bob/x", "VERL_FILE_LOGGER_ROOT=$HOME/../bob",
                                    "NCCL_DEBUG_FILE=~bob/x"])
def test_allowed_env_values_obey_path_rules(assign):
    messages(adv(f"{assign} python3 -m verl.trainer.main_ppo {ARGS}"))


def test_admin_allowlist_never_admits_gpu_visibility():
    policy = AdmissionPolicy(layout=LAYOUT, entry_allowlist=tuple(DEFAULT_ENTRY_ALLOWLIST),
                             env_allowlist=(*DEFAULT_ENV_ALLOWLIST, "CUDA_*"))
    spec = parse_taskspec({"kind": "advanced", "workload": "ppo", "nnodes": 1, "n_gpus_per_node": 4,
                           "command": f"CUDA_VISIBLE_DEVICES=0 CUDA_LAUNCH_BLOCKING=1 python3 -m verl.trainer.main_ppo {ARGS}"})
    verdict = admit(spec, "alice", policy)
    assert isinstance(verdict, Rejected) and [e.value for e in verdict.errors] == ["CUDA_VISIBLE_DEVICES=0"]


# ---------------------------------------------------------------- shell expansions


@pytest.mark.parametrize("word", ["trainer.default_local_dir=$PWD/../../../bob/ck", '"trainer.default_local_dir=${PWD%/*}"',
                                  "trainer.experiment_name=$USER", "VERL_FILE_LOGGER_ROOT=${OLDPWD}"])
def test_shell_expansions_are_refused(word):
    cmd = (f"{word} python3 -m verl.trainer.main_ppo {ARGS}" if word.startswith("VERL")
           else f"python3 -m verl.trainer.main_ppo {ARGS} {word}")
    msgs = messages(adv(cmd))
    assert any("the shell would fill this in" in m for m in msgs), msgs


def test_single_quoted_hydra_interpolation_is_not_a_shell_expansion():
    verdict = adv(f"python3 -m verl.trainer.main_ppo {ARGS} "
                  "'trainer.default_local_dir=$HOME/jobs/x/${trainer.experiment_name}' trainer.experiment_name=e1")
    assert isinstance(verdict, Admitted), verdict
    assert [e.field for e in verdict.unresolved] == ["command: trainer.default_local_dir"]  # until resolved
