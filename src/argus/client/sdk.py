"""``Client``: every task action of the REST API as a Python method, for notebooks and scripts.

Answers are the API's JSON as plain ``dict``s (the fields the API documents at ``/docs``); an
error answer raises :class:`argus.client.ApiError` with the server's ``code``, ``message`` and
per-field ``errors``. A submit sends a fresh ``Idempotency-Key`` and is retried while the server
is unreachable or busy, so it never queues a task twice (as ``argus submit`` does).
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

from argus.client.http import ArgusClient, sse_events

TERMINAL = frozenset({"SUCCEEDED", "FAILED", "CANCELED"})


class TaskTimeout(TimeoutError):
    """``Client.wait`` gave up before the task ended; ``task`` is its last view."""

    def __init__(self, task: dict[str, Any], timeout: float) -> None:
        self.task = task
        super().__init__(f"task {task.get('task_id')} still {task.get('status')} after {timeout:g} s")


class Files:
    """Your files as the API shows them (``/`` is your home; ``/common/…`` the shared read-only areas)."""

    def __init__(self, http: ArgusClient) -> None:
        self._http = http

    def ls(self, path: str = "/") -> list[dict[str, Any]]:
        """A directory's entries (name, type, size, mtime …); a file's own metadata as a one-item list."""
        out = self._http.get("/api/v2/files", params={"path": path})
        return list(out["entries"]) if "entries" in out else [out]

    def put(self, local: str | os.PathLike[str] | bytes, remote: str) -> dict[str, Any]:
        """Upload a local file (or bytes) to ``remote``, atomically; over your quota → ApiError 413."""
        if isinstance(local, bytes):
            return self._http.request("PUT", "/api/v2/files/content", params={"path": remote}, content=local)
        with open(local, "rb") as f:
            return self._http.request("PUT", "/api/v2/files/content", params={"path": remote}, content=f)

    def get(self, remote: str, local: str | os.PathLike[str] | None = None) -> bytes | Path:
        """A file's bytes, or, with ``local``, the file written there (streamed) and its path."""
        if local is None:
            return b"".join(self._http.stream("GET", "/api/v2/files/content", params={"path": remote}))
        target = Path(local)
        with open(target, "wb") as f:
            for chunk in self._http.stream("GET", "/api/v2/files/content", params={"path": remote}):
                f.write(chunk)
        return target


class Notifications:
    """Your notification channels (issue 24): webhooks and e-mail about your tasks' events.

    ``events`` None subscribes to all of them (SUCCEEDED, FAILED, CANCELED, STALLED, RESUMED, IDLE_GPU, MODEL_ALIAS).
    A new webhook's answer holds its signing ``secret``, the only time the server shows it."""

    def __init__(self, http: ArgusClient) -> None:
        self._http = http

    def list(self) -> list[dict[str, Any]]:
        return list(self._http.get("/api/v2/notifications"))

    def add_webhook(self, url: str, events: list[str] | None = None) -> dict[str, Any]:
        return self._http.post("/api/v2/notifications", json={"kind": "webhook", "target": url, "events": events})

    def add_email(self, address: str, events: list[str] | None = None) -> dict[str, Any]:
        return self._http.post("/api/v2/notifications", json={"kind": "email", "target": address, "events": events})

    def remove(self, channel_id: int) -> None:
        self._http.delete(f"/api/v2/notifications/{channel_id}")

    def test(self, channel_id: int) -> dict[str, Any]:
        """Queue a TEST notification (``{delivery_id, channel_id, event}``); see ``deliveries`` for the outcome."""
        return self._http.post(f"/api/v2/notifications/{channel_id}/test")

    def deliveries(self, channel_id: int) -> list[dict[str, Any]]:
        """The channel's last 20 notifications, newest first: event, state, attempts, delivered_at, last_error."""
        return list(self._http.get(f"/api/v2/notifications/{channel_id}/deliveries"))


def _seg(name: str) -> str:
    """One URL path segment: a name such as ``../users`` must not walk to another endpoint."""
    return quote(name, safe="").replace(".", "%2E")


class Teams:
    """Teams (issue 26): the ones you are in (a site admin: all), their members and roles.

    Site admins create teams and set ``weight``, ``max_gpus``, ``max_running_tasks``, ``gpu_hours_month`` and
    ``quota_bytes`` (None removes a limit); a team's admins add and remove members; anyone may leave."""

    def __init__(self, http: ArgusClient) -> None:
        self._http = http

    def list(self) -> list[dict[str, Any]]:
        return list(self._http.get("/api/v2/teams"))

    def get(self, name: str) -> dict[str, Any]:
        return self._http.get(f"/api/v2/teams/{_seg(name)}")

    def create(self, name: str, **settings: Any) -> dict[str, Any]:
        return self._http.post("/api/v2/teams", json={"name": name, **settings})

    def update(self, name: str, **settings: Any) -> dict[str, Any]:
        return self._http.request("PATCH", f"/api/v2/teams/{_seg(name)}", json=settings)

    def delete(self, name: str) -> None:
        self._http.delete(f"/api/v2/teams/{_seg(name)}")

    def add_member(self, name: str, user: str, role: str = "member") -> dict[str, Any]:
        return self._http.post(f"/api/v2/teams/{_seg(name)}/members", json={"user": user, "role": role})

    def set_role(self, name: str, user: str, role: str) -> dict[str, Any]:
        return self._http.request("PATCH", f"/api/v2/teams/{_seg(name)}/members/{_seg(user)}", json={"role": role})

    def remove_member(self, name: str, user: str) -> None:
        self._http.delete(f"/api/v2/teams/{_seg(name)}/members/{_seg(user)}")

    def make_default(self, name: str) -> None:
        self._http.post(f"/api/v2/teams/{_seg(name)}/default")


class Client:
    """An Argus server at ``url`` with an API ``token`` (default: ``ARGUS_URL`` / ``ARGUS_TOKEN``)."""

    def __init__(self, url: str | None = None, token: str | None = None, *, timeout: float = 30.0) -> None:
        url = url or os.environ.get("ARGUS_URL") or "http://127.0.0.1:8080"
        token = token if token is not None else os.environ.get("ARGUS_TOKEN")
        self.http = ArgusClient(url, token or None, timeout=timeout)
        self.files = Files(self.http)
        self.notifications = Notifications(self.http)
        self.teams = Teams(self.http)

    def close(self) -> None:
        self.http.http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ tasks

    def submit(self, spec: str | os.PathLike[str] | dict[str, Any], dry_run: bool = False) -> dict[str, Any]:
        """Submit a spec: a ``dict``, YAML/JSON text, or a path to a ``.yaml``/``.yml``/``.json`` file.

        Returns ``{task_id, status, warnings, info}``; with ``dry_run=True`` the verdict
        ``{warnings, info, resolved, command_expanded}`` and nothing is queued. A rejected spec raises
        ApiError whose ``errors`` name every problem (field, value, fix, line)."""
        body, ctype = _spec_body(spec)
        if dry_run:
            return self.http.post("/api/v2/tasks", content=body, headers={"Content-Type": ctype},
                                  params={"dry_run": "true"})
        return self.http.post_retrying("/api/v2/tasks", key=str(uuid.uuid4()), content=body,
                                       headers={"Content-Type": ctype})

    def get(self, task_id: str) -> dict[str, Any]:
        """One task: status, reasons, attempts, ``resumed_from`` / ``resumed_by``."""
        return self.http.get(f"/api/v2/tasks/{task_id}")

    def list(self, *, status: str | list[str] | None = None, workload: str | None = None, user: str | None = None,
             limit: int = 50, offset: int = 0) -> list[dict[str, Any]]:
        """Your tasks, newest first (an admin's: everyone's, or ``user``'s)."""
        params: dict[str, Any] = {"limit": limit, "offset": offset}
        if status:
            params["status"] = status if isinstance(status, str) else ",".join(status)
        if workload:
            params["workload"] = workload
        if user:
            params["user"] = user
        return list(self.http.get("/api/v2/tasks", params=params)["items"])

    def wait(self, task_id: str, timeout: float | None = None, *, poll_s: float = 2.0) -> dict[str, Any]:
        """Block until the task ends (SUCCEEDED, FAILED or CANCELED) and return it; TaskTimeout after ``timeout`` s."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            task = self.get(task_id)
            if task["status"] in TERMINAL:
                return task
            if deadline is not None and time.monotonic() >= deadline:
                raise TaskTimeout(task, timeout or 0.0)
            time.sleep(poll_s if deadline is None else max(0.0, min(poll_s, deadline - time.monotonic())))

    def logs(self, task_id: str, follow: bool = True, *, attempt: int | None = None) -> Iterator[str]:
        """The task's log, line by line. ``follow=True`` streams live (server-sent events) until the
        attempt ends; ``follow=False`` gives what the log holds now."""
        params: dict[str, Any] = {} if attempt is None else {"attempt": attempt}
        path = f"/api/v2/tasks/{task_id}/logs"
        if not follow:
            text = b"".join(self.http.stream("GET", path, params=params)).decode("utf-8", errors="replace")
            yield from text.splitlines()
            return
        stream = self.http.stream("GET", path, params=params, headers={"Accept": "text/event-stream"}, timeout=None)
        for event, data in sse_events(stream):
            if event == "log":
                yield from data.split("\n")
            elif event == "end":
                return

    def metrics(self, task_id: str, keys: list[str] | None = None) -> Any:
        """verl's per-step metrics: a pandas DataFrame indexed by ``step`` (one column per key) when pandas
        is installed, else a list of ``{"step": s, key: value, …}`` dicts in step order."""
        params = {"key": ",".join(keys)} if keys else None
        out = self.http.get(f"/api/v2/tasks/{task_id}/metrics", params=params)
        rows: dict[int, dict[str, Any]] = {}
        for key, points in out["points"].items():
            for step, value in points:
                rows.setdefault(step, {"step": step})[key] = _number(value)
        records = [rows[s] for s in sorted(rows)]
        try:
            import pandas as pd
        except ImportError:
            return records
        return pd.DataFrame.from_records(records, columns=["step", *out["keys"]] if not keys else ["step", *keys]) \
            .set_index("step")

    def cancel(self, task_id: str) -> dict[str, Any]:
        return self.http.post(f"/api/v2/tasks/{task_id}/cancel")

    # ------------------------------------------------------------ checkpoints

    def checkpoints(self, task_id: str) -> dict[str, Any]:
        """``{folder, latest, steps: [{step, path, state, complete, components, size_bytes, modified_at,
        evaluations: [{task_id, status, scores}]}]}``."""
        return self.http.get(f"/api/v2/tasks/{task_id}/checkpoints")

    def best_checkpoint(self, task_id: str, metric: str, mode: str = "max") -> dict[str, Any]:
        """The complete step whose evaluation scored best on ``metric`` (``mode="min"`` for a loss)."""
        return self.http.get(f"/api/v2/tasks/{task_id}/checkpoints/best", params={"metric": metric, "mode": mode})

    def evaluate(self, task_id: str, step: int | None = None, *, val_file: str | None = None,
                 reward_path: str | None = None, reward_name: str | None = None,
                 lm_eval: dict[str, Any] | None = None) -> dict[str, Any]:
        """Queue a task evaluating a checkpoint with verl's validation (``trainer.val_only``), on ``val_file`` and
        the reward given or the task's own — or with lm-eval (``lm_eval={"tasks": [...], "include_path": ...}``,
        the checkpoint merged first); its scores then show on the step and in ``evaluations``."""
        body = {"step": step, "val_file": val_file, "reward_path": reward_path, "reward_name": reward_name,
                "lm_eval": lm_eval}
        return self.http.post(f"/api/v2/tasks/{task_id}/evaluate", json={k: v for k, v in body.items() if v is not None})

    def evaluations(self, task_id: str) -> list[dict[str, Any]]:
        """Every evaluation of the task's checkpoints: ``[{task_id, step, status, scores, ...}]``."""
        return self.http.get(f"/api/v2/tasks/{task_id}/evaluations")

    def resume(self, task_id: str, step: int | None = None, *, best: str | None = None,
               mode: str = "max") -> dict[str, Any]:
        """A new task resuming this ended one from ``step`` (default: its latest complete checkpoint; with ``best``,
        the step that scored best on that metric)."""
        return self.http.post(f"/api/v2/tasks/{task_id}/resume", json=_pick(step, best, mode))

    def rerun(self, task_id: str, env: str, dry_run: bool = False) -> dict[str, Any]:
        """Re-run this task in environment ``env``, keys moved for its verl; ``dry_run``: the spec, its ``diff`` and
        the ``errors`` no fix covers, nothing queued."""
        return self.http.post(f"/api/v2/tasks/{task_id}/rerun", json={"env": env},
                              params={"dry_run": "true"} if dry_run else None)

    # ------------------------------------------------------------ pipelines (issue 38)

    def submit_pipeline(self, spec: str | os.PathLike[str] | dict[str, Any], dry_run: bool = False) -> Any:
        """Submit a pipeline (``kind: pipeline``): the pipeline with its steps' states (None for a dry run).
        Sent with a fresh ``Idempotency-Key`` and retried like :meth:`submit`: never two pipelines."""
        body, ctype = _spec_body(spec)
        if dry_run:
            return self.http.post("/api/v2/pipelines", content=body, headers={"Content-Type": ctype},
                                  params={"dry_run": "true"})
        return self.http.post_retrying("/api/v2/pipelines", key=str(uuid.uuid4()), content=body,
                                       headers={"Content-Type": ctype})

    def pipelines(self) -> list[dict[str, Any]]:
        return self.http.get("/api/v2/pipelines")

    def pipeline(self, pipeline_id: str) -> dict[str, Any]:
        """One pipeline: each step's status, task, tries, gate, artifacts and message."""
        return self.http.get(f"/api/v2/pipelines/{pipeline_id}")

    def cancel_pipeline(self, pipeline_id: str) -> dict[str, Any]:
        return self.http.post(f"/api/v2/pipelines/{pipeline_id}/cancel")

    # ------------------------------------------------------------ model registry (issue 38)

    def register_model(self, name: str, *, task_id: str | None = None, step: int | None = None,
                       best: str | None = None, mode: str = "max", path: str | None = None,
                       team: str | None = None) -> dict[str, Any]:
        """Register the next version of ``name``: a task's checkpoint (``step``, latest, or ``best`` by a metric),
        an export task's folder, or a Hugging Face folder in your home or a team's folder (``path``). A task
        charged to a team, or a team's folder, registers into that team's registry; ``team`` names one of yours
        for a folder in your home. Returns the version (``team``, ``ref``; ``why`` it went to a team's)."""
        body = {"name": name, "task_id": task_id, "step": step, "best": best, "mode": mode, "path": path,
                "team": team}
        return self.http.post("/api/v2/models", json={k: v for k, v in body.items() if v is not None})

    def models(self) -> list[dict[str, Any]]:
        """Your models and your teams' (``team``; ``ref`` is ``team/name`` for a team's)."""
        return self.http.get("/api/v2/models")

    def model(self, ref: str) -> dict[str, Any]:
        """``[team/]name`` (every version), ``[team/]name:N`` or ``[team/]name@alias`` (that version): paths,
        lineage, scores, aliases."""
        return self.http.get(f"/api/v2/models/{quote(ref, safe='/:@')}")

    def set_alias(self, name: str, alias: str, version: int) -> dict[str, Any]:
        """Point ``name@alias`` (``name`` or ``team/name``) at ``version`` (audited; notified as MODEL_ALIAS). A
        team's aliases are moved by its admins."""
        return self.http.put(f"/api/v2/models/{quote(name, safe='/')}/aliases/{quote(alias, safe='')}",
                             json={"version": version})

    # ------------------------------------------------------------ sweeps (issue 38)

    def submit_sweep(self, spec: str | os.PathLike[str] | dict[str, Any], dry_run: bool = False) -> dict[str, Any]:
        """Submit a sweep (``kind: sweep``: base, parameters, method, max_trials, max_concurrent, budget_gpu_hours,
        metric, early_stop): ``{sweep_id, trials: [{trial, params, task_id}]}``. Every trial is checked first;
        ``dry_run`` answers the trials' specs and queues nothing. Sent with a fresh ``Idempotency-Key`` and retried
        like :meth:`submit`: never two sweeps."""
        body, ctype = _spec_body(spec)
        if dry_run:
            return self.http.post("/api/v2/sweeps", content=body, headers={"Content-Type": ctype},
                                  params={"dry_run": "true"})
        return self.http.post_retrying("/api/v2/sweeps", key=str(uuid.uuid4()), content=body,
                                       headers={"Content-Type": ctype})

    def sweeps(self) -> list[dict[str, Any]]:
        """Your sweeps, newest first, each with its trials."""
        return self.http.get("/api/v2/sweeps")

    def sweep(self, sweep_id: str) -> dict[str, Any]:
        """One sweep: status, trials (params, task, status, the metric per step), hours used, ``best_task``."""
        return self.http.get(f"/api/v2/sweeps/{sweep_id}")

    def cancel_sweep(self, sweep_id: str) -> dict[str, Any]:
        return self.http.post(f"/api/v2/sweeps/{sweep_id}/cancel")

    def export(self, task_id: str, step: int | None = None, to: str | None = None, *, best: str | None = None,
               mode: str = "max") -> dict[str, Any]:
        """Queue a CPU task merging a checkpoint into a Hugging Face folder (default ``$HOME/models/<task>-step<N>``);
        returns that task (``info.target`` is the folder, usable as a next task's ``model_id``)."""
        return self.http.post(f"/api/v2/tasks/{task_id}/export", json={**_pick(step, best, mode), "to": to})


def _pick(step: int | None, best: str | None, mode: str) -> dict[str, Any]:
    """Which checkpoint: a step, or the best by a metric (the server refuses both at once)."""
    return {"step": step} if best is None else {"step": step, "best": best, "mode": mode}


def _number(value: Any) -> Any:
    """The API sends NaN/±Infinity as strings (JSON has none): give them back as floats."""
    return float(value) if value in ("nan", "inf", "-inf") else value


def _spec_body(spec: str | os.PathLike[str] | dict[str, Any]) -> tuple[bytes, str]:
    if isinstance(spec, dict):
        return json.dumps(spec).encode(), "application/json"
    if isinstance(spec, os.PathLike) or (isinstance(spec, str) and "\n" not in spec
                                        and spec.endswith((".yaml", ".yml", ".json"))):
        path = Path(spec)
        ctype = "application/json" if path.suffix == ".json" else "application/yaml"
        return path.read_bytes(), ctype
    return spec.encode(), "application/yaml"
