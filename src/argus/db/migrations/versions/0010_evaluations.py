"""checkpoint evaluation (issue 38): the task and step a task evaluates, and the scores it logged

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-07 02:30:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("tasks", schema=None) as batch_op:
        batch_op.add_column(sa.Column("evaluates_task", sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column("evaluates_step", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("scores", sa.JSON(), nullable=True))
        batch_op.create_index(batch_op.f("ix_tasks_evaluates_task"), ["evaluates_task"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("tasks", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_tasks_evaluates_task"))
        batch_op.drop_column("scores")
        batch_op.drop_column("evaluates_step")
        batch_op.drop_column("evaluates_task")
