"""SQLAlchemy 2 ORM models. The database row is the truth about every task.

Timestamps are timezone-aware UTC. Column names mirror the API so the mapping
in ``api/schemas.py`` stays trivial. Any change here needs an Alembic revision
in ``db/migrations/versions``; ``tests/db`` checks the two agree.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    false,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship
from sqlalchemy.types import TypeDecorator


def utcnow() -> datetime:
    return datetime.now(UTC)


class UTCDateTime(TypeDecorator[datetime]):
    """Stores UTC and always hands back aware datetimes (SQLite forgets the zone)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is not None and value.tzinfo is None:
            raise ValueError("naive datetime")
        return value.astimezone(UTC) if value is not None else None

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is not None and value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value


class Base(DeclarativeBase):
    pass


class UserModel(Base):
    __tablename__ = "users"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(32), unique=True, nullable=False)
    is_admin: Mapped[bool] = mapped_column(Boolean, default=False, nullable=False)
    disabled: Mapped[bool] = mapped_column(Boolean, default=False, nullable=False)
    password_hash: Mapped[str | None] = mapped_column(String(255))
    quota_bytes: Mapped[int | None] = mapped_column(BigInteger)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, nullable=False)
    # Per-user caps set by an admin (issue 14); None: the platform default from settings applies.
    max_gpus: Mapped[int | None] = mapped_column(Integer)
    max_running_tasks: Mapped[int | None] = mapped_column(Integer)
    # Signs in with the LDAP directory (issue 26, services/directory.py): no local password, never checked
    # locally; created at their first directory sign-in. A local user (False) is never checked against it.
    directory: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false(), nullable=False)


class ApiTokenModel(Base):
    __tablename__ = "api_tokens"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), nullable=False, index=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True, nullable=False)
    prefix: Mapped[str] = mapped_column(String(16), nullable=False)
    name: Mapped[str | None] = mapped_column(String(128))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, nullable=False)
    last_used_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime)

    user: Mapped[UserModel] = relationship()


class SshKeyModel(Base):
    __tablename__ = "ssh_keys"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), nullable=False, index=True)
    public_key: Mapped[str] = mapped_column(Text, nullable=False)
    fingerprint: Mapped[str] = mapped_column(String(128), nullable=False)
    comment: Mapped[str | None] = mapped_column(String(256))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, nullable=False)


class TaskModel(Base):
    __tablename__ = "tasks"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), nullable=False)
    name: Mapped[str | None] = mapped_column(String(128))
    kind: Mapped[str] = mapped_column(String(16), nullable=False)
    workload: Mapped[str] = mapped_column(String(16), nullable=False)
    status: Mapped[str] = mapped_column(String(16), nullable=False)
    priority: Mapped[int] = mapped_column(Integer, default=0, nullable=False)
    nnodes: Mapped[int] = mapped_column(Integer, nullable=False)
    n_gpus_per_node: Mapped[int] = mapped_column(Integer, nullable=False)
    spec_raw: Mapped[str] = mapped_column(Text, nullable=False)
    spec_resolved: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False)
    command_raw: Mapped[str] = mapped_column(Text, nullable=False)
    command_expanded: Mapped[str] = mapped_column(Text, nullable=False)
    argv: Mapped[list[str]] = mapped_column(JSON, nullable=False)
    entry_module: Mapped[str | None] = mapped_column(String(256))
    warnings: Mapped[list[str]] = mapped_column(JSON, nullable=False, default=list)
    attempts: Mapped[int] = mapped_column(Integer, default=0, nullable=False)
    submission_id: Mapped[str | None] = mapped_column(String(255))
    termination_reason: Mapped[str | None] = mapped_column(String(32))
    # what a failure came from, typed (core.failures.FailureKind: host_oom, gpu_oom, nccl_timeout, ...)
    failure_kind: Mapped[str | None] = mapped_column(String(32))
    failure_hint: Mapped[str | None] = mapped_column(Text)  # where it happened and what to change, one line
    status_message: Mapped[str | None] = mapped_column(Text)
    # issue 37: the status message as a message (core.messages), shown only while it still renders to the text
    status_message_code: Mapped[str | None] = mapped_column(String(64))
    status_message_params: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    pending_reason: Mapped[str | None] = mapped_column(Text)
    # issue 37: the pending reason as a message (core.messages): a stable code and its parameters, so the WebUI
    # says it in the user's language; the API shows them only while they still render to pending_reason
    pending_reason_code: Mapped[str | None] = mapped_column(String(64))
    pending_reason_params: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, nullable=False)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, nullable=False)
    submitted_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # The task whose checkpoint this one resumes (issue 15), shown on both.
    resumed_from: Mapped[str | None] = mapped_column(String(64), index=True)
    # The checkpoint this task evaluates (issue 38): its task and step, shown on both; ``scores`` are the
    # validation metrics it logged for that step, kept once it succeeded (its log may be cleaned up later).
    evaluates_task: Mapped[str | None] = mapped_column(String(64), index=True)
    evaluates_step: Mapped[int | None] = mapped_column(Integer)
    scores: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    # The sweep this task is a trial of (issue 38), its number in it and the parameter values it was given.
    sweep_id: Mapped[str | None] = mapped_column(String(64), index=True)
    sweep_trial: Mapped[int | None] = mapped_column(Integer)
    sweep_params: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    # The pipeline this task is a step of (issue 38) and the step's name.
    pipeline_id: Mapped[str | None] = mapped_column(String(64), index=True)
    pipeline_step: Mapped[str | None] = mapped_column(String(32))
    # The team the task is charged to (issue 26), by name: kept as written when the team is deleted, so a
    # task's history still says whose budget it used. None: no team.
    team: Mapped[str | None] = mapped_column(String(32))
    # Its priority class (issue 26) and the class's value when it was queued: a class changed or deleted
    # later does not reorder tasks already waiting. 0: no class.
    priority_class: Mapped[str | None] = mapped_column(String(32))
    class_value: Mapped[int] = mapped_column(Integer, default=0, server_default="0", nullable=False)
    # Its spec's evaluate_checkpoints (issue 38, core.evaluate_every): {} for verl's validation with the run's own
    # data, else what POST /tasks/{id}/evaluate takes; None: off. The scheduler's look (scheduler/evaluations.py)
    # reads the tasks still ``evaluate_watching`` (true until the task has ended and its last steps are settled)
    # and moves ``evaluated_through``, the highest step it settled (queued, found evaluated, or refused), with a
    # guarded update: two looks never queue one step twice, and a restart goes on from there.
    evaluate_checkpoints: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    evaluate_watching: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false(), nullable=False,
                                                    index=True)
    evaluated_through: Mapped[int | None] = mapped_column(Integer)

    user: Mapped[UserModel] = relationship()

    __table_args__ = (
        # scheduler: QUEUED tasks by priority then age
        Index("ix_tasks_status_priority", "status", "priority", "created_at"),
        # list endpoint: newest first, alone or with one filter, without a sort step
        Index("ix_tasks_created", "created_at", "id"),
        Index("ix_tasks_user_created", "user_id", "created_at", "id"),
        # a user's tasks with a status filter: page and count from the index alone (issue 14)
        Index("ix_tasks_user_status_created", "user_id", "status", "created_at", "id"),
        Index("ix_tasks_status_created", "status", "created_at", "id"),
        Index("ix_tasks_workload_created", "workload", "created_at", "id"),
        Index("ix_tasks_team_created", "team", "created_at", "id"),  # a team's tasks, newest first
    )


class TaskAttemptModel(Base):
    """One Ray job per attempt; the submission id is stored before Ray is called."""

    __tablename__ = "task_attempts"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    task_id: Mapped[str] = mapped_column(ForeignKey("tasks.id", ondelete="CASCADE"), nullable=False)
    attempt: Mapped[int] = mapped_column(Integer, nullable=False)
    submission_id: Mapped[str] = mapped_column(String(255), unique=True, nullable=False)
    status: Mapped[str] = mapped_column(String(16), nullable=False)
    node_id: Mapped[str | None] = mapped_column(String(128))
    hostname: Mapped[str | None] = mapped_column(String(256))
    gpus: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    exit_code: Mapped[int | None] = mapped_column(Integer)
    termination_reason: Mapped[str | None] = mapped_column(String(32))
    message: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, nullable=False)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # Accounting (issue 14): GPU-seconds (or CPU-seconds for CPU jobs) of this attempt, set when it ends.
    resource_seconds: Mapped[float | None] = mapped_column(Float)
    resource_kind: Mapped[str | None] = mapped_column(String(8))

    __table_args__ = (
        Index("ix_task_attempts_task", "task_id", "attempt", unique=True),
        Index("ix_task_attempts_started", "started_at"),  # usage reports: the attempts of a window
    )


class TaskEventModel(Base):
    """The timeline: every status change with time, reason and actor."""

    __tablename__ = "task_events"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    task_id: Mapped[str] = mapped_column(ForeignKey("tasks.id", ondelete="CASCADE"), nullable=False, index=True)
    at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, nullable=False)
    from_status: Mapped[str | None] = mapped_column(String(16))
    to_status: Mapped[str] = mapped_column(String(16), nullable=False)
    reason: Mapped[str | None] = mapped_column(String(32))
    message: Mapped[str | None] = mapped_column(Text)
    # issue 37: the message as a code and its parameters (core.messages), shown while they render to ``message``
    message_code: Mapped[str | None] = mapped_column(String(64))
    message_params: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    actor: Mapped[str] = mapped_column(String(64), nullable=False)


class IdCounterModel(Base):
    """Per-day sequence for readable task ids such as grpo-20261121-0007."""

    __tablename__ = "id_counters"

    day: Mapped[str] = mapped_column(String(8), primary_key=True)
    next_value: Mapped[int] = mapped_column(Integer, nullable=False)


class IdempotencyKeyModel(Base):
    """The first answer to a submit that carried an ``Idempotency-Key`` header (issue 11).

    A client whose POST was cut (server crash, network) sends the same key again and gets
    this answer back instead of a second task. ``request_hash`` tells a reuse of the key for
    a different body (refused) from a retry. Rows older than 24 h are ignored and pruned.
    """

    __tablename__ = "idempotency_keys"

    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    key: Mapped[str] = mapped_column(String(255), primary_key=True)
    request_hash: Mapped[str] = mapped_column(String(64), nullable=False)
    task_id: Mapped[str | None] = mapped_column(String(64))
    status_code: Mapped[int] = mapped_column(Integer, nullable=False)
    response: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, nullable=False, index=True)


class WebSessionModel(Base):
    """A signed-in browser (issue 12): the cookie holds a random id, the row holds its hash.

    Server-side so that signing out, disabling the user or an admin's revoke ends the session at
    once; ``csrf_hash`` binds the CSRF token the page must echo on every mutating request.
    """

    __tablename__ = "web_sessions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), nullable=False, index=True)
    session_hash: Mapped[str] = mapped_column(String(64), unique=True, nullable=False)
    csrf_hash: Mapped[str] = mapped_column(String(64), nullable=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, nullable=False)
    last_seen_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime)

    user: Mapped[UserModel] = relationship()


class AuditEventModel(Base):
    """An admin action or security event (issue 14): who did what to what, kept for admins to list."""

    __tablename__ = "audit_events"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, nullable=False, index=True)
    actor: Mapped[str] = mapped_column(String(64), nullable=False)
    action: Mapped[str] = mapped_column(String(64), nullable=False, index=True)
    target: Mapped[str | None] = mapped_column(String(256))
    detail: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    source_ip: Mapped[str | None] = mapped_column(String(64))


class NotificationChannelModel(Base):
    """Where a user wants to hear about their tasks (issue 24): a webhook URL or an e-mail address.

    ``secret`` signs a webhook's body (HMAC-SHA256); it is made by the server, shown once at creation and
    kept in clear because signing needs it. ``events`` is the list of events the channel subscribes to."""

    __tablename__ = "notification_channels"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), nullable=False, index=True)
    kind: Mapped[str] = mapped_column(String(16), nullable=False)
    target: Mapped[str] = mapped_column(String(2048), nullable=False)
    secret: Mapped[str | None] = mapped_column(String(128))
    events: Mapped[list[str]] = mapped_column(JSON, nullable=False)
    enabled: Mapped[bool] = mapped_column(Boolean, default=True, nullable=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, nullable=False)


class NotificationOutboxModel(Base):
    """One notification to deliver, written in the transaction of the status change it reports.

    The sender thread (services/notify_sender.py) claims due rows, sends, and marks them delivered or
    due again later (back-off). ``next_attempt_at`` is None once it gave up; ``last_error`` says why."""

    __tablename__ = "notification_outbox"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    channel_id: Mapped[int] = mapped_column(ForeignKey("notification_channels.id", ondelete="CASCADE"), nullable=False)
    task_id: Mapped[str | None] = mapped_column(String(64))
    event: Mapped[str] = mapped_column(String(16), nullable=False)
    payload: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False)
    attempts: Mapped[int] = mapped_column(Integer, default=0, nullable=False)
    next_attempt_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    delivered_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    last_error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, nullable=False)

    __table_args__ = (
        # the sender's claim: not delivered, due
        Index("ix_notification_outbox_due", "delivered_at", "next_attempt_at"),
        # a channel's last deliveries, newest first
        Index("ix_notification_outbox_channel", "channel_id", "id"),
    )


class TeamModel(Base):
    """A group that shares a folder, a GPU quota and a budget, and a weight in the fair share (issue 26).

    The limits are None where none is set: ``max_gpus`` held at once, ``max_running_tasks``,
    ``gpu_hours_month`` (a budget per calendar month, UTC) and ``quota_bytes`` for the team folder."""

    __tablename__ = "teams"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(32), unique=True, nullable=False)
    weight: Mapped[float] = mapped_column(Float, default=1.0, nullable=False)
    max_gpus: Mapped[int | None] = mapped_column(Integer)
    max_running_tasks: Mapped[int | None] = mapped_column(Integer)
    gpu_hours_month: Mapped[float | None] = mapped_column(Float)
    quota_bytes: Mapped[int | None] = mapped_column(BigInteger)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, nullable=False)


class TeamMemberModel(Base):
    """A user in a team, with a role (``member`` or ``admin``, core/teams.TeamRole).

    ``is_default`` marks the team a user's tasks are charged to when their spec names none (at most one
    per user, kept by services/teams). It lives here rather than on ``users`` so that adding teams never
    rebuilds the users table (SQLite rebuilds a table to add a foreign key, and dropping the old one
    would cascade into every table that refers to users)."""

    __tablename__ = "team_members"

    team_id: Mapped[int] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"), primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), primary_key=True, index=True)
    role: Mapped[str] = mapped_column(String(8), default="member", nullable=False)
    is_default: Mapped[bool] = mapped_column(Boolean, default=False, nullable=False)
    added_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, nullable=False)


class PriorityClassModel(Base):
    """An admin-defined priority class (issue 26), e.g. ``urgent`` for a deadline: its tasks go before
    every task of a lower class, across users and teams. ``users`` and ``teams`` say who may use it
    (a user named, or a member of a team named); both empty: everyone."""

    __tablename__ = "priority_classes"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(32), unique=True, nullable=False)
    value: Mapped[int] = mapped_column(Integer, nullable=False)
    description: Mapped[str | None] = mapped_column(String(256))
    users: Mapped[list[str]] = mapped_column(JSON, nullable=False, default=list)
    teams: Mapped[list[str]] = mapped_column(JSON, nullable=False, default=list)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, nullable=False)


class SweepModel(Base):
    """A sweep (issue 38): its spec as written and normalized, its state; its trials are tasks with ``sweep_id``.

    ``status``: RUNNING while any trial may still run; then SUCCEEDED (every trial ended, at least one
    succeeded), FAILED (none did) or CANCELED. ``message`` says why it ended early (budget, cancel)."""

    __tablename__ = "sweeps"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), nullable=False, index=True)
    name: Mapped[str] = mapped_column(String(128), nullable=False)
    spec_raw: Mapped[str] = mapped_column(Text, nullable=False)
    spec: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False)
    status: Mapped[str] = mapped_column(String(16), nullable=False, index=True)
    message: Mapped[str | None] = mapped_column(Text)
    max_concurrent: Mapped[int] = mapped_column(Integer, nullable=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, nullable=False)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class ModelVersionModel(Base):
    """A registered model version (issue 38): a checkpoint step or a Hugging Face folder, under a name, numbered
    1, 2, … per name and registry, with its lineage (the task, its resolved spec, environment and verl, the
    hashes of its data and reward files) and the scores of its evaluation, as they were when registered.

    A registry is a user's own (``team_id`` None) or a team's (``team_id`` set; ``user_id`` is then who
    registered it): the numbering is unique per (user, name) among personal versions — a partial index, so
    a user's own ``m:1`` and their team's ``nlp/m:1`` coexist — and per (team, name) in a team's. A deleted
    team's registry goes with it (no file is touched: the registry never copies)."""

    __tablename__ = "model_versions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), nullable=False)
    team_id: Mapped[int | None] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(64), nullable=False)
    version: Mapped[int] = mapped_column(Integer, nullable=False)
    kind: Mapped[str] = mapped_column(String(16), nullable=False)  # checkpoint | hf
    path: Mapped[str] = mapped_column(String(4096), nullable=False)  # as the owner writes it ($HOME/…)
    source_task: Mapped[str | None] = mapped_column(String(64), index=True)
    step: Mapped[int | None] = mapped_column(Integer)
    lineage: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False)
    scores: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, nullable=False)

    __table_args__ = (
        Index("ix_model_versions_name", "user_id", "name", "version", unique=True,
              sqlite_where=team_id.column.is_(None), postgresql_where=team_id.column.is_(None)),
        Index("ix_model_versions_team_name", "team_id", "name", "version", unique=True),
    )


class ModelAliasModel(Base):
    """``name@alias`` → a version (issue 38): ``candidate``, ``production``; moved by its owner, audited. A team's
    (``team_id`` set, ``nlp/name@production``) is moved by the team's admins; ``user_id`` is then who moved it
    last. Unique per (user, name, alias) among personal aliases, per (team, name, alias) in a team's."""

    __tablename__ = "model_aliases"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), nullable=False)
    team_id: Mapped[int | None] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(64), nullable=False)
    alias: Mapped[str] = mapped_column(String(32), nullable=False)
    version: Mapped[int] = mapped_column(Integer, nullable=False)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, nullable=False)

    __table_args__ = (
        Index("ix_model_aliases_name", "user_id", "name", "alias", unique=True,
              sqlite_where=team_id.column.is_(None), postgresql_where=team_id.column.is_(None)),
        Index("ix_model_aliases_team_name", "team_id", "name", "alias", unique=True),
    )


class PipelineModel(Base):
    """A pipeline (issue 38): its spec as written and normalized, and each step's state in ``state``:
    ``{step: {status, task_id, tries, artifacts, message}}`` with status waiting, running, succeeded, failed,
    skipped or canceled. The pipeline is RUNNING until every step is settled; then SUCCEEDED (no step failed),
    FAILED or CANCELED."""

    __tablename__ = "pipelines"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), nullable=False, index=True)
    name: Mapped[str] = mapped_column(String(128), nullable=False)
    spec_raw: Mapped[str] = mapped_column(Text, nullable=False)
    spec: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False)
    state: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False)
    status: Mapped[str] = mapped_column(String(16), nullable=False, index=True)
    message: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, nullable=False)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
