"""``JobsBackend`` over Ray's Jobs REST API (``/api/jobs/``) on the dashboard.

Ray answers in ways the scheduler must not guess at, so they are mapped here once (Ray 2.60):

* a duplicate ``submission_id`` → HTTP 500 "... already exists" → ``JobAlreadyExists``
  (the caller adopts the existing job: submission is idempotent, never resubmitted);
* an unknown id → 404 → ``get`` returns None, ``stop``/``delete`` return False;
* deleting a job that has not finished → 500 "non-terminal state" → ``delete`` returns False;
* no reachable dashboard, 502-504, "No available agent" → ``ClusterUnavailable`` (retry later);
* any other refusal (a malformed runtime env, say) → ``RayJobsError`` with Ray's text;
* no driver log to give (unknown id, the driver's node gone) → ``driver_log_tail`` returns None.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import quote

from argus.cluster.dashboard import Dashboard
from argus.cluster.types import ClusterUnavailable, JobAlreadyExists, JobInfo, RayJobStatus

log = logging.getLogger(__name__)


class RayJobsError(RuntimeError):
    """Ray refused a request for a reason other than unavailability (the message is Ray's)."""


class RayJobsClient:
    def __init__(self, dashboard: Dashboard) -> None:
        self.dashboard = dashboard

    def submit(
        self,
        submission_id: str,
        entrypoint: str,
        *,
        entrypoint_resources: dict[str, float],
        entrypoint_num_gpus: float = 0,
        entrypoint_num_cpus: float = 0,
        entrypoint_memory: int = 0,
        runtime_env: dict[str, Any],
        metadata: dict[str, str],
    ) -> None:
        body = {
            "submission_id": submission_id,
            "entrypoint": entrypoint,
            "entrypoint_resources": entrypoint_resources,
            **({"entrypoint_num_gpus": entrypoint_num_gpus} if entrypoint_num_gpus else {}),
            **({"entrypoint_num_cpus": entrypoint_num_cpus} if entrypoint_num_cpus else {}),
            **({"entrypoint_memory": int(entrypoint_memory)} if entrypoint_memory else {}),
            "runtime_env": runtime_env,
            "metadata": metadata,
        }
        resp = self.dashboard.request("POST", "/api/jobs/", json=body)
        if resp.status_code == 200:
            return
        text = resp.text
        if "already exists" in text:
            raise JobAlreadyExists(submission_id)
        if "No available agent" in text:
            raise ClusterUnavailable(f"Ray has no job agent ready: {_last_line(text)}")
        raise RayJobsError(f"Ray refused job {submission_id} ({resp.status_code}): {_last_line(text)}")

    def get(self, submission_id: str) -> JobInfo | None:
        resp = self.dashboard.request("GET", f"/api/jobs/{_quote(submission_id)}")
        if resp.status_code == 404:
            return None
        _expect_ok(resp, f"get job {submission_id}")
        return _job_info(resp.json())

    def stop(self, submission_id: str) -> bool:
        """Ask Ray to stop the job (SIGTERM to the driver's group, SIGKILL later); False if unknown/finished."""
        resp = self.dashboard.request("POST", f"/api/jobs/{_quote(submission_id)}/stop")
        if resp.status_code == 404:
            return False
        _expect_ok(resp, f"stop job {submission_id}")
        return bool(resp.json().get("stopped"))

    def delete(self, submission_id: str) -> bool:
        """Forget a finished job (Ray keeps finished jobs forever otherwise); False if unknown or still running."""
        resp = self.dashboard.request("DELETE", f"/api/jobs/{_quote(submission_id)}")
        if resp.status_code == 404:
            return False
        if resp.status_code == 500 and "non-terminal" in resp.text:
            log.info("not deleting Ray job %s: it has not finished", submission_id)
            return False
        _expect_ok(resp, f"delete job {submission_id}")
        return bool(resp.json().get("deleted"))

    def driver_log_tail(self, submission_id: str, max_bytes: int, *, timeout_s: float = 5.0) -> str | None:
        """The last ``max_bytes`` of Ray's own driver log for the job (``job-driver-<id>.log`` on its node).

        Only for a driver that died before writing the attempt's log (its log is then a few lines):
        Ray's endpoint has no range, so the whole file crosses the wire and is cut here; the short
        timeout keeps the monitor's pass quick. None when Ray has no log to give (unknown id, the
        driver's node gone: Ray answers 500) — the caller then has nothing better than the exit code.
        """
        resp = self.dashboard.request("GET", f"/api/jobs/{_quote(submission_id)}/logs", timeout=timeout_s)
        if resp.status_code != 200:
            log.info("Ray has no driver log for %s (%s): %s", submission_id, resp.status_code, _last_line(resp.text))
            return None
        try:
            text = resp.json().get("logs")
        except ValueError:
            return None
        if not isinstance(text, str):
            return None
        data = text.encode("utf-8", errors="replace")
        return data[-max_bytes:].decode("utf-8", errors="ignore") if len(data) > max_bytes else text

    def list(self) -> list[JobInfo]:
        """Every submission job Ray knows (plain drivers that called ``ray.init`` are left out)."""
        resp = self.dashboard.request("GET", "/api/jobs/")
        _expect_ok(resp, "list jobs")
        return [_job_info(d) for d in resp.json() if d.get("submission_id")]


def _job_info(d: dict[str, Any]) -> JobInfo:
    return JobInfo(
        submission_id=d["submission_id"],
        status=RayJobStatus(d["status"]),
        message=d.get("message"),
        error_type=d.get("error_type"),
        driver_exit_code=d.get("driver_exit_code"),
        driver_node_id=d.get("driver_node_id"),
        start_time_ms=d.get("start_time") or None,
        end_time_ms=d.get("end_time") or None,
        metadata={str(k): str(v) for k, v in (d.get("metadata") or {}).items()},
    )


def _expect_ok(resp: Any, what: str) -> None:
    if resp.status_code != 200:
        raise RayJobsError(f"Ray could not {what} ({resp.status_code}): {_last_line(resp.text)}")


def _quote(submission_id: str) -> str:
    return quote(submission_id, safe="")


def _last_line(text: str) -> str:
    """Ray returns Python tracebacks as error bodies; the last non-empty line is the message."""
    lines = [line for line in text.strip().splitlines() if line.strip(" .")]
    return lines[-1].strip() if lines else text[:200]
