"""pipelines (issue 38): the pipelines table, and each task's pipeline and step

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-07 04:00:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "pipelines",
        sa.Column("id", sa.String(length=64), primary_key=True),
        sa.Column("user_id", sa.Integer(), sa.ForeignKey("users.id"), nullable=False),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("spec_raw", sa.Text(), nullable=False),
        sa.Column("spec", sa.JSON(), nullable=False),
        sa.Column("state", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("message", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_index(op.f("ix_pipelines_user_id"), "pipelines", ["user_id"], unique=False)
    op.create_index(op.f("ix_pipelines_status"), "pipelines", ["status"], unique=False)
    with op.batch_alter_table("tasks", schema=None) as batch_op:
        batch_op.add_column(sa.Column("pipeline_id", sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column("pipeline_step", sa.String(length=32), nullable=True))
        batch_op.create_index(batch_op.f("ix_tasks_pipeline_id"), ["pipeline_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("tasks", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_tasks_pipeline_id"))
        batch_op.drop_column("pipeline_step")
        batch_op.drop_column("pipeline_id")
    op.drop_index(op.f("ix_pipelines_status"), table_name="pipelines")
    op.drop_index(op.f("ix_pipelines_user_id"), table_name="pipelines")
    op.drop_table("pipelines")
