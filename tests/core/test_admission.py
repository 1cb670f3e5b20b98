"""Table-driven admission tests, hostile inputs included (seed 000 §2.4, §3.3, §8.2)."""

import pytest

from argus.core.admission import AdmissionPolicy, Admitted, Rejected, admit
from argus.core.paths import DataLayout
from argus.core.taskspec import parse_taskspec
from argus.settings import DEFAULT_ENTRY_ALLOWLIST

pytestmark = pytest.mark.hostile  # the hostile-input suite: grows with every hole found

POLICY = AdmissionPolicy(layout=DataLayout.at("/private"), entry_allowlist=tuple(DEFAULT_ENTRY_ALLOWLIST))
GOOD_ARGS = (
    "data.train_files=$HOME/common/datasets/gsm8k/train.parquet data.val_files=$HOME/datasets/v.parquet "
    "trainer.nnodes=1 trainer.n_gpus_per_node=4"
)


def adv(command, **kw):
    doc = {"kind": "advanced", "workload": "ppo", "nnodes": 1, "n_gpus_per_node": 4, "command": command, **kw}
    spec = parse_taskspec(doc)
    assert not isinstance(spec, list), spec
    return admit(spec, "alice", POLICY)


def basic(**kw):
    doc = {"workload": "grpo", "model_id": "Qwen/Qwen2.5-0.5B-Instruct",
           "train_file": "$HOME/datasets/t.parquet", "val_file": "$HOME/common/datasets/v.parquet",
           "nnodes": 1, "n_gpus_per_node": 4, **kw}
    spec = parse_taskspec(doc)
    assert not isinstance(spec, list), spec
    return admit(spec, "alice", POLICY)


# ---------------------------------------------------------------- accepted


@pytest.mark.parametrize(
    "command",
    [
        f"python3 -m verl.trainer.main_ppo {GOOD_ARGS}",
        f"PYTHONUNBUFFERED=1 python3 -u -m verl.trainer.main_ppo \\\n  {GOOD_ARGS} \\\n  trainer.total_epochs=1",
        f"python3 -m verl.trainer.main_ppo {GOOD_ARGS} custom_reward_function.path=$HOME/code/reward.py "
        "custom_reward_function.name=compute_score",
        f"python3 -m verl.trainer.main_ppo {GOOD_ARGS} reward.custom_reward_function.path=${{HOME}}/code/r/x.py",
        "python3 -m verl.trainer.main_ppo data.train_files=/private/common/datasets/old.parquet "
        "data.val_files=/private/datasets/new.parquet trainer.nnodes=1 trainer.n_gpus_per_node=4",
        f"python3 -m verl.trainer.main_ppo {GOOD_ARGS} 'data.train_files=[$HOME/datasets/a.parquet,$HOME/datasets/b.parquet]'",
        f"# a comment line\npython3 -m verl.trainer.main_ppo {GOOD_ARGS} 'trainer.experiment_name=a;b'",
        f"python3 -m verl.trainer.main_ppo {GOOD_ARGS} actor_rollout_ref.model.path=$HOME/common/hf/Qwen",
    ],
)
def test_advanced_accepted(command):
    out = adv(command)
    assert isinstance(out, Admitted), out
    assert out.entry_module == "verl.trainer.main_ppo"
    assert "$HOME" not in out.command_expanded
    assert out.warnings == []


def test_expansion_order():
    out = adv(f"python3 -m verl.trainer.main_ppo {GOOD_ARGS}")
    assert "data.train_files=/private/datasets/gsm8k/train.parquet" in out.command_expanded
    assert "data.val_files=/private/users/alice/datasets/v.parquet" in out.command_expanded


def test_cpu_job_may_ask_for_no_gpu():
    out = adv("python3 -m argus.jobs.doctor", workload="job", n_gpus_per_node=0)
    assert isinstance(out, Admitted) and out.entry_module == "argus.jobs.doctor"


# ---------------------------------------------------------------- rejected: one row per hostile input

REJECTS = [
    # another user's files, in every disguise
    ("data.train_files=/private/users/bob/datasets/t.parquet", "command: data.train_files", "<bob's home>/datasets/t.parquet",
     "another user's home"),
    ("data.train_files=$HOME/../bob/datasets/t.parquet", "command: data.train_files", "bob", "another user's home"),
    ("data.train_files=/private//users/bob/t.parquet", "command: data.train_files", "bob", "another user's home"),
    ("data.train_files=/private/users/alice/../bob/t.parquet", "command: data.train_files", "bob", "another user's home"),
    ("data.train_files=/private/./users/bob/t.parquet", "command: data.train_files", "bob", "another user's home"),
    ('data.train_files=/private/users/"bob"/t.parquet', "command: data.train_files", "bob", "another user's home"),
    ("data.train_files=/private/users/'b'ob/t.parquet", "command: data.train_files", "bob", "another user's home"),
    ("data.train_files=~bob/t.parquet", "command: data.train_files", "~bob", "another account's home"),
    ("PYTHONPATH=/private/users/bob/code", "command: PYTHONPATH", "bob", "another user's home"),
    ("trainer.default_local_dir=../../../bob/ckpt", "command: trainer.default_local_dir", "<bob's home>/ckpt",
     "another user's home"),
    ("x=/private/users/$U/secret", "command: x", "$U", "literally"),
    ("x=/private/users/*/secret", "command: x", "*", "literally"),
    ("x=/private/users", "command: x", "<the users folder>", "folder of all users' homes"),
    # Hydra would build objects from these while the config is validated on the head
    ("+actor_rollout_ref.actor._target_=os.system", "command", "actor_rollout_ref.actor._target_", "instantiation"),
    ("reward_model._args_=[ls]", "command", "reward_model._args_", "instantiation"),
    # data and reward allowlists
    ("data.train_files=/etc/passwd", "command: data.train_files", "/etc/passwd", "training data must be under"),
    ("data.train_files=/private/hf/x.parquet", "command: data.train_files", "$HOME/common/hf/x.parquet", "training data"),
    ("data.val_files=data/v.parquet", "command: data.val_files", "data/v.parquet", "absolute path"),
    ("custom_reward_function.path=$HOME/datasets/r.py", "command: custom_reward_function.path", "$HOME/datasets/r.py", "$HOME/code/"),
    ("reward.custom_reward_function.path=$HOME/code/../datasets/r.py", "command: reward.custom_reward_function.path", "r.py", "$HOME/code/"),
    ("custom_reward_function.path=/tmp/r.py", "command: custom_reward_function.path", "/tmp/r.py", "$HOME/code/"),
]


@pytest.mark.parametrize("arg, field, value_part, message_part", REJECTS)
def test_advanced_rejected(arg, field, value_part, message_part):
    out = adv(f"python3 -m verl.trainer.main_ppo {GOOD_ARGS} {arg}")
    assert isinstance(out, Rejected), out
    hits = [e for e in out.errors if e.field == field and value_part in str(e.value) and message_part in e.message]
    assert hits, out.errors


@pytest.mark.parametrize(
    "command, value_part, message_part",
    [
        ("python -m verl.trainer.main_ppo", "python", "python3 -m"),
        ("/usr/bin/python3 -m verl.trainer.main_ppo", "/usr/bin/python3", "do not name an interpreter"),
        ("python3 -m os", "os", "not on the allowlist"),
        ("python3 -m verl.trainer", "verl.trainer", "not on the allowlist"),
        ("python3 -m verl.trainerX.main", "verl.trainerX.main", "not on the allowlist"),
        ("python3 train.py", "python3 train.py", "-m <module>"),
        ("rm -rf /", "rm", "python3 -m"),
        ("env python3 -m verl.trainer.main_ppo", "env", "VAR=value"),
        ("python3 -m verl.trainer.main_ppo; rm -rf ~", ";", "shell operator"),
        ("python3 -m verl.trainer.main_ppo && curl x", "&&", "shell operator"),
        ("python3 -m verl.trainer.main_ppo | tee log", "|", "shell operator"),
        ("python3 -m verl.trainer.main_ppo 2>&1", ">&", "shell operator"),
        ("python3 -m verl.trainer.main_ppo > /tmp/out", ">", "shell operator"),
        ("python3 -m verl.trainer.main_ppo &", "&", "shell operator"),
        ("python3 -m verl.trainer.main_ppo x=$(whoami)", "$(", "command substitution"),
        ("python3 -m verl.trainer.main_ppo x=`whoami`", "`", "command substitution"),
        ("python3 -m verl.trainer.main_ppo\nrm -rf ~", "rm -rf", "single command"),
        ("python3 -m verl.trainer.main_ppo 'unclosed", None, "quote"),
        ("FOO=1", "", "no program"),
    ],
)
def test_entry_and_shell_rejected(command, value_part, message_part):
    out = adv(command)
    assert isinstance(out, Rejected), out
    hits = [e for e in out.errors if e.field == "command" and message_part in e.message
            and (value_part is None or value_part in str(e.value))]
    assert hits, out.errors


def test_verl_needs_gpus():
    out = adv(f"python3 -m verl.trainer.main_ppo {GOOD_ARGS}", n_gpus_per_node=0)
    assert isinstance(out, Rejected)
    assert out.errors[0].field == "n_gpus_per_node" and "≥ 1" in out.errors[0].message


def test_a_shell_operator_hides_no_other_problem():
    """Issue 35: ``cd … && python3 -m …`` is refused for the operator and, in the same answer, for what is wrong
    in the python command (it used to take one round per problem: the operator first, then the rest)."""
    out = adv("cd /tmp && python3 -m verl.trainer.main_ppo data.train_files=/private/users/bob/x.parquet "
              "2>&1 | tee log")
    assert isinstance(out, Rejected)
    by_field = {(e.field, str(e.value)) for e in out.errors}
    assert ("command", "&&") in by_field and "command: data.train_files" in {f for f, _ in by_field}, out.errors
    assert out.partial is not None and out.partial.entry_module == "verl.trainer.main_ppo"
    assert "data.train_files" in out.partial.overrides and "2" not in " ".join(out.partial.overrides)
    out = adv("echo start; python3 -m os")
    assert {str(e.value) for e in out.errors} >= {";", "os"}, out.errors


def test_all_errors_reported_at_once():
    out = adv("python3 -m os data.train_files=/etc/x custom_reward_function.path=/tmp/r.py "
              "y=/private/users/bob/z")
    assert isinstance(out, Rejected)
    fields = [e.field for e in out.errors]
    assert fields.count("command") == 1  # the module; a path is its key's problem
    assert {"command: data.train_files", "command: custom_reward_function.path", "command: y"} <= set(fields)
    assert len(fields) == len(set(fields)), "one problem is reported once"


def test_platform_limits():
    spec = parse_taskspec({"kind": "advanced", "workload": "ppo", "nnodes": 5000, "n_gpus_per_node": 4,
                           "command": f"python3 -m verl.trainer.main_ppo {GOOD_ARGS}"})
    out = admit(spec, "alice", POLICY)
    assert isinstance(out, Rejected) and out.errors[0].field == "nnodes"


# ---------------------------------------------------------------- weak checks


def test_warnings():
    out = adv("python3 -m verl.trainer.main_ppo +ray_kwargs.ray_init.address=auto trainer.nnodes=2",
              nnodes=1, n_gpus_per_node=4)
    assert isinstance(out, Admitted)
    text = "\n".join(out.warnings)
    assert "data.train_files" in text and "data.val_files" in text
    assert "ray_kwargs.ray_init.address" in text
    assert "spec nnodes=1 but command sets trainer.nnodes=2" in text and "Argus schedules by the spec" in text
    assert "does not set trainer.n_gpus_per_node" in text


def test_no_weak_checks_for_cpu_jobs():
    out = adv("python3 -m argus.jobs.doctor", workload="job", n_gpus_per_node=0)
    assert out.warnings == []


# ---------------------------------------------------------------- basic specs


def test_basic_accepted():
    out = basic(reward_path="$HOME/code/reward.py", overrides=["trainer.val_before_train=False"])
    assert isinstance(out, Admitted) and out.entry_module == "verl.trainer.main_ppo"


@pytest.mark.parametrize(
    "kw, field, message_part",
    [
        ({"model_id": "x; rm -rf ~"}, "model_id", "Hugging Face id"),
        ({"model_id": "/private/users/bob/models/m"}, "model_id", "another user's home"),
        ({"model_id": "/etc/models"}, "model_id", "$HOME/models"),
        ({"train_file": "/private/users/bob/t.parquet"}, "train_file", "training data"),
        ({"train_file": "$HOME/../bob/t.parquet"}, "train_file", "training data"),
        ({"val_file": None}, "val_file", "required for ppo/grpo"),
        ({"reward_path": "$HOME/datasets/r.py"}, "reward_path", "$HOME/code/"),
        ({"reward_name": "f"}, "reward_name", "reward_path"),
        ({"overrides": ["not an override"]}, "overrides[0]", "key=value"),
        ({"overrides": ["x=/private/users/bob/y"]}, "overrides[0]", "another user's home"),
        ({"overrides": ["data.train_files=/etc/passwd"]}, "overrides[0]", "training data"),
        ({"overrides": ["critic._target_=subprocess.call"]}, "overrides[0]", "instantiation"),
        ({"workload": "sft", "nnodes": 2}, "nnodes", "one node"),
    ],
)
def test_basic_rejected(kw, field, message_part):
    out = basic(**kw)
    assert isinstance(out, Rejected), out
    assert any(e.field == field and message_part in e.message for e in out.errors), out.errors
