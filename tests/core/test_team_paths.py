"""Team folders in task specs (issue 26): ``$HOME/teams/<team>`` is the member's own file space — data,
models, reward code and outputs — and another team's folder is refused like another user's home."""

from __future__ import annotations

from dataclasses import replace

import pytest

from argus.core.admission import AdmissionPolicy, Admitted, Rejected, admit
from argus.core.pathrules import check_path_value
from argus.core.paths import DataLayout
from argus.core.taskspec import parse_taskspec
from argus.settings import DEFAULT_ENTRY_ALLOWLIST

pytestmark = pytest.mark.hostile

LAYOUT = DataLayout.at("/private")
MEMBER = AdmissionPolicy(layout=LAYOUT.with_teams(["nlp"]), entry_allowlist=tuple(DEFAULT_ENTRY_ALLOWLIST))
OUTSIDER = replace(MEMBER, layout=LAYOUT)
BASE = "trainer.nnodes=1 trainer.n_gpus_per_node=4"


def adv(command: str, policy: AdmissionPolicy) -> Admitted | Rejected:
    spec = parse_taskspec({"kind": "advanced", "workload": "ppo", "nnodes": 1, "n_gpus_per_node": 4,
                           "command": command})
    assert not isinstance(spec, list), spec
    return admit(spec, "alice", policy)


def basic(policy: AdmissionPolicy, **kw) -> Admitted | Rejected:
    doc = {"workload": "grpo", "model_id": "$HOME/teams/nlp/models/q", "train_file": "$HOME/teams/nlp/d/t.parquet",
           "val_file": "$HOME/teams/nlp/d/v.parquet", "nnodes": 1, "n_gpus_per_node": 4, **kw}
    spec = parse_taskspec(doc)
    assert not isinstance(spec, list), spec
    return admit(spec, "alice", policy)


def test_the_macro_expands_to_the_teams_folder_and_back() -> None:
    assert LAYOUT.expand("$HOME/teams/nlp/d/t.parquet", "alice") == "/private/teams/nlp/d/t.parquet"
    assert LAYOUT.expand("${HOME}/teams", "alice") == "/private/teams"
    assert LAYOUT.expand("$HOME/teamsX/a", "alice") == "/private/users/alice/teamsX/a"  # not the teams folder
    assert LAYOUT.to_virtual("/private/teams/nlp/x", "alice") == "$HOME/teams/nlp/x"


def test_a_member_uses_the_team_folder_for_data_models_reward_and_outputs() -> None:
    command = ("python3 -m verl.trainer.main_ppo data.train_files=$HOME/teams/nlp/d/t.parquet "
               "data.val_files=$HOME/datasets/v.parquet actor_rollout_ref.model.path=$HOME/teams/nlp/models/q "
               "custom_reward_function.path=$HOME/teams/nlp/code/reward.py "
               f"trainer.default_local_dir=$HOME/teams/nlp/ckpt/run1 {BASE}")
    verdict = adv(command, MEMBER)
    assert isinstance(verdict, Admitted), verdict
    assert "/private/teams/nlp/ckpt/run1" in (verdict.command_expanded or "")
    assert isinstance(basic(MEMBER), Admitted)


def test_an_outsider_is_refused_at_every_key_naming_the_team() -> None:
    command = ("python3 -m verl.trainer.main_ppo data.train_files=$HOME/teams/nlp/d/t.parquet "
               "data.val_files=$HOME/datasets/v.parquet trainer.default_local_dir=$HOME/teams/nlp/ckpt "
               f"actor_rollout_ref.model.path=$HOME/teams/nlp/models/q {BASE}")
    verdict = adv(command, OUTSIDER)
    assert isinstance(verdict, Rejected)
    assert verdict.errors and all("team nlp, which you are not in" in e.message for e in verdict.errors), verdict
    assert all("/private" not in str(e.value) for e in verdict.errors)  # shown as written: $HOME/teams/nlp/...
    refused = basic(OUTSIDER)
    assert isinstance(refused, Rejected)
    assert {e.field for e in refused.errors} == {"model_id", "train_file", "val_file"}


@pytest.mark.parametrize("command", [
    "python3 -m verl.trainer.main_ppo data.train_files=/private/teams/vision/t.parquet",
    "python3 -m verl.trainer.main_ppo data.train_files=$HOME/teams/nlp/../vision/t.parquet",
    "python3 -m verl.trainer.main_ppo trainer.default_local_dir=$HOME/teams",
    "python3 -m verl.trainer.main_ppo trainer.default_local_dir=/private/teams/$TEAM/x",
    "python3 -m verl.trainer.main_ppo trainer.default_local_dir=/private/teams/vi*on/x",
])
def test_a_member_of_one_team_never_reaches_another(command: str) -> None:
    verdict = adv(f"{command} {BASE}", MEMBER)
    assert isinstance(verdict, Rejected), command


def test_resolved_values_follow_the_same_rule() -> None:
    member, outsider = LAYOUT.with_teams(["nlp"]), LAYOUT
    ok = check_path_value("trainer.default_local_dir", "/private/teams/nlp/ck", "alice", member, fld="f",
                          resolved=True)
    assert ok == []
    refused = check_path_value("trainer.default_local_dir", "/private/teams/nlp/ck", "alice", outsider, fld="f",
                               resolved=True)
    assert refused and "team nlp" in refused[0].message
    # the reward file: a team's code/ folder, not the team folder's top
    assert check_path_value("custom_reward_function.path", "/private/teams/nlp/r.py", "alice", member, fld="f")
