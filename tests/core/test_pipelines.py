"""core.pipelines: a pipeline's checks (names, needs, sources, gates, references), rendering and gates."""

from argus.core.pipelines import Gate, PipelineSpec, parse_pipeline, placeholders, references, render

TASK = {"workload": "grpo", "model_id": "m"}


def _ok(doc) -> PipelineSpec:
    out = parse_pipeline({"kind": "pipeline", **doc})
    assert isinstance(out, PipelineSpec), out
    return out


def test_a_chain_parses_and_each_step_sees_only_what_it_needs() -> None:
    spec = _ok({"steps": {
        "sft": {"spec": TASK},
        "export": {"needs": ["sft"], "export": {"from": "sft"}},
        "grpo": {"needs": ["export"], "spec": {**TASK, "model_id": "{{ steps.export.hf_path }}"}, "retries": 1},
        "eval": {"needs": ["grpo"], "evaluate": {"from": "grpo"}},
        "register": {"needs": ["eval"], "register": {"from": "grpo", "name": "m", "alias": "candidate"},
                     "when": {"step": "eval", "metric": "val-core/x", "op": ">=", "value": 0.4}}}})
    assert [s.action for s in spec.steps.values()] == ["spec", "export", "spec", "evaluate", "register"]
    assert spec.steps["register"].source == "grpo"


def test_every_mistake_is_named() -> None:
    errors = parse_pipeline({"kind": "pipeline", "steps": {
        "a": {"spec": TASK, "export": {"from": "a"}},
        "b": {"needs": ["c"], "spec": {**TASK, "model_id": "{{ steps.a.hf_path }}"}},
        "c": {"needs": ["a"], "evaluate": {"from": "b"}, "when": {"step": "b", "metric": "m", "value": 1}},
        "d": {"needs": ["a"], "spec": {**TASK, "x": "{{ steps.a.nope }}"}},
        "9x": {"spec": TASK}}})
    assert any("exactly one of spec, export" in e.message for e in errors), errors
    errors = parse_pipeline({"kind": "pipeline", "steps": {
        "a": {"spec": TASK},
        "b": {"needs": ["c"], "spec": {**TASK, "model_id": "{{ steps.a.hf_path }}"}},
        "c": {"needs": ["a"], "evaluate": {"from": "b"}, "when": {"step": "b", "metric": "m", "value": 1}},
        "d": {"needs": ["a"], "spec": {**TASK, "x": "{{ steps.a.nope }}"}},
        "9x": {"spec": TASK},
        "e": {"spec": {**TASK, "model_id": "{{ steps.a.hf_path }}"}}}})
    by = {(e.field, str(e.value)): e.message for e in errors}
    assert "listed before" in by[("steps.b.needs", "c")]  # no cycle can be written: needs come first
    assert "does not need" in by[("steps.e", "{{ steps.a.hf_path }}")]
    assert "must be a step this one needs" in by[("steps.c.evaluate.from", "b")]
    assert "must be a step this one needs" in by[("steps.c.when.step", "b")]
    assert "unknown artifact" in by[("steps.d", "{{ steps.a.nope }}")]
    assert "step name" in by[("steps.9x", "9x")]


def test_render_fills_references_and_placeholders_look_like_paths() -> None:
    spec = _ok({"steps": {"a": {"spec": TASK}, "b": {"needs": ["a"], "spec": {
        **TASK, "overrides": ["trainer.resume_from_path={{steps.a.checkpoint}}"]}}}})
    doc = spec.steps["b"].spec
    assert references(doc) == [("a", "checkpoint")]
    assert render(doc, placeholders(spec))["overrides"] == [
        "trainer.resume_from_path=$HOME/jobs/pipeline-a/checkpoints/global_step_1"]
    assert render(doc, {"a": {"checkpoint": "$HOME/jobs/t1/checkpoints/global_step_4"}})["overrides"][0].endswith("_4")


def test_a_gate_passes_or_says_why_not() -> None:
    gate = Gate(step="eval", metric="acc", op=">=", value=0.4)
    assert gate.passes(0.5) == (True, "gate passed: eval acc = 0.5, needs >= 0.4")
    assert gate.passes(0.3)[0] is False and gate.passes(None) == (False, "gate not passed: eval has no acc")
    assert gate.passes(float("nan"))[0] is False
