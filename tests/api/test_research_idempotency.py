"""Idempotency-Key on the sweep and pipeline submits (issue 38, as issue 11 made it for tasks): a submit retried
after a lost answer never makes a second sweep or pipeline; the key is stored with what it made, in one table."""

from __future__ import annotations

import threading
import uuid

import httpx
import pytest
import yaml
from sqlalchemy import func, select

from argus.client import Client
from argus.db.models import IdempotencyKeyModel, PipelineModel, SweepModel, TaskModel
from tests.api.test_idempotency_api import SPEC
from tests.api.test_pipelines_api import PIPELINE
from tests.api.test_sweeps_api import SWEEP

KINDS = {  # endpoint: (the document, its id field, its table, the same document changed)
    "sweeps": (SWEEP, "sweep_id", SweepModel, {**SWEEP, "parameters": {"val_per_step": [0.5, 0.6]}}),
    "pipelines": (PIPELINE, "pipeline_id", PipelineModel, {**PIPELINE, "name": "another chain"}),
}


def _post(c: httpx.Client, endpoint: str, doc: dict, key: str | None, **params: str) -> httpx.Response:
    headers = {"Content-Type": "application/yaml", **({"Idempotency-Key": key} if key is not None else {})}
    return c.post(f"/api/v2/{endpoint}", content=yaml.safe_dump(doc, sort_keys=False).encode(), headers=headers,
                  params=params)


def _count(live, model) -> int:
    with live.ctx.db.session() as s:
        return s.scalar(select(func.count()).select_from(model))


@pytest.mark.parametrize("endpoint", list(KINDS))
def test_the_same_key_answers_the_first_answer_and_makes_one(live, endpoint) -> None:
    doc, id_field, model, changed = KINDS[endpoint]
    noun = endpoint.removesuffix("s")
    alice, bob = live.new_user("alice"), live.new_user("bob")
    first = _post(alice, endpoint, doc, "k-1")
    assert first.status_code == 201 and "idempotent-replayed" not in first.headers, first.text
    again = _post(alice, endpoint, doc, "k-1")
    assert again.status_code == 201 and again.headers["Idempotent-Replayed"] == "true"
    assert again.content == first.content  # the first answer, byte for byte
    made = first.json()[id_field]
    assert made.startswith(f"{noun}-") and _count(live, model) == 1
    if endpoint == "sweeps":
        assert _count(live, TaskModel) == len(SWEEP["parameters"]["val_per_step"])  # its trials, queued once

    clash = _post(alice, endpoint, changed, "k-1")  # the key with another document: refused, naming what it made
    assert clash.status_code == 409, clash.text
    detail = clash.json()["detail"]
    assert detail["code"] == "idempotency_key_reused"
    assert detail["message"] == (f"Idempotency-Key 'k-1' was already used for a different request ({noun} {made}); "
                                 "send a new key for a new spec")

    theirs = _post(bob, endpoint, doc, "k-1")  # bob's k-1 is another key
    assert theirs.status_code == 201 and "idempotent-replayed" not in theirs.headers, theirs.text
    assert theirs.json()[id_field] != made
    assert _post(alice, endpoint, doc, None).status_code == 201  # no key: a new one each time, as before
    assert _count(live, model) == 3


@pytest.mark.parametrize("endpoint", list(KINDS))
def test_a_key_is_one_request_across_endpoints_and_dry_runs_and_refusals_store_nothing(live, endpoint) -> None:
    doc, id_field, model, _ = KINDS[endpoint]
    alice = live.new_user("alice")
    task = alice.post("/api/v2/tasks", content=SPEC.encode(),
                      headers={"Content-Type": "application/yaml", "Idempotency-Key": "k-task"})
    assert task.status_code == 201, task.text
    r = _post(alice, endpoint, doc, "k-task")  # the task's key sent with a sweep or pipeline: another request
    assert r.status_code == 409 and f"(task {task.json()['task_id']})" in r.json()["detail"]["message"], r.text
    r = alice.post("/api/v2/tasks", content=yaml.safe_dump(doc, sort_keys=False).encode(),
                   headers={"Content-Type": "application/yaml", "Idempotency-Key": "k-task"})
    assert r.status_code == 409 and r.json()["detail"]["code"] == "idempotency_key_reused", r.text

    assert _post(alice, endpoint, doc, "k-dry", dry_run="true").status_code == 201  # a dry run stores nothing
    bad = {**doc, "name": 7} if endpoint == "pipelines" else {**doc, "metric": "critic/score/mean"}
    assert _post(alice, endpoint, bad, "k-dry").status_code == 400  # nor does a refusal
    assert _post(alice, endpoint, bad, "k-dry").status_code == 400  # checked again, not replayed
    ok = _post(alice, endpoint, doc, "k-dry")
    assert ok.status_code == 201 and "idempotent-replayed" not in ok.headers, ok.text
    with live.ctx.db.session() as s:
        rows = {k: t for k, t in s.execute(select(IdempotencyKeyModel.key, IdempotencyKeyModel.task_id))}
    assert rows == {"k-task": task.json()["task_id"], "k-dry": ok.json()[id_field]}

    r = alice.post(f"/api/v2/{endpoint}", content=yaml.safe_dump(doc).encode(),
                   headers=[("Content-Type", "application/yaml"), ("Idempotency-Key", b"tab\there")])
    assert r.status_code == 400 and r.json()["detail"]["code"] == "invalid_idempotency_key", r.text
    assert _count(live, model) == 1


@pytest.mark.parametrize("endpoint", list(KINDS))
def test_concurrent_submits_with_one_key_make_one(live, endpoint) -> None:
    doc, id_field, model, _ = KINDS[endpoint]
    alice = live.new_user("alice")
    answers: list[httpx.Response] = []
    barrier = threading.Barrier(4)

    def go() -> None:
        with live.client(alice.headers["Authorization"].split(" ", 1)[1]) as c:
            barrier.wait()
            answers.append(_post(c, endpoint, doc, "k-race"))

    threads = [threading.Thread(target=go) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert [r.status_code for r in answers] == [201] * 4, [r.text for r in answers]
    assert len({r.json()[id_field] for r in answers}) == 1
    assert sum("idempotent-replayed" not in r.headers for r in answers) == 1
    assert _count(live, model) == 1


def test_the_sdk_sends_a_fresh_key_with_each_sweep_and_pipeline_submit_and_none_with_a_dry_run() -> None:
    seen: list[tuple[str, str | None, str]] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append((request.url.path, request.headers.get("Idempotency-Key"), request.url.query.decode()))
        return httpx.Response(201, json={"ok": True})

    c = Client("http://argus.test", token="t")
    c.http.http = httpx.Client(base_url="http://argus.test", transport=httpx.MockTransport(answer))
    for submit in (c.submit_sweep, c.submit_pipeline):
        submit({"kind": "x"})
        submit({"kind": "x"})
        submit({"kind": "x"}, dry_run=True)
    keys = [k for _, k, _ in seen]
    assert [p for p, _, _ in seen] == ["/api/v2/sweeps"] * 3 + ["/api/v2/pipelines"] * 3
    assert keys[2] is None and keys[5] is None and [q for _, _, q in seen].count("dry_run=true") == 2
    fresh = [keys[0], keys[1], keys[3], keys[4]]
    assert len(set(fresh)) == 4 and all(uuid.UUID(k) for k in fresh)
