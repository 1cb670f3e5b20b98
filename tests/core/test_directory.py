"""The directory sign-in's pure rules (issue 26): the group→team mapping and what a sign-in syncs."""

import pytest

from argus.core.directory import group_key, in_group, parse_team_groups, plan_team_sync


def test_team_groups_take_dns_and_cns_and_split_at_the_last_equals() -> None:
    mapping = parse_team_groups(" cn=NLP, ou=groups,dc=example,dc=org = nlp ; vision=vision;;")
    assert mapping == {"cn=nlp,ou=groups,dc=example,dc=org": "nlp", "vision": "vision"}
    assert parse_team_groups("") == {}


@pytest.mark.parametrize("text", ["nlp", "=nlp", "cn=x,dc=y=Not A Team", "cn=x=a/b"])
def test_a_bad_pair_is_named(text: str) -> None:
    with pytest.raises(ValueError, match="ldap_team_groups"):
        parse_team_groups(text)


def test_group_keys_compare_without_case_or_spaces() -> None:
    assert group_key("CN=Ops , OU=Groups,DC=Example,DC=Org") == "cn=ops,ou=groups,dc=example,dc=org"
    assert in_group("cn=ops,ou=groups,dc=example,dc=org", frozenset({"cn=ops,ou=groups,dc=example,dc=org"}))
    assert in_group("OPS", frozenset({"ops"})) and not in_group("", frozenset({""}))


def test_sync_joins_mapped_teams_leaves_those_left_and_never_touches_others() -> None:
    mapping = {"cn=nlp,dc=x": "nlp", "vision": "vision", "cn=cv,dc=x": "vision"}
    plan = plan_team_sync(mapping, frozenset({"cn=nlp,dc=x", "other"}), frozenset({"vision", "ops"}))
    assert plan.join == {"nlp"} and plan.leave == {"vision"}  # ops is not mapped: kept
    plan = plan_team_sync(mapping, frozenset({"cn=cv,dc=x"}), frozenset({"vision"}))  # another group, same team
    assert plan.join == frozenset() and plan.leave == frozenset()
