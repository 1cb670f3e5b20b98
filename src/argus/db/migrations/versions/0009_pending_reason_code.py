"""a queued task's pending reason as a message (issue 37): its stable code and parameters beside the English text

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-06 05:00:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("tasks", schema=None) as batch_op:
        batch_op.add_column(sa.Column("pending_reason_code", sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column("pending_reason_params", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("tasks", schema=None) as batch_op:
        batch_op.drop_column("pending_reason_params")
        batch_op.drop_column("pending_reason_code")
