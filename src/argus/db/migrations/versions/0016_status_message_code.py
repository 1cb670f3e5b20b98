"""a task's status message and each timeline entry's message as a message (issue 37): a stable code and its
parameters beside the English text

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-10 06:00:00

The text stays what the API returns; the code and parameters are shown only while they still render to it
(core.messages.from_stored), and rows written before this revision have none: they keep their English.
"""

import sqlite3

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("tasks", schema=None) as batch_op:
        batch_op.add_column(sa.Column("status_message_code", sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column("status_message_params", sa.JSON(), nullable=True))
    with op.batch_alter_table("task_events", schema=None) as batch_op:
        batch_op.add_column(sa.Column("message_code", sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column("message_params", sa.JSON(), nullable=True))


def downgrade() -> None:
    # SQLite: a batch rebuild of ``tasks`` drops the old table, and with foreign keys on that deletes every
    # timeline entry and attempt (ON DELETE CASCADE); SQLite 3.35+ drops a column in place instead
    keep = "never" if sqlite3.sqlite_version_info >= (3, 35) else "auto"
    with op.batch_alter_table("task_events", schema=None, recreate=keep) as batch_op:
        batch_op.drop_column("message_params")
        batch_op.drop_column("message_code")
    with op.batch_alter_table("tasks", schema=None, recreate=keep) as batch_op:
        batch_op.drop_column("status_message_params")
        batch_op.drop_column("status_message_code")
