"""Fair share between teams, then users (issue 26), through the real pure policy on a fake clock:
weights, borrowing an idle team's share and giving it back, and team limits with reasons naming the team."""

from __future__ import annotations

from collections import Counter

from argus.scheduler.fairshare import Usage, decayed
from argus.scheduler.policy import HeldTask, Limits, NodeState, QueuedTask, TeamLimits, fair_order, plan

DAY = 86400.0


def run(queued_at: dict[float, list[QueuedTask]], slots: int, teams: dict[str, TeamLimits], until: float,
        duration: float = 1.0, step: float = 1.0) -> list[tuple[float, QueuedTask]]:
    """Start tasks pass by pass (one pass per ``step`` seconds) until ``until``; returns (start time, task)."""
    queued: list[QueuedTask] = []
    running: list[tuple[QueuedTask, float]] = []
    started: list[tuple[float, QueuedTask]] = []
    now = 0.0
    while now < until:
        queued += queued_at.get(now, [])
        running = [(t, s) for t, s in running if s + duration > now]
        usage: dict[str, Usage] = {}
        team_usage: dict[str, Usage] = {}
        for s, t in started:
            got = decayed(1.0, s, min(s + duration, now), now, DAY)
            usage[t.user] = usage.get(t.user, Usage()).plus(1, got)
            if t.team:
                team_usage[t.team] = team_usage.get(t.team, Usage()).plus(1, got)
        held = [HeldTask(t.task_id, t.user, 1, 1, ("w",), team=t.team) for t, _ in running]
        p = plan(queued, held, [NodeState("w", True, slots, slots - len(held))],
                 Limits(max_running=1000, max_running_per_user=0, teams=teams), usage=usage, team_usage=team_usage)
        ids = {pl.task_id for pl in p.placements}
        by_id = {t.task_id: t for t in queued}
        for pl in p.placements:  # in the order the policy chose
            running.append((by_id[pl.task_id], now))
            started.append((now, by_id[pl.task_id]))
        queued = [t for t in queued if t.task_id not in ids]
        now += step
    return started


def backlog(team: str, user: str, n: int, at: float = 0.0) -> list[QueuedTask]:
    return [QueuedTask(f"{team}-{user}-{i:03d}", user, 0, at * 1000 + i, 1, 1, team=team) for i in range(n)]


def test_weights_split_the_gpus_two_to_one() -> None:
    teams = {"nlp": TeamLimits(weight=2.0), "vision": TeamLimits(weight=1.0)}
    started = run({0.0: backlog("nlp", "alice", 400) + backlog("vision", "bob", 400)}, slots=3, teams=teams,
                  until=90, duration=3.0)
    share = Counter(t.team for _, t in started)
    ratio = share["nlp"] / share["vision"]
    print(f"\nstarts in 90 s on 3 GPUs, weights 2:1 → nlp {share['nlp']}, vision {share['vision']} ({ratio:.2f}:1)")
    assert 1.8 <= ratio <= 2.2


def test_team_first_then_user_inside_the_team() -> None:
    """A team with two users does not get twice the share of a team with one: the team level comes first."""
    teams = {"nlp": TeamLimits(), "vision": TeamLimits()}
    started = run({0.0: backlog("nlp", "alice", 200) + backlog("nlp", "carol", 200) + backlog("vision", "bob", 200)},
                  slots=4, teams=teams, until=60)
    by_team = Counter(t.team for _, t in started)
    by_user = Counter(t.user for _, t in started if t.team == "nlp")
    assert abs(by_team["nlp"] - by_team["vision"]) <= 4
    assert abs(by_user["alice"] - by_user["carol"]) <= 2


def test_an_idle_teams_share_is_lent_and_comes_back_when_it_queues_work() -> None:
    teams = {"nlp": TeamLimits(weight=1.0), "vision": TeamLimits(weight=1.0)}
    # 10-minute tasks on 4 GPUs; nlp queues nothing for 30 minutes, then a backlog
    started = run({0.0: backlog("vision", "bob", 500), 1800.0: backlog("nlp", "alice", 200, at=1800)},
                  slots=4, teams=teams, until=3600, duration=600, step=60)
    before = Counter(t.team for s, t in started if s < 1800)
    assert before == {"vision": 12}  # nlp queued nothing: vision borrowed every GPU
    after = [(s, t.team) for s, t in started if s >= 1800]
    # vision's running tasks were not stopped: nlp's first start is when they end (t=1800, all four at once),
    # and every GPU freed goes to nlp until its usage catches up with vision's 30 minutes on 4 GPUs
    assert after[:8] == [(1800.0, "nlp")] * 4 + [(2400.0, "nlp")] * 4, after[:8]


def test_team_limits_wait_with_reasons_naming_the_team() -> None:
    teams = {"nlp": TeamLimits(max_gpus=4, max_running=10), "vision": TeamLimits(max_running=1)}
    queued = [QueuedTask("n-big", "alice", 0, 1, 1, 4, team="nlp"), QueuedTask("n-next", "alice", 0, 2, 1, 1, team="nlp"),
              QueuedTask("n-huge", "carol", 0, 3, 2, 4, team="nlp"),
              QueuedTask("v-1", "bob", 0, 4, 1, 1, team="vision"), QueuedTask("v-2", "bob", 0, 5, 1, 1, team="vision"),
              QueuedTask("free", "dave", 0, 6, 1, 1)]
    held = [HeldTask("n-old", "alice", 1, 2, ("w",), team="nlp")]
    p = plan(queued, held, [NodeState("w", True, 16, 14)],
             Limits(max_running=100, max_running_per_user=0, teams=teams))
    started = {pl.task_id for pl in p.placements}
    assert started == {"v-1", "free"}, (started, p.pending)
    assert p.pending["n-big"] == "team limit (nlp): 2 GPUs held, this task needs 4 (max 4)"
    assert p.pending["n-next"].startswith("team limit (nlp): 2 GPUs held (max 4); n-big of the same team waits first")
    assert p.pending["n-huge"].startswith("team limit (nlp): this task needs 8 GPUs, more than the team's limit of 4")
    assert p.pending["v-2"] == "team limit: vision runs 1 task (its max)"


def test_a_team_gpu_limit_of_zero_is_a_limit() -> None:
    p = plan([QueuedTask("g", "alice", 0, 1, 1, 1, team="cpu-only"), QueuedTask("c", "alice", 0, 2, 1, 0, team="cpu-only")],
             [], [NodeState("w", True, 4, 4, 8.0, 8.0, 1 << 34, 1 << 34)],
             Limits(max_running=100, max_running_per_user=0, teams={"cpu-only": TeamLimits(max_gpus=0)}))
    assert {pl.task_id for pl in p.placements} == {"c"}
    assert "more than the team's limit of 0" in p.pending["g"]


def test_without_teams_the_order_is_the_per_user_fair_share() -> None:
    queued = [QueuedTask(f"{u}-{i}", u, 0, i, 1, 1) for u in ("a", "b") for i in range(3)]
    usage = {"a": Usage(10.0), "b": Usage(0.0)}
    assert [t.task_id for t in fair_order(queued, [], usage)] == ["b-0", "b-1", "b-2", "a-0", "a-1", "a-2"]


def test_the_submit_loop_reads_teams_from_the_database(ctx, ray, clock) -> None:  # noqa: ANN001
    """The real submit loop over a real SQLite file: team limits from the teams table, tasks' teams from
    their rows, the reason written on the waiting task, and the ledger's usage per team."""
    from sqlalchemy import update

    from argus.db.models import TaskModel, TeamModel
    from argus.scheduler.submit import SubmitQueuedTasks
    from argus.scheduler.usage import UsageLedger
    from tests.scheduler.fakes import add_task, add_user
    from tests.scheduler.test_fairshare import run_to_completion

    alice, bob = add_user(ctx, "alice"), add_user(ctx, "bob")
    with ctx.db.session() as s:
        s.add_all([TeamModel(name="nlp", weight=1.0, max_gpus=2), TeamModel(name="vision", weight=1.0)])
    a1, a2 = add_task(ctx, alice, gpus=2), add_task(ctx, alice, gpus=1, created_offset_s=1)
    b1 = add_task(ctx, bob, gpus=1, created_offset_s=2)
    with ctx.db.session() as s:
        s.execute(update(TaskModel).where(TaskModel.id.in_([a1, a2])).values(team="nlp"))
        s.execute(update(TaskModel).where(TaskModel.id == b1).values(team="vision"))
    started = run_to_completion(ctx, ray, clock, loop=SubmitQueuedTasks(ctx), seconds=100)
    assert sorted(started) == sorted([a1, b1])
    with ctx.db.session() as s:
        reason = s.get(TaskModel, a2).pending_reason
    assert reason == "team limit (nlp): 2 GPUs held, this task needs 1 (max 2)"
    ledger = UsageLedger(3600.0)
    with ctx.db.session() as s:
        ledger.read(s, clock())
    assert set(ledger.teams) >= {"nlp", "vision"}
    assert ledger.teams["nlp"].gpu_s > ledger.teams["vision"].gpu_s > 0


def test_a_priority_class_goes_first_across_users_and_teams_and_says_so() -> None:
    # bob has used a lot; his urgent task still goes before alice's (who has used nothing), and when it
    # cannot start, the GPUs it needs are held for it and the others' reasons name its class
    usage = {"bob": Usage(1e6), "alice": Usage(0.0)}
    queued = [QueuedTask("a-1", "alice", 0, 1, 1, 4, team="nlp"), QueuedTask("a-2", "alice", 0, 2, 1, 4, team="nlp"),
              QueuedTask("b-urgent", "bob", 0, 3, 2, 4, team="vision", class_value=100, priority_class="urgent")]
    assert [t.task_id for t in fair_order(queued, [], usage)] == ["b-urgent", "a-1", "a-2"]
    nodes = [NodeState("w1", True, 4, 4), NodeState("w2", True, 4, 0)]
    p = plan(queued, [], nodes, Limits(100, 0), usage=usage)
    assert p.placements == [] and p.reserved_for == "b-urgent"
    assert p.pending["b-urgent"].endswith("(priority class urgent)")
    assert "held back for b-urgent of priority class urgent" in p.pending["a-1"]
    # with room for everyone, the class changes nothing but the order
    p = plan(queued, [], [NodeState(f"w{i}", True, 4, 4) for i in range(4)], Limits(100, 0), usage=usage)
    assert [pl.task_id for pl in p.placements] == ["b-urgent", "a-1", "a-2"]
