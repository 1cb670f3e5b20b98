"""Issue 26 in a real Chromium against a real ``argus up``: the Teams page. A site admin creates a team (a bad
weight first: the API's own error, naming the field) and adds a member; the member sees the team with its budget;
a team admin adds a member and changes a role; a user outside the team does not see it; usage by team with its
CSV link; no sideways scrolling at 390 px."""

from __future__ import annotations

import pytest

from tests.waiting import wait_until
from tests.web.conftest import Pages, Up, shot, sign_in_with_token
from tests.web.test_browser import submit_api
from tests.web.test_browser_phone import _OFFENDERS, PHONE

pytestmark = [pytest.mark.browser, pytest.mark.e2e]
JOB = "kind: advanced\nworkload: job\nname: team-job\nnnodes: 1\nn_gpus_per_node: 0\nteam: nlp\n" \
      "command: python3 -m argus.jobs.sleep 0 --lines 1\n"


def _errors_of(page) -> list[str]:  # noqa: ANN001
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    return errors


def _teams(page, url: str) -> None:  # noqa: ANN001
    page.goto(f"{url}/teams")
    page.locator('#teams-list[data-loaded="1"]').wait_for(state="attached")


def test_teams_page_create_members_roles_visibility_and_usage(up: Up, pages: Pages) -> None:
    if "cleo" not in up.tokens:
        up.add_user("cleo", "cleo-pw-1234567")
    admin = pages.new()
    errors = _errors_of(admin)
    sign_in_with_token(admin, up.url, up.admin_token)
    _teams(admin, up.url)
    assert admin.locator('a[data-nav="teams"]').get_attribute("class") == "current"

    # a bad weight: the API's message for the field, shown as it said it, and the input marked
    with up.api() as a:
        said = a.post("/api/v2/teams", json={"name": "nlp", "weight": -1})
        assert said.status_code == 400
        message = said.json()["detail"]["errors"][0]["message"]
    admin.fill("#team-name", "nlp")
    admin.fill("#team-weight", "-1")
    admin.click("#team-create-button")
    admin.locator("#teams-error", has_text=f"weight: {message}").wait_for()
    assert admin.locator("#team-weight").get_attribute("aria-invalid") == "true"
    admin.fill("#team-weight", "2")
    admin.fill("#team-budget", "100")
    admin.click("#team-create-button")
    card = admin.locator('section.team[data-team="nlp"]')
    card.wait_for()
    assert admin.locator("#teams-error").is_hidden()
    assert card.locator(".team-weight").inner_text() == "2"
    assert card.locator(".team-role").inner_text() == "site administrator"

    # the site admin adds alice as the team's admin
    card.locator("input.add-user").fill("alice")
    card.locator("select.add-role").select_option("admin")
    card.locator("button.add-member-button").click()
    card.locator('tr[data-member="alice"]').wait_for()
    # an unknown user: the API's refusal, shown
    card.locator("input.add-user").fill("nobody")
    card.locator("button.add-member-button").click()
    admin.locator("#teams-error", has_text="nobody").wait_for()

    # the site admin changes the team's settings in place
    card.locator("details.team-admin summary").click()
    card.locator("input.set-max_gpus").fill("8")
    card.locator("button.save-settings").click()
    admin.locator('section.team[data-team="nlp"] .team-max-gpus', has_text="8").wait_for()
    with up.api() as a:
        team = a.get("/api/v2/teams/nlp").json()
    assert (team["weight"], team["max_gpus"], team["gpu_hours_month"]) == (2.0, 8, 100.0)

    # alice (team admin) sees the team, its budget and her role; she adds bob and makes him an admin
    alice = pages.new(user="alice")
    alice_errors = _errors_of(alice)
    _teams(alice, up.url)
    card = alice.locator('section.team[data-team="nlp"]')
    card.wait_for()
    assert card.locator(".team-role").inner_text() == "team admin"
    assert "of 100.0 GPU-hours" in card.locator(".team-budget").inner_text()
    assert card.locator(".team-running").inner_text() == "0 tasks, 0 GPUs"
    assert card.locator("details.team-admin").count() == 0  # weight and limits are the site admins'
    # a team admin adds only people already in a team they administer (issue 33): bob joins one of alice's first
    with up.api() as a:
        assert a.post("/api/v2/teams", json={"name": "nlp-ops"}).status_code == 201
        assert a.post("/api/v2/teams/nlp-ops/members", json={"user": "alice", "role": "admin"}).status_code == 201
        assert a.post("/api/v2/teams/nlp-ops/members", json={"user": "bob"}).status_code == 201
    card.locator("input.add-user").fill("bob")
    card.locator("button.add-member-button").click()
    bob_row = card.locator('tr[data-member="bob"]')
    bob_row.wait_for()
    with up.api() as a:  # the other browser modules share alice and bob: no team of this test's left behind
        assert a.delete("/api/v2/teams/nlp-ops").status_code == 204
    def roles_are(want: dict[str, str]) -> None:
        """The server's roles (a select shows its new value at once, before the page's request is answered)."""
        with up.api("alice") as c:
            wait_until(lambda: {m["name"]: m["role"] for m in c.get("/api/v2/teams/nlp").json()["members"]} == want,
                       30, every=0.2, what=f"nlp's roles {want}")

    bob_row.locator("select.member-role").select_option("admin")
    roles_are({"alice": "admin", "bob": "admin"})
    bob_row = alice.locator('section.team[data-team="nlp"] tr[data-member="bob"]')
    bob_row.locator("select.member-role").select_option("member")  # back to member: bob sees no controls
    roles_are({"alice": "admin", "bob": "member"})
    # alice, now the last team admin, cannot make herself a member: the API's 409 naming the field, and her
    # role shown as it still is
    alice.locator('tr[data-member="alice"] select.member-role').select_option("member")
    alice.locator("#teams-error", has_text="user: is the team's last admin").wait_for()
    alice.wait_for_function("() => document.querySelector('tr[data-member=\"alice\"] select.member-role')?.value === 'admin'")

    # bob (member) sees the team, without the member controls
    bob = pages.new(user="bob")
    _teams(bob, up.url)
    card = bob.locator('section.team[data-team="nlp"]')
    card.wait_for()
    assert card.locator(".team-role").inner_text() == "member"
    assert card.locator("select.member-role").count() == 0 and card.locator("form.add-member").count() == 0
    assert card.locator('tr[data-member="bob"] button.remove-member').inner_text() == "Leave"

    # cleo is in no team: she does not see it
    cleo = pages.new()
    sign_in_with_token(cleo, up.url, up.tokens["cleo"])
    _teams(cleo, up.url)
    assert cleo.locator("#teams-empty").is_visible()
    assert cleo.locator('section.team[data-team="nlp"]').count() == 0
    assert "nlp" not in cleo.locator("#usage-team").inner_text()

    # usage by team: alice's job charged to nlp shows in the site admin's view and in its CSV
    tid = submit_api(up, "alice", JOB)
    with up.api("alice") as c:
        wait_until(lambda: c.get(f"/api/v2/tasks/{tid}").json()["status"] == "SUCCEEDED", 180, every=0.5,
                   what=lambda: f"{tid} SUCCEEDED; {c.get(f'/api/v2/tasks/{tid}').json()}")
    _teams(admin, up.url)
    admin.locator('#usage-table[data-loaded="1"]').wait_for(state="attached")
    row = admin.locator('#usage-body tr[data-key="nlp"]')
    row.wait_for()
    assert row.locator("td").nth(3).inner_text() == "1"  # one attempt
    href = admin.locator("#usage-csv").get_attribute("href")
    assert href.startswith("/api/v2/usage?") and "group_by=team" in href and "format=csv" in href
    csv = admin.request.get(f"{up.url}{href}")
    assert csv.ok and csv.headers["content-type"].startswith("text/csv"), csv.headers
    lines = csv.text().splitlines()
    assert lines[0] == "team,gpu_hours,cpu_hours,attempts" and any(x.startswith("nlp,") for x in lines), lines
    # alice, a member, picks her team and its members' rows; the CSV link follows the choice
    _teams(alice, up.url)
    alice.select_option("#usage-team", "nlp")
    alice.select_option("#usage-by", "user")
    alice.click("#usage-apply")
    alice.locator('#usage-body tr[data-key="alice"]').wait_for()
    href = alice.locator("#usage-csv").get_attribute("href")
    assert "team=nlp" in href and "group_by=user" in href
    lines = alice.request.get(f"{up.url}{href}").text().splitlines()
    assert lines[0].startswith("user,") and any(x.startswith("alice,") for x in lines), lines
    shot(alice, "teams")

    # a phone: 390 px wide, nothing makes the page scroll sideways
    alice.set_viewport_size(PHONE)
    _teams(alice, up.url)
    alice.locator('section.team[data-team="nlp"]').wait_for()
    alice.wait_for_timeout(300)
    widths = alice.evaluate("() => [document.scrollingElement.scrollWidth, innerWidth]")
    assert widths[0] <= widths[1], (widths, alice.evaluate(_OFFENDERS))
    shot(alice, "phone-teams")
    assert errors == [] and alice_errors == [], (errors, alice_errors)
