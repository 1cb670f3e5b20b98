"""indexes for the task list (a user's tasks by status) and for usage reports (issue 14)

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23 14:00:00
"""

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("tasks", schema=None) as batch_op:
        batch_op.create_index("ix_tasks_user_status_created", ["user_id", "status", "created_at", "id"], unique=False)
    with op.batch_alter_table("task_attempts", schema=None) as batch_op:
        batch_op.create_index("ix_task_attempts_started", ["started_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("task_attempts", schema=None) as batch_op:
        batch_op.drop_index("ix_task_attempts_started")
    with op.batch_alter_table("tasks", schema=None) as batch_op:
        batch_op.drop_index("ix_tasks_user_status_created")
