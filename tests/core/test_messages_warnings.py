"""Admission's warnings, an environment's description and notes, and the Nodes page's error as codes (issue 37,
item 7): each made by the real function keeps its English text byte for byte and is known again by its code."""

from __future__ import annotations

import sys
from pathlib import Path

from argus.api.schemas import SubmitOut, TaskOut
from argus.core.admission import AdmissionPolicy, Admitted, admit
from argus.core.messages import EN, known_message, known_messages, render
from argus.core.paths import DataLayout
from argus.core.taskspec import parse_taskspec
from argus.envs.check import EnvCheck
from argus.envs.probe import probe
from argus.envs.registry import BUILTIN, Environment, Registry
from argus.settings import DEFAULT_ENTRY_ALLOWLIST

POLICY = AdmissionPolicy(layout=DataLayout.at("/private"), entry_allowlist=tuple(DEFAULT_ENTRY_ALLOWLIST))


def admitted(**doc) -> Admitted:
    doc = {"kind": "advanced", "workload": "ppo", "nnodes": 1, "n_gpus_per_node": 4, **doc}
    spec = parse_taskspec({k: v for k, v in doc.items() if v is not None})  # workload=None: inferred
    assert not isinstance(spec, list), spec
    out = admit(spec, "alice", POLICY)
    assert isinstance(out, Admitted), out
    return out


def coded(text: str) -> tuple[str, dict]:
    m = known_message(text)
    assert m is not None, text
    assert render(m.code, m.params) == text
    return m.code, m.params


def test_the_gang_and_data_warnings_keep_their_english_and_carry_codes() -> None:
    out = admitted(nnodes=4, command="python3 -m verl.trainer.main_ppo +ray_kwargs.ray_init.address=auto "
                                     "trainer.nnodes=1")
    assert out.warnings == [
        "command does not set data.train_files=...; verl will use its config default (set it explicitly, e.g. "
        "$HOME/common/datasets/...)",
        "command does not set data.val_files=...; verl will use its config default (set it explicitly, e.g. "
        "$HOME/common/datasets/...)",
        "command overrides ray_kwargs.ray_init.address=auto: Argus already points the driver at its cluster "
        "(RAY_ADDRESS); remove the override unless you mean to attach elsewhere",
        "spec nnodes=4 but command sets trainer.nnodes=1: Argus schedules by the spec (nnodes=4) and verl runs with "
        "the command's value; make them agree",
        "command does not set trainer.n_gpus_per_node; verl will use its default, while Argus reserves "
        "n_gpus_per_node=4: add trainer.n_gpus_per_node=4",
    ]
    assert [coded(w) for w in out.warnings] == [
        ("warn.data_key_unset", {"key": "data.train_files"}),
        ("warn.data_key_unset", {"key": "data.val_files"}),
        ("warn.ray_address_override", {"key": "ray_kwargs.ray_init.address", "value": "auto"}),
        ("warn.gang_mismatch", {"field": "nnodes", "want": "4", "key": "trainer.nnodes", "value": "1"}),
        ("warn.gang_key_unset", {"key": "trainer.n_gpus_per_node", "field": "n_gpus_per_node", "want": "4"}),
    ]


def test_torchrun_and_inferred_workload_warnings_carry_codes() -> None:
    data = "data.train_files=$HOME/datasets/t.parquet data.val_files=$HOME/datasets/v.parquet"
    out = admitted(workload=None, n_gpus_per_node=4,
                   command=f"torchrun --nproc_per_node=2 -m verl.trainer.sft_trainer {data}")
    assert [coded(w)[0] for w in out.warnings] == ["warn.workload_inferred", "warn.torchrun_nproc_under",
                                                   "warn.torchrun_no_standalone"]
    assert out.warnings[1] == ("command runs torchrun --nproc_per_node=2 but the task reserves n_gpus_per_node=4: "
                               "2 reserved GPU(s) stay idle; set --nproc_per_node=4 or n_gpus_per_node: 2")
    assert out.warnings[2] == ("torchrun without --standalone rendezvous on the fixed port 29500, which another task "
                               "on the same node may hold; add --standalone")
    out = admitted(workload="sft", command=f"torchrun --standalone -m verl.trainer.sft_trainer {data}")
    assert out.warnings == ["command does not set torchrun's --nproc_per_node, so torchrun starts 1 process while "
                            "the task reserves n_gpus_per_node=4 GPUs; add --nproc_per_node=4"]
    assert coded(out.warnings[0]) == ("warn.torchrun_no_nproc", {"gpus": "4"})


def test_an_environment_without_a_rollout_engine_is_a_coded_warning(tmp_path: Path) -> None:
    reg = Registry(tmp_path, sys.executable, BUILTIN, tmp_path / "state")
    Environment(name="cpu-sft", python=sys.executable, prefix=sys.prefix, source="catalog", templates=True,
                probe={"versions": {"verl": "0.9.1"}, "rollout_engines": [], "problems": []}
                ).dump(reg.cluster_dir / "cpu-sft")
    spec = parse_taskspec({"workload": "grpo", "model_id": "Qwen/Qwen2.5-0.5B-Instruct", "env": "cpu-sft",
                           "train_file": "$HOME/datasets/t.parquet", "val_file": "$HOME/datasets/v.parquet",
                           "nnodes": 1, "n_gpus_per_node": 8})
    out = EnvCheck(reg)(Admitted(spec=spec), "alice", [])
    assert not out.errors
    assert out.warnings == ["grpo needs the vllm rollout engine and environment 'cpu-sft' does not have it (it has "
                            "no rollout engine: a CPU or SFT-only environment); name an environment with vllm in env: "
                            "(argus env list)"]
    assert coded(out.warnings[0]) == ("warn.env_no_rollout_engine",
                                      {"workload": "grpo", "engine": "vllm", "env": "'cpu-sft'"})


def test_a_warning_no_template_makes_stays_english_and_the_api_lists_codes_beside_the_texts() -> None:
    assert known_message("reward check: something odd") is None
    assert known_message("spec nnodes=4 but command sets trainer.nnodes=1") is None  # a part is not the whole
    warned = ["torchrun without --standalone rendezvous on the fixed port 29500, which another task on the same node "
              "may hold; add --standalone", "an old stored warning, English only"]
    out = SubmitOut(task_id="t", status="QUEUED", warnings=warned).model_dump(mode="json")
    assert out["warnings"] == warned  # the texts as always
    assert out["warning_messages"] == [{"code": "warn.torchrun_no_standalone", "params": {}}, None]
    assert "warning_messages" in TaskOut.model_computed_fields
    # a parameter said twice must be the same text both times
    assert known_message("spec nnodes=4 but command sets trainer.nnodes=1: Argus schedules by the spec (nnodes=5) "
                         "and verl runs with the command's value; make them agree") is None


def test_the_environment_description_and_note_argus_writes_are_coded(tmp_path: Path) -> None:
    public = Registry(tmp_path, sys.executable, BUILTIN, tmp_path / "state").builtin().public()
    assert public["description"] == ("Argus's own environment (the server's interpreter): no build needed; set "
                                     "default_env to a built environment so tasks do not share the platform's "
                                     "packages")
    assert public["description_code"] == "env.server_description"
    notes = probe(imports=False, find=[])["notes"]  # the probe runs without Argus: its text must be the template
    assert EN["env.no_rollout_engine"] in notes or not notes
    assert known_messages([EN["env.no_rollout_engine"], "other"], "env.") == [
        {"code": "env.no_rollout_engine", "params": {}}, None]
    env = Environment(name="x", python=sys.executable, prefix=sys.prefix, source="catalog",
                      probe={"notes": [EN["env.no_rollout_engine"]], "problems": []})
    assert env.public()["note_messages"] == [{"code": "env.no_rollout_engine", "params": {}}]
    assert env.public()["description_code"] is None


def test_the_nodes_view_of_an_unreachable_cluster_says_it_with_the_queues_code(tmp_path: Path) -> None:
    from argus.db.session import Database
    from argus.scheduler.nodes import nodes_view
    from tests.scheduler.fakes import FakeRay

    db = Database(f"sqlite:///{tmp_path / 'a.db'}")
    db.migrate()
    view = nodes_view(db, FakeRay(down=True))
    db.dispose()
    assert view["error"] == "Ray cluster unreachable: connection refused"  # the text as always
    assert (view["error_code"], view["error_params"]) == ("queue.ray_unreachable", {"error": "connection refused"})


def test_verls_check_warnings_carry_codes_with_the_programs_words_as_parameters() -> None:
    from argus.verl.legacy import rewrite_legacy_reward

    _, said = rewrite_legacy_reward("python3 -m verl.trainer.main_ppo custom_reward_function.path=$HOME/code/r.py", {})
    assert [coded(w)[0] for w in said] == ["warn.legacy_key_moved", "warn.legacy_reward_name"]
    assert coded(said[0])[1] == {"old": "custom_reward_function.path", "new": "reward.custom_reward_function.path"}
    assert said[1] == ("custom_reward_function.name is not set: verl calls the function named compute_score (its "
                       "default) in the reward file")
    texts = {  # as verl/entry.py and verl/check.py write them (with messages.msg), the English of before
        "could not check that module my.mod exists in the training environment (no verl validator is configured)":
            ("warn.module_unchecked_no_validator", {"module": "my.mod"}),
        "could not check that module my.mod exists in the training environment (timed out after 30 s)":
            ("warn.module_unchecked", {"module": "my.mod", "error": "timed out after 30 s"}),
        "verl validation skipped (validator unavailable); the task was not checked against verl's config":
            ("warn.verl_skipped", {"why": "validator unavailable"}),
        "prompt lengths not checked: timed out": ("warn.prompt_lengths_unchecked", {"error": "timed out"}),
        "a sampled prompt has 900 tokens > data.max_prompt_length=512 (first 64 rows, $HOME/models/m's chat template)":
            ("warn.prompt_too_long", {"tokens": "900", "limit": "512", "rows": "64", "model": "$HOME/models/m"}),
    }
    for text, want in texts.items():
        assert coded(text) == want
        assert render(want[0], want[1]) == text
