"""core.model_refs (issue 38, team registries): references, the registry a version goes to, who moves a team's
aliases, and whether a team version's files are the team's to read."""

import pytest

from argus.core import model_refs as refs
from argus.core.teams import TeamRole
from argus.errors import ClientError


def test_references_own_and_team_with_version_or_alias() -> None:
    assert refs.parse_ref("tiny") == refs.ModelRef(None, "tiny")
    assert refs.parse_ref("tiny:3") == refs.ModelRef(None, "tiny", version=3)
    assert refs.parse_ref("nlp/tiny@production") == refs.ModelRef("nlp", "tiny", alias="production")
    assert refs.parse_ref("nlp/gsm8k.v2:12").model == "nlp/gsm8k.v2"
    assert refs.shown("nlp", "tiny", 2) == "nlp/tiny:2" and refs.shown(None, "tiny", alias="a") == "tiny@a"


@pytest.mark.parametrize(("ref", "field"), [
    ("", "name"), ("../x", "team"), ("nlp/..", "name"), ("Nlp/x", "team"), ("nlp/x/y", "name"), ("/x", "team"),
    ("nlp/x:0", "ref"), ("nlp/x:-1", "ref"), ("nlp/x:１", "ref"), ("nlp/x:1@a", "ref"), ("nlp/x@Prod", "alias"),
    ("x\x00", "name"), ("nlp/x@", "alias"),
])
def test_a_bad_reference_names_its_field(ref: str, field: str) -> None:
    with pytest.raises(ClientError) as err:
        refs.parse_ref(ref)
    assert err.value.errors[0].field == field and err.value.errors[0].value is not None


def test_an_alias_is_moved_on_a_model_not_a_version() -> None:
    assert refs.parse_ref("nlp/x", one_model=True).team == "nlp"
    with pytest.raises(ClientError):
        refs.parse_ref("nlp/x:1", one_model=True)


def test_the_folder_then_the_task_then_the_request_choose_the_registry() -> None:
    choose = refs.choose_registry
    assert choose(requested=None, task_id=None, task_team=None, folder_team=None) == refs.Choice(None, None)
    assert choose(requested="nlp", task_id=None, task_team=None, folder_team=None) == refs.Choice("nlp", None)
    assert choose(requested=None, task_id="t-1", task_team="nlp", folder_team=None).why == \
        "task t-1 is charged to team nlp"
    assert choose(requested=None, task_id="t-1", task_team="cv", folder_team="nlp").team == "nlp"
    for kwargs in ({"task_team": "nlp", "folder_team": None}, {"task_team": None, "folder_team": "nlp"}):
        with pytest.raises(ClientError) as err:
            choose(requested="cv", task_id="t-1", **kwargs)
        assert err.value.errors[0].field == "team" and "give team nlp" in err.value.errors[0].message


def test_only_a_teams_admins_move_its_aliases() -> None:
    assert refs.may_move_alias(team=None, site_admin=False, role=None)
    assert refs.may_move_alias(team="nlp", site_admin=False, role=TeamRole.ADMIN)
    assert refs.may_move_alias(team="nlp", site_admin=True, role=None)
    assert not refs.may_move_alias(team="nlp", site_admin=False, role=TeamRole.MEMBER)
    assert "needs the team's admin role (you are a member of it)" in refs.alias_refusal("nlp", TeamRole.MEMBER)


def test_only_the_teams_folder_is_shared_and_the_hint_says_how() -> None:
    assert refs.is_shared("nlp", "$HOME/teams/nlp/models/x")
    assert not refs.is_shared("nlp", "$HOME/teams/nlpx/models/x") and not refs.is_shared("nlp", "$HOME/runs/x")
    assert not refs.is_shared(None, "$HOME/teams/nlp/models/x")
    hint = refs.sharing_hint(team="nlp", name="tiny", kind="checkpoint", path="$HOME/runs/global_step_2",
                             registrant="alice", source_task="ppo-1", step=2)
    assert "argus export ppo-1 --step 2 --to $HOME/teams/nlp/models/tiny" in hint and "alice's home" in hint
    hint = refs.sharing_hint(team="nlp", name="tiny", kind="hf", path="$HOME/models/x", registrant="alice",
                             source_task=None, step=None)
    assert "argus files mv /models/x /teams/nlp/models/tiny" in hint
