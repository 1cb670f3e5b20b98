"""API shapes (ARCHITECTURE §6 is the contract)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import Path
from pydantic import BaseModel, ConfigDict, Field, computed_field

from argus.core.messages import known_messages

# Database row ids and offsets are 64-bit integers: a larger number in a URL must be a 400 naming the
# parameter, not an OverflowError (500) from the database driver.
DB_INT_MAX = 2**63 - 1
MAX_LIST_OFFSET = 1_000_000_000
RowId = Annotated[int, Path(ge=1, le=DB_INT_MAX, description="a row id")]


class ErrorItem(BaseModel):
    field: str
    value: Any = None
    message: str
    line: int | None = Field(default=None, description="1-based line of the submitted YAML, when known "
                             "(absent for JSON bodies and fields not written in the spec)")
    fix: dict[str, str] | None = Field(default=None, description="the message's one fix as an edit: replace the "
                                       "text `replace` on `line` (else its first occurrence) with `with` (\"\": "
                                       "delete it); present only where the message names exactly one fix "
                                       "(a did-you-mean, a renamed key, a key to delete)")
    link: str | None = Field(default=None, description="a page of this server where the fix is done, e.g. "
                             "`/data` (upload the files first)")
    code: str | None = Field(default=None, description="the message as a stable code (issue 37), e.g. "
                             "`spec.unknown_field`: `message` is its English rendering, and a client may say "
                             "`code` + `params` in its own language (docs/reference.md lists the codes); absent "
                             "where the message is English only")
    params: dict[str, Any] | None = Field(default=None, description="the values `code`'s template names, e.g. "
                                          "`{\"op\": \"≥\", \"limit\": 1}`; present with `code`")


class ErrorDetail(BaseModel):
    code: str
    message: str
    message_code: str | None = Field(default=None, description="`message` as a stable code (issue 37), e.g. "
                                     "`user.exists`: `message` is its English rendering, and a client may say "
                                     "`message_code` + `message_params` in its own language (docs/reference.md "
                                     "lists the codes); absent where the message is English only")
    message_params: dict[str, Any] | None = Field(default=None, description="the values `message_code`'s "
                                                  "template names; present with `message_code`")
    errors: list[ErrorItem] | None = None


class ErrorOut(BaseModel):
    detail: ErrorDetail


class Warned(BaseModel):
    """An answer with admission's warnings: each an English text, as always, and beside them the same warnings as
    codes (issue 37), so a client says them in its reader's language."""

    warnings: list[str]

    @computed_field(description="each of `warnings` as `{code, params}` (docs/reference.md lists the warn.* codes), "
                    "or null where it has no code (say its English text)")  # type: ignore[prop-decorator]
    @property
    def warning_messages(self) -> list[dict[str, Any] | None]:
        return known_messages(self.warnings)


class SubmitOut(Warned):
    task_id: str
    status: str
    info: dict[str, Any] = {}


class RerunIn(BaseModel):
    """``POST /api/v2/tasks/{id}/rerun``: the environment to re-run the task in."""

    model_config = ConfigDict(extra="forbid")
    env: str = Field(min_length=1, max_length=200, description="an environment you can name in env: (GET /api/v2/envs)")


class RerunPreviewOut(Warned):
    """``POST /api/v2/tasks/{id}/rerun?dry_run=true``: the spec a re-run would submit, nothing queued."""

    spec: str = Field(description="the task's spec as submitted, with env: set and the keys moved for its verl")
    diff: str = Field(description="unified diff from the spec as submitted to `spec`")
    edits: list[dict[str, str]] = Field(description="each fix applied: {field, replace, with}")
    errors: list[ErrorItem] = Field(description="what no fix covers: a re-run is refused with these")


class DryRunOut(Warned):
    """``POST /api/v2/tasks?dry_run=true``: what a submit would be told, with nothing queued."""

    info: dict[str, Any] = {}
    resolved: dict[str, Any]
    command_expanded: str | None = None
    checks: str = Field("all", description="which checks answered (`spec`: the spec's own only, verl's to come)")


class AttemptOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    attempt: int
    submission_id: str
    status: str
    node_id: str | None = None
    hostname: str | None = None
    exit_code: int | None = None
    termination_reason: str | None = None
    message: str | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None


class TaskSummaryOut(BaseModel):
    task_id: str
    user: str
    name: str | None
    kind: str
    workload: str
    status: str
    priority: int
    nnodes: int
    n_gpus_per_node: int = Field(description="GPUs reserved on each node (0 for CPU training and CPU jobs)")
    device: str = Field("gpu", description="what it trains on: gpu, or cpu (spec `device: cpu`, issue 34)")
    workers_per_node: int = Field(0, description="training workers on each node: its GPUs, or for device cpu "
                                  "its CPU training workers (the spec's n_gpus_per_node)")
    termination_reason: str | None
    status_message: str | None
    status_message_code: str | None = Field(None, description="status_message's stable code (docs/reference.md "
                                            "'Message codes'), e.g. status.canceled_by; null: none or uncoded (a "
                                            "message written before codes, or one not coded yet)")
    status_message_params: dict[str, Any] | None = Field(None, description="the code's parameters (a program's own "
                                                         "text, such as an exception's, stays as written)")
    pending_reason: str | None
    pending_reason_code: str | None = Field(None, description="pending_reason's stable code (docs/reference.md "
                                            "'Message codes'), e.g. queue.user_gpu_limit; null: none or uncoded")
    pending_reason_params: dict[str, Any] | None = Field(None, description="the code's parameters (a list of "
                                                         "{code, ...} items where the reason lists nodes or needs)")
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    queue_position: int | None = Field(None, description="QUEUED: 1-based place among the queued tasks that "
                                       "compete for the same resources (issue 24); null otherwise")
    eta: datetime | None = Field(None, description="QUEUED: estimated start; null when unknown or not queued")
    gpu_hours: float = Field(0.0, description="GPUs × hours its attempts held, the running one up to now "
                             "(accounting's rule; 0 for a CPU job)")
    nodes: list[str] = Field(default_factory=list, description="SUBMITTED/RUNNING/CANCELING: the host(s) its "
                             "current attempt runs on; empty otherwise")
    status_note: str | None = Field(None, description="status_message in words for a person: without the "
                                    "'submitted Ray job …' plumbing (a stall's 'no progress for …' stays)")


class QueueOut(BaseModel):
    """A QUEUED task's place in the queue and estimated start (``core/eta.py``)."""

    position: int = Field(description="1-based place among the queued tasks competing for the same resources "
                          "(GPU tasks with the GPU tasks that fit the cluster, CPU jobs with CPU jobs)")
    ahead: int = Field(description="how many of those are ahead of it in the scheduler's order")
    competing: int = Field(description="how many queued tasks compete for the same resources, itself included")
    resource: str = Field(description="GPU or CPU: what it competes for")
    eta: datetime | None = Field(description="estimated start; null: unknown (eta_reason says why)")
    eta_reason: str = Field(description="how the estimate was made, or why it is unknown (English)")
    eta_reason_code: str = Field("", description="the same reason as a message code (eta.*, docs/reference.md), "
                                 "for a client that says it in its own language")
    eta_reason_params: dict[str, Any] = Field(default_factory=dict, description="the values the reason names")


class ProgressOut(BaseModel):
    """A RUNNING task's progress: its last verl step, its step rate, GPU-hours so far and expected end."""

    step: int | None = Field(description="the last step:N its current attempt logged")
    total_steps: int | None = Field(description="trainer.total_training_steps of its command; null: not set")
    steps_per_hour: float | None = Field(description="verl's timing_s/step over the recent steps, else the "
                                         "attempt's steps over its running time")
    gpu_hours: float = Field(description="GPUs × hours held by its attempts, the running one up to now")
    eta_end: datetime | None = Field(description="expected end; null: unknown (no total_training_steps or no step "
                                     "yet, or stalled)")
    last_step_at: datetime | None = Field(None, description="when its last step was logged; null: no step yet")
    stalled: bool = Field(False, description="the stall monitor found no step and no output past its limit "
                          "(scheduler/progress.py; the task's message says since when); cleared by new output")


class TaskOut(TaskSummaryOut, Warned):
    attempt: int
    submission_id: str | None
    warnings: list[str]
    entry_module: str | None
    submitted_at: datetime | None
    updated_at: datetime
    attempts: list[AttemptOut]
    resumed_from: str | None = Field(None, description="the task whose checkpoint this one resumes")
    resumed_by: list[str] = Field([], description="tasks that resume this one from its checkpoints")
    evaluates_task: str | None = Field(None, description="the task whose checkpoint this one evaluates (issue 38)")
    evaluates_step: int | None = Field(None, description="the step of that checkpoint")
    scores: dict[str, float] | None = Field(None, description="an evaluation's validation metrics, once it succeeded "
                                            "(val-core/<data source>/<reward key>/mean@1, …)")
    sweep_id: str | None = Field(None, description="the sweep this task is a trial of (issue 38)")
    sweep_trial: int | None = Field(None, description="its trial number in the sweep")
    sweep_params: dict[str, Any] | None = Field(None, description="the parameter values the sweep gave it")
    evaluate_checkpoints: dict[str, Any] | None = Field(
        None, description="its spec's evaluate_checkpoints (issue 38): each complete checkpoint is evaluated as it is "
        "written; {} for verl's validation with the task's own data and reward, else the val_file, reward_path, "
        "reward_name or lm_eval it was given; null: off")
    queue: QueueOut | None = Field(None, description="QUEUED tasks: place in the queue and estimated start")
    progress: ProgressOut | None = Field(None, description="RUNNING tasks: step, rate, GPU-hours, expected end")
    failure_kind: str | None = Field(None, description="a failed task's cause, typed: host_oom, gpu_oom, "
                                     "nccl_timeout, rollout_engine, missing_file, permission, user_code, python_exception, "
                                     "pids_limit, disk_full, task_runtime")
    failure_hint: str | None = Field(None, description="where it failed and what to change, one line")
    failure_hint_code: str | None = Field(None, description="failure.<failure_kind> when failure_hint is the "
                                          "kind's generic hint (the WebUI says it in the user's language)")
    failure_hint_params: dict[str, Any] | None = Field(None, description="{where}: the English prefix of "
                                                       "failure_hint naming the rank, worker or node")
    team: str | None = Field(None, description="the team the task is charged to (spec `team`, or the owner's "
                             "default team); null: none")
    priority_class: str | None = Field(None, description="its priority class (spec `priority_class`); null: none")
    can_cancel: bool = Field(False, description="the caller may cancel it now: it has not ended or begun to stop, "
                             "and the caller is its owner, an admin or an admin of its team (the cancel "
                             "endpoint's rule)")


class TaskListOut(BaseModel):
    items: list[TaskSummaryOut]
    total: int
    limit: int
    offset: int


class SpecOut(BaseModel):
    raw: str
    resolved: dict[str, Any]
    command_raw: str
    command_expanded: str
    argv: list[str]


class EventOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    at: datetime
    from_status: str | None
    to_status: str
    reason: str | None
    message: str | None
    message_code: str | None = Field(None, description="message's stable code (docs/reference.md 'Message codes'); "
                                     "null: none or uncoded")
    message_params: dict[str, Any] | None = Field(None, description="the code's parameters")
    actor: str


class CancelOut(BaseModel):
    task_id: str
    status: str


class MeOut(BaseModel):
    name: str
    is_admin: bool
    home: str
    sftp: str | None = None
    has_password: bool = Field(False, description="a password is set: changing it needs the current one")


class UserIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    is_admin: bool = False


class UserOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    name: str
    is_admin: bool
    disabled: bool
    created_at: datetime
    max_gpus: int | None = Field(None, description="GPUs this user's tasks may hold at once; null: the platform default")
    max_running_tasks: int | None = Field(None, description="tasks this user may run at once; null: the platform default")
    quota_bytes: int | None = Field(None, description="storage quota of the user's home; null: the platform default")


class UserLimitsIn(BaseModel):
    """``PATCH /api/v2/users/{name}``: only the fields sent change; null brings back the platform default."""

    model_config = ConfigDict(extra="forbid")

    max_gpus: int | None = Field(None, ge=1, le=1_000_000)
    max_running_tasks: int | None = Field(None, ge=1, le=1_000_000)
    quota_bytes: int | None = Field(None, ge=1, le=1 << 60, description="storage quota of the user's home, bytes")


class TokenIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str | None = None


class TokenCreatedOut(BaseModel):
    id: int
    token: str
    name: str | None


class TokenOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    prefix: str
    name: str | None
    created_at: datetime
    revoked_at: datetime | None


class PasswordIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    password: str


class MyPasswordIn(BaseModel):
    """``POST /api/v2/me/password``: the current password is needed once one is set (it is also the SFTP
    password, so a session or token alone must not change it)."""

    model_config = ConfigDict(extra="forbid")

    password: str
    current_password: str | None = Field(None, max_length=4096)


class KeyIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    public_key: str


class KeyOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    fingerprint: str
    comment: str | None
    created_at: datetime
