"""sweeps (issue 38): the sweeps table, and each task's sweep, trial number and parameter values

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-07 03:00:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "sweeps",
        sa.Column("id", sa.String(length=64), primary_key=True),
        sa.Column("user_id", sa.Integer(), sa.ForeignKey("users.id"), nullable=False),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("spec_raw", sa.Text(), nullable=False),
        sa.Column("spec", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("message", sa.Text(), nullable=True),
        sa.Column("max_concurrent", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_index(op.f("ix_sweeps_user_id"), "sweeps", ["user_id"], unique=False)
    op.create_index(op.f("ix_sweeps_status"), "sweeps", ["status"], unique=False)
    with op.batch_alter_table("tasks", schema=None) as batch_op:
        batch_op.add_column(sa.Column("sweep_id", sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column("sweep_trial", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("sweep_params", sa.JSON(), nullable=True))
        batch_op.create_index(batch_op.f("ix_tasks_sweep_id"), ["sweep_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("tasks", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_tasks_sweep_id"))
        batch_op.drop_column("sweep_params")
        batch_op.drop_column("sweep_trial")
        batch_op.drop_column("sweep_id")
    op.drop_index(op.f("ix_sweeps_status"), table_name="sweeps")
    op.drop_index(op.f("ix_sweeps_user_id"), table_name="sweeps")
    op.drop_table("sweeps")
