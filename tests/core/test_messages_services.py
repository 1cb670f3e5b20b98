"""The services' timeline words as codes (issue 37): a task a user's action queued (accepted, an evaluation, a re-run,
a resume, an export) and an evaluation evaluate_checkpoints could not queue. Each code renders to exactly the English
the f-string wrote (scripts and tests read it), is stored with its code, and both WebUI catalogs say it (the zh one
in Chinese)."""

from __future__ import annotations

import json
import re

import pytest

from argus.core.messages import EN, field_error, from_stored, msg, refusal, render
from argus.errors import ClientError, Conflict, FieldError
from argus.services import evaluate_every
from argus.web import i18n

SHOWN = "$HOME/jobs/t-1/checkpoints/global_step_2"


def _old_evaluates(source: str, step: int, how: str) -> str:
    """services/evaluations.py's event before the codes (``how`` as its two callers built it)."""
    return f"evaluates {source} checkpoint global_step_{step} {how}"


def _old_rerun(old_id: str, env: str, edits: list) -> str:
    return f"re-run of {old_id} in environment {env}" + (f" ({len(edits)} keys moved for its verl)" if edits else "")


def _old_refusal(step: int, exc) -> str:
    """services/evaluate_every.py's refusal before the codes."""
    details = "; ".join(f"{e.field}: {e.message}" for e in exc.errors[:5])
    return (f"evaluate_checkpoints: the evaluation of checkpoint global_step_{step} could not be queued "
            f"({exc.message}{': ' + details if details else ''}); it is not tried again — evaluate the step "
            "yourself once fixed (argus evaluate)")


CASES = {
    "status.accepted": (msg("status.accepted"), "accepted"),
    "status.evaluates": (msg("status.evaluates", task="t-1", checkpoint="global_step_2", path=SHOWN),
                         _old_evaluates("t-1", 2, f"({SHOWN}) with verl's validation (trainer.val_only)")),
    "status.evaluates_lm_eval": (msg("status.evaluates_lm_eval", task="t-1", checkpoint="global_step_2", path=SHOWN),
                                 _old_evaluates("t-1", 2, f"({SHOWN}) with lm-eval")),
    "status.rerun_of": (msg("status.rerun_of", task="t-1", env="verl-0.9.1-cpu"),
                        _old_rerun("t-1", "verl-0.9.1-cpu", [])),
    "status.rerun_of_moved": (msg("status.rerun_of_moved", task="t-1", env="verl-0.9.1-cpu", moved=2),
                              _old_rerun("t-1", "verl-0.9.1-cpu", [{}, {}])),
    "status.resumes": (msg("status.resumes", task="t-1", checkpoint="global_step_4", path="$HOME/runs/ck/global_step_4"),
                       "resumes t-1 from checkpoint global_step_4 ($HOME/runs/ck/global_step_4)"),
    "status.exports": (msg("status.exports", task="t-1", checkpoint="global_step_2", backend="fsdp",
                           target="$HOME/models/m1"),
                       "exports t-1 global_step_2 (fsdp) to $HOME/models/m1"),
}

# refusals evaluate_checkpoints meets: English only, coded (a refusal and its fields), mixed, and more than five fields
REFUSALS = [
    Conflict("environment verl-0.9 is gone"),
    ClientError("spec is invalid", errors=[FieldError("val_file", "$HOME/x.parquet", "no such file: $HOME/x.parquet")]),
    refusal(ClientError, "invalid_spec", "priority.refused",
            errors=[field_error("priority_class", "urgent", "priority.not_a_class", classes=[])]),
    refusal(ClientError, "invalid_spec", "priority.invalid",
            errors=[field_error("name", "X", "priority.name_rule"),
                    FieldError("value", 0, "English only {not a placeholder}")]),
    ClientError("spec is invalid", errors=[FieldError(f"f{i}", i, f"problem {i}") for i in range(7)]),
]


@pytest.mark.parametrize("code", sorted(CASES))
def test_each_new_code_renders_to_the_english_it_replaced(code: str) -> None:
    said, old = CASES[code]
    assert said.code == code and said.text == old
    assert render(said.code, said.params) == old
    assert from_stored(said.code, json.loads(json.dumps(said.params)), old) == said  # as stored and read back


@pytest.mark.parametrize("exc", REFUSALS, ids=range(len(REFUSALS)))
def test_an_evaluation_not_queued_says_what_it_always_said_with_its_code(exc) -> None:
    said = evaluate_every.refusal(4, exc)
    assert said.text == _old_refusal(4, exc)
    assert said.code == ("status.eval_not_queued_details" if exc.errors else "status.eval_not_queued")
    stored = json.loads(json.dumps(said.params))  # a JSON column
    assert from_stored(said.code, stored, said.text) is not None
    details = said.params.get("details", [])
    assert len(details) == min(5, len(exc.errors)) and all(d["code"] == "part.field_problem" for d in details)
    # the refusal and each field's problem nested where they have a code, else English as written
    assert said.params["message"] == ({"code": exc.message_code, **exc.message_params} if exc.message_code
                                      else exc.message)
    for d, e in zip(details, exc.errors, strict=False):
        assert d["problem"] == ({"code": e.code, **e.params} if e.code else e.message)


def test_a_code_that_no_longer_renders_to_the_refusal_is_left_out() -> None:
    stale = ClientError("priority class refused, said otherwise", message_code="priority.refused",
                        errors=[FieldError("x", 1, "changed", code="priority.name_rule")])
    said = evaluate_every.refusal(2, stale)
    assert said.text == _old_refusal(2, stale)
    assert said.params["message"] == stale.message and said.params["details"][0]["problem"] == "changed"


def test_every_new_code_is_in_both_catalogs_and_said_in_chinese() -> None:
    new = set(CASES) | {"status.eval_not_queued", "status.eval_not_queued_details", "part.field_problem",
                        "sep.details"}
    en, zh = i18n.catalog("en"), i18n.catalog("zh")
    for code in new:
        assert en[f"msg.{code}"] == EN[code], code
        if code != "part.field_problem":
            assert re.search(r"[\u4e00-\u9fff；]", zh[f"msg.{code}"]), (code, zh[f"msg.{code}"])
    cat = {k.removeprefix("msg."): v for k, v in zh.items() if k.startswith("msg.")}
    said = evaluate_every.refusal(4, REFUSALS[2])
    text = render(said.code, said.params, cat)
    assert "{" not in text and "global_step_4" in text and "priority_class" in text and "优先级" in text, text
