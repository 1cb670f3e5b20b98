"""per-user limits, attempt accounting, audit log (issue 14); resumed_from (issue 15)

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23 13:15:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.add_column(sa.Column("max_gpus", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("max_running_tasks", sa.Integer(), nullable=True))
    with op.batch_alter_table("task_attempts", schema=None) as batch_op:
        batch_op.add_column(sa.Column("resource_seconds", sa.Float(), nullable=True))
        batch_op.add_column(sa.Column("resource_kind", sa.String(length=8), nullable=True))
    with op.batch_alter_table("tasks", schema=None) as batch_op:
        batch_op.add_column(sa.Column("resumed_from", sa.String(length=64), nullable=True))
        batch_op.create_index(batch_op.f("ix_tasks_resumed_from"), ["resumed_from"], unique=False)
    op.create_table(
        "audit_events",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("actor", sa.String(length=64), nullable=False),
        sa.Column("action", sa.String(length=64), nullable=False),
        sa.Column("target", sa.String(length=256), nullable=True),
        sa.Column("detail", sa.JSON(), nullable=True),
        sa.Column("source_ip", sa.String(length=64), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("audit_events", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_audit_events_at"), ["at"], unique=False)
        batch_op.create_index(batch_op.f("ix_audit_events_action"), ["action"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("audit_events", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_audit_events_action"))
        batch_op.drop_index(batch_op.f("ix_audit_events_at"))
    op.drop_table("audit_events")
    with op.batch_alter_table("tasks", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_tasks_resumed_from"))
        batch_op.drop_column("resumed_from")
    with op.batch_alter_table("task_attempts", schema=None) as batch_op:
        batch_op.drop_column("resource_kind")
        batch_op.drop_column("resource_seconds")
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.drop_column("max_running_tasks")
        batch_op.drop_column("max_gpus")
