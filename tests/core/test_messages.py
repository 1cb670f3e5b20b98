"""Server messages as code + params (issue 37): the catalogs agree, every reason the policy gives has a code."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from argus.core import messages
from argus.core.failures import FailureKind, hint_for
from argus.core.messages import EN, Message, msg, part, render
from argus.scheduler.policy import HeldTask, Limits, NodeState, QueuedTask, TeamLimits, UserLimits, plan
from argus.web import i18n

PLACEHOLDER = re.compile(r"\{(?:s:)?(\w+)\}")
GiB = 2**30


def placeholders(template: str) -> set[str]:
    return set(PLACEHOLDER.findall(template))


def web_codes() -> set[str]:
    return {k.removeprefix("msg.") for k in i18n.catalog("en") if k.startswith("msg.")}


def test_every_code_has_an_entry_in_both_web_catalogs_with_the_same_placeholders() -> None:
    failure_codes = {messages.FAILURE_PREFIX + k.value for k in FailureKind}
    assert web_codes() == set(EN) | failure_codes  # nothing missing, nothing left over
    for lang in i18n.LANGUAGES:
        cat = i18n.catalog(lang)
        for code, template in EN.items():
            assert placeholders(cat[f"msg.{code}"]) <= placeholders(template), (lang, code)
            if lang == "en":  # English says it exactly as the server does (plurals included)
                assert cat[f"msg.{code}"] == template, code
            elif code not in ("sep", "none") and not code.startswith("sep."):
                plain = {p for p in placeholders(template) if f"{{{p}}}" in template}
                assert plain <= placeholders(cat[f"msg.{code}"]), (lang, code, "a value is left out")
        for kind in FailureKind:
            assert placeholders(cat[f"msg.failure.{kind.value}"]) == {"where"}, (lang, kind)
    assert i18n.catalog("en")["msg.failure.gpu_oom"] == "{where}" + hint_for(FailureKind.GPU_OOM)
    zh = i18n.catalog("zh")
    assert all(re.search(r"[\u4e00-\u9fff]", zh[f"msg.{c}"]) for c in EN if c.startswith("queue."))


def test_render_rules_plurals_lists_nested_and_suffixes() -> None:
    assert msg("queue.cluster_task_limit", max=1).text == "cluster limit: 1 running task"
    assert msg("queue.cluster_task_limit", max=2).text == "cluster limit: 2 running tasks"
    free = [part("part.gang", nnodes=1, gpus=3), part("part.gang", nnodes=2, gpus=2)]
    m = msg("queue.gpus_busy", nnodes=2, need=[part("part.gpus", n=4)], free=free)
    assert m.text == "needs 2 nodes × 4 GPUs; free: 1 node × 3 GPUs, 2 nodes × 2 GPUs"
    assert msg("queue.gpus_busy", nnodes=1, need=[part("part.gpus", n=1)], free=[]).text.endswith("free: none")
    lacks = [part("part.cpus", n=0.5), part("part.memory", size="32 GiB")]
    short = msg("queue.resources_short", nnodes=1, need=[part("part.gpus", n=1)],
                free=[part("part.node_lacks", node="a", gpus=8, lacks=lacks)]).then("part.more_nodes", more=2)
    assert short.text == "needs 1 node × 1 GPU; free: a 8 GPUs but 0.5 CPUs and 32 GiB memory (+2 more nodes)"
    assert short.then("part.priority_class", priority_class="urgent").text.endswith("nodes) (priority class urgent)")
    # the same rules with another catalog: what the WebUI does with zh.json
    zh = {k.removeprefix("msg."): v for k, v in i18n.catalog("zh").items() if k.startswith("msg.")}
    text = render(short.code, short.params, zh)
    assert "{" not in text and "8" in text and "32 GiB" in text and re.search(r"[\u4e00-\u9fff]", text)
    assert msg("queue.cluster_task_limit", max=4.0).params == {"max": 4}  # 4.0 and 4 say the same everywhere
    with pytest.raises(KeyError):
        part("part.unknown")


def test_a_stored_code_counts_only_while_it_renders_to_the_stored_text() -> None:
    m = msg("queue.user_gpu_limit", held=8, need=8, max=8)
    assert messages.from_stored(m.code, m.params, m.text) == m
    assert messages.from_stored(m.code, m.params, "requeued after a stall") is None  # another writer's text
    assert messages.from_stored("queue.gone", {}, "x") is None and messages.from_stored(None, None, "x") is None
    assert messages.from_stored(m.code, {"held": [1]}, m.text) is None


def test_a_failure_hint_gets_its_kinds_code_only_when_it_is_the_generic_hint() -> None:
    generic = hint_for(FailureKind.GPU_OOM)
    m = messages.failure_hint("gpu_oom", f"on rank 3: {generic}")
    assert m == Message("failure.gpu_oom", {"where": "on rank 3: "}, f"on rank 3: {generic}")
    assert messages.failure_hint("gpu_oom", generic).params == {"where": ""}
    assert messages.failure_hint("missing_file", "upload /data/x.parquet to your home") is None  # specific: English
    assert messages.failure_hint(None, generic) is None and messages.failure_hint("bogus", generic) is None


# ------------------------------------------------------------ every reason the policy can give has a code

LIM = Limits(max_running=64, max_running_per_user=16)


def q(tid: str, user: str = "u", *, gpus: int = 0, nnodes: int = 1, age: int = 0, cpus: float = 0, mem: int = 0,
      team: str | None = None, klass: str | None = None) -> QueuedTask:
    return QueuedTask(tid, user, 0, age, nnodes, gpus, cpus, mem, team=team, class_value=1 if klass else 0,
                      priority_class=klass)


def h(tid: str, user: str = "u", *, gpus: int = 0, nodes: tuple[str, ...] = ("a",), team: str | None = None) -> HeldTask:
    return HeldTask(tid, user, 1, gpus, nodes, team=team)


def n(node: str, gpus: int, free: int | None = None, cpus: float | None = None, mem: int | None = None) -> NodeState:
    return NodeState(node, True, gpus, gpus if free is None else free, cpus, cpus, mem, mem)


SCENARIOS = {  # what the tests in tests/scheduler drive, one scenario per reason
    "queue.ray_unreachable": lambda: plan([q("t", gpus=1)], [], [], LIM, cluster_error="connection refused"),
    "queue.cluster_task_limit": lambda: plan([q("t")], [h("x")], [n("a", 4)], Limits(1, 0)),
    "queue.user_task_limit": lambda: plan([q("t")], [h("x")], [n("a", 4)], Limits(8, 1)),
    "queue.team_task_limit": lambda: plan([q("t", team="nlp")], [h("x", team="nlp")], [n("a", 4)],
                                          Limits(8, 0, teams={"nlp": TeamLimits(max_running=1)})),
    "queue.sweep_limit": lambda: plan([replace(q("t"), sweep="sweep-1")], [replace(h("x"), sweep="sweep-1")],
                                      [n("a", 4)], Limits(8, 0, sweeps={"sweep-1": 1})),
    "queue.user_gpu_limit": lambda: plan([q("t", gpus=4), q("t2", gpus=4, age=1)],
                                         [h("x", gpus=4)], [n("a", 8, free=4), n("b", 8)],
                                         Limits(8, 0, users={"u": UserLimits(max_gpus=4)})),
    "queue.user_gpu_never": lambda: plan([q("t", gpus=16)], [], [n("a", 8), n("b", 8)],
                                         Limits(8, 0, users={"u": UserLimits(max_gpus=4)})),
    "queue.team_gpu_limit": lambda: plan([q("t", gpus=4, team="nlp"), q("t2", gpus=4, team="nlp", age=1)],
                                         [h("x", gpus=4, team="nlp")], [n("a", 8, free=4), n("b", 8)],
                                         Limits(8, 0, teams={"nlp": TeamLimits(max_gpus=4)})),
    "queue.team_gpu_never": lambda: plan([q("t", gpus=16, team="nlp")], [], [n("a", 8), n("b", 8)],
                                         Limits(8, 0, teams={"nlp": TeamLimits(max_gpus=4)})),
    "queue.no_workers": lambda: plan([q("t", gpus=1)], [], [], LIM),
    "queue.no_gpus": lambda: plan([q("t", gpus=1)], [], [n("a", 0)], LIM),
    "queue.cluster_too_small": lambda: plan([q("t", gpus=4, nnodes=2)], [], [n("a", 4)], LIM),
    "queue.gpus_busy": lambda: plan([q("t", gpus=4, klass="urgent")], [h("x", gpus=4)], [n("a", 4)], LIM),
    "queue.gpus_reserved": lambda: plan([q("big", gpus=4, klass="urgent"), q("s", gpus=1, age=1)],
                                        [h("x", gpus=4, nodes=("a",))], [n("a", 4), n("b", 4, free=3)], LIM),
    "queue.resources_never": lambda: plan([q("t", gpus=8, cpus=34)], [], [n("a", 8, cpus=16)], LIM),
    "queue.resources_short": lambda: plan([q("t", gpus=4, cpus=10, nnodes=2), q("j", cpus=4, age=1),
                                           q("m", gpus=1, mem=64 * GiB, age=2)], [],
                                          [n("a", 8, cpus=16, mem=32 * GiB)], LIM),
}
# the codes the scheduler's loops write themselves (scheduler/submit.py; a retry's reason, monitor.py), not the policy
SUBMIT_CODES = {"queue.submitting", "queue.previous_attempt", "queue.requeued_after_stall",
                "queue.retrying_after_failure"}
# codes reached by the scenarios of other codes (the next task of a user/team over its GPU limit)
ALSO = {"queue.user_gpu_limit": {"queue.user_gpu_first"}, "queue.team_gpu_limit": {"queue.team_gpu_first"}}


@pytest.mark.parametrize("code", sorted(SCENARIOS))
def test_every_reason_the_policy_gives_is_a_coded_message(code: str) -> None:
    p = plan_ = SCENARIOS[code]()
    assert p.reasons, "the scenario leaves a task waiting"
    got = set()
    for why in plan_.reasons.values():
        assert isinstance(why, Message) and why.code in EN, why
        assert render(why.code, why.params) == why.text  # the text is the code's English rendering
        assert "{" not in why.text
        got.add(why.code)
    assert code in got and ALSO.get(code, set()) <= got, got
    assert p.pending == {tid: m.text for tid, m in p.reasons.items()}


def test_the_scenarios_cover_every_queue_code() -> None:
    covered = set(SCENARIOS) | SUBMIT_CODES | {c for extra in ALSO.values() for c in extra}
    assert covered == {c for c in EN if c.startswith("queue.")}


def test_a_classed_tasks_reason_keeps_its_code_and_says_its_class() -> None:
    why = SCENARIOS["queue.gpus_busy"]().reasons["t"]
    assert why.code == "queue.gpus_busy" and why.text.endswith("(priority class urgent)")
    assert why.params["then"] == [{"code": "part.priority_class", "priority_class": "urgent"}]
    reserved = SCENARIOS["queue.gpus_reserved"]().reasons["s"]
    assert reserved.params["reserved_for"] == {"code": "part.task_of_class", "task": "big", "priority_class": "urgent"}
    assert "held back for big of priority class urgent" in reserved.text
