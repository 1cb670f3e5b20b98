"""teams and their members, priority classes (issue 26): names, weights, limits; roles and each user's default
team; tasks.team, tasks.priority_class and class_value

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-25 04:10:00

New tables and one nullable column on tasks (ALTER TABLE ADD COLUMN: no table is rebuilt), so a
database from before teams keeps every row (tests/db/test_migrations.py upgrades one with data, on SQLite and PostgreSQL).
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "teams",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=32), nullable=False),
        sa.Column("weight", sa.Float(), nullable=False),
        sa.Column("max_gpus", sa.Integer(), nullable=True),
        sa.Column("max_running_tasks", sa.Integer(), nullable=True),
        sa.Column("gpu_hours_month", sa.Float(), nullable=True),
        sa.Column("quota_bytes", sa.BigInteger(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name"),
    )
    op.create_table(
        "team_members",
        sa.Column("team_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("role", sa.String(length=8), nullable=False),
        sa.Column("is_default", sa.Boolean(), nullable=False),
        sa.Column("added_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["team_id"], ["teams.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("team_id", "user_id"),
    )
    with op.batch_alter_table("team_members", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_team_members_user_id"), ["user_id"], unique=False)
    op.add_column("tasks", sa.Column("team", sa.String(length=32), nullable=True))
    op.create_index("ix_tasks_team_created", "tasks", ["team", "created_at", "id"], unique=False)
    op.add_column("tasks", sa.Column("priority_class", sa.String(length=32), nullable=True))
    op.add_column("tasks", sa.Column("class_value", sa.Integer(), server_default="0", nullable=False))
    op.create_table(
        "priority_classes",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=32), nullable=False),
        sa.Column("value", sa.Integer(), nullable=False),
        sa.Column("description", sa.String(length=256), nullable=True),
        sa.Column("users", sa.JSON(), nullable=False),
        sa.Column("teams", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name"),
    )


def downgrade() -> None:
    op.drop_table("priority_classes")
    op.drop_index("ix_tasks_team_created", table_name="tasks")
    with op.batch_alter_table("tasks", schema=None) as batch_op:
        batch_op.drop_column("class_value")
        batch_op.drop_column("priority_class")
        batch_op.drop_column("team")
    with op.batch_alter_table("team_members", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_team_members_user_id"))
    op.drop_table("team_members")
    op.drop_table("teams")
