"""SFT as verl documents it: ``torchrun … -m verl.trainer.sft_trainer`` (and ``python3 -m torch.distributed.run``)."""

from __future__ import annotations

import pytest

from argus.core.admission import AdmissionPolicy, Admitted, Rejected, admit
from argus.core.command import ParsedCommand, parse_command
from argus.core.gpu_binding import entry_module, uses_ray
from argus.core.paths import DataLayout
from argus.core.taskspec import parse_taskspec
from argus.settings import DEFAULT_ENTRY_ALLOWLIST

POLICY = AdmissionPolicy(layout=DataLayout.at("/private"), entry_allowlist=tuple(DEFAULT_ENTRY_ALLOWLIST))
SFT_ARGS = "data.train_files=$HOME/datasets/sft.parquet data.val_files=$HOME/datasets/sft.parquet model.path=$HOME/models/m"


def sft(command: str, **kw):  # noqa: ANN201
    doc = {"kind": "advanced", "workload": "sft", "nnodes": 1, "n_gpus_per_node": 8, "command": command, **kw}
    spec = parse_taskspec(doc)
    assert not isinstance(spec, list), spec
    return admit(spec, "alice", POLICY)


def messages(out: Rejected) -> str:
    return " | ".join(f"{e.field}: {e.value}: {e.message}" for e in out.errors)


# ---------------------------------------------------------------- parsing


@pytest.mark.parametrize(
    "command",
    [
        "torchrun --nproc_per_node=8 --standalone -m verl.trainer.sft_trainer a.b=1",
        "torchrun --nproc-per-node 8 --standalone -m verl.trainer.sft_trainer a.b=1",
        "torchrun --standalone --nnodes=1 --nproc_per_node 8 --module verl.trainer.sft_trainer a.b=1",
        "python3 -m torch.distributed.run --standalone --nnodes=1 --nproc_per_node=8 -m verl.trainer.sft_trainer a.b=1",
        "NCCL_DEBUG=INFO torchrun -m --nproc_per_node=8 --standalone verl.trainer.sft_trainer a.b=1",
    ],
)
def test_both_torchrun_forms_parse_to_the_inner_module(command: str) -> None:
    parsed = parse_command(command)
    assert isinstance(parsed, ParsedCommand), parsed
    assert parsed.module == "verl.trainer.sft_trainer"
    assert parsed.args == ["a.b=1"] and parsed.overrides == {"a.b": ("", "1")}
    assert parsed.torchrun is not None
    assert parsed.torchrun.nproc_per_node == "8" and parsed.torchrun.standalone
    assert entry_module(["bash", "-lc", command]) == "verl.trainer.sft_trainer"
    assert not uses_ray(["bash", "-lc", command])  # torchrun's ranks need no private Ray cluster


def test_plain_python_commands_have_no_torchrun() -> None:
    parsed = parse_command("python3 -m verl.trainer.main_ppo a=1")
    assert isinstance(parsed, ParsedCommand) and parsed.torchrun is None and parsed.module == "verl.trainer.main_ppo"


@pytest.mark.parametrize(
    ("command", "value", "needle"),
    [
        ("torchrun --nproc_per_node=8 train.py a=1", "train.py", "must run a module"),
        ("torchrun --nproc_per_node=8", "torchrun", "must run a module"),
        ("torchrun --nproc 8 -m verl.trainer.sft_trainer", "--nproc", "not a torchrun option"),
        ("torchrun --standalone=1 -m verl.trainer.sft_trainer", "--standalone=1", "takes no value"),
        ("torchrun -m verl.trainer.sft_trainer --nproc_per_node", None, None),  # after the module: its own args
        ("python3 -m torch.distributed.run --nproc_per_node=2 x.py", "x.py", "must run a module"),
    ],
)
def test_torchrun_misuse_is_named(command: str, value: str | None, needle: str | None) -> None:
    parsed = parse_command(command)
    if needle is None:
        assert isinstance(parsed, ParsedCommand) and parsed.args == ["--nproc_per_node"]
        return
    assert isinstance(parsed, list), parsed
    assert parsed[0].value == value and needle in parsed[0].message


# ---------------------------------------------------------------- admission


def test_torchrun_sft_as_verl_documents_it_is_accepted() -> None:
    out = sft(f"torchrun --nproc_per_node=8 --standalone -m verl.trainer.sft_trainer {SFT_ARGS}")
    assert isinstance(out, Admitted), messages(out)
    assert out.entry_module == "verl.trainer.sft_trainer"
    assert out.overrides["data.train_files"] == "/private/users/alice/datasets/sft.parquet"
    assert not any("trainer.n_gpus_per_node" in w for w in out.warnings)  # torchrun sets the gang, not trainer.*
    assert not any("torchrun" in w for w in out.warnings), out.warnings


def test_python3_m_torch_distributed_run_is_accepted_too() -> None:
    out = sft("python3 -m torch.distributed.run --standalone --nnodes=1 --nproc_per_node=8 "
              f"-m verl.trainer.sft_trainer {SFT_ARGS}")
    assert isinstance(out, Admitted), messages(out)
    assert out.entry_module == "verl.trainer.sft_trainer"


@pytest.mark.parametrize("nproc", ["--nproc_per_node=gpu", "--nproc_per_node auto"])
def test_one_process_per_visible_gpu_is_the_reservation(nproc: str) -> None:
    out = sft(f"torchrun {nproc} --standalone -m verl.trainer.sft_trainer {SFT_ARGS}")
    assert isinstance(out, Admitted) and not any("nproc" in w for w in out.warnings), out


def test_fewer_processes_than_gpus_is_a_warning() -> None:
    out = sft(f"torchrun --nproc_per_node 1 --standalone -m verl.trainer.sft_trainer {SFT_ARGS}")
    assert isinstance(out, Admitted)
    assert any("--nproc_per_node=1" in w and "7 reserved GPU(s) stay idle" in w for w in out.warnings), out.warnings


def test_torchruns_default_of_one_process_is_a_warning() -> None:
    out = sft(f"torchrun --standalone -m verl.trainer.sft_trainer {SFT_ARGS}")
    assert isinstance(out, Admitted)
    assert any("add --nproc_per_node=8" in w for w in out.warnings), out.warnings


def test_missing_standalone_is_a_warning() -> None:
    out = sft(f"torchrun --nproc_per_node=8 -m verl.trainer.sft_trainer {SFT_ARGS}")
    assert isinstance(out, Admitted)
    assert any("--standalone" in w and "29500" in w for w in out.warnings), out.warnings


@pytest.mark.parametrize(
    ("command", "kw", "field", "value", "needle"),
    [
        ("torchrun --nproc_per_node=16 --standalone -m verl.trainer.sft_trainer", {}, "command",
         "--nproc_per_node=16", "more processes than the task has GPUs"),
        ("torchrun --nproc_per_node=cpu --standalone -m verl.trainer.sft_trainer", {}, "command",
         "--nproc_per_node=cpu", "number of processes"),
        ("torchrun --nproc_per_node=0 --standalone -m verl.trainer.sft_trainer", {}, "command",
         "--nproc_per_node=0", "number of processes"),
        ("torchrun --nnodes=2 --nproc_per_node=8 -m verl.trainer.sft_trainer", {}, "command",
         "--nnodes=2", "multi-node SFT is not supported yet"),
        ("torchrun --nnodes 1:4 --nproc_per_node=8 -m verl.trainer.sft_trainer", {}, "command",
         "--nnodes=1:4", "multi-node SFT is not supported yet"),
        ("torchrun --nproc_per_node=8 --standalone -m verl.trainer.sft_trainer", {"nnodes": 2}, "nnodes",
         2, "set nnodes: 1"),
        ("torchrun --nproc_per_node=8 --standalone -m os", {}, "command", "os", "not on the allowlist"),
        ("python3 -m torch.distributed.run --nproc_per_node=8 --standalone -m torch.utils.collect_env", {},
         "command", "torch.utils.collect_env", "not on the allowlist"),
        ("torchrun --no-python --nproc_per_node=8 --standalone -m verl.trainer.sft_trainer", {}, "command",
         "--no-python", "remove --no-python"),
        ("/opt/venv/bin/torchrun --nproc_per_node=8 -m verl.trainer.sft_trainer", {}, "command",
         "/opt/venv/bin/torchrun", "do not name an interpreter by path"),
    ],
)
def test_torchrun_gang_and_module_rules(command: str, kw: dict, field: str, value: object, needle: str) -> None:
    out = sft(f"{command} {SFT_ARGS}", **kw)
    assert isinstance(out, Rejected), out
    assert any(e.field == field and e.value == value and needle in e.message for e in out.errors), messages(out)


def test_torchrun_inner_overrides_get_the_path_rules() -> None:
    out = sft("torchrun --nproc_per_node=8 --standalone -m verl.trainer.sft_trainer "
              "data.train_files=/private/users/bob/datasets/x.parquet model.path=$HOME/models/m")
    assert isinstance(out, Rejected)
    assert any("another user's home" in e.message for e in out.errors), messages(out)


def test_basic_sft_argv_still_names_the_sft_trainer() -> None:
    argv = ["python3", "-m", "torch.distributed.run", "--standalone", "--nnodes=1", "--nproc_per_node=2",
            "-m", "verl.trainer.sft_trainer", "model.path=/m", "x=a;b"]
    assert entry_module(argv) == "verl.trainer.sft_trainer"
    assert entry_module(["python3", "-m", "verl.trainer.main_ppo", "a=$(x)"]) == "verl.trainer.main_ppo"
