"""API shapes (ARCHITECTURE §6 is the contract)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import Path
from pydantic import BaseModel, ConfigDict

# Database row ids and offsets are 64-bit integers: a larger number in a URL must be a 400 naming the
# parameter, not an OverflowError (500) from the database driver.
DB_INT_MAX = 2**63 - 1
MAX_LIST_OFFSET = 1_000_000_000
RowId = Annotated[int, Path(ge=1, le=DB_INT_MAX, description="a row id")]


class ErrorItem(BaseModel):
    field: str
    value: Any = None
    message: str


class ErrorDetail(BaseModel):
    code: str
    message: str
    errors: list[ErrorItem] | None = None


class ErrorOut(BaseModel):
    detail: ErrorDetail


class SubmitOut(BaseModel):
    task_id: str
    status: str
    warnings: list[str]
    info: dict[str, Any] = {}


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
    n_gpus_per_node: int
    termination_reason: str | None
    status_message: str | None
    pending_reason: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None


class TaskOut(TaskSummaryOut):
    attempt: int
    submission_id: str | None
    warnings: list[str]
    entry_module: str | None
    submitted_at: datetime | None
    updated_at: datetime
    attempts: list[AttemptOut]


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
    actor: str


class CancelOut(BaseModel):
    task_id: str
    status: str


class MeOut(BaseModel):
    name: str
    is_admin: bool
    home: str
    sftp: str | None = None


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


class KeyIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    public_key: str


class KeyOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    fingerprint: str
    comment: str | None
    created_at: datetime
