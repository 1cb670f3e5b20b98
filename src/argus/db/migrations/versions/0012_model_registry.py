"""a model registry (issue 38): model versions with lineage and scores, and aliases

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-07 03:30:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "model_versions",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("user_id", sa.Integer(), sa.ForeignKey("users.id"), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("path", sa.String(length=4096), nullable=False),
        sa.Column("source_task", sa.String(length=64), nullable=True),
        sa.Column("step", sa.Integer(), nullable=True),
        sa.Column("lineage", sa.JSON(), nullable=False),
        sa.Column("scores", sa.JSON(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_model_versions_name", "model_versions", ["user_id", "name", "version"], unique=True)
    op.create_index(op.f("ix_model_versions_source_task"), "model_versions", ["source_task"], unique=False)
    op.create_table(
        "model_aliases",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("user_id", sa.Integer(), sa.ForeignKey("users.id"), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("alias", sa.String(length=32), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_model_aliases_name", "model_aliases", ["user_id", "name", "alias"], unique=True)


def downgrade() -> None:
    op.drop_index("ix_model_aliases_name", table_name="model_aliases")
    op.drop_table("model_aliases")
    op.drop_index(op.f("ix_model_versions_source_task"), table_name="model_versions")
    op.drop_index("ix_model_versions_name", table_name="model_versions")
    op.drop_table("model_versions")
