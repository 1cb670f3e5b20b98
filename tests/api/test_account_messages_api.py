"""Issue 37: what the Account, Admin and Teams pages are refused comes with a stable code and params beside the
English text, which stays exactly what it was: ``detail.message_code``/``message_params`` for the refusal,
``code``/``params`` for each field's problem (core.messages; the pages say them with web/i18n's msg.<code>).

Each refusal is driven through the real API where a request can reach it, else through the service itself (the
API's schema refuses those values first: its pydantic errors are coded too, where their text is the template's).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

import asyncssh
import httpx
import pytest
from sqlalchemy import update

from argus.core.messages import EN, render
from argus.core.teams import TEAM_NAME_RULE
from argus.db.models import UserModel
from argus.errors import ArgusError
from argus.services import notifications as notify_svc
from argus.services import teams as teams_svc
from argus.services import usage as usage_svc
from argus.services import users as users_svc
from argus.services.principal import Principal
from argus.web import i18n
from tests.helpers import LiveServer, live_server

PASSWORD = "alice-pw-1234567"
ZH = {k.removeprefix("msg."): v for k, v in i18n.catalog("zh").items() if k.startswith("msg.")}


def in_chinese(code: str, params: dict) -> None:
    """The code reads in Chinese with these params: every value placed, no placeholder left."""
    text = render(code, params, ZH)
    assert "{" not in text.replace("{1,31}", ""), (code, text)
    assert re.search(r"[\u4e00-\u9fff]", text), (code, text)


def said(r: httpx.Response, status: int, api_code: str, text: str, code: str, **params: object) -> list[dict]:
    """The refusal is ``status`` with the kind ``api_code`` scripts branch on and the English ``text`` as before,
    coded ``code`` with ``params``; its field errors are returned."""
    assert r.status_code == status, r.text
    d = r.json()["detail"]
    assert (d["code"], d["message"]) == (api_code, text)
    assert (d["message_code"], d["message_params"]) == (code, params)
    assert render(code, params) == text
    in_chinese(code, params)
    return d.get("errors") or []


def field(item: dict, name: str, text: str, code: str, **params: object) -> None:
    """One field error: its field, its English as before, its code and params."""
    assert (item["field"], item["message"]) == (name, text)
    assert (item["code"], item["params"]) == (code, params)
    assert render(code, params) == text
    in_chinese(code, params)


def refused(fn, api_code: str, text: str, code: str, **params: object) -> list:  # noqa: ANN001
    """The same for a service call the API's schema never lets through."""
    with pytest.raises(ArgusError) as caught:
        fn()
    e = caught.value
    assert (e.code, e.message, e.message_code, e.message_params) == (api_code, text, code, params)
    in_chinese(code, params)
    return [e.as_dict() for e in e.errors]


def test_admin_page_refusals_are_coded(live: LiveServer) -> None:
    with live.admin() as a:
        errs = said(a.post("/api/v2/users", json={"name": "Bad"}), 400, "invalid_user", "invalid user name",
                    "user.name_invalid")
        field(errs[0], "name", "must match ^[a-z][a-z0-9_-]{1,31}$ (lowercase letter first, 2–32 chars)", "name.rule")
        assert EN["name.rule"] == TEAM_NAME_RULE  # the same rule for teams: one code
        assert a.post("/api/v2/users", json={"name": "alice"}).status_code == 201
        said(a.post("/api/v2/users", json={"name": "alice"}), 409, "user_exists", "user 'alice' already exists",
             "user.exists", user="'alice'")
        errs = said(a.post("/api/v2/users/admin/disable"), 409, "self_disable", "you cannot disable your own account",
                    "user.self_disable")
        field(errs[0], "name", "is your own account; another administrator must disable it", "user.self_disable_field")
        said(a.post("/api/v2/users/nobody/tokens", json={}), 404, "user_not_found", "no user named 'nobody'",
             "user.not_found", user="'nobody'")
        said(a.delete("/api/v2/users/alice/tokens/999999"), 404, "token_not_found", "user 'alice' has no token 999999",
             "token.not_found", user="'alice'", token=999999)
        errs = said(a.post("/api/v2/users/alice/password", json={"password": "short"}), 400, "invalid_password",
                    "password too short", "password.too_short")
        field(errs[0], "password", "must be a string of at least 8 characters", "password.too_short_field", min=8)
        errs = said(a.post("/api/v2/users/alice/password", json={"password": "é" * 600}), 400, "invalid_password",
                    "password too long", "password.too_long")
        field(errs[0], "password", "must be at most 1024 bytes (UTF-8); use a shorter passphrase or an SSH key",
              "password.too_long_field", max=1024)

        # the limits in place: the API's schema refuses a bad value first, its pydantic English coded
        errs = said(a.patch("/api/v2/users/alice", json={"max_gpus": 0, "max_running_tasks": "abc",
                                                         "quota_bytes": 1.5}),
                    400, "invalid_request", "request is invalid", "request.invalid")
        by = {e["field"]: e for e in errs}
        field(by["max_gpus"], "max_gpus", "Input should be greater than or equal to 1", "request.greater_than_equal", ge=1)
        field(by["max_running_tasks"], "max_running_tasks",
              "Input should be a valid integer, unable to parse string as an integer", "request.int_parsing")
        field(by["quota_bytes"], "quota_bytes", "Input should be a valid integer, got a number with a fractional part",
              "request.int_from_float")
        errs = said(a.patch("/api/v2/users/alice", json={"max_gpus": 1_000_001, "bogus": 1}), 400, "invalid_request",
                    "request is invalid", "request.invalid")
        by = {e["field"]: e for e in errs}
        field(by["max_gpus"], "max_gpus", "Input should be less than or equal to 1000000", "request.less_than_equal",
              le=1_000_000)
        field(by["bogus"], "bogus", "Extra inputs are not permitted", "request.extra_forbidden")
        errs = said(a.post("/api/v2/users", json={}), 400, "invalid_request", "request is invalid", "request.invalid")
        field(errs[0], "name", "Field required", "request.missing")

    with live.ctx.db.session() as s:  # what the schema never lets through, from the service
        errs = refused(lambda: users_svc.set_user_limits(s, "alice", max_gpus=0, gpus=1), "invalid_limits",
                       "invalid limits", "user.limits_invalid")
    field(errs[0], "max_gpus", "must be a whole number from 1 to 1000000, or null for the platform default",
          "user.limit_range", max=1_000_000)
    field(errs[1], "gpus", "unknown limit; the limits are max_gpus, max_running_tasks, quota_bytes",
          "user.limit_unknown", limits="max_gpus, max_running_tasks, quota_bytes")


def test_account_page_refusals_are_coded(live: LiveServer) -> None:
    alice = live.new_user("alice")
    assert alice.post("/api/v2/me/password", json={"password": PASSWORD}).status_code == 204
    errs = said(alice.post("/api/v2/me/password", json={"password": "a new long password"}), 400,
                "current_password_required", "current password required", "password.current_required")
    field(errs[0], "current_password", "send your current password (the one you sign in and use SFTP with); forgot "
          "it? ask an administrator to reset it", "password.current_required_field")
    errs = said(alice.post("/api/v2/me/password", json={"password": "a new long password", "current_password": "nope"}),
                400, "wrong_current_password", "wrong current password", "password.wrong_current")
    field(errs[0], "current_password", "is not your current password; forgot it? ask an administrator to reset it",
          "password.wrong_current_field")
    errs = said(alice.post("/api/v2/me/password", json={"password": "short", "current_password": PASSWORD}), 400,
                "invalid_password", "password too short", "password.too_short")
    field(errs[0], "password", "must be a string of at least 8 characters", "password.too_short_field", min=8)

    errs = said(alice.post("/api/v2/me/keys", json={"public_key": " "}), 400, "invalid_key", "missing key", "key.missing")
    field(errs[0], "public_key", "paste one OpenSSH public key line", "key.missing_field")
    errs = said(alice.post("/api/v2/me/keys", json={"public_key": "ssh-rsa nonsense"}), 400, "invalid_key",
                "invalid public key", "key.invalid")
    error = errs[0]["params"]["error"]
    field(errs[0], "public_key", f"not an OpenSSH public key ({error}); paste e.g. the contents of "
          "~/.ssh/id_ed25519.pub", "key.invalid_field", error=error)
    key = asyncssh.generate_private_key("ssh-ed25519").export_public_key("openssh").decode()
    assert alice.post("/api/v2/me/keys", json={"public_key": key}).status_code == 201
    said(alice.post("/api/v2/me/keys", json={"public_key": key}), 409, "key_exists", "key already added", "key.exists")
    said(alice.delete("/api/v2/me/keys/999999"), 404, "key_not_found", "no key 999999", "key.not_found", key=999999)

    # a directory (LDAP) account's password is the directory's
    with live.ctx.db.session() as s:
        s.execute(update(UserModel).where(UserModel.name == "alice").values(directory=True))
    errs = said(alice.post("/api/v2/me/password", json={"password": "a new long password", "current_password": PASSWORD}),
                409, "directory_user", "'alice' signs in with the directory (LDAP): change the password there, not in "
                "Argus", "password.directory_user", user="'alice'")
    field(errs[0], "password", "is kept by your organisation's directory (LDAP); change it with your directory's own "
          "tools", "password.directory_user_field")


def test_guessing_the_current_password_is_refused_in_code_too(settings) -> None:  # noqa: ANN001
    settings.login_max_failures = 1
    with live_server(settings) as srv:
        alice = srv.new_user("alice")
        assert alice.post("/api/v2/me/password", json={"password": PASSWORD}).status_code == 204
        wrong = {"password": "a new long password", "current_password": "guess"}
        assert alice.post("/api/v2/me/password", json=wrong).status_code == 400
        said(alice.post("/api/v2/me/password", json=wrong), 429, "too_many_attempts",
             "too many wrong passwords from your address; wait a minute and try again", "password.throttled")


def test_teams_page_refusals_are_coded(live: LiveServer) -> None:
    alice, bob = live.new_user("alice"), live.new_user("bob")
    live.new_user("cleo").close()
    with live.admin() as a:
        errs = said(a.post("/api/v2/teams", json={"name": "Bad!"}), 400, "invalid_team", "invalid team name",
                    "team.name_invalid")
        field(errs[0], "name", TEAM_NAME_RULE, "name.rule")
        errs = said(a.post("/api/v2/teams", json={"name": "nlp", "weight": -1, "max_gpus": -1, "gpu_hours_month": -1}),
                    400, "invalid_team_settings", "invalid team settings", "team.settings_invalid")
        by = {e["field"]: e for e in errs}
        field(by["weight"], "weight", "must be a number > 0 and ≤ 1000 (1 is the default share; 2 gets twice the share "
              "under contention)", "team.weight_rule", max=1000)
        field(by["max_gpus"], "max_gpus", "must be a whole number ≥ 0, or null for no limit", "team.limit_rule")
        field(by["gpu_hours_month"], "gpu_hours_month", "must be a number of GPU-hours ≥ 0, or null for no budget",
              "team.budget_rule")
        assert a.post("/api/v2/teams", json={"name": "nlp"}).status_code == 201
        errs = said(a.post("/api/v2/teams", json={"name": "nlp"}), 409, "team_exists", "team 'nlp' already exists",
                    "team.exists", team="'nlp'")
        field(errs[0], "name", "is taken; choose another name", "team.name_taken")
        assert a.post("/api/v2/teams", json={"name": "cv"}).status_code == 201
        said(a.post("/api/v2/teams/nlp/members", json={"user": "nobody"}), 404, "user_not_found",
             "no user named 'nobody'", "user.not_found", user="'nobody'")
        errs = said(a.post("/api/v2/teams/nlp/members", json={"user": "alice", "role": "boss"}), 400,
                    "invalid_team_role", "invalid team role", "team.role_invalid")
        field(errs[0], "role", "must be one of: member, admin", "team.role_rule")
        for who, role in (("alice", "admin"), ("bob", "member")):
            assert a.post("/api/v2/teams/nlp/members", json={"user": who, "role": role}).status_code == 201
        assert a.post("/api/v2/teams/cv/members", json={"user": "cleo"}).status_code == 201

    said(bob.post("/api/v2/teams", json={"name": "mine"}), 403, "forbidden", "only administrators create teams",
         "team.create_admins_only")
    said(bob.patch("/api/v2/teams/nlp", json={"max_gpus": 4}), 403, "forbidden",
         "only administrators change a team's weight, quotas and budget", "team.change_admins_only")
    said(bob.delete("/api/v2/teams/nlp"), 403, "forbidden", "only administrators delete teams", "team.delete_admins_only")
    said(bob.post("/api/v2/teams/nlp/members", json={"user": "cleo"}), 403, "forbidden",
         "only the admins of team 'nlp' manage its members", "team.members_admins_only", team="'nlp'")
    said(bob.get("/api/v2/teams/cv"), 404, "team_not_found", "no team named 'cv'", "team.not_found", team="'cv'")
    errs = said(bob.post("/api/v2/teams/cv/default"), 404, "team_not_found", "you are not in a team named 'cv'",
                "team.not_yours", team="'cv'")
    field(errs[0], "team", "name one of your teams (argus team list)", "team.name_yours")

    errs = said(alice.post("/api/v2/teams/nlp/members", json={"user": "cleo"}), 403, "forbidden",
                "a team admin adds only people already in another team they administer: ask a site administrator to "
                "add 'cleo' to team 'nlp'", "team.enrol_refused", user="'cleo'", team="'nlp'")
    field(errs[0], "user", "not in a team you administer; a site administrator adds them", "team.enrol_refused_field")
    errs = said(alice.post("/api/v2/teams/nlp/members", json={"user": "bob"}), 409, "already_member",
                "'bob' is already in team 'nlp'", "team.already_member", user="'bob'", team="'nlp'")
    field(errs[0], "user", "is a member already; change their role instead", "team.already_member_field")
    errs = said(alice.patch("/api/v2/teams/nlp/members/cleo", json={"role": "admin"}), 404, "not_member",
                "'cleo' is not in team 'nlp'", "team.not_member", user="'cleo'", team="'nlp'")
    field(errs[0], "user", "is not a member of this team", "team.not_member_field")
    errs = said(alice.patch("/api/v2/teams/nlp/members/alice", json={"role": "member"}), 409, "last_team_admin",
                "team 'nlp' would have no team admin", "team.last_admin", team="'nlp'")
    field(errs[0], "user", "is the team's last admin; make another member an admin first (or ask a site "
          "administrator)", "team.last_admin_field")
    with live.ctx.db.session() as s:
        admin = Principal(id=1, name="admin", is_admin=True)
        errs = refused(lambda: teams_svc.update_team(s, admin, "nlp", {"budget": 3}), "invalid_team_settings",
                       "invalid team settings", "team.settings_invalid")
    field(errs[0], "budget", "is not a team setting; use weight, max_gpus, max_running_tasks, gpu_hours_month, "
          "quota_bytes", "team.setting_unknown", settings="max_gpus, max_running_tasks, gpu_hours_month, quota_bytes")


def test_usage_refusals_are_coded(live: LiveServer) -> None:
    bob = live.new_user("bob")
    errs = said(bob.get("/api/v2/usage", params={"from": "yesterday"}), 400, "invalid_filter", "bad usage window",
                "usage.window_invalid")
    field(errs[0], "from", "must be a date (2026-11-01) or an ISO 8601 time (2026-11-01T08:00:00Z)", "usage.when_rule")
    errs = said(bob.get("/api/v2/usage", params={"from": "2026-11-02", "to": "2026-11-01"}), 400, "invalid_filter",
                "bad usage window", "usage.window_invalid")
    field(errs[0], "from", "must be before 'to' (2026-11-01T00:00:00+00:00)", "usage.from_before_to",
          to="2026-11-01T00:00:00+00:00")
    errs = said(bob.get("/api/v2/usage", params={"team": "nlp"}), 404, "team_not_found", "no team named 'nlp'",
                "team.not_found", team="'nlp'")
    field(errs[0], "team", "name one of your teams (argus team list)", "team.name_yours")
    said(bob.get("/api/v2/usage", params={"user": "admin"}), 403, "forbidden", "only admins can see another user's usage",
         "usage.others_admins_only")
    with live.admin() as a:
        said(a.get("/api/v2/usage", params={"user": "nobody"}), 404, "user_not_found", "no user named 'nobody'",
             "user.not_found", user="'nobody'")
    with live.ctx.db.session() as s:
        me = Principal(id=1, name="admin", is_admin=True)
        errs = refused(lambda: usage_svc.usage_report(s, me, group_by="week", now=datetime.now(UTC)),
                       "invalid_filter", "bad grouping", "usage.grouping_invalid")
    field(errs[0], "group_by", "must be one of user, workload, day, team", "usage.group_rule",
          groups="user, workload, day, team")



def test_notification_channel_refusals_are_coded(live: LiveServer) -> None:
    alice = live.new_user("alice")
    events = "SUCCEEDED, FAILED, CANCELED, STALLED, RESUMED, IDLE_GPU, MODEL_ALIAS"
    assert ", ".join(notify_svc.EVENTS) == events
    errs = said(alice.post("/api/v2/notifications", json={"kind": "fax", "target": " ", "events": []}), 400,
                "invalid_channel", "invalid notification channel", "notify.channel_invalid")
    field(errs[0], "kind", "must be 'webhook' (a URL) or 'email' (an address)", "notify.kind_rule")
    field(errs[1], "target", "give the webhook's URL or the e-mail address", "notify.target_missing")
    field(errs[2], "events", f"a non-empty list of events, or leave it out for all: {events}", "notify.events_list",
          events=events)
    errs = said(alice.post("/api/v2/notifications", json={"kind": "email", "target": "me@example.com"}), 400,
                "invalid_channel", "invalid notification channel", "notify.channel_invalid")
    field(errs[0], "kind", "e-mail notifications are off on this server: the operator has not set smtp_host "
          "(ARGUS_SMTP_HOST); use a webhook, or ask the operator to configure SMTP", "notify.email_disabled")
    hook = {"kind": "webhook", "target": "https://hooks.example.com/argus"}
    errs = said(alice.post("/api/v2/notifications", json={**hook, "events": ["NOPE"]}), 400, "invalid_channel",
                "invalid notification channel", "notify.channel_invalid")
    field(errs[0], "events", f"unknown event; one of {events}", "notify.event_unknown", events=events)
    field(notify_svc.check_channel("email", "Me <me@example.com>", None, email_enabled=True)[0].as_dict(), "target",
          "not an e-mail address: write it as name@example.com (no display name, no spaces)", "notify.email_invalid")
    said(alice.delete("/api/v2/notifications/999999"), 404, "channel_not_found", "no notification channel 999999",
         "notify.channel_not_found", channel=999999)

    made = [alice.post("/api/v2/notifications", json=hook) for _ in range(notify_svc.MAX_CHANNELS_PER_USER)]
    assert {r.status_code for r in made} == {201}
    errs = said(alice.post("/api/v2/notifications", json=hook), 400, "too_many_channels",
                "too many notification channels", "notify.too_many_channels")
    field(errs[0], "kind", "you have 20 channels, the most allowed; remove one first", "notify.too_many_channels_field",
          count=20)
    channel = made[0].json()["id"]
    tests = [alice.post(f"/api/v2/notifications/{channel}/test") for _ in range(notify_svc.TESTS_PER_WINDOW + 1)]
    assert [r.status_code for r in tests[:-1]] == [202] * notify_svc.TESTS_PER_WINDOW
    seconds = int(tests[-1].headers["Retry-After"])
    said(tests[-1], 429, "too_many_tests", f"too many test notifications: at most 5 in 60 s; try again in {seconds} s",
         "notify.too_many_tests", limit=5, window="60", seconds=seconds)
