"""evaluate every checkpoint (issue 38): each task's evaluate_checkpoints option and the scheduler's mark

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-09 04:00:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("tasks", schema=None) as batch_op:
        batch_op.add_column(sa.Column("evaluate_checkpoints", sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column("evaluate_watching", sa.Boolean(), server_default=sa.false(), nullable=False))
        batch_op.add_column(sa.Column("evaluated_through", sa.Integer(), nullable=True))
        batch_op.create_index(batch_op.f("ix_tasks_evaluate_watching"), ["evaluate_watching"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("tasks", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_tasks_evaluate_watching"))
        batch_op.drop_column("evaluated_through")
        batch_op.drop_column("evaluate_watching")
        batch_op.drop_column("evaluate_checkpoints")
