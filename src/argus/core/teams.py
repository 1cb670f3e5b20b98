"""Teams (issue 26): the pure rules — names, roles, and who may manage a team's membership.

A research cluster is shared by groups: a team owns a shared folder, a GPU quota and a budget,
and a weight in the fair share between teams. Membership has two roles: a *member* uses the
team's folder and charges tasks to it; a *team admin* also manages who is in the team (and, later,
cancels the team's tasks). Site admins manage every team. Nothing here touches the database.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from enum import StrEnum

# The same shape as a user name: a team's name is a folder name ($HOME/teams/<team>) and a label.
TEAM_NAME_RE = re.compile(r"^[a-z][a-z0-9_-]{1,31}$")
TEAM_NAME_RULE = "must match ^[a-z][a-z0-9_-]{1,31}$ (lowercase letter first, 2–32 chars)"
MAX_WEIGHT = 1000.0


class TeamRole(StrEnum):
    MEMBER = "member"
    ADMIN = "admin"


def may_manage_members(*, site_admin: bool, role: TeamRole | None) -> bool:
    """Site admins manage every team; a team admin manages their own team's members."""
    return site_admin or role is TeamRole.ADMIN


def may_enrol(*, site_admin: bool, in_a_team_they_administer: bool) -> bool:
    """Who a team admin may add: only someone already in another team they administer (that team's admins
    already answer for them). Anyone else joins by a site admin: otherwise a team admin could enrol any user,
    see their tasks charged to the team, read their logs and cancel them."""
    return site_admin or in_a_team_they_administer


def may_change_team(*, site_admin: bool) -> bool:
    """A team's weight, quotas and budget are the cluster's to give: only site admins change them
    (a team admin raising their own team's share would defeat the fair share between teams)."""
    return site_admin


def leaves_team_without_admin(roles: dict[str, TeamRole], user: str, new_role: TeamRole | None) -> bool:
    """Whether giving ``user`` ``new_role`` (None: removing them) leaves a team that had a team admin
    with none — then only a site admin could manage it, which a team admin should not do by accident."""
    had = [u for u, r in roles.items() if r is TeamRole.ADMIN]
    if not had:
        return False
    after = [u for u in had if u != user]
    if new_role is TeamRole.ADMIN:
        after.append(user)
    return not after


def month_window(now: datetime) -> tuple[datetime, datetime]:
    """The calendar month (UTC) ``now`` falls in, as ``[start, next month's start)``: a team's budget period."""
    start = datetime(now.year, now.month, 1, tzinfo=UTC)
    end = datetime(now.year + (now.month == 12), now.month % 12 + 1, 1, tzinfo=UTC)
    return start, end


def budget_problem(team: str, used_gpu_hours: float, budget: float | None, month: str) -> str | None:
    """Why a new task may not be charged to ``team`` this month (its budget is spent), or None."""
    if budget is None or used_gpu_hours < budget:
        return None
    return (f"team {team} has used {used_gpu_hours:.1f} of its {budget:g} GPU-hours for {month}; an administrator "
            f"can raise it (argus team set {team} --gpu-hours-month N), or charge another of your teams (team: …)")
